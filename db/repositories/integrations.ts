/**
 * Integration connections and pending OAuth authorizations (docs/api-notes.md "Integrations and records"). Every
 * function takes the organization id first, except {@link consumeOAuthState}: an OAuth callback carries
 * no credential, and the state it brings back is what names the organization (RFC 6749 §10.12).
 * Credentials leave this module only sealed (`credentialsSealed`); the API shape never carries them.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { iso } from '../timestamps';
import type { IntegrationStatus, RecordsSyncProgress } from '../../schemas/types/integrations';

type Conn = Db | Knex.Transaction;

/** A stored connection, with its sealed credentials (for providers only; never answered). */
export interface ConnectionRecord {
  id: string;
  orgId: string;
  kind: string;
  accountLabel: string | null;
  scopes: string[];
  credentialsSealed: string;
  /** `sandbox`, `google`, `calcom`: the adapter that serves it (providers/integrations). */
  provider: string;
  /** `connected`, or `needs_reauth` once the provider revoked the grant. */
  status: 'connected' | 'needs_reauth';
  config: Record<string, unknown>;
  lastError: string | null;
  sync: RecordsSyncProgress | null;
  connectedAt: string;
}

function toRecord(r: Record<string, any>): ConnectionRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    kind: r.kind,
    accountLabel: r.account_label ?? null,
    scopes: r.scopes ?? [],
    credentialsSealed: r.credentials_sealed,
    provider: r.provider ?? 'sandbox',
    status: r.status === 'needs_reauth' ? 'needs_reauth' : 'connected',
    config: r.config ?? {},
    lastError: r.last_error ?? null,
    sync: r.sync ?? null,
    connectedAt: iso(r.connected_at)!,
  };
}

/** The API shape of a kind's status (spec scope rule: `integrations:read` sees status only, never tokens). */
export function toStatus(kind: string, c: ConnectionRecord | undefined): IntegrationStatus {
  return {
    kind,
    connected: !!c,
    connectionId: c?.id ?? null,
    accountLabel: c?.accountLabel ?? null,
    scopes: c?.scopes ?? [],
    lastError: c?.lastError ?? null,
    status: c?.status ?? null,
    provider: c?.provider ?? null,
    config: c?.config ?? {},
    sync: c?.sync ?? null,
    connectedAt: c?.connectedAt ?? null,
  };
}

/** Every connection of the organization. */
export async function listConnections(db: Conn, orgId: string): Promise<ConnectionRecord[]> {
  return (await db('integration_connections').where({ org_id: orgId }).orderBy('seq')).map(toRecord);
}

/** The organization's connection of `kind`, or undefined. */
export async function getConnection(db: Conn, orgId: string, kind: string): Promise<ConnectionRecord | undefined> {
  const row = await db('integration_connections').where({ org_id: orgId, kind }).first();
  return row ? toRecord(row) : undefined;
}

/** A connection by id, or undefined (missing or another organization's). */
export async function getConnectionById(db: Conn, orgId: string, id: string): Promise<ConnectionRecord | undefined> {
  const row = await db('integration_connections').where({ org_id: orgId, id }).first();
  return row ? toRecord(row) : undefined;
}

/**
 * Creates the connection of `kind`, or replaces its account, scopes, credentials and provider (a reconnect keeps
 * the id, the provisioned config and the sync progress; it clears the last error and `needs_reauth`).
 */
export async function upsertConnection(
  db: Conn,
  orgId: string,
  input: { kind: string; accountLabel: string; scopes: string[]; credentialsSealed: string; provider?: string },
): Promise<ConnectionRecord> {
  const [row] = await db('integration_connections')
    .insert({
      id: newId('int'),
      org_id: orgId,
      kind: input.kind,
      status: 'connected',
      account_label: input.accountLabel,
      scopes: JSON.stringify(input.scopes),
      credentials_sealed: input.credentialsSealed,
      provider: input.provider ?? 'sandbox',
    })
    .onConflict(['org_id', 'kind'])
    .merge({
      account_label: input.accountLabel,
      scopes: JSON.stringify(input.scopes),
      credentials_sealed: input.credentialsSealed,
      provider: input.provider ?? 'sandbox',
      status: 'connected',
      last_error: null,
      connected_at: db.fn.now(),
      updated_at: db.fn.now(),
    })
    .returning('*');
  return toRecord(row);
}

/** Removes the connection of `kind` (its sealed credentials with it). @returns the removed connection's id, or null */
export async function deleteConnection(db: Conn, orgId: string, kind: string): Promise<string | null> {
  const [row] = await db('integration_connections').where({ org_id: orgId, kind }).delete().returning('id');
  return row?.id ?? null;
}

/** Merges non-secret settings (e.g. `spreadsheetId`) into the connection's config. */
export async function mergeConnectionConfig(db: Conn, orgId: string, id: string, patch: Record<string, unknown>): Promise<void> {
  await db('integration_connections')
    .where({ org_id: orgId, id })
    .update({ config: db.raw('config || ?::jsonb', [JSON.stringify(patch)]), updated_at: db.fn.now() });
}

/** Records (or clears, with null) the connection's last provider error. */
export async function setConnectionError(db: Conn, orgId: string, id: string, error: string | null): Promise<void> {
  await db('integration_connections').where({ org_id: orgId, id }).update({ last_error: error?.slice(0, 1000) ?? null, updated_at: db.fn.now() });
}

/** Replaces the connection's sealed credentials (an OAuth refresh), unless it was marked `needs_reauth` meanwhile. */
export async function updateConnectionCredentials(db: Conn, orgId: string, id: string, credentialsSealed: string): Promise<void> {
  await db('integration_connections').where({ org_id: orgId, id, status: 'connected' }).update({ credentials_sealed: credentialsSealed, updated_at: db.fn.now() });
}

/**
 * Marks the connection `needs_reauth` with the provider's answer as its last error.
 * @returns true when this call changed it (so the caller emits the event once)
 */
export async function markConnectionNeedsReauth(db: Conn, orgId: string, id: string, error: string): Promise<boolean> {
  const n = await db('integration_connections')
    .where({ org_id: orgId, id })
    .whereNot({ status: 'needs_reauth' })
    .update({ status: 'needs_reauth', last_error: error.slice(0, 1000), updated_at: db.fn.now() });
  return n > 0;
}

/** Replaces the sync progress of the connection. */
export async function setSyncProgress(db: Conn, orgId: string, id: string, sync: RecordsSyncProgress): Promise<void> {
  await db('integration_connections').where({ org_id: orgId, id }).update({ sync: JSON.stringify(sync), updated_at: db.fn.now() });
}

/** Stores a begun OAuth authorization: the state's SHA-256, the organization and kind, the sealed PKCE verifier. */
export async function insertOAuthState(
  db: Conn,
  orgId: string,
  input: { stateHash: string; kind: string; codeVerifierSealed: string | null; redirectUri: string; expiresAt: Date },
): Promise<void> {
  await db('integration_oauth_states').insert({
    state_hash: input.stateHash,
    org_id: orgId,
    kind: input.kind,
    code_verifier_sealed: input.codeVerifierSealed,
    redirect_uri: input.redirectUri,
    expires_at: input.expiresAt,
  });
  // Expired states are worth nothing: drop the organization's old ones as new ones arrive.
  await db('integration_oauth_states').where({ org_id: orgId }).where('expires_at', '<', db.raw("now() - interval '1 day'")).delete();
}

/**
 * Marks a state used and returns what it is bound to, once: undefined for an unknown, used, expired
 * state, or one begun for another kind. Atomic, so two callbacks with one state cannot both complete.
 */
export async function consumeOAuthState(
  db: Conn,
  stateHash: string,
  kind: string,
): Promise<{ orgId: string; codeVerifierSealed: string | null; redirectUri: string } | undefined> {
  const [row] = await db('integration_oauth_states')
    .where({ state_hash: stateHash, kind })
    .whereNull('used_at')
    .where('expires_at', '>', db.fn.now())
    .update({ used_at: db.fn.now() })
    .returning(['org_id', 'code_verifier_sealed', 'redirect_uri']);
  return row ? { orgId: row.org_id, codeVerifierSealed: row.code_verifier_sealed ?? null, redirectUri: row.redirect_uri } : undefined;
}

/**
 * Re-seals every stored credential of the organization's connections, and the PKCE verifiers of pending
 * authorizations, with `reseal` (docs/security.md: after a WEBHOOK_SECRET_KEY rotation). One
 * transaction; the rows are locked while they change.
 * @param reseal maps a stored value to its new stored value; may throw (nothing is then written)
 * @returns how many connections were rewritten
 */
export async function resealConnectionCredentials(db: Db, orgId: string, reseal: (sealed: string) => string): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('integration_connections').where({ org_id: orgId }).forUpdate().select('id', 'credentials_sealed');
    for (const r of rows) await trx('integration_connections').where({ org_id: orgId, id: r.id }).update({ credentials_sealed: reseal(r.credentials_sealed) });
    const states = await trx('integration_oauth_states').where({ org_id: orgId }).whereNull('used_at').whereNotNull('code_verifier_sealed').forUpdate().select('state_hash', 'code_verifier_sealed');
    for (const s of states) await trx('integration_oauth_states').where({ org_id: orgId, state_hash: s.state_hash }).update({ code_verifier_sealed: reseal(s.code_verifier_sealed) });
    return rows.length;
  });
}
