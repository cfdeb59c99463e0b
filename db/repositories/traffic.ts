/**
 * Traffic splits of agents (migration 20261127000100_traffic_splits; docs/api-notes.md "Traffic splits"): one
 * optional row per agent in `agent_traffic_splits` (none: the default, 100 % on the live version), and the split a
 * call's version was picked from (`voice_calls.traffic_split`). Every function takes the organization id.
 */
import type { Conn } from './agents';
import type { TrafficSplitRule } from '../../domain/agents/traffic';
import { iso } from '../timestamps';
import { runPrepared } from '../preparedQuery';

/** A stored split with when it was set. */
export interface StoredSplit {
  rule: TrafficSplitRule;
  /** ISO 8601. */
  updatedAt: string;
}

/** The agent's published version and stored split, read together; undefined when the agent does not exist. */
export async function agentTraffic(conn: Conn, orgId: string, agentId: string, opts: { lock?: boolean } = {}): Promise<LiveTraffic | undefined> {
  const q = conn('agents as a')
    .leftJoin('agent_traffic_splits as t', function () {
      this.on('t.agent_id', '=', 'a.id').andOn('t.org_id', '=', 'a.org_id');
    })
    .where({ 'a.org_id': orgId, 'a.id': agentId })
    .first('a.published_version_id', 't.splits', 't.stickiness', 't.updated_at');
  const row = await (opts.lock ? q.forUpdate('a') : q);
  return row ? liveTrafficOf(row) : undefined;
}

/** The columns {@link liveTrafficOf} reads, of {@link LIVE_TRAFFIC_FROM}. */
export const LIVE_TRAFFIC_COLUMNS = 'a.published_version_id, t.splits, t.stickiness, t.updated_at';

/** `agents a` with its stored split `t`; a statement adds `a.org_id`, `a.id` and `a.archived_at IS NULL` conditions. */
export const LIVE_TRAFFIC_FROM = 'agents a LEFT JOIN agent_traffic_splits t ON t.org_id = a.org_id AND t.agent_id = a.id';

const LIVE_AGENT_TRAFFIC_SQL = `SELECT ${LIVE_TRAFFIC_COLUMNS} FROM ${LIVE_TRAFFIC_FROM}
      WHERE a.org_id = ? AND a.id = ? AND a.archived_at IS NULL`;

/** What a conversation's start needs of its agent: the published version and the stored split (null: the default). */
export interface LiveTraffic {
  publishedVersionId: string | null;
  stored: StoredSplit | null;
}

/** A row of {@link LIVE_TRAFFIC_COLUMNS} as {@link LiveTraffic}. */
export function liveTrafficOf(row: { published_version_id: string | null; splits: unknown; stickiness: string | null; updated_at: unknown }): LiveTraffic {
  return {
    publishedVersionId: row.published_version_id ?? null,
    stored: row.splits ? { rule: { splits: row.splits as TrafficSplitRule['splits'], stickiness: row.stickiness as TrafficSplitRule['stickiness'] }, updatedAt: iso(row.updated_at as Date)! } : null,
  };
}

/**
 * What starting a conversation needs of an agent (services/conversations/service.ts `startConversation`): its
 * published version and stored split, as {@link agentTraffic} reads them, in one prepared statement and without
 * the skills, playbooks and knowledge counts `getAgent` attaches.
 * @returns undefined when the agent does not exist or is archived (as `getAgent`)
 */
export async function liveAgentTraffic(conn: Conn, orgId: string, agentId: string): Promise<LiveTraffic | undefined> {
  const row = (await runPrepared(conn, LIVE_AGENT_TRAFFIC_SQL, [orgId, agentId])).rows[0];
  return row ? liveTrafficOf(row) : undefined;
}

/** The ids of the agent's frozen (published) versions. */
export async function publishedVersionIds(conn: Conn, orgId: string, agentId: string): Promise<Set<string>> {
  const rows = await conn('agent_versions').where({ org_id: orgId, agent_id: agentId }).select('id');
  return new Set(rows.map((r) => r.id as string));
}

/** Stores (replaces) the agent's split. @returns when it was stored (ISO 8601) */
export async function upsertSplit(conn: Conn, orgId: string, agentId: string, rule: TrafficSplitRule, updatedBy: string | null): Promise<string> {
  const [row] = await conn('agent_traffic_splits')
    .insert({ agent_id: agentId, org_id: orgId, splits: JSON.stringify(rule.splits), stickiness: rule.stickiness, updated_by: updatedBy, updated_at: conn.fn.now() })
    .onConflict('agent_id')
    .merge(['splits', 'stickiness', 'updated_by', 'updated_at'])
    .returning('updated_at');
  return iso(row.updated_at)!;
}

/** Deletes the agent's split (the default applies again). @returns whether one was stored */
export async function deleteSplit(conn: Conn, orgId: string, agentId: string): Promise<boolean> {
  return (await conn('agent_traffic_splits').where({ org_id: orgId, agent_id: agentId }).del()) > 0;
}

/** The split a call's version was picked from, or null (pinned explicitly, or no such call). */
export async function callTrafficSplit(conn: Conn, orgId: string, callId: string): Promise<TrafficSplitRule | null> {
  const row = await conn('voice_calls').where({ org_id: orgId, id: callId }).first('traffic_split');
  return row?.traffic_split ?? null;
}
