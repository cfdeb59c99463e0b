/**
 * Conversation starts written together (docs/sms.md "Agents answer texts"; docs/benchmarks.md "sms-replies"): the
 * starts of one organization asked while its previous start statement runs are inserted by the next one — the
 * conversations, their opening messages and their events (`conversation.started`, then `message.created` per
 * opening user or agent message, as a turn's are: spec "Events") — in one statement, a group commit per
 * organization (db/groupCommit.ts). The events are built from the rows the statement inserted (its RETURNING rows),
 * so the columns the migration defaults (`status`, the counters) are never restated in code. A batch that fails is
 * written again start by start (`PerOrgGroupCommit` isolates failures): only the start at fault fails, e.g. with the
 * unique violation of one open SMS conversation per counterpart (migration 20261126000100_sms_agent_replies).
 * Used by db/repositories/conversations.ts `createConversation`, which maps the rows.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { BATCH_PLANNED_AS_FEW, PerOrgGroupCommit, type GroupCommitStats } from '../groupCommit';
import { eventCtes, EVENTS_NOTIFY_SELECT } from './events';

/** One opening message of a start (a seed message or the greeting), numbered from 0. */
export interface OpeningRow {
  id: string;
  seq: number;
  role: string;
  content: string | null;
  /** The id of its `message.created` event (`evt_…`), or null: no events. */
  event_id: string | null;
}

/** One conversation to insert, in the columns of `conversations` (jsonb columns as values, `started_at` ISO 8601). */
export interface StartRow {
  id: string;
  agent_id: string;
  channel: string;
  mode: string;
  version_id: string | null;
  draft_version: number | null;
  draft_snapshot: unknown;
  simulation: boolean;
  skill_stubs: unknown;
  variables: Record<string, string>;
  metadata: Record<string, unknown>;
  key_id: string | null;
  counterpart: string | null;
  traffic_split: unknown;
  /** ISO 8601 with milliseconds: `started_at`, `last_activity_at` and the opening messages' `created_at`. */
  started_at: string;
  /** The id of its `conversation.started` event (`evt_…`), or null: the start records no events. */
  event_id: string | null;
  opening: OpeningRow[];
}

/** What the statement answers per start: the inserted row (the caller's columns) and its opening messages, by `seq`. */
export interface StartedRow {
  row: Record<string, any>;
  opening: Record<string, any>[];
}

/** A timestamp as JavaScript's `toISOString` writes it (UTC, milliseconds), for event data. */
const isoOf = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** The events of the inserted starts, as rows `(id, ord, type, data, k)` for `eventCtes`' `extraRows`. */
const EVENT_ROWS = `SELECT bx.event_id AS id, bx.k * 100000 AS ord, 'conversation.started'::text AS type,
              jsonb_build_object('conversationId', cv.id, 'agentId', cv.agent_id, 'channel', cv.channel, 'mode', cv.mode,
                                 'versionId', cv.version_id, 'simulation', cv.simulation, 'startedAt', ${isoOf('cv.started_at')}) AS data, NULL::int AS k
         FROM cv JOIN bx ON bx.id = cv.id WHERE bx.event_id IS NOT NULL
       UNION ALL
       SELECT mx.event_id, mx.k * 100000 + 1 + ms.seq, 'message.created'::text,
              jsonb_build_object('conversationId', ms.conversation_id, 'messageId', ms.id, 'agentId', cv.agent_id, 'channel', cv.channel,
                                 'role', ms.role, 'content', ms.content, 'turn', ms.turn, 'createdAt', ${isoOf('ms.created_at')}), NULL::int
         FROM ms JOIN mx ON mx.id = ms.id JOIN cv ON cv.id = ms.conversation_id
        WHERE mx.event_id IS NOT NULL AND ms.role IN ('user', 'assistant') AND coalesce(ms.content, '') <> ''`;

const INSERT_COLUMNS = [
  'id', 'agent_id', 'channel', 'mode', 'version_id', 'draft_version', 'draft_snapshot', 'simulation', 'skill_stubs',
  'variables', 'metadata', 'key_id', 'counterpart', 'traffic_split',
];

/**
 * The start statement returning `recordColumns` of each conversation.
 * Bindings: the batch (json), the organization id, then `eventCtes`' bindings.
 */
function startSql(recordColumns: readonly string[], eventsSql: string): string {
  return `/* conversation start */ WITH bx AS (
       SELECT * FROM jsonb_to_recordset(?::jsonb) AS bx(k int, id text, agent_id text, channel text, mode text, version_id text, draft_version int,
              draft_snapshot jsonb, simulation boolean, skill_stubs jsonb, variables jsonb, metadata jsonb, key_id text, counterpart text,
              traffic_split jsonb, started_at timestamptz, event_id text, opening jsonb)
        WHERE ${BATCH_PLANNED_AS_FEW}
     ),
     cv AS (
       INSERT INTO conversations (${INSERT_COLUMNS.join(', ')}, org_id, message_count, started_at, last_activity_at)
       SELECT ${INSERT_COLUMNS.map((col) => `bx.${col}`).join(', ')}, ?, jsonb_array_length(bx.opening), bx.started_at, bx.started_at
         FROM bx ORDER BY bx.k
       RETURNING ${recordColumns.join(', ')}
     ),
     mx AS (
       SELECT bx.k, bx.id AS conversation_id, o.* FROM bx CROSS JOIN LATERAL jsonb_to_recordset(bx.opening) AS o(id text, seq int, role text, content text, event_id text)
     ),
     ms AS (
       INSERT INTO conversation_messages (id, org_id, conversation_id, seq, turn, role, content, created_at)
       SELECT mx.id, cv.org_id, cv.id, mx.seq, 0, mx.role, mx.content, cv.started_at FROM mx JOIN cv ON cv.id = mx.conversation_id
       RETURNING id, conversation_id, seq, turn, role, content, tool_calls, tool_call_id, name, created_at
     ),
     ${eventsSql}
     SELECT bx.k, cv.*, (SELECT coalesce(json_agg(ms ORDER BY ms.seq), '[]'::json) FROM ms WHERE ms.conversation_id = cv.id) AS opening, ${EVENTS_NOTIFY_SELECT}
       FROM cv JOIN bx ON bx.id = cv.id`;
}

/**
 * The group commit of conversation starts returning `recordColumns` (db/repositories/conversations.ts `RECORD_COLUMNS`).
 * @returns `submit(db, orgId, start)`: resolves with the inserted row once its statement committed; rejects with what
 *   inserting the start alone threw (a unique violation: nothing of it is stored); and the batches' figures
 */
export function conversationStartWriter(recordColumns: readonly string[]): {
  submit(db: Db | Knex.Transaction, orgId: string, start: StartRow): Promise<StartedRow>;
  stats(db: Db): GroupCommitStats;
} {
  const writer = new PerOrgGroupCommit<StartRow, StartedRow>(async (db, orgId, batch) => {
    const ev = eventCtes(orgId, [], { extraRows: { sql: EVENT_ROWS, bindings: [] } });
    const sql = startSql(recordColumns, ev.sql);
    const rows = (await runPrepared(db, sql, [JSON.stringify(batch.map((s, k) => ({ ...s, k }))), orgId, ...ev.bindings])).rows;
    const out: StartedRow[] = new Array(batch.length);
    for (const r of rows) out[r.k] = { row: r, opening: r.opening as Record<string, any>[] };
    return out;
  }, 200, { prepareOnConnect: true });
  return { submit: (db, orgId, start) => writer.submit(db as Knex, orgId, start), stats: (db) => writer.stats(db) };
}
