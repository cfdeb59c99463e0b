/**
 * Outbound campaigns and their call attempts (docs/voice.md "Outbound voice campaigns"). Launch writes exactly one attempt per accepted
 * contact (unique per campaign and contact, one INSERT … SELECT); the dialer workflow claims due
 * attempts in batches (idempotent per claim token), and each dial records its outcome once (per dial
 * number), so a retried activity or a restarted worker never dials a contact twice nor skips one.
 * Also the sandbox telephony's dial ledger (idempotent on the dial key).
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { CallAttempt, Campaign, CampaignCounters, CampaignPurpose, DayOfWeek } from '../../schemas/types/outbound';
import { iso } from '../timestamps';
import { fromColumns, fromNullableColumns, fromTimestampColumns, rowMapper } from '../rows';

type Conn = Db | Knex.Transaction;
const clock = (m: number) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

/** Attempt statuses that are final. */
export const FINAL_ATTEMPT_STATUSES = ['answered', 'voicemail', 'busy', 'no_answer', 'failed', 'cancelled'] as const;

const emptyCounters = (): CampaignCounters => ({ total: 0, pending: 0, dialing: 0, answered: 0, voicemail: 0, busy: 0, noAnswer: 0, failed: 0, cancelled: 0, dials: 0 });

/** Row (+ counters) → API shape. */
export function toCampaign(r: any, counters: CampaignCounters = emptyCounters()): Campaign {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    purpose: r.purpose,
    agentId: r.agent_id,
    agentVersionId: r.agent_version_id ?? null,
    callerIdNumberId: r.caller_id_number_id,
    callerId: r.caller_id,
    contactListId: r.list_id,
    callingWindow: { start: clock(r.window_start_minutes), end: clock(r.window_end_minutes) },
    daysOfWeek: r.days_of_week,
    maxConcurrentCalls: r.max_concurrent_calls,
    maxAttempts: r.max_attempts,
    retryDelayMinutes: r.retry_delay_minutes,
    counters,
    launchedAt: iso(r.launched_at),
    finishedAt: iso(r.finished_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

/** Live counters of campaigns by id (attempts by status, dials placed). */
export async function campaignCounters(db: Conn, orgId: string, campaignIds: string[]): Promise<Map<string, CampaignCounters>> {
  const out = new Map<string, CampaignCounters>(campaignIds.map((id) => [id, emptyCounters()]));
  if (!campaignIds.length) return out;
  const rows = await db('call_attempts')
    .where({ org_id: orgId })
    .whereIn('campaign_id', campaignIds)
    .groupBy('campaign_id', 'status')
    .select('campaign_id', 'status', db.raw('count(*)::int as n'), db.raw('coalesce(sum(dials), 0)::int as d'));
  for (const r of rows) {
    const c = out.get(r.campaign_id)!;
    const key = (r.status === 'no_answer' ? 'noAnswer' : r.status) as keyof CampaignCounters;
    if (key in c) c[key] += r.n;
    c.total += r.n;
    c.dials += r.d;
  }
  return out;
}

/** Fields of a new campaign (validated by the API). */
export interface CampaignFields {
  name: string;
  agentId: string;
  callerIdNumberId: string;
  callerId: string;
  listId: string;
  purpose: CampaignPurpose;
  windowStartMinutes: number;
  windowEndMinutes: number;
  daysOfWeek: DayOfWeek[];
  maxConcurrentCalls: number;
  maxAttempts: number;
  retryDelayMinutes: number;
}

/** Creates a draft campaign. */
export async function createCampaign(db: Db, orgId: string, f: CampaignFields): Promise<Campaign> {
  const [row] = await db('campaigns')
    .insert({
      id: newId('cmp'),
      org_id: orgId,
      name: f.name,
      agent_id: f.agentId,
      caller_id_number_id: f.callerIdNumberId,
      caller_id: f.callerId,
      list_id: f.listId,
      purpose: f.purpose,
      window_start_minutes: f.windowStartMinutes,
      window_end_minutes: f.windowEndMinutes,
      days_of_week: f.daysOfWeek,
      max_concurrent_calls: f.maxConcurrentCalls,
      max_attempts: f.maxAttempts,
      retry_delay_minutes: f.retryDelayMinutes,
    })
    .returning('*');
  return toCampaign(row);
}

/** A campaign with live counters, or undefined. */
export async function getCampaign(db: Conn, orgId: string, id: string): Promise<Campaign | undefined> {
  const row = await db('campaigns').where({ org_id: orgId, id }).first();
  if (!row) return undefined;
  return toCampaign(row, (await campaignCounters(db, orgId, [id])).get(id));
}

/** One page of campaigns (oldest first) with counters. @throws InvalidCursorError */
export async function listCampaigns(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<Campaign>> {
  const p = await keysetPage<any>(db('campaigns').where({ org_id: orgId }), { ...page, column: 'seq', map: (r) => r });
  const counters = await campaignCounters(db, orgId, p.items.map((r) => r.id));
  return { ...p, items: p.items.map((r) => toCampaign(r, counters.get(r.id))) };
}

/** The raw campaign row locked for update (inside a transaction), or undefined. */
export async function lockCampaign(trx: Knex.Transaction, orgId: string, id: string): Promise<any | undefined> {
  return trx('campaigns').where({ org_id: orgId, id }).forUpdate().first();
}

/** Sets a campaign's status (and launch/finish stamps). @returns the updated row */
export async function setCampaignStatus(trx: Knex.Transaction, orgId: string, id: string, status: Campaign['status'], extra: { agentVersionId?: string } = {}): Promise<any> {
  const [row] = await trx('campaigns')
    .where({ org_id: orgId, id })
    .update({
      status,
      ...(status === 'running' && extra.agentVersionId ? { launched_at: trx.fn.now(), agent_version_id: extra.agentVersionId } : {}),
      ...(status === 'completed' || status === 'cancelled' ? { finished_at: trx.fn.now() } : {}),
      updated_at: trx.fn.now(),
    })
    .returning('*');
  return row;
}

/**
 * Writes one pending attempt per accepted contact of the list (one statement; unique per campaign and
 * contact, so running it twice adds nothing). Zones are copied from the contact.
 * @returns attempts inserted now
 */
export async function insertAttempts(trx: Knex.Transaction, orgId: string, campaignId: string, listId: string): Promise<number> {
  const res = await trx.raw(
    `INSERT INTO call_attempts (id, org_id, campaign_id, contact_id, e164, zones, status, not_before)
     SELECT 'att_' || replace(gen_random_uuid()::text, '-', ''), c.org_id, ?, c.id, c.e164, c.zones, 'pending', now()
       FROM contacts c
      WHERE c.org_id = ? AND c.list_id = ? AND c.status = 'accepted'
      ORDER BY c.row_number
     ON CONFLICT (campaign_id, contact_id) DO NOTHING`,
    [campaignId, orgId, listId],
  );
  return res.rowCount ?? 0;
}

/** Marks every undialed (pending) attempt cancelled. @returns how many */
export async function cancelPendingAttempts(trx: Conn, orgId: string, campaignId: string): Promise<number> {
  return trx('call_attempts').where({ org_id: orgId, campaign_id: campaignId, status: 'pending' }).update({ status: 'cancelled', updated_at: trx.fn.now() });
}

/** Whether the agent exists in the organization and its published version id. */
export async function agentPublication(db: Conn, orgId: string, agentId: string): Promise<{ exists: boolean; publishedVersionId: string | null }> {
  const row = await db('agents').where({ org_id: orgId, id: agentId }).first('published_version_id');
  return { exists: !!row, publishedVersionId: row?.published_version_id ?? null };
}

/**
 * An attempt handed to the dialer: its id only. The claim is an activity result, stored in the campaign
 * workflow's history, which carries identifiers, not personal data (DESIGN.md "Durable processes"); the dial
 * activity reads the number by id.
 */
export interface AttemptToDial {
  id: string;
}

/** Result of one claim. */
export interface ClaimResult {
  campaignStatus: Campaign['status'];
  maxConcurrentCalls: number;
  claimed: AttemptToDial[];
  /** Attempts waiting (pending) and claimed but not yet recorded (dialing), after this claim. */
  pending: number;
  dialing: number;
  /** Earliest `not_before` of a pending attempt (ISO), or null. */
  nextNotBefore: string | null;
}

/**
 * Claims up to `limit` due attempts for dialing at `now`. An attempt is due when `not_before <= now`;
 * `dialTime(zones)` then says when its calling window is open: attempts open now are marked `dialing`
 * with `token`, the others get `not_before` moved to their window's opening (or are failed with
 * `no_calling_window` when there is none). Idempotent: a second claim with the same token answers the
 * same attempts. Nothing is claimed unless the campaign is running.
 */
export async function claimAttempts(
  db: Db,
  orgId: string,
  campaignId: string,
  token: string,
  now: Date,
  limit: number,
  dialTime: (zones: string[]) => Date | undefined,
): Promise<ClaimResult> {
  return db.transaction(async (trx) => {
    const camp = await trx('campaigns').where({ org_id: orgId, id: campaignId }).first('status', 'max_concurrent_calls');
    if (!camp) throw new Error(`campaign ${campaignId} not found`);
    let claimed: AttemptToDial[] = await trx('call_attempts').where({ campaign_id: campaignId, claim_token: token, status: 'dialing' }).orderBy('seq').select('id');
    if (!claimed.length && camp.status === 'running') {
      const cache = new Map<string, Date | undefined>();
      for (let pass = 0; pass < 20 && claimed.length < limit; pass++) {
        const rows = await trx('call_attempts')
          .where({ campaign_id: campaignId, status: 'pending' })
          .where('not_before', '<=', now)
          .orderBy([{ column: 'not_before' }, { column: 'seq' }])
          .limit(Math.max(limit - claimed.length, 100))
          .forUpdate()
          .skipLocked()
          .select('id', 'zones');
        if (!rows.length) break;
        const dialNow: AttemptToDial[] = [];
        const later = new Map<number, string[]>();
        const never: string[] = [];
        for (const r of rows) {
          const key = (r.zones as string[]).join(',');
          if (!cache.has(key)) cache.set(key, dialTime(r.zones));
          const t = cache.get(key);
          if (!t) never.push(r.id);
          else if (t.getTime() <= now.getTime() && claimed.length + dialNow.length < limit) dialNow.push({ id: r.id });
          else if (t.getTime() > now.getTime()) later.set(t.getTime(), [...(later.get(t.getTime()) ?? []), r.id]);
          // open now but over the limit: left pending and due, for the next claim
        }
        if (dialNow.length) await trx('call_attempts').whereIn('id', dialNow.map((a) => a.id)).update({ status: 'dialing', claim_token: token, updated_at: trx.fn.now() });
        for (const [t, ids] of later) await trx('call_attempts').whereIn('id', ids).update({ not_before: new Date(t), updated_at: trx.fn.now() });
        if (never.length) await trx('call_attempts').whereIn('id', never).update({ status: 'failed', last_outcome: 'no_calling_window', updated_at: trx.fn.now() });
        claimed = claimed.concat(dialNow);
        if (!later.size && !never.length && dialNow.length < rows.length) break; // the rest is due but over the limit
      }
    }
    const stats = await trx('call_attempts')
      .where({ campaign_id: campaignId })
      .whereIn('status', ['pending', 'dialing'])
      .select(
        trx.raw(`count(*) filter (where status = 'pending')::int as pending`),
        trx.raw(`count(*) filter (where status = 'dialing')::int as dialing`),
        trx.raw(`min(not_before) filter (where status = 'pending') as next`),
      )
      .first();
    return {
      campaignStatus: camp.status,
      maxConcurrentCalls: camp.max_concurrent_calls,
      claimed,
      pending: stats?.pending ?? 0,
      dialing: stats?.dialing ?? 0,
      nextNotBefore: stats?.next ? new Date(stats.next).toISOString() : null,
    };
  });
}

/** An attempt with what a dial needs. */
export interface DialContext {
  attemptId: string;
  campaignId: string;
  campaignStatus: Campaign['status'];
  agentId: string;
  status: CallAttempt['status'];
  dials: number;
  e164: string;
  callerId: string;
  maxAttempts: number;
  retryDelayMinutes: number;
}

const toDialContext = rowMapper<DialContext>({
  attemptId: (r) => r.id,
  campaignId: 'value',
  campaignStatus: 'value',
  agentId: 'value',
  status: 'value',
  dials: 'value',
  e164: 'value',
  callerId: 'value',
  maxAttempts: 'value',
  retryDelayMinutes: 'value',
});

/** The attempt and its campaign's dial settings, or undefined. */
export async function dialContext(db: Conn, orgId: string, attemptId: string): Promise<DialContext | undefined> {
  const r = await db('call_attempts as a')
    .join('campaigns as c', 'c.id', 'a.campaign_id')
    .where({ 'a.org_id': orgId, 'a.id': attemptId })
    .first('a.id', 'a.campaign_id', 'a.status', 'a.dials', 'a.e164', 'c.status as campaign_status', 'c.agent_id', 'c.caller_id', 'c.max_attempts', 'c.retry_delay_minutes');
  return r ? toDialContext(r) : undefined;
}

/**
 * Records the outcome of dial number `dialNumber` of an attempt, once: a second call for the same dial
 * number (a retried activity) changes nothing and answers `recorded: false`. Busy and no-answer go back
 * to `pending` with `not_before = at + retryDelay` while dials remain. `status` forces the final status
 * (an `unknown` outcome, docs/operations.md "Provider calls happen once", ends the attempt `failed`).
 * @returns the attempt's status after the call
 */
export async function recordDialOutcome(
  trx: Knex.Transaction,
  orgId: string,
  attemptId: string,
  dialNumber: number,
  r: { outcome: string; durationSeconds: number; at: Date; maxAttempts: number; retryDelayMinutes: number; status?: 'failed'; voicemailLeft?: boolean },
): Promise<{ recorded: boolean; status: string }> {
  const retry = !r.status && (r.outcome === 'busy' || r.outcome === 'no_answer') && dialNumber < r.maxAttempts;
  const status = r.status ?? (retry ? 'pending' : r.outcome);
  // One conditional update: only the first record of this dial number changes the row.
  const updated = await trx('call_attempts')
    .where({ org_id: orgId, id: attemptId, status: 'dialing' })
    .where('dials', '<', dialNumber)
    .update({
      status,
      dials: dialNumber,
      claim_token: null,
      last_outcome: r.outcome,
      last_duration_seconds: r.durationSeconds,
      voicemail_left: r.voicemailLeft ?? false,
      last_dialed_at: r.at,
      not_before: retry ? new Date(r.at.getTime() + r.retryDelayMinutes * 60_000) : trx.raw('not_before'),
      updated_at: trx.fn.now(),
    });
  if (!updated) {
    const row = await trx('call_attempts').where({ org_id: orgId, id: attemptId }).first('status');
    return { recorded: false, status: row?.status ?? 'missing' };
  }
  return { recorded: true, status };
}

/** Marks a claimed attempt cancelled without dialing (its campaign was cancelled in between). */
export async function cancelClaimedAttempt(db: Conn, orgId: string, attemptId: string): Promise<void> {
  await db('call_attempts').where({ org_id: orgId, id: attemptId, status: 'dialing' }).update({ status: 'cancelled', claim_token: null, updated_at: db.fn.now() });
}

function toAttempt(r: any): CallAttempt {
  return {
    ...fromColumns(r, ['id', 'contactId', 'e164', 'status', 'dials']),
    ...fromNullableColumns(r, ['lastOutcome', 'lastDurationSeconds']),
    ...fromTimestampColumns(r, ['lastDialedAt', 'notBefore']),
    voicemailLeft: r.voicemail_left === true,
    callId: r.linked?.callId ?? null,
    conversationId: r.linked?.conversationId ?? null,
  };
}

/**
 * The call and conversation of an attempt's last dial: its record (a `voice` conversation of mode `none` keyed by the
 * dial, ./conversations.ts recordCallConversation) names the carrier's call id and, once linked, the conversation the
 * call held; the call is the campaign's `voice_calls` row of that carrier call id.
 */
const LINKED_SQL = `(SELECT jsonb_build_object('callId', vc.id, 'conversationId', coalesce(d.metadata->>'conversationId', vc.conversation_id))
  FROM conversations d
  LEFT JOIN voice_calls vc ON vc.org_id = d.org_id AND vc.campaign_id = d.campaign_id AND vc.provider_call_id = d.metadata->>'providerCallId'
  WHERE d.org_id = call_attempts.org_id AND d.campaign_id = call_attempts.campaign_id AND d.mode = 'none'
    AND d.metadata->>'dialKey' = call_attempts.id || ':' || call_attempts.dials
  LIMIT 1) AS linked`;

/** One page of a campaign's attempts in launch order. @throws InvalidCursorError */
export async function listAttempts(db: Db, orgId: string, campaignId: string, page: { limit: number; cursor?: string; status?: string }): Promise<Page<CallAttempt>> {
  const q = db('call_attempts').where({ org_id: orgId, campaign_id: campaignId }).select('call_attempts.*', db.raw(LINKED_SQL));
  if (page.status) q.where({ status: page.status });
  return keysetPage(q, { limit: page.limit, cursor: page.cursor, column: 'seq', map: toAttempt });
}

/** Sandbox dials placed to numbers of the organization (tests and the benchmark). */
export async function sandboxDialsTo(db: Conn, orgId: string, e164s?: string[]): Promise<{ to: string; idempotencyKey: string; createdAt: string }[]> {
  const q = db('sandbox_dials').where({ org_id: orgId });
  if (e164s) q.whereIn('to', e164s);
  const rows = await q.orderBy('created_at').select('to', 'idempotency_key', 'created_at');
  return rows.map((r) => ({ to: r.to, idempotencyKey: r.idempotency_key, createdAt: iso(r.created_at)! }));
}

/** A campaign's status and calling window (the dialer's claim), or undefined. */
export async function campaignDialSettings(db: Conn, orgId: string, id: string): Promise<{ status: Campaign['status']; startMinutes: number; endMinutes: number; days: DayOfWeek[] } | undefined> {
  const r = await db('campaigns').where({ org_id: orgId, id }).first('status', 'window_start_minutes', 'window_end_minutes', 'days_of_week');
  return r ? { status: r.status, startMinutes: r.window_start_minutes, endMinutes: r.window_end_minutes, days: r.days_of_week } : undefined;
}

/** The agent version a campaign pinned at launch (`ver_…`), or null (not launched, or no such campaign in the organization). */
export async function campaignPinnedVersion(db: Conn, orgId: string, campaignId: string): Promise<string | null> {
  const r = await db('campaigns').where({ org_id: orgId, id: campaignId }).first('agent_version_id');
  return r?.agent_version_id ?? null;
}
