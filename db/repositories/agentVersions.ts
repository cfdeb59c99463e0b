/**
 * Frozen agent versions (spec "Agent versions", "Agent lifecycle", "Versioning"): immutable snapshots
 * numbered per agent from 1, gapless and monotonic (unique (agent_id, number); numbers are taken under
 * the agent's row lock), publish idempotent on (agent, Idempotency-Key) with the request hash stored,
 * rollback that only re-points `agents.published_version_id`.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { AgentVersion } from '../../schemas/types/versions';
import { isUniqueViolation, loadDraftBundle, type Conn, type DraftBundle } from './agents';
import { iso } from '../timestamps';
import { fromColumns } from '../rows';


/** Maps a stored row to the API shape. */
export function toVersion(r: any, publishedVersionId: string | null): AgentVersion {
  return {
    ...fromColumns(r, ['id', 'agentId', 'number']),
    note: r.note ?? null,
    ...fromColumns(r, ['publishedBy', 'draftVersion']),
    isPublished: r.id === publishedVersionId,
    checksum: r.checksum,
    createdAt: iso(r.created_at),
  };
}

async function publishedIdOf(conn: Conn, orgId: string, agentId: string): Promise<string | null | undefined> {
  const row = await conn('agents').where({ org_id: orgId, id: agentId }).first('published_version_id');
  return row ? (row.published_version_id ?? null) : undefined;
}

/** Versions of an agent, newest first; undefined when the agent does not exist. @throws InvalidCursorError */
export async function listVersions(db: Db, orgId: string, agentId: string, page: { limit: number; cursor?: string }): Promise<Page<AgentVersion> | undefined> {
  const published = await publishedIdOf(db, orgId, agentId);
  if (published === undefined) return undefined;
  return keysetPage(
    db('agent_versions').where({ org_id: orgId, agent_id: agentId }).select('id', 'agent_id', 'number', 'note', 'published_by', 'draft_version', 'checksum', 'created_at'),
    { ...page, column: 'number', key: 'int', direction: 'desc', map: (r) => toVersion(r, published) },
  );
}

/** One version of an agent with its snapshot, or undefined. */
export async function getVersion(conn: Conn, orgId: string, agentId: string, versionId: string): Promise<{ version: AgentVersion; snapshot: unknown } | undefined> {
  const r = await conn('agent_versions').where({ org_id: orgId, agent_id: agentId, id: versionId }).first();
  if (!r) return undefined;
  const published = await publishedIdOf(conn, orgId, agentId);
  return { version: toVersion(r, published ?? null), snapshot: r.snapshot };
}

/** The id of an agent's version by number, or undefined. */
export async function versionIdByNumber(conn: Conn, orgId: string, agentId: string, num: number): Promise<string | undefined> {
  const row = await conn('agent_versions').where({ org_id: orgId, agent_id: agentId, number: num }).first('id');
  return row?.id;
}

/** What a publish asks for. */
export interface PublishInput {
  orgId: string;
  agentId: string;
  idempotencyKey: string;
  /** Hash of the request body (note); the same key with another hash is refused. */
  requestHash: string;
  note: string | null;
  /** Credential id of the publisher. */
  publishedBy: string;
}

/** Outcome of a publish. */
export type PublishOutcome =
  | { kind: 'published'; version: AgentVersion; replayed: boolean }
  | { kind: 'invalid'; errors: { field: string; message: string }[] }
  | { kind: 'not_found' }
  | { kind: 'idempotency_key_reused' }
  | { kind: 'publish_conflict' };

/**
 * Compiles and publishes the draft in one transaction: lock the agent row, replay an earlier publish
 * with the same key (or refuse it when the body differs), compile, refuse on validation errors
 * (nothing written), insert version max+1 stamped with publisher and note, point the agent at it.
 * Racing publishes serialize on the row lock and get consecutive numbers; the unique constraints are
 * the last line (a violation answers `publish_conflict`, never a duplicate number).
 * @param compile pure compile step (api/agents/compile.ts) returning the snapshot, its checksum and errors
 * @param onPublished runs in the same transaction after a new version is published (event emission)
 */
export async function publishDraft(
  db: Db,
  input: PublishInput,
  compile: (bundle: DraftBundle) => { snapshot: unknown; checksum: string; errors: { field: string; message: string }[] },
  onPublished?: (trx: Knex.Transaction, version: AgentVersion) => Promise<unknown>,
): Promise<PublishOutcome> {
  const replay = async (conn: Conn): Promise<PublishOutcome | undefined> => {
    const prior = await conn('agent_versions').where({ org_id: input.orgId, agent_id: input.agentId, idempotency_key: input.idempotencyKey }).first();
    if (!prior) return undefined;
    if (prior.request_hash !== input.requestHash) return { kind: 'idempotency_key_reused' };
    return { kind: 'published', version: toVersion(prior, (await publishedIdOf(conn, input.orgId, input.agentId)) ?? null), replayed: true };
  };
  try {
    return await db.transaction(async (trx) => {
      const locked = await trx('agents').where({ org_id: input.orgId, id: input.agentId }).whereNull('archived_at').forUpdate().first('id');
      if (!locked) return { kind: 'not_found' };
      const prior = await replay(trx);
      if (prior) return prior;
      const bundle = await loadDraftBundle(trx, input.orgId, input.agentId);
      if (!bundle) return { kind: 'not_found' };
      const compiled = compile(bundle);
      if (compiled.errors.length) return { kind: 'invalid', errors: compiled.errors };
      const { max } = (await trx('agent_versions').where({ agent_id: input.agentId }).max({ max: 'number' }).first()) as { max: number | null };
      const [row] = await trx('agent_versions')
        .insert({
          id: newId('ver'),
          org_id: input.orgId,
          agent_id: input.agentId,
          number: (max ?? 0) + 1,
          snapshot: JSON.stringify(compiled.snapshot),
          checksum: compiled.checksum,
          draft_version: bundle.agent.version,
          published_by: input.publishedBy,
          note: input.note,
          idempotency_key: input.idempotencyKey,
          request_hash: input.requestHash,
        })
        .returning('*');
      await trx('agents').where({ org_id: input.orgId, id: input.agentId }).update({ published_version_id: row.id });
      const version = toVersion(row, row.id);
      if (onPublished) await onPublished(trx, version);
      return { kind: 'published', version, replayed: false };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'agent_versions_agent_id_idempotency_key_unique')) {
      const prior = await replay(db);
      if (prior) return prior;
    }
    if (isUniqueViolation(err)) return { kind: 'publish_conflict' };
    throw err;
  }
}

/** Outcome of a rollback. */
export type RollbackOutcome =
  | { kind: 'rolled_back'; version: AgentVersion }
  | { kind: 'not_found' }
  | { kind: 'version_not_found' }
  | { kind: 'no_published_version' }
  | { kind: 'not_earlier'; publishedNumber: number; targetNumber: number };

/**
 * Re-points the published version at an earlier frozen version of the same agent, at once and without
 * recompiling (spec "Agent lifecycle"). "Earlier" means a lower number than the published version.
 * @param onRolledBack runs in the same transaction after the re-point (event emission)
 */
export async function rollbackTo(
  db: Db,
  orgId: string,
  agentId: string,
  versionId: string,
  onRolledBack?: (trx: Knex.Transaction, target: AgentVersion, previousVersionId: string) => Promise<unknown>,
): Promise<RollbackOutcome> {
  return db.transaction(async (trx) => {
    const agent = await trx('agents').where({ org_id: orgId, id: agentId }).whereNull('archived_at').forUpdate().first('id', 'published_version_id');
    if (!agent) return { kind: 'not_found' };
    const target = await trx('agent_versions').where({ org_id: orgId, agent_id: agentId, id: versionId }).first();
    if (!target) return { kind: 'version_not_found' };
    if (!agent.published_version_id) return { kind: 'no_published_version' };
    const current = await trx('agent_versions').where({ id: agent.published_version_id }).first('number');
    if (target.number >= current.number) return { kind: 'not_earlier', publishedNumber: current.number, targetNumber: target.number };
    await trx('agents').where({ org_id: orgId, id: agentId }).update({ published_version_id: target.id });
    const version = toVersion(target, target.id);
    if (onRolledBack) await onRolledBack(trx, version, agent.published_version_id);
    return { kind: 'rolled_back', version };
  });
}

/** The organization's talk-token secret if one was ever created (verification never creates one). */
export async function existingTalkTokenSecret(db: Db, orgId: string): Promise<Buffer | undefined> {
  const row = await db('agent_token_secrets').where({ org_id: orgId }).first('secret');
  return row ? Buffer.from(row.secret, 'base64url') : undefined;
}

/**
 * The organization's talk-token signing secret (created on first use; every API process reads the same
 * row, so tokens verify anywhere).
 */
export async function talkTokenSecret(db: Db, orgId: string): Promise<Buffer> {
  const existing = await db('agent_token_secrets').where({ org_id: orgId }).first('secret');
  if (existing) return Buffer.from(existing.secret, 'base64url');
  await db('agent_token_secrets').insert({ org_id: orgId, secret: crypto.randomBytes(32).toString('base64url') }).onConflict('org_id').ignore();
  const row = await db('agent_token_secrets').where({ org_id: orgId }).first('secret');
  return Buffer.from(row.secret, 'base64url');
}

/**
 * Replaces the organization's talk-token secret with a new random one (docs/security.md "Revocation"): every
 * talk token, widget session token and relay reference signed with the old one fails its signature check
 * on its next use, in every API process (each verification reads this row).
 * @returns when it was rotated
 */
export async function rotateTalkTokenSecret(db: Db, orgId: string): Promise<Date> {
  await db('agent_token_secrets')
    .insert({ org_id: orgId, secret: crypto.randomBytes(32).toString('base64url') })
    .onConflict('org_id')
    .merge(['secret']);
  return new Date();
}

/**
 * The widget settings of the agent's published version (`snapshot.widget`, possibly partial or absent in
 * older versions), or undefined when the agent does not exist or was never published.
 */
export async function publishedWidgetSettings(db: Db, orgId: string, agentId: string): Promise<{ settings: unknown } | undefined> {
  const row = await db('agents as a')
    .join('agent_versions as v', 'v.id', 'a.published_version_id')
    .where({ 'a.org_id': orgId, 'a.id': agentId })
    .first(db.raw("v.snapshot -> 'widget' AS widget"));
  return row ? { settings: row.widget ?? null } : undefined;
}

/** The version published with an Idempotency-Key and its stored request hash, or undefined. */
export async function publishedWithKey(db: Db, orgId: string, agentId: string, idempotencyKey: string): Promise<{ versionId: string; requestHash: string } | undefined> {
  const r = await db('agent_versions').where({ org_id: orgId, agent_id: agentId, idempotency_key: idempotencyKey }).first('id', 'request_hash');
  return r ? { versionId: r.id, requestHash: r.request_hash } : undefined;
}

/** An agent as the OpenAI-compatible `GET /models` lists it (api/routes/models.ts). */
export interface AgentModelRow {
  agentId: string;
  /** ISO 8601. */
  createdAt: string;
  /** The published version's number, null when never published. */
  publishedNumber: number | null;
  /** Every frozen version, oldest first (`createdAt` ISO 8601: when it was published). */
  versions: { number: number; createdAt: string }[];
}

/**
 * The organization's agents in creation order with their versions (docs/api-notes.md "OpenAI compatibility": models).
 * Unpaged, as OpenAI's model list is; `agentId` narrows it to one agent.
 */
export async function listAgentModels(db: Db, orgId: string, agentId?: string): Promise<AgentModelRow[]> {
  const agents = await db('agents as a')
    .leftJoin('agent_versions as p', 'p.id', 'a.published_version_id')
    .where({ 'a.org_id': orgId, ...(agentId ? { 'a.id': agentId } : {}) })
    .whereNull('a.archived_at')
    .orderBy('a.seq')
    .select('a.id', 'a.created_at', 'p.number as published_number');
  if (!agents.length) return [];
  const versions = await db('agent_versions')
    .where({ org_id: orgId })
    .whereIn('agent_id', agents.map((a) => a.id))
    .orderBy([{ column: 'agent_id' }, { column: 'number' }])
    .select('agent_id', 'number', 'created_at');
  return agents.map((a) => ({
    agentId: a.id,
    createdAt: iso(a.created_at)!,
    publishedNumber: a.published_number ?? null,
    versions: versions.filter((v) => v.agent_id === a.id).map((v) => ({ number: v.number, createdAt: iso(v.created_at)! })),
  }));
}
