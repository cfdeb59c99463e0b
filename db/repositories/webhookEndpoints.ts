/**
 * Webhook endpoints (docs/api-notes.md "Webhooks and audit logs"): create, list, update, delete, and their
 * signing secrets. Every function takes the organization id first; a row of another organization is
 * invisible (undefined / false), exactly like a missing one. Signing secrets leave the webhook
 * repositories only sealed (see domain/webhooks/signing.ts), and only through `loadDeliveryContext`
 * (webhookDeliveries.ts), which the delivery activity uses.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { WebhookEndpoint } from '../../schemas/types/webhooks';
import type { WebhookEventType } from '../../schemas/types/events';
import { iso } from '../timestamps';

/** Maps a stored endpoint to its API shape (never the secret). */
export function toEndpoint(r: Record<string, any>): WebhookEndpoint {
  return {
    id: r.id,
    url: r.url,
    description: r.description ?? null,
    eventTypes: r.event_types ?? [],
    enabled: r.enabled,
    disabledReason: r.disabled_reason ?? null,
    disabledAt: iso(r.disabled_at),
    failingSince: iso(r.failing_since),
    secretPrefix: r.secret_prefix,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

/** The organization's endpoints that are not deleted. */
export const live = (db: Db | Knex.Transaction, orgId: string) => db('webhook_endpoints').where({ org_id: orgId }).whereNull('deleted_at');

/** Creates an endpoint. `secretSealed` is the sealed `whsec_…` secret. */
export async function createEndpoint(
  db: Db,
  orgId: string,
  input: { url: string; description: string | null; eventTypes: WebhookEventType[]; enabled: boolean; secretSealed: string; secretPrefix: string },
): Promise<WebhookEndpoint> {
  const [row] = await db('webhook_endpoints')
    .insert({
      id: newId('whk'),
      org_id: orgId,
      url: input.url,
      description: input.description,
      event_types: input.eventTypes,
      enabled: input.enabled,
      disabled_reason: input.enabled ? null : 'manual',
      disabled_at: input.enabled ? null : db.fn.now(),
      secret_sealed: input.secretSealed,
      secret_prefix: input.secretPrefix,
    })
    .returning('*');
  return toEndpoint(row);
}

/** One page of the organization's endpoints, oldest first. @throws InvalidCursorError */
export async function listEndpoints(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<WebhookEndpoint>> {
  return keysetPage(live(db, orgId).select('*'), { ...page, column: 'seq', direction: 'asc', map: toEndpoint });
}

/** One endpoint, or undefined (missing, deleted, or another organization's). */
export async function getEndpoint(db: Db, orgId: string, id: string): Promise<WebhookEndpoint | undefined> {
  const row = await live(db, orgId).where({ id }).first();
  return row ? toEndpoint(row) : undefined;
}

/**
 * Updates an endpoint. `enabled: true` clears the disabled reason and the failing period;
 * `enabled: false` disables it with reason `manual` (kept if it was already disabled).
 * @returns the endpoint after the change, or undefined when not found
 */
export async function updateEndpoint(
  db: Db,
  orgId: string,
  id: string,
  patch: { url?: string; description?: string | null; eventTypes?: WebhookEventType[]; enabled?: boolean },
): Promise<WebhookEndpoint | undefined> {
  const set: Record<string, unknown> = { updated_at: db.fn.now() };
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.eventTypes !== undefined) set.event_types = patch.eventTypes;
  if (patch.enabled === true) Object.assign(set, { enabled: true, disabled_reason: null, disabled_at: null, failing_since: null });
  if (patch.enabled === false) {
    Object.assign(set, {
      enabled: false,
      disabled_reason: db.raw("CASE WHEN enabled THEN 'manual' ELSE disabled_reason END"),
      disabled_at: db.raw('CASE WHEN enabled THEN now() ELSE disabled_at END'),
    });
  }
  const [row] = await live(db, orgId).where({ id }).update(set).returning('*');
  return row ? toEndpoint(row) : undefined;
}

/** Deletes an endpoint (soft: its deliveries stop; the history stays in the database). @returns false when not found */
export async function deleteEndpoint(db: Db, orgId: string, id: string): Promise<boolean> {
  const n = await live(db, orgId).where({ id }).update({ deleted_at: db.fn.now(), enabled: false, updated_at: db.fn.now() });
  return n > 0;
}

/**
 * Replaces the signing secret. The previous one keeps signing for `previousTtlSeconds` (0: revoked now).
 * @returns the new prefix and the previous secret's expiry, or undefined when not found
 */
export async function rotateEndpointSecret(
  db: Db,
  orgId: string,
  id: string,
  input: { secretSealed: string; secretPrefix: string; previousTtlSeconds: number },
): Promise<{ secretPrefix: string; previousSecretExpiresAt: string | null } | undefined> {
  const keep = input.previousTtlSeconds > 0;
  const [row] = await live(db, orgId)
    .where({ id })
    .update({
      previous_secret_sealed: keep ? db.ref('secret_sealed') : null,
      previous_secret_expires_at: keep ? db.raw("now() + make_interval(secs => ?)", [input.previousTtlSeconds]) : null,
      secret_sealed: input.secretSealed,
      secret_prefix: input.secretPrefix,
      updated_at: db.fn.now(),
    })
    .returning(['secret_prefix', 'previous_secret_expires_at']);
  return row ? { secretPrefix: row.secret_prefix, previousSecretExpiresAt: iso(row.previous_secret_expires_at) } : undefined;
}

/**
 * Re-seals every stored signing secret of the organization, current and previous, deleted endpoints
 * included, with `reseal` (docs/security.md: after a WEBHOOK_SECRET_KEY rotation, so the previous key
 * can be dropped). One transaction; the rows are locked while they change.
 * @param reseal maps a stored value to its new stored value; may throw (nothing is then written)
 * @returns how many endpoints were rewritten
 */
export async function resealEndpointSecrets(db: Db, orgId: string, reseal: (sealed: string) => string): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('webhook_endpoints').where({ org_id: orgId }).forUpdate().select('id', 'secret_sealed', 'previous_secret_sealed');
    for (const r of rows) {
      await trx('webhook_endpoints')
        .where({ org_id: orgId, id: r.id })
        .update({
          secret_sealed: reseal(r.secret_sealed),
          previous_secret_sealed: r.previous_secret_sealed ? reseal(r.previous_secret_sealed) : null,
        });
    }
    return rows.length;
  });
}
