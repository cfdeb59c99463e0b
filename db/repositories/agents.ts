/**
 * Agent drafts (spec "Agent lifecycle": every edit goes to the draft). One row per agent; `version` is
 * the draft version, bumped by every edit of the agent or of its parts (skills, playbooks, guardrails,
 * caller verification, voice) so that `If-Match` covers the whole draft. Optimistic concurrency is done
 * in SQL: `UPDATE … WHERE version = $expected`.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { AgentVariable, AnalysisSettings, WidgetSettings } from '../../schemas/types/agents';
import type { CallerVerification, Guardrails } from '../../schemas/types/guardrails';
import { iso } from '../timestamps';
import { rowMapper } from '../rows';
import type { AgentProfile, AgentRecord, DraftBundle, KnowledgeSourceSummary } from '../../domain/agents/types';
import { variableRefs } from './variables';
import { DEFAULT_CONVERSATION_LIMITS, type ConversationLimits } from '../../domain/conversations/limits';
import { CAMPAIGN_STATUSES_HOLDING_AGENT } from '../../domain/agents/deletes';

export type { AgentRecord, DraftBundle, KnowledgeSourceSummary } from '../../domain/agents/types';

/** Knex handle or transaction. */
export type Conn = Db | Knex.Transaction;



/** Columns an edit may set (API name → column). JSON columns are serialized on write. */
const FIELD_COLUMNS = {
  name: 'name',
  description: 'description',
  persona: 'persona',
  instructions: 'instructions',
  greeting: 'greeting',
  voicemailMessage: 'voicemail_message',
  outboundGreeting: 'outbound_greeting',
  outboundFirstMessageMode: 'outbound_first_message_mode',
  language: 'language',
  voiceId: 'voice_id',
  dtmf: 'dtmf',
  variables: 'variables',
  guardrails: 'guardrails',
  callerVerification: 'caller_verification',
  widget: 'widget',
  analysis: 'analysis',
  idleTimeoutSeconds: 'idle_timeout_seconds',
  smsIdleTimeoutSeconds: 'sms_idle_timeout_seconds',
  smsMaxSegments: 'sms_max_segments',
  model: 'model',
  temperature: 'temperature',
  maxTokens: 'max_tokens',
  fallbackModel: 'fallback_model',
  timeZone: 'time_zone',
} as const;
const JSON_FIELDS = new Set(['dtmf', 'variables', 'guardrails', 'callerVerification', 'widget', 'analysis']);

/** Editable agent fields. */
export type AgentFields = Partial<AgentProfile & { guardrails: Guardrails; callerVerification: CallerVerification; widget: WidgetSettings; analysis: AnalysisSettings } & ConversationLimits>;

/** The name is taken by another agent of the organization (maps to 409 `duplicate_name`). */
export class DuplicateNameError extends Error {
  readonly entity: string;
  readonly takenName: string;
  constructor(entity: string, name: string) {
    super(`${entity} name "${name}" is already used`);
    this.name = 'DuplicateNameError';
    this.entity = entity;
    this.takenName = name;
  }
}

/** True for a Postgres unique violation (optionally on one constraint/index). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (!constraint || e.constraint === constraint);
}


function columnsOf(fields: AgentFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    const col = FIELD_COLUMNS[k as keyof typeof FIELD_COLUMNS];
    if (!col || v === undefined) continue;
    out[col] = JSON_FIELDS.has(k) ? JSON.stringify(v) : v;
  }
  return out;
}

const SELECT_AGENT = (conn: Conn) =>
  conn('agents as a')
    .leftJoin('agent_versions as v', 'v.id', 'a.published_version_id')
    .select('a.*', 'v.number as published_number', 'v.draft_version as published_draft_version');

async function hasTable(conn: Conn, name: string): Promise<boolean> {
  const r = await conn.raw('SELECT to_regclass(?) AS t', [name]);
  return !!r.rows[0]?.t;
}

/** The agent's own columns; {@link attach} adds its skills, playbooks and knowledge count. */
const toAgentSettings = rowMapper<Omit<AgentRecord, 'skills' | 'playbooks' | 'knowledgeSourceCount' | 'createdAt' | 'updatedAt'>>({
  id: 'value',
  orgId: 'value',
  name: 'value',
  description: 'nullable',
  persona: 'nullable',
  instructions: 'nullable',
  greeting: 'nullable',
  voicemailMessage: 'nullable',
  outboundGreeting: 'nullable',
  outboundFirstMessageMode: (r) => r.outbound_first_message_mode ?? 'agent_speaks_first',
  idleTimeoutSeconds: (r) => r.idle_timeout_seconds ?? DEFAULT_CONVERSATION_LIMITS.idleTimeoutSeconds,
  smsIdleTimeoutSeconds: (r) => r.sms_idle_timeout_seconds ?? DEFAULT_CONVERSATION_LIMITS.smsIdleTimeoutSeconds,
  smsMaxSegments: (r) => r.sms_max_segments ?? DEFAULT_CONVERSATION_LIMITS.smsMaxSegments,
  language: 'value',
  voiceId: 'nullable',
  dtmf: 'value',
  variables: 'value',
  guardrails: 'value',
  callerVerification: 'value',
  widget: 'object',
  analysis: (r) => r.analysis ?? { fields: [] },
  model: 'nullable',
  temperature: 'nullable',
  maxTokens: 'nullable',
  fallbackModel: 'nullable',
  timeZone: 'nullable',
  version: 'value',
  publishedVersionId: 'nullable',
  publishedVersionNumber: (r) => r.published_number ?? null,
  publishedDraftVersion: 'nullable',
});

async function attach(conn: Conn, orgId: string, rows: any[]): Promise<AgentRecord[]> {
  if (!rows.length) return [];
  const ids = rows.map((r) => r.id);
  // Sequential: `conn` may be a transaction, whose one connection must not run queries concurrently.
  const skills = await conn('agent_skills').where({ org_id: orgId }).whereIn('agent_id', ids).orderBy('seq').select('id', 'agent_id', 'name', 'type');
  const playbooks = await conn('agent_playbooks').where({ org_id: orgId }).whereIn('agent_id', ids).orderBy('seq').select('id', 'agent_id', 'name');
  const knowledge = new Map<string, number>();
  const counts = await conn('knowledge_sources').where({ org_id: orgId }).whereIn('agent_id', ids).whereNull('deleted_at').groupBy('agent_id').select('agent_id').count({ n: '*' });
  for (const c of counts as any[]) knowledge.set(c.agent_id, Number(c.n));
  return rows.map((r) => ({
    ...toAgentSettings(r),
    skills: skills.filter((s: any) => s.agent_id === r.id).map((s: any) => ({ id: s.id, name: s.name, type: s.type })),
    playbooks: playbooks.filter((p: any) => p.agent_id === r.id).map((p: any) => ({ id: p.id, name: p.name })),
    knowledgeSourceCount: knowledge.get(r.id) ?? 0,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  }));
}

/** The agent, or undefined when it does not exist in this organization. */
export async function getAgent(conn: Conn, orgId: string, agentId: string): Promise<AgentRecord | undefined> {
  // An archived (deleted) agent is gone from the API and from live traffic (docs/api-notes.md "Deletes").
  const row = await SELECT_AGENT(conn).where({ 'a.org_id': orgId, 'a.id': agentId }).whereNull('a.archived_at').first();
  return row ? (await attach(conn, orgId, [row]))[0] : undefined;
}

/** Agents of the organization in creation order. @throws InvalidCursorError */
export async function listAgents(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<AgentRecord>> {
  const p = await keysetPage(SELECT_AGENT(db).where({ 'a.org_id': orgId }).whereNull('a.archived_at'), {
    ...page,
    column: 'a.seq',
    map: (r) => r,
  });
  return { ...p, items: await attach(db, orgId, p.items) };
}

/**
 * Creates an agent at draft version 1.
 * @throws DuplicateNameError when the name (case-insensitive) is taken in the organization
 */
export async function createAgent(db: Db, orgId: string, fields: AgentFields & { name: string }): Promise<AgentRecord> {
  const id = newId('agt');
  try {
    await db('agents').insert({ id, org_id: orgId, ...columnsOf(fields) });
  } catch (err) {
    if (isUniqueViolation(err, 'agents_org_name_unique')) throw new DuplicateNameError('agent', fields.name);
    throw err;
  }
  return (await getAgent(db, orgId, id))!;
}

/** Outcome of a conditional draft update. */
export type UpdateOutcome =
  | { kind: 'updated'; agent: AgentRecord }
  | { kind: 'not_found' }
  | { kind: 'version_conflict'; agent: AgentRecord };

/**
 * Applies `fields` to the draft when its version is still `expectedVersion` (null: any version, as
 * `If-Match: *`), bumping the version: `UPDATE agents … WHERE version = $expected`.
 * @throws DuplicateNameError on a name taken by another agent
 */
export async function updateAgent(db: Db, orgId: string, agentId: string, expectedVersion: number | null, fields: AgentFields): Promise<UpdateOutcome> {
  const q = db('agents').where({ org_id: orgId, id: agentId }).whereNull('archived_at');
  if (expectedVersion !== null) q.andWhere({ version: expectedVersion });
  let n: number;
  try {
    n = await q.update({ ...columnsOf(fields), version: db.raw('version + 1'), updated_at: db.fn.now() });
  } catch (err) {
    if (isUniqueViolation(err, 'agents_org_name_unique')) throw new DuplicateNameError('agent', fields.name ?? '');
    throw err;
  }
  const agent = await getAgent(db, orgId, agentId);
  if (!agent) return { kind: 'not_found' };
  if (n === 0) return { kind: 'version_conflict', agent };
  return { kind: 'updated', agent };
}

/** The agent columns an `editDraft` callback sees (after the version bump). */
export interface DraftHead {
  id: string;
  /** The new draft version. */
  version: number;
  language: string;
  variables: AgentVariable[];
  voiceId: string | null;
  callerVerification: Partial<CallerVerification>;
}

/**
 * Runs `edit` inside one transaction that first bumps the draft version of the agent (locking its row),
 * so an edit of a part of the draft (skill, playbook, guardrails, voice) is one atomic draft change.
 * @param expectedVersion when given, the edit only happens at that draft version
 * @returns `not_found`, `version_conflict` (with the current agent) or the edit's result and the new version
 */
export async function editDraft<T>(
  db: Db,
  orgId: string,
  agentId: string,
  edit: (trx: Knex.Transaction, agent: DraftHead) => Promise<T>,
  expectedVersion: number | null = null,
): Promise<{ kind: 'ok'; result: T; version: number } | { kind: 'not_found' } | { kind: 'version_conflict'; agent: AgentRecord }> {
  const out = await db.transaction(async (trx) => {
    const q = trx('agents').where({ org_id: orgId, id: agentId }).whereNull('archived_at');
    if (expectedVersion !== null) q.andWhere({ version: expectedVersion });
    const [row] = await q.update({ version: trx.raw('version + 1'), updated_at: trx.fn.now() }).returning(['id', 'version', 'language', 'variables', 'voice_id', 'caller_verification']);
    if (!row) return undefined;
    const result = await edit(trx, {
      id: row.id,
      version: row.version,
      language: row.language,
      variables: row.variables,
      voiceId: row.voice_id ?? null,
      callerVerification: row.caller_verification,
    });
    return { kind: 'ok' as const, result, version: row.version as number };
  });
  if (out) return out;
  const agent = await getAgent(db, orgId, agentId);
  return agent ? { kind: 'version_conflict', agent } : { kind: 'not_found' };
}

/** Sets agent columns inside an `editDraft` transaction (guardrails, caller verification, voice). */
export async function setAgentFields(trx: Knex.Transaction, orgId: string, agentId: string, fields: AgentFields): Promise<void> {
  await trx('agents').where({ org_id: orgId, id: agentId }).update(columnsOf(fields));
}


let knowledgeColumns: string[] | undefined;

/**
 * Knowledge sources of an agent with chunk counts, read from the knowledge area's `knowledge_sources`
 * (and `knowledge_chunks`) tables when they exist; an empty list otherwise. Column names are read
 * defensively because the knowledge area owns that schema.
 */
export async function knowledgeSummary(conn: Conn, orgId: string, agentId: string): Promise<KnowledgeSourceSummary[]> {
  if (!knowledgeColumns) {
    if (!(await hasTable(conn, 'knowledge_sources'))) return [];
    const cols: string[] = await conn('information_schema.columns').where({ table_name: 'knowledge_sources', table_schema: conn.raw('current_schema()') }).pluck('column_name');
    // Cached once found: the schema does not change under a running process (absence is not cached).
    knowledgeColumns = ['id', 'kind', 'type', 'source_type', 'name', 'title', 'url', 'file_name', 'filename', 'status', 'chunk_count'].filter((c) => cols.includes(c));
  }
  const wanted = knowledgeColumns;
  // A deleted source has left the draft (its chunks stay for the versions that list it).
  const rows: any[] = await conn('knowledge_sources').where({ org_id: orgId, agent_id: agentId }).whereNull('deleted_at').select(wanted);
  const chunkCounts = new Map<string, number>();
  if (rows.length && rows.every((r) => r.chunk_count === undefined) && (await hasTable(conn, 'knowledge_chunks'))) {
    const chunkCols: string[] = await conn('information_schema.columns').where({ table_name: 'knowledge_chunks' }).pluck('column_name');
    const fk = chunkCols.includes('source_id') ? 'source_id' : chunkCols.includes('knowledge_source_id') ? 'knowledge_source_id' : null;
    if (fk) {
      const counts = await conn('knowledge_chunks').whereIn(fk, rows.map((r) => r.id)).groupBy(fk).select(fk).count({ n: '*' });
      for (const c of counts as any[]) chunkCounts.set(c[fk], Number(c.n));
    }
  }
  return rows
    .map((r) => ({
      id: String(r.id),
      kind: r.kind ?? r.type ?? r.source_type ?? null,
      title: String(r.title ?? r.name ?? r.url ?? r.file_name ?? r.filename ?? r.id),
      status: String(r.status ?? 'unknown'),
      chunkCount: Number(r.chunk_count ?? chunkCounts.get(r.id) ?? 0),
    }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}


/** Loads the draft with its skills, playbooks and knowledge (inside a transaction for a consistent read). */
export async function loadDraftBundle(conn: Conn, orgId: string, agentId: string): Promise<DraftBundle | undefined> {
  const agent = await getAgent(conn, orgId, agentId);
  if (!agent) return undefined;
  const skills = await conn('agent_skills').where({ org_id: orgId, agent_id: agentId }).orderBy('seq');
  const playbooks = await conn('agent_playbooks').where({ org_id: orgId, agent_id: agentId }).orderBy('seq');
  const knowledge = await knowledgeSummary(conn, orgId, agentId);
  const orgVariables = await variableRefs(conn, orgId);
  const escalationDestinationIds = new Set<string>(await conn('escalation_destinations').where({ org_id: orgId }).pluck('id'));
  return {
    agent,
    skills: skills.map((s: any) => ({ id: s.id, name: s.name, type: s.type, description: s.description ?? null, config: s.config })),
    playbooks: playbooks.map((p: any) => ({
      id: p.id,
      name: p.name,
      description: p.description ?? null,
      graph: p.graph,
      whenToUse: p.when_to_use ?? null,
      triggerPhrases: p.trigger_phrases ?? [],
      requiresVerifiedCaller: p.requires_verified_caller ?? false,
    })),
    knowledge,
    orgVariables,
    escalationDestinationIds,
  };
}

/** What archiving (deleting) an agent found (docs/api-notes.md "Deletes"). */
export type AgentArchiveOutcome =
  | { kind: 'not_found' }
  | { kind: 'campaign_running'; campaignIds: string[] }
  | { kind: 'archived'; agent: AgentRecord; archivedAt: string; unassignedNumberIds: string[]; revokedPublishableKeyIds: string[] };

/**
 * Archives an agent in one transaction (docs/api-notes.md "Deletes"): refused while one of its campaigns runs or is
 * paused; otherwise `archived_at` is set (writes and `GET /agents/{id}` answer 404 from then on, its name is free),
 * its numbers are unassigned and its publishable keys revoked (the key cache follows the change feed). Versions,
 * conversations and their analyses are kept for Observe and audit. `inTransaction` runs last (the event).
 */
export async function archiveAgent(
  db: Db,
  orgId: string,
  agentId: string,
  inTransaction: (trx: Knex.Transaction, out: Extract<AgentArchiveOutcome, { kind: 'archived' }>) => Promise<unknown>,
): Promise<AgentArchiveOutcome> {
  return db.transaction(async (trx) => {
    const locked = await trx('agents').where({ org_id: orgId, id: agentId }).whereNull('archived_at').forUpdate().first('id');
    if (!locked) return { kind: 'not_found' as const };
    const agent = (await getAgent(trx, orgId, agentId))!;
    const campaignIds: string[] = await trx('campaigns').where({ org_id: orgId, agent_id: agentId }).whereIn('status', [...CAMPAIGN_STATUSES_HOLDING_AGENT]).orderBy('seq').pluck('id');
    if (campaignIds.length) return { kind: 'campaign_running' as const, campaignIds };
    const [{ archived_at }] = await trx('agents').where({ org_id: orgId, id: agentId }).update({ archived_at: trx.fn.now(), updated_at: trx.fn.now() }).returning('archived_at');
    const numbers = await trx('phone_numbers').where({ org_id: orgId, agent_id: agentId }).update({ agent_id: null, updated_at: trx.fn.now() }).returning('id');
    const keys = await trx('api_keys').where({ org_id: orgId, agent_id: agentId, kind: 'publishable' }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() }).returning('id');
    const out = {
      kind: 'archived' as const,
      agent,
      archivedAt: (archived_at as Date).toISOString(),
      unassignedNumberIds: numbers.map((r: { id: string }) => r.id).sort(),
      revokedPublishableKeyIds: keys.map((r: { id: string }) => r.id).sort(),
    };
    await inTransaction(trx, out);
    return out;
  });
}
