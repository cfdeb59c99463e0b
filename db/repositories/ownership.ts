/**
 * Ownership of ids named in request bodies and queries (spec "Authentication": the credential decides the
 * organization; DESIGN.md "Tenancy"): one place that answers whether an id of a given kind belongs to an
 * organization, so a route never stores a reference to another organization's resource.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';

/** Resource kinds a body or query may reference, with their table (every one has `id` and `org_id`). */
export const OWNED_TABLES = {
  agent: 'agents',
  agentVersion: 'agent_versions',
  number: 'phone_numbers',
  contactList: 'contact_lists',
  campaign: 'campaigns',
  knowledgeSource: 'knowledge_sources',
  upload: 'uploads',
  webhook: 'webhook_endpoints',
} as const;

/** A kind of referenced resource. */
export type OwnedKind = keyof typeof OWNED_TABLES;

/**
 * The subset of `ids` that exist in the organization.
 * @param ids ids as the request named them (any string; a malformed one is simply not found)
 */
export async function ownedIds(db: Db | Knex.Transaction, orgId: string, kind: OwnedKind, ids: readonly string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  const q = db(OWNED_TABLES[kind]).where({ org_id: orgId }).whereIn('id', [...new Set(ids)]);
  // A deleted agent or knowledge source is kept for history but can no longer be referenced (docs/api-notes.md "Deletes").
  if (kind === 'agent') q.whereNull('archived_at');
  if (kind === 'knowledgeSource') q.whereNull('deleted_at');
  const rows: { id: string }[] = await q.select('id');
  return new Set(rows.map((r) => r.id));
}
