/**
 * What people see afterwards (spec "Observe"; docs/api-notes.md "Observe"): every conversation of an organization on
 * every channel, read as one list — runtime conversations (chat, widget, simulations) and calls recorded as
 * rows of `conversations`, and SMS threads (the texts exchanged between one of our numbers and one
 * counterpart) grouped from `sms_messages` at read time — with transcripts and receipts. Every query takes
 * the organization id.
 *
 * An SMS thread's id is `smt_` + base64url of `<our number>:<counterpart>`, so it names its thread without
 * a table of its own.
 */
import type { Db } from '../index';
import { decodeCursor, encodeCursor, type Page } from '../pagination';
import { iso } from '../timestamps';
import { COLUMNS, DURATION_BOUNDS, rollupSelect } from '../analyticsRollup';
import { turnReceipts } from './conversations';
import type { Analytics, AnalyticsFigures, ConversationSummary, TranscriptMessage } from '../../schemas/types/observe';
import type { TurnReceipt } from '../../schemas/types/chat';
import { fromColumns, fromNullableColumns } from '../rows';

/** The SMS thread id of a pair of numbers. */
export function smsThreadId(ours: string, counterpart: string): string {
  return `smt_${Buffer.from(`${ours}:${counterpart}`).toString('base64url')}`;
}

/** The numbers of an SMS thread id, or undefined for anything else. */
export function parseSmsThreadId(id: string): { ours: string; counterpart: string } | undefined {
  if (!id.startsWith('smt_')) return undefined;
  const m = /^(\+[1-9]\d{6,14}):(\+[1-9]\d{6,14})$/.exec(Buffer.from(id.slice(4), 'base64url').toString('utf8'));
  return m ? { ours: m[1], counterpart: m[2] } : undefined;
}

/** Filters of `GET /conversations`. */
export interface ConversationFilters {
  agentId?: string;
  /** Conversations that ran on this published version (docs/api-notes.md "Traffic splits"). */
  versionId?: string;
  channel?: 'chat' | 'web' | 'sms' | 'voice';
  status?: 'active' | 'ended';
  campaignId?: string;
  /** Started at or after (ISO 8601). */
  from?: string;
  /** Started before (ISO 8601). */
  to?: string;
  simulation?: boolean;
  /** The call's outcome or the analysis's (docs/api-notes.md "Observe"); SMS threads have none. */
  outcome?: string;
  /** Words one of the conversation's messages contains (case-insensitive); SMS threads are not searched. */
  q?: string;
}

const OURS = `CASE WHEN m.direction = 'outbound' THEN m.from_e164 ELSE m.to_e164 END`;
const THEIRS = `CASE WHEN m.direction = 'outbound' THEN m.to_e164 ELSE m.from_e164 END`;

/** Cursor key of the list: started_at and id, newest first. */
const CURSOR = ['timestamp', 'text'] as const;

/**
 * One page of conversations, newest first, over runtime conversations, calls and SMS threads.
 * @throws InvalidCursorError
 */
export async function listConversations(db: Db, orgId: string, f: ConversationFilters, page: { limit: number; cursor?: string }): Promise<Page<ConversationSummary>> {
  const binds: any[] = [];
  const where: string[] = [];
  const add = (sql: string, ...v: any[]) => (where.push(sql), binds.push(...v));
  // Runtime conversations and calls.
  const conv = `SELECT c.id, c.channel, c.agent_id, c.status, c.simulation, c.started_at, c.ended_at, c.message_count, c.campaign_id,
                       c.counterpart, c.outcome, c.duration_seconds, c.end_reason, c.version_id, c.traffic_split, c.prompt_tokens + c.completion_tokens AS tokens,
                       a.status AS analysis_status, a.outcome AS analysis_outcome, a.sentiment AS analysis_sentiment
                  FROM conversations c
                  LEFT JOIN conversation_analyses a ON a.conversation_id = c.id AND a.org_id = c.org_id
                 WHERE c.org_id = ?
                   -- A dial's record whose call held a conversation is that conversation's (listed itself): not a second row.
                   AND NOT (c.mode = 'none' AND c.metadata->>'conversationId' IS NOT NULL)`;
  // SMS threads: one row per (our number, counterpart) of the texts no agent conversation holds; the agent is the number's.
  const sms = `SELECT 'smt_' || translate(rtrim(replace(encode(convert_to(t.ours || ':' || t.theirs, 'UTF8'), 'base64'), E'\\n', ''), '='), '+/', '-_') AS id,
                      'sms' AS channel, n.agent_id, 'active' AS status, false AS simulation, t.started_at, t.last_at AS ended_at,
                      t.message_count, NULL AS campaign_id, t.theirs AS counterpart, NULL AS outcome, NULL::int AS duration_seconds,
                      NULL AS end_reason, NULL AS version_id, NULL::jsonb AS traffic_split, 0 AS tokens,
                      NULL AS analysis_status, NULL AS analysis_outcome, NULL AS analysis_sentiment
                 FROM (SELECT ${OURS} AS ours, ${THEIRS} AS theirs, min(m.created_at) AS started_at, max(m.created_at) AS last_at, count(*)::int AS message_count
                         FROM sms_messages m WHERE m.org_id = ? AND m.conversation_id IS NULL GROUP BY 1, 2) t
                 LEFT JOIN phone_numbers n ON n.org_id = ? AND n.e164 = t.ours AND n.status = 'purchased'`;
  const wantSms = !f.channel || f.channel === 'sms';
  // Texts an agent answered belong to its `sms` conversation (docs/sms.md "Agents answer texts"); the
  // other texts of a number (API sends, keyword replies) are listed as its threads.
  const wantConv = true;
  const parts: string[] = [];
  const partBindsOf: any[][] = [];
  if (wantConv) (parts.push(conv), partBindsOf.push([orgId]));
  if (wantSms && !f.campaignId && !f.versionId && f.simulation !== true && !f.outcome && !f.q) (parts.push(sms), partBindsOf.push([orgId, orgId]));
  if (!parts.length) return { items: [], nextCursor: null, hasMore: false };
  if (f.agentId) add('u.agent_id = ?', f.agentId);
  if (f.versionId) add('u.version_id = ?', f.versionId);
  if (f.channel) add('u.channel = ?', f.channel);
  if (f.status) add('u.status = ?', f.status);
  if (f.campaignId) add('u.campaign_id = ?', f.campaignId);
  if (f.from) add('u.started_at >= ?', f.from);
  if (f.to) add('u.started_at < ?', f.to);
  if (f.simulation !== undefined) add('u.simulation = ?', f.simulation);
  if (f.outcome) add('(u.outcome = ? OR u.analysis_outcome = ?)', f.outcome, f.outcome);
  if (f.q) {
    const like = `%${f.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    add(`EXISTS (SELECT 1 FROM conversation_messages m WHERE m.org_id = ? AND m.conversation_id = u.id AND m.content ILIKE ?)`, orgId, like);
  }
  if (page.cursor) {
    const [at, id] = decodeCursor('conversations', page.cursor, CURSOR) as [string, string];
    add('(u.started_at, u.id) < (?::timestamptz, ?)', at, id);
  }
  // Each part is filtered, ordered and cut to the page on its own, then the parts are merged: the conversations'
  // part then reads its index (org_id, started_at, id) newest first and stops after a page, instead of sorting
  // every conversation of the organization under the union (docs/benchmarks.md "Console").
  const filter = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const cut = (part: string) => `(SELECT * FROM (${part}) u ${filter} ORDER BY u.started_at DESC, u.id DESC LIMIT ?)`;
  const sql = parts.length === 1 ? cut(parts[0]) : `SELECT * FROM (${parts.map(cut).join(' UNION ALL ')}) u ORDER BY u.started_at DESC, u.id DESC LIMIT ?`;
  const perPart = parts.map((_, i) => [...partBindsOf[i], ...binds, page.limit + 1]).flat();
  const res = await db.raw(sql, parts.length === 1 ? perPart : [...perPart, page.limit + 1]);
  const rows: any[] = res.rows;
  const hasMore = rows.length > page.limit;
  const items = rows.slice(0, page.limit).map(toSummary);
  const last = items[items.length - 1];
  return { items, hasMore, nextCursor: hasMore && last ? encodeCursor('conversations', [last.startedAt, last.id]) : null };
}

function toSummary(r: any): ConversationSummary {
  const started = iso(r.started_at);
  const ended = iso(r.ended_at);
  const duration = r.duration_seconds ?? (ended && r.channel !== 'sms' ? Math.round((Date.parse(ended) - Date.parse(started)) / 1000) : null);
  return {
    ...fromColumns(r, ['id', 'channel']),
    agentId: r.agent_id ?? null,
    ...fromColumns(r, ['status', 'simulation']),
    startedAt: started,
    endedAt: ended,
    durationSeconds: duration,
    messageCount: r.message_count,
    ...fromNullableColumns(r, ['campaignId', 'counterpart', 'outcome', 'endReason', 'versionId']),
    trafficSplit: r.traffic_split ?? null,
    totalTokens: Number(r.tokens ?? 0),
    analysis: r.analysis_status ? { status: r.analysis_status, outcome: r.analysis_outcome ?? null, sentiment: r.analysis_sentiment ?? null } : null,
  };
}

/** One conversation (any channel) of the organization, or undefined. */
export async function getConversationSummary(db: Db, orgId: string, id: string): Promise<ConversationSummary | undefined> {
  const thread = parseSmsThreadId(id);
  if (thread) {
    const res = await db.raw(
      `SELECT min(m.created_at) AS started_at, max(m.created_at) AS last_at, count(*)::int AS message_count, (SELECT agent_id FROM phone_numbers WHERE org_id = ? AND e164 = ? AND status = 'purchased' LIMIT 1) AS agent_id
         FROM sms_messages m WHERE m.org_id = ? AND ${OURS} = ? AND ${THEIRS} = ?`,
      [orgId, thread.ours, orgId, thread.ours, thread.counterpart],
    );
    const r = res.rows[0];
    if (!r || !r.message_count) return undefined;
    return toSummary({ id, channel: 'sms', agent_id: r.agent_id, status: 'active', simulation: false, started_at: r.started_at, ended_at: r.last_at, message_count: r.message_count, counterpart: thread.counterpart, tokens: 0 });
  }
  const r = await db('conversations as c')
    .leftJoin('conversation_analyses as a', (j) => j.on('a.conversation_id', 'c.id').andOn('a.org_id', 'c.org_id'))
    .where({ 'c.org_id': orgId, 'c.id': id })
    .first(
      ...['id', 'channel', 'agent_id', 'status', 'simulation', 'started_at', 'ended_at', 'message_count', 'campaign_id', 'counterpart', 'outcome', 'duration_seconds', 'end_reason', 'version_id', 'traffic_split'].map((col) => `c.${col}`),
      db.raw('c.prompt_tokens + c.completion_tokens AS tokens'),
      'a.status as analysis_status',
      'a.outcome as analysis_outcome',
      'a.sentiment as analysis_sentiment',
    );
  return r ? toSummary(r) : undefined;
}

/** The transcript of a conversation: every user and agent message (or text) in order, verbatim. */
export async function transcriptMessages(db: Db, orgId: string, c: ConversationSummary): Promise<TranscriptMessage[]> {
  const thread = parseSmsThreadId(c.id);
  if (thread) {
    const rows = await db.raw(
      `SELECT m.id, m.direction, m.body, m.media_ids, m.created_at FROM sms_messages m
        WHERE m.org_id = ? AND ${OURS} = ? AND ${THEIRS} = ? ORDER BY m.created_at, m.id`,
      [orgId, thread.ours, thread.counterpart],
    );
    return rows.rows.map((m: any) => ({
      id: m.id,
      speaker: m.direction === 'inbound' ? 'contact' : 'agent',
      text: m.body,
      at: iso(m.created_at),
      channel: 'sms',
      attachmentIds: m.media_ids ?? [],
    }));
  }
  const rows = await db('conversation_messages').where({ org_id: orgId, conversation_id: c.id }).whereIn('role', ['user', 'assistant']).whereNotNull('content').orderBy('seq');
  return rows.map(toTranscriptMessage(c.channel));
}

/** A stored user or assistant message as a transcript line: a message named `operator:…` is a member's. */
export function toTranscriptMessage(channel: TranscriptMessage['channel']): (m: any) => TranscriptMessage {
  return (m) => ({
    id: m.id,
    speaker: m.role === 'user' ? 'user' : typeof m.name === 'string' && m.name.startsWith('operator:') ? 'operator' : 'agent',
    text: m.content,
    at: iso(m.created_at),
    channel,
    attachmentIds: [],
  });
}

/** The receipts of a runtime conversation, one per turn (none for SMS threads and calls). */
export async function conversationReceipts(db: Db, orgId: string, c: ConversationSummary): Promise<TurnReceipt[]> {
  return c.id.startsWith('smt_') ? [] : turnReceipts(db, orgId, c.id);
}

/** Figures of one bucket (or of the whole range) as the analytics query returns them. */
type FigureRow = Record<string, unknown>;

function toFigures(r: FigureRow | undefined): AnalyticsFigures {
  const n = (k: string) => Number(r?.[k] ?? 0);
  const ratio = (a: string, b: string) => (n(b) > 0 ? Math.round((n(a) / n(b)) * 10_000) / 10_000 : null);
  return {
    conversations: n('conversations'),
    messages: n('messages'),
    averageDurationSeconds: r?.avg_duration == null ? null : Math.round(Number(r.avg_duration) * 10) / 10,
    p95DurationSeconds: r?.p95_duration == null ? null : Math.round(Number(r.p95_duration) * 10) / 10,
    containmentRate: ratio('contained', 'ended'),
    toolCalls: n('tool_calls'),
    toolCallSuccessRate: ratio('tool_ok', 'tool_calls'),
    guardrailTriggers: n('guardrails'),
    knowledgeHitRate: ratio('hits', 'lookups'),
    llmTokens: n('tokens'),
    costCents: n('cost_cents'),
  };
}

/** Rollup columns summed under the names toFigures reads. */
const ALIAS: Record<string, string> = { tool_calls_ok: 'tool_ok', guardrail_triggers: 'guardrails', knowledge_lookups: 'lookups', knowledge_hits: 'hits' };

/** p95 of durations from a histogram over DURATION_BOUNDS (linear within the bucket; the open last bucket reports its lower bound). */
function p95FromHistogram(h: number[]): number | null {
  const total = h.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const target = 0.95 * total;
  let seen = 0;
  for (let i = 0; i < h.length; i++) {
    if (seen + h[i] >= target) {
      const lo = i === 0 ? 0 : DURATION_BOUNDS[i - 1];
      if (i >= DURATION_BOUNDS.length) return lo;
      return lo + ((target - seen) / h[i]) * (DURATION_BOUNDS[i] - lo);
    }
    seen += h[i];
  }
  return DURATION_BOUNDS[DURATION_BOUNDS.length - 1];
}

/**
 * Analytics over `[from, to)` (docs/api-notes.md "Observe"): the hourly rollup of ended conversations
 * (db/analyticsRollup.ts; simulations left out), the ended ones the rollup sweep has not reached yet and the
 * conversations still active, both read live (one snapshot: a conversation is in exactly one part), bucketed
 * by day — or by hour for ranges up to 48 hours — in `timeZone`, with the totals as the ROLLUP row. The
 * range is applied to whole UTC hours of the conversations' start; p95 duration is interpolated from the
 * rollup's histogram.
 * @param agentId one agent, or every agent of the organization
 */
export async function analytics(db: Db, orgId: string, q: { agentId?: string; from: string; to: string; timeZone: string }): Promise<Analytics> {
  const bucket: 'day' | 'hour' = Date.parse(q.to) - Date.parse(q.from) <= 48 * 3600_000 ? 'hour' : 'day';
  const agent = q.agentId ? 'AND agent_id = ?' : '';
  const agentBind = q.agentId ? [q.agentId] : [];
  const sums = ['conversations', 'ended', 'contained', 'messages', 'duration_count', 'duration_sum', 'tokens', 'tool_calls', 'tool_calls_ok', 'guardrail_triggers', 'knowledge_lookups', 'knowledge_hits', 'cost_cents', ...Array.from({ length: 10 }, (_, i) => `h${i}`)];
  const res = await db.raw(
    `WITH r AS (
       SELECT hour, ${sums.join(', ')}
         FROM conversation_stats_hourly
        WHERE org_id = ? ${agent} AND hour >= date_trunc('hour', ?::timestamptz) AND hour < ?::timestamptz
       UNION ALL
       SELECT hour, ${sums.join(', ')}
         FROM (${rollupSelect(`NOT c.rolled_up AND c.org_id = ? ${agent ? 'AND c.agent_id = ?' : ''} AND c.started_at >= date_trunc('hour', ?::timestamptz) AND c.started_at < ?::timestamptz`)}) AS p(${COLUMNS})
       UNION ALL
       SELECT date_trunc('hour', started_at), 1, 0, 0, message_count, 0, 0, prompt_tokens + completion_tokens, tool_calls, tool_calls_ok,
              guardrail_triggers, knowledge_lookups, knowledge_hits, cost_cents, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
         FROM conversations
        WHERE org_id = ? ${agent} AND status = 'active' AND simulation = false
          AND started_at >= date_trunc('hour', ?::timestamptz) AND started_at < ?::timestamptz
     )
     SELECT to_char(b, ?) AS start, b IS NULL AS total, ${sums.map((c) => `sum(${c}) AS ${ALIAS[c] ?? c}`).join(', ')}
       FROM (SELECT date_trunc(?, hour AT TIME ZONE ?) AS b, * FROM r) x
      GROUP BY ROLLUP (b)
      ORDER BY b NULLS FIRST`,
    [orgId, ...agentBind, q.from, q.to, orgId, ...agentBind, q.from, q.to, orgId, ...agentBind, q.from, q.to, bucket === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM-DD"T"HH24:00', bucket, q.timeZone],
  );
  const figures = (r: FigureRow | undefined): AnalyticsFigures => {
    const n = (k: string) => Number(r?.[k] ?? 0);
    const p95 = p95FromHistogram(Array.from({ length: 10 }, (_, i) => n(`h${i}`)));
    return toFigures({ ...r, avg_duration: n('duration_count') ? n('duration_sum') / n('duration_count') : null, p95_duration: p95 });
  };
  const rows: FigureRow[] = res.rows;
  // Without any conversation, ROLLUP still yields the totals row (zeros).
  const total = rows.find((r) => r.total === true);
  const series = rows.filter((r) => r.total !== true).map((r) => ({ start: String(r.start), ...figures(r) }));
  return { agentId: q.agentId ?? null, from: q.from, to: q.to, timeZone: q.timeZone, bucket, totals: figures(total), series };
}

/**
 * An agent's figures per published version over `[from, to)` (docs/api-notes.md "Traffic splits": analytics by
 * version), read live from the conversations that started in the range (simulations left out; the hourly rollup
 * has no version). Durations are of the ended ones (their recorded duration, else end − start); p95 is exact
 * (`percentile_cont`). Most conversations first.
 */
export async function analyticsByVersion(db: Db, orgId: string, q: { agentId: string; from: string; to: string }): Promise<({ versionId: string; versionNumber: number } & AnalyticsFigures)[]> {
  const dur = `CASE WHEN c.status = 'ended' AND c.ended_at IS NOT NULL THEN coalesce(c.duration_seconds, EXTRACT(EPOCH FROM (c.ended_at - c.started_at))) END`;
  const res = await db.raw(
    `SELECT c.version_id, v.number, count(*) AS conversations, count(*) FILTER (WHERE c.status = 'ended') AS ended,
            count(*) FILTER (WHERE c.status = 'ended' AND coalesce(c.end_reason, '') NOT IN ('transferred', 'escalated')) AS contained,
            sum(c.message_count) AS messages, avg(${dur}) AS avg_duration, percentile_cont(0.95) WITHIN GROUP (ORDER BY ${dur}) AS p95_duration,
            sum(c.tool_calls) AS tool_calls, sum(c.tool_calls_ok) AS tool_ok, sum(c.guardrail_triggers) AS guardrails,
            sum(c.knowledge_lookups) AS lookups, sum(c.knowledge_hits) AS hits, sum(c.prompt_tokens + c.completion_tokens) AS tokens,
            sum(c.cost_cents) AS cost_cents
       FROM conversations c
       JOIN agent_versions v ON v.id = c.version_id AND v.org_id = c.org_id
      WHERE c.org_id = ? AND c.agent_id = ? AND c.version_id IS NOT NULL AND c.simulation = false
        AND c.started_at >= ?::timestamptz AND c.started_at < ?::timestamptz
      GROUP BY c.version_id, v.number
      ORDER BY count(*) DESC, v.number DESC`,
    [orgId, q.agentId, q.from, q.to],
  );
  return (res.rows as FigureRow[]).map((r) => ({ versionId: String(r.version_id), versionNumber: Number(r.number), ...toFigures(r) }));
}
