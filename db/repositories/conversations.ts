/**
 * Conversations, their messages and per-turn receipts (docs/api-notes.md "Conversations"; migration
 * 20261123000100_conversations). Every function takes the organization id. A turn is stored in one
 * transaction guarded by `turn_count` (optimistic lock): two turns racing on one conversation cannot both
 * be stored, and a stored turn never loses its messages, receipt or counters.
 */
import type { Knex } from 'knex';
import { prepared, type Db } from '../index';
import { usageChargeCtes, usageOutcomeSelect, usageRows, walletLowEventRow, type UsageInput } from './usage';
import { eventCtes, EVENTS_SELECT } from './events';
import { derivedId, newId } from '../ids';
import { iso } from '../timestamps';
import { ADD, COLUMNS, rollupSelect } from '../analyticsRollup';
import type { Conn } from './agents';
import type { ChatSession, ConversationChannel, ConversationMessage, TurnReceipt } from '../../schemas/types/chat';
import type { LlmMessage } from '../../domain/conversations/llm';
import type { PlaybookState } from '../../domain/conversations/playbook';
import { rowMapper } from '../rows';
import { AUDIT_COLUMNS, AUDIT_RECORD_COLUMNS, auditRow, type AuditRecord } from './auditLogs';
import { conversationStartWriter } from './conversationStarts';
import { inOrganization, plannedAsFew, NO_ORGANIZATION, PerOrgGroupCommit, prepareOnConnect, type GroupCommitStats } from '../groupCommit';
import { runPrepared } from '../preparedQuery';

/** A conversation row in the shape the runtime and the API use. */
export interface ConversationRecord {
  id: string;
  orgId: string;
  agentId: string;
  channel: ConversationChannel;
  mode: 'published' | 'draft';
  versionId: string | null;
  draftVersion: number | null;
  /** The compiled draft (draft mode only). */
  draftSnapshot: unknown;
  simulation: boolean;
  status: 'active' | 'ended';
  endReason: string | null;
  variables: Record<string, string>;
  playbook: PlaybookState | null;
  metadata: Record<string, string | number | boolean | null>;
  /**
   * Skill name → canned output (docs/evals.md "Skill stubs"); not null: no skill of the conversation reaches a real
   * endpoint (services/conversations/skills.ts). Every simulation and evaluation has stubs (maybe none given: `{}`).
   */
  skillStubs: Record<string, unknown> | null;
  turnCount: number;
  messageCount: number;
  promptTokens: number;
  completionTokens: number;
  startedAt: string;
  endedAt: string | null;
  /**
   * Who took the conversation over (`mem_…` or a key id; docs/api-notes.md "Live control"), or null: while set, the
   * agent does not answer and the person's messages are only stored.
   */
  takenOverBy: string | null;
}

/**
 * A `conversations` row as a record: a mapper declared once (db/rows.ts `rowMapper`), one small read per field and a
 * record of one shape, since every turn reads one and stores one.
 */
export const toRecord: (r: any) => ConversationRecord = rowMapper<ConversationRecord>({
  id: 'value',
  orgId: 'value',
  agentId: 'value',
  channel: 'value',
  mode: 'value',
  versionId: 'nullable',
  draftVersion: 'nullable',
  draftSnapshot: 'nullable',
  simulation: 'value',
  status: 'value',
  endReason: 'nullable',
  variables: 'object',
  playbook: (r) => r.playbook_state ?? null,
  metadata: 'object',
  skillStubs: 'nullable',
  turnCount: 'value',
  messageCount: 'value',
  promptTokens: 'value',
  completionTokens: 'value',
  startedAt: 'iso',
  endedAt: 'iso',
  takenOverBy: 'nullable',
});

/** The columns {@link toRecord} reads. */
export const RECORD_COLUMNS = [
  'id', 'org_id', 'agent_id', 'channel', 'mode', 'version_id', 'draft_version', 'draft_snapshot', 'simulation', 'status', 'end_reason',
  'variables', 'playbook_state', 'metadata', 'skill_stubs', 'turn_count', 'message_count', 'prompt_tokens', 'completion_tokens',
  'started_at', 'ended_at', 'taken_over_by',
];

const ROLL_UP_SQL = `WITH done AS (
       UPDATE conversations c SET rolled_up = true
        WHERE c.id IN (SELECT id FROM conversations WHERE NOT rolled_up AND status = 'ended' LIMIT ? FOR UPDATE SKIP LOCKED)
       RETURNING c.*
     ),
     added AS (
       INSERT INTO conversation_stats_hourly AS s (${COLUMNS}) ${rollupSelect('TRUE', 'done c')}
       ON CONFLICT (org_id, agent_id, hour) DO UPDATE SET ${ADD}
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM done)::int AS n, (SELECT count(*) FROM added)::int AS rows`;

/**
 * Adds up to `limit` ended conversations, not rolled up yet, to the hourly analytics rollup
 * (db/analyticsRollup.ts; simulations are marked but not counted) in one statement, and marks them
 * `rolled_up` (migration 20261124001300): each is counted once, whatever number of sweepers run (rows another
 * sweeper holds are skipped). Deliberately across organizations, like the webhook outbox: the sweep serves
 * every tenant (services/housekeeping.ts).
 * @returns how many conversations it rolled up (fewer than `limit`: none are left)
 */
export async function rollUpEnded(db: Db, limit = 500): Promise<number> {
  const res = await db.raw(ROLL_UP_SQL, [limit]).options(prepared(ROLL_UP_SQL));
  return Number(res.rows[0].n);
}

/** The API shape of a conversation as a chat session (spec "Chat"). */
export function toChatSession(c: ConversationRecord): ChatSession {
  return {
    id: c.id,
    agentId: c.agentId,
    channel: c.channel,
    mode: c.mode,
    versionId: c.versionId,
    draftVersion: c.draftVersion,
    status: c.status,
    endReason: c.endReason,
    variables: c.variables,
    metadata: c.metadata,
    playbook: c.playbook ? { name: c.playbook.playbook, node: c.playbook.node } : null,
    messageCount: c.messageCount,
    usage: { promptTokens: c.promptTokens, completionTokens: c.completionTokens, totalTokens: c.promptTokens + c.completionTokens },
    startedAt: c.startedAt,
    endedAt: c.endedAt,
  };
}

/** A `conversation_messages` row as a message. */
export function toMessage(r: any): ConversationMessage {
  const m: ConversationMessage = { id: r.id, role: r.role, content: r.content ?? null, turn: r.turn, createdAt: iso(r.created_at) };
  if (r.tool_calls) m.toolCalls = r.tool_calls;
  if (r.tool_call_id) m.toolCallId = r.tool_call_id;
  if (r.name) m.name = r.name;
  return m;
}

/** The stored form of a message as the model reads it. */
export function toLlmMessage(m: ConversationMessage): LlmMessage {
  const out: LlmMessage = { role: m.role, content: m.content };
  if (m.toolCalls?.length) out.toolCalls = m.toolCalls;
  if (m.toolCallId) out.toolCallId = m.toolCallId;
  if (m.name) out.name = m.name;
  return out;
}

/** What a new conversation starts with. */
export interface NewConversation
  extends Pick<ConversationRecord, 'agentId' | 'channel' | 'mode' | 'versionId' | 'draftVersion' | 'draftSnapshot' | 'variables' | 'metadata'> {
  /** A chosen id (`cnv_…`; simulations derive theirs), else a new one. */
  id?: string;
  simulation?: boolean;
  /** Skill stubs (simulations and evaluations; ConversationRecord `skillStubs`). */
  skillStubs?: Record<string, unknown> | null;
  keyId: string | null;
  /** The greeting, stored as the last message of turn 0 (null: none). */
  greeting: string | null;
  /** Earlier messages stored first at turn 0 (a `/chat/completions` request's history). */
  seed?: LlmMessage[];
  /** The other party of a voice or SMS conversation, E.164 (listed as the conversation's counterpart). */
  counterpart?: string | null;
  /** The traffic split `versionId` was picked from (domain/agents/traffic.ts); null or absent: pinned explicitly. */
  trafficSplit?: { splits: { versionId: string; percent: number }[]; stickiness: string } | null;
}

/** Called inside the transaction that stores a change, with what was stored (events are emitted here). */
export type OnConversationChange = (trx: Knex.Transaction, change: { conversation: ConversationRecord; messages: ConversationMessage[] }) => Promise<unknown>;

const starts = conversationStartWriter(RECORD_COLUMNS);

/** The start batches `db` ran so far (the benchmarks' figures). */
export const startBatchStats = (db: Db): GroupCommitStats => starts.stats(db);

/**
 * Starts a conversation with its opening messages (a `/chat/completions` seed, then the greeting) and, with
 * `opts.events`, their events (`conversation.started`, `message.created`) built from the rows stored: one statement
 * shared with the organization's other starts of the moment (db/repositories/conversationStarts.ts, a group commit;
 * atomic without a transaction of its own). A text from a new sender starts one on the SMS hot path
 * (docs/benchmarks.md "sms-replies"). `started_at`, `last_activity_at` and the messages' `created_at` are the API's
 * clock at the call; the record is the row as stored (RETURNING), column defaults included.
 * @throws what inserting it alone throws, e.g. a unique violation of the one open SMS conversation per counterpart
 *   (nothing of it is stored then; the other starts of its batch are written without it)
 */
export async function createConversation(
  db: Db,
  orgId: string,
  c: NewConversation,
  opts: { events?: boolean } = {},
): Promise<{ conversation: ConversationRecord; greeting: ConversationMessage | null }> {
  const opening: LlmMessage[] = [...(c.seed ?? []), ...(c.greeting === null ? [] : [{ role: 'assistant' as const, content: c.greeting }])];
  const { row, opening: stored } = await starts.submit(db, orgId, {
    id: c.id ?? newId('cnv'),
    agent_id: c.agentId,
    channel: c.channel,
    mode: c.mode,
    version_id: c.versionId,
    draft_version: c.draftVersion,
    draft_snapshot: c.draftSnapshot,
    simulation: c.simulation ?? false,
    skill_stubs: c.skillStubs ?? null,
    variables: c.variables,
    metadata: c.metadata,
    key_id: c.keyId,
    counterpart: c.counterpart ?? null,
    traffic_split: c.trafficSplit ?? null,
    started_at: new Date().toISOString(),
    event_id: opts.events ? newId('evt') : null,
    opening: opening.map((m, seq) => ({ id: newId('cmsg'), seq, role: m.role, content: m.content, event_id: opts.events ? newId('evt') : null })),
  });
  const messages = stored.map(toMessage);
  return { conversation: toRecord(row), greeting: c.greeting === null ? null : messages[messages.length - 1] };
}

/**
 * The open `sms` conversation of an agent with a counterpart (at most one: a partial unique index), with the
 * time of its last activity. Published, non-simulated conversations only.
 */
export async function findOpenSmsConversation(conn: Conn, orgId: string, agentId: string, counterpart: string): Promise<(ConversationRecord & { lastActivityAt: string }) | undefined> {
  const r = await conn('conversations').where({ org_id: orgId, agent_id: agentId, counterpart, channel: 'sms', status: 'active', mode: 'published', simulation: false }).first();
  return r ? { ...toRecord(r), lastActivityAt: new Date(r.last_activity_at ?? r.started_at).toISOString() } : undefined;
}

/** Records a call's connected seconds on its conversation (listed as the conversation's duration). */
export async function setConversationDuration(conn: Conn, orgId: string, id: string, durationSeconds: number): Promise<void> {
  await conn('conversations').where({ org_id: orgId, id }).update({ duration_seconds: Math.max(0, Math.round(durationSeconds)) });
}

/** One conversation of the organization, or undefined. */
export async function getConversation(conn: Conn, orgId: string, id: string): Promise<ConversationRecord | undefined> {
  const r = await conn('conversations').where({ org_id: orgId, id }).first();
  return r ? toRecord(r) : undefined;
}

// Messages are numbered 0 … message_count - 1 (createConversation, saveTurns), so the window is an index range of
// (conversation_id, seq): it costs the window, not the conversation's whole history.
/**
 * A turn's read names the columns {@link toRecord} and {@link toMessage} read, not every column: each column more
 * is one more field pg describes and parses, and one more key of every message's JSON, on every turn.
 */
const WITH_HISTORY_SQL = `/* turn read */ SELECT bx.k, ${RECORD_COLUMNS.map((col) => `c.${col}`).join(', ')}, (SELECT coalesce(json_agg(x ORDER BY x.seq), '[]'::json)
                    FROM (SELECT m.id, m.seq, m.turn, m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.created_at
                            FROM conversation_messages m WHERE m.org_id = c.org_id AND m.conversation_id = c.id
                             AND m.seq >= greatest(c.message_count - bx.lim, bx.from_seq) ORDER BY m.seq DESC LIMIT bx.lim) x) AS recent
       FROM jsonb_to_recordset(?::jsonb) AS bx(k int, id text, from_seq int, lim int)
       JOIN conversations c ON c.id = bx.id AND ${inOrganization('c.org_id', '?')}
      WHERE ${plannedAsFew('bx')}`;

interface HistoryRead {
  id: string;
  historyLimit: number;
  fromSeq: number;
}

// An organization's turn reads of the moment share one statement (db/groupCommit.ts `PerOrgGroupCommit`: the first
// goes at once, those that arrive while it runs go together next), each item answered from its own row: one round
// trip and one statement for many turns, instead of one each (docs/benchmarks.md "chat").
const historyReads = new PerOrgGroupCommit<HistoryRead, (ConversationRecord & { recent: ConversationMessage[] }) | undefined>(
  async (db, orgId, batch) => {
    const items = batch.map((b, k) => ({ k, id: b.id, from_seq: b.fromSeq, lim: b.historyLimit }));
    const { rows } = await runPrepared(db, WITH_HISTORY_SQL, [JSON.stringify(items), orgId]);
    const out: ((ConversationRecord & { recent: ConversationMessage[] }) | undefined)[] = batch.map(() => undefined);
    for (const r of rows) out[r.k] = { ...toRecord(r), recent: (r.recent as any[]).map(toMessage) };
    return out;
  },
  200,
  { prepareOnConnect: true },
);

/**
 * A conversation with its last `historyLimit` messages (oldest first), in one round trip shared with the
 * organization's other turn reads of the moment (a prepared statement; in a transaction, a statement of its own there).
 * @param fromSeq read no message numbered below it (the caller holds those: services/conversations/history.ts)
 * @returns undefined when the organization has no such conversation
 */
export function getConversationWithHistory(
  conn: Conn,
  orgId: string,
  id: string,
  historyLimit: number,
  fromSeq = 0,
): Promise<(ConversationRecord & { recent: ConversationMessage[] }) | undefined> {
  return historyReads.submit(conn, orgId, { id, historyLimit, fromSeq });
}

/** The turn-read batches `db` ran so far (the benchmarks' figures). */
export const turnReadStats = (db: Db): GroupCommitStats => historyReads.stats(db);

/** The last `limit` messages of a conversation, oldest first. */
export async function recentMessages(conn: Conn, orgId: string, conversationId: string, limit: number): Promise<ConversationMessage[]> {
  const rows = await conn('conversation_messages').where({ org_id: orgId, conversation_id: conversationId }).orderBy('seq', 'desc').limit(limit);
  return rows.reverse().map(toMessage);
}

/** Every message of a conversation, oldest first (transcripts). */
export async function allMessages(conn: Conn, orgId: string, conversationId: string): Promise<ConversationMessage[]> {
  const rows = await conn('conversation_messages').where({ org_id: orgId, conversation_id: conversationId }).orderBy('seq');
  return rows.map(toMessage);
}

/** Every turn receipt of a conversation, in turn order. */
export async function turnReceipts(conn: Conn, orgId: string, conversationId: string): Promise<TurnReceipt[]> {
  const rows = await conn('conversation_turns').where({ org_id: orgId, conversation_id: conversationId }).orderBy('turn');
  return rows.map((r) => r.receipt as TurnReceipt);
}

/** What a turn stores. */
export interface StoredTurn {
  messages: LlmMessage[];
  receipt: TurnReceipt;
  promptTokens: number;
  completionTokens: number;
  model: string | null;
  variables: Record<string, string>;
  playbook: PlaybookState | null;
  /** Ends the conversation with this reason. */
  end: string | null;
  /** Counters added to the conversation for analytics (migration 20261123000500_conversation_stats). */
  stats: { toolCalls: number; toolCallsOk: number; guardrailTriggers: number; knowledgeLookups: number; knowledgeHits: number; costCents: number };
}

/** What else a stored turn writes in its statement (services/conversations/service.ts). */
export interface TurnEffects {
  /** The change's events (validated), given the conversation and messages exactly as they will be stored. */
  events: (change: { conversation: ConversationRecord; messages: ConversationMessage[] }) => { type: string; data: Record<string, unknown> }[];
  /** Usage entries, each charged to the wallet; `billing.wallet.low` joins the events on a crossing. */
  usage: UsageInput[];
}

/** One turn to store with {@link saveTurns}: the conversation as read when the turn began, the turn, its effects. */
export interface TurnWrite {
  c: ConversationRecord;
  turn: StoredTurn;
  effects?: TurnEffects;
  /** The request's audit entry (api/middleware/audit.ts `pendingAuditEntry`), stored by the same statement when (and only when) the turn is. */
  audit?: AuditRecord;
}

/** The audit entry's values as {@link saveTurns} inserts them: its organization is the stored conversation's. */
const AUDIT_VALUES = AUDIT_COLUMNS.split(', ').map((col) => (col === 'org_id' ? 'u.org_id' : `a.${col}`)).join(', ');

/** A stored turn: the updated conversation and the stored messages; `conflict` when nothing was written. */
export type SavedTurn = { conversation: ConversationRecord; messages: ConversationMessage[] } | 'conflict';

/**
 * Stores turns of one organization in one statement (one round trip and one commit for all of them). Per
 * turn: the conversation's new counters, variables and playbook state guarded by its turn and message counts
 * (optimistic lock), the messages numbered after the last, the receipt, and the turn's events and charged usage ({@link TurnEffects});
 * a turn whose guard fails writes nothing, its events and usage included. The wallet's row is updated once for
 * all the turns' charges (each still gets its ledger row with its running balance), so the turns of one
 * organization stored together never wait for each other on it.
 * @param writes turns of `orgId`'s conversations (two turns of one conversation: at most one is stored)
 * @returns per write, in order, the stored turn or `conflict` (another turn was stored meanwhile, or the
 *   conversation ended)
 */
export async function saveTurns(db: Db, orgId: string, writes: readonly TurnWrite[]): Promise<SavedTurn[]> {
  const now = new Date().toISOString();
  const convRows: Record<string, unknown>[] = [];
  const msgRows: Record<string, unknown>[] = [];
  const usage: (UsageInput & { k: number })[] = [];
  const events: { type: string; data: Record<string, unknown>; k: number }[] = [];
  writes.forEach(({ c, turn, effects, audit }, k) => {
    if (c.orgId !== orgId) throw new Error(`saveTurns: conversation ${c.id} is not of organization ${orgId}`);
    const messages: ConversationMessage[] = turn.messages.map((m) => {
      const out: ConversationMessage = { id: newId('cmsg'), role: m.role as ConversationMessage['role'], content: m.content, turn: c.turnCount + 1, createdAt: now };
      if (m.toolCalls?.length) out.toolCalls = m.toolCalls;
      if (m.toolCallId) out.toolCallId = m.toolCallId;
      if (m.name) out.name = m.name;
      return out;
    });
    const expected: ConversationRecord = {
      ...c,
      turnCount: c.turnCount + 1,
      messageCount: c.messageCount + messages.length,
      promptTokens: c.promptTokens + turn.promptTokens,
      completionTokens: c.completionTokens + turn.completionTokens,
      variables: turn.variables,
      playbook: turn.playbook,
      ...(turn.end ? { status: 'ended' as const, endReason: turn.end, endedAt: now } : {}),
    };
    const st = turn.stats;
    convRows.push({
      k, id: c.id, turn_count: c.turnCount, message_count: c.messageCount, add_messages: messages.length,
      prompt_tokens: turn.promptTokens, completion_tokens: turn.completionTokens, variables: turn.variables, playbook: turn.playbook,
      tool_calls: st.toolCalls, tool_calls_ok: st.toolCallsOk, guardrail_triggers: st.guardrailTriggers, knowledge_lookups: st.knowledgeLookups,
      knowledge_hits: st.knowledgeHits, cost_cents: st.costCents, end_reason: turn.end, receipt: turn.receipt, model: turn.model,
      a: audit ? auditRow(orgId, audit) : null,
    });
    messages.forEach((m, ord) =>
      msgRows.push({ k, id: m.id, ord, role: m.role, content: m.content, tool_calls: m.toolCalls ?? null, tool_call_id: m.toolCallId ?? null, name: m.name ?? null }),
    );
    if (effects) {
      for (const u of effects.usage) usage.push({ ...u, k });
      for (const e of effects.events({ conversation: expected, messages })) events.push({ ...e, k });
    }
  });
  const gate = 'ev_x.k IS NULL OR ev_x.k IN (SELECT k FROM u)';
  const charges = usageChargeCtes(orgId, usageRows(usage), 'us_x.k IN (SELECT k FROM u)');
  const ev = eventCtes(orgId, events, { gate, extraRows: walletLowEventRow(events.length) });
  const sql = `WITH x AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS x(k int, id text, turn_count int, message_count int, add_messages int, prompt_tokens int,
              completion_tokens int, variables jsonb, playbook jsonb, tool_calls int, tool_calls_ok int, guardrail_triggers int,
              knowledge_lookups int, knowledge_hits int, cost_cents int, end_reason text, receipt jsonb, model text, a jsonb)
        WHERE ${plannedAsFew('x')}
     ),
     u AS (
       -- Each written row read by its primary key (db/groupCommit.ts BATCH_PLANNED_AS_FEW, inOrganization).
       UPDATE conversations c
          SET turn_count = c.turn_count + 1, message_count = c.message_count + x.add_messages, prompt_tokens = c.prompt_tokens + x.prompt_tokens,
              completion_tokens = c.completion_tokens + x.completion_tokens, variables = x.variables, playbook_state = x.playbook,
              last_activity_at = now(), tool_calls = c.tool_calls + x.tool_calls, tool_calls_ok = c.tool_calls_ok + x.tool_calls_ok,
              guardrail_triggers = c.guardrail_triggers + x.guardrail_triggers, knowledge_lookups = c.knowledge_lookups + x.knowledge_lookups,
              knowledge_hits = c.knowledge_hits + x.knowledge_hits, cost_cents = c.cost_cents + x.cost_cents,
              status = CASE WHEN x.end_reason IS NULL THEN c.status ELSE 'ended' END,
              end_reason = coalesce(x.end_reason, c.end_reason),
              ended_at = CASE WHEN x.end_reason IS NULL THEN c.ended_at ELSE ?::timestamptz END
         FROM x
        WHERE c.id = x.id AND ${inOrganization('c.org_id', '?')} AND c.turn_count = x.turn_count AND c.message_count = x.message_count
          AND c.status = 'active'
       RETURNING c.*, x.k, x.add_messages
     ),
     m AS (
       INSERT INTO conversation_messages (id, org_id, conversation_id, seq, turn, role, content, tool_calls, tool_call_id, name, created_at)
       SELECT mx.id, u.org_id, u.id, u.message_count - u.add_messages + mx.ord, u.turn_count, mx.role, mx.content, mx.tool_calls, mx.tool_call_id, mx.name, ?::timestamptz
         FROM u JOIN jsonb_to_recordset(?::jsonb) AS mx(k int, id text, ord int, role text, content text, tool_calls jsonb, tool_call_id text, name text) ON mx.k = u.k
       RETURNING *
     ),
     t AS (
       INSERT INTO conversation_turns (org_id, conversation_id, turn, receipt, prompt_tokens, completion_tokens, model)
       SELECT u.org_id, u.id, u.turn_count, x.receipt, x.prompt_tokens, x.completion_tokens, x.model FROM u JOIN x ON x.k = u.k
       RETURNING turn
     ),
     au AS (
       INSERT INTO audit_logs (${AUDIT_COLUMNS})
       SELECT ${AUDIT_VALUES} FROM u JOIN x ON x.k = u.k CROSS JOIN LATERAL jsonb_to_record(x.a) AS a(${AUDIT_RECORD_COLUMNS}) WHERE x.a IS NOT NULL
     ),
     ${charges.sql},
     ${ev.sql}
     SELECT (SELECT coalesce(json_agg(u.*), '[]'::json) FROM u) AS convs,
            (SELECT coalesce(json_agg(m ORDER BY m.conversation_id, m.seq), '[]'::json) FROM m) AS messages,
            (SELECT count(*) FROM t) AS turns,
            ${usageOutcomeSelect},
            ${EVENTS_SELECT}`;
  const bindings: Knex.RawBinding[] = [JSON.stringify(convRows), now, orgId, now, JSON.stringify(msgRows), ...charges.bindings, ...ev.bindings];
  const row = (await db.raw(sql, bindings).options(prepared(sql))).rows[0];
  const byK = new Map<number, Record<string, any>>();
  for (const r of row.convs as Record<string, any>[]) byK.set(r.k, r);
  const msgs = new Map<string, ConversationMessage[]>();
  for (const r of row.messages as Record<string, any>[]) {
    const list = msgs.get(r.conversation_id) ?? [];
    list.push(toMessage(r));
    msgs.set(r.conversation_id, list);
  }
  return writes.map((_, k) => {
    const r = byK.get(k);
    return r ? { conversation: toRecord(r), messages: msgs.get(r.id) ?? [] } : 'conflict';
  });
}

// A turn's statement is prepared on each connection the pool opens at start (texts and chat turns store theirs with it).
prepareOnConnect((trx) => saveTurns(trx, NO_ORGANIZATION, []));

/**
 * Ends an active conversation.
 * @returns the ended conversation; the stored one unchanged when it had ended already; undefined when it does not exist
 */
export async function endConversation(db: Db, orgId: string, id: string, reason: string, onChange?: OnConversationChange): Promise<ConversationRecord | undefined> {
  return db.transaction(async (trx) => {
    const [row] = await trx('conversations')
      .where({ org_id: orgId, id, status: 'active' })
      // An idle end keeps the last activity, and the conversation's length is up to it (as the idle sweep's).
      .update(
        reason === 'idle'
          ? { status: 'ended', end_reason: reason, ended_at: trx.fn.now(), duration_seconds: trx.raw('coalesce(duration_seconds, greatest(0, round(extract(epoch FROM last_activity_at - started_at)))::int)') }
          : { status: 'ended', end_reason: reason, ended_at: trx.fn.now(), last_activity_at: trx.fn.now() },
      )
      .returning('*');
    if (!row) return getConversation(trx, orgId, id);
    const conversation = toRecord(row);
    if (onChange) await onChange(trx, { conversation, messages: [] });
    return conversation;
  });
}

const END_IDLE_SQL = `WITH due AS (
       SELECT c.id
         FROM conversations c
         LEFT JOIN agent_versions v ON v.id = c.version_id
        WHERE c.status = 'active' AND c.channel IN ('chat', 'web', 'sms')
          AND c.started_at < ?::timestamptz - make_interval(secs => ?)
          AND c.last_activity_at < ?::timestamptz - make_interval(secs => ?)
          AND c.last_activity_at < ?::timestamptz - make_interval(secs => coalesce(
                (coalesce(v.snapshot, c.draft_snapshot) ->> CASE WHEN c.channel = 'sms' THEN 'smsIdleTimeoutSeconds' ELSE 'idleTimeoutSeconds' END)::int,
                CASE WHEN c.channel = 'sms' THEN ?::int ELSE ?::int END))
        ORDER BY c.started_at
        LIMIT ?
          FOR UPDATE OF c SKIP LOCKED
     )
     UPDATE conversations c
        SET status = 'ended', end_reason = 'idle', ended_at = now(),
            duration_seconds = coalesce(c.duration_seconds, greatest(0, round(extract(epoch FROM c.last_activity_at - c.started_at)))::int)
       FROM due
      WHERE c.id = due.id
     RETURNING c.*`;

/**
 * Ends up to `limit` open chat, widget and SMS conversations nobody wrote in for their agent's idle timeout
 * (`idleTimeoutSeconds`, `smsIdleTimeoutSeconds` of the pinned version or draft; the defaults for a version that
 * predates them: domain/conversations/limits.ts) with `end_reason` `idle`, in one transaction with `onEnded`
 * (their events). Across organizations, like the rollup sweep: one statement serves every tenant, and rows another
 * sweeper holds are skipped (`FOR UPDATE … SKIP LOCKED`), so several processes may sweep at once and each
 * conversation is ended once. `ended_at` is when the sweep ended it; `duration_seconds` is the time up to the last
 * activity (the silence is not counted as the conversation's length).
 * @param now the time the timeouts are measured to (a parameter so tests need not wait)
 * @param defaults the idle timeouts of a version that names none, seconds
 * @returns the conversations ended (fewer than `limit`: none are left as of `now`)
 */
export async function endIdleConversations(
  db: Db,
  opts: { now: Date; limit: number; shortestTimeoutSeconds: number; defaults: { chatSeconds: number; smsSeconds: number } },
  onEnded?: (trx: Knex.Transaction, ended: ConversationRecord[]) => Promise<unknown>,
): Promise<ConversationRecord[]> {
  const at = opts.now.toISOString();
  return db.transaction(async (trx) => {
    const res = await trx.raw(END_IDLE_SQL, [at, opts.shortestTimeoutSeconds, at, opts.shortestTimeoutSeconds, at, opts.defaults.smsSeconds, opts.defaults.chatSeconds, opts.limit]);
    const ended = (res.rows as any[]).map(toRecord);
    if (ended.length && onEnded) await onEnded(trx, ended);
    return ended;
  });
}

/**
 * Records one campaign dial as a `voice` conversation (mode `none`) with its outcome and duration, in the
 * caller's transaction; the id derives from the dial's key, so recording twice stores one row.
 * @param dialKey the provider idempotency key of the dial (`{attemptId}:{dialNumber}`)
 * @param conversationId the conversation the call held, when known now (a voicemail left: docs/voice.md "Voicemail"), kept as `metadata.conversationId`
 */
export async function recordCallConversation(
  trx: Knex.Transaction,
  orgId: string,
  call: { dialKey: string; agentId: string; campaignId: string; counterpart: string; outcome: string; durationSeconds: number; startedAt: Date; providerCallId: string; conversationId?: string | null },
): Promise<void> {
  const id = derivedId('cnv', `${orgId}:${call.dialKey}`);
  await trx('conversations')
    .insert({
      id,
      org_id: orgId,
      agent_id: call.agentId,
      channel: 'voice',
      mode: 'none',
      status: 'ended',
      end_reason: call.outcome,
      campaign_id: call.campaignId,
      counterpart: call.counterpart,
      outcome: call.outcome,
      duration_seconds: call.durationSeconds,
      metadata: JSON.stringify({ providerCallId: call.providerCallId, dialKey: call.dialKey, ...(call.conversationId ? { conversationId: call.conversationId } : {}) }),
      started_at: call.startedAt,
      ended_at: new Date(call.startedAt.getTime() + call.durationSeconds * 1000),
      last_activity_at: new Date(call.startedAt.getTime() + call.durationSeconds * 1000),
    })
    .onConflict('id')
    .ignore();
}
