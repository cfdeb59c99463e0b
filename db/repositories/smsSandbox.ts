/**
 * The sandbox carrier's own records (what a real CSP keeps on its side): one row per brand or
 * campaign with its revision and the outcome the sandbox decided from magic values.
 */
import type { Db } from '../index';

/** A sandbox brand or campaign. */
export interface SandboxCarrierObject {
  id: string;
  orgId: string;
  kind: 'brand' | 'campaign';
  revision: number;
  outcome: string;
  reason: string | null;
  decidedAt: Date;
  provisionedAt: Date | null;
  request: Record<string, any>;
}

const toObject = (r: any): SandboxCarrierObject => ({
  id: r.id,
  orgId: r.org_id,
  kind: r.kind,
  revision: r.revision,
  outcome: r.outcome,
  reason: r.reason ?? null,
  decidedAt: new Date(r.decided_at),
  provisionedAt: r.provisioned_at ? new Date(r.provisioned_at) : null,
  request: r.request,
});

/**
 * Creates the object or updates it with a new revision (verdict again after `delayMs`). `reference` is
 * the client reference it was created with (look-ups by reference).
 * @param provisionDelayMs campaigns: provisioning completes this long after creation (null: never, e.g. rejected)
 */
export async function upsertSandboxObject(
  db: Db,
  orgId: string,
  o: { id: string; kind: 'brand' | 'campaign'; reference?: string; outcome: string; reason: string | null; delayMs: number; provisionDelayMs: number | null; request: unknown },
): Promise<SandboxCarrierObject> {
  const decided = db.raw(`now() + make_interval(secs => ?)`, [o.delayMs / 1000]);
  const provisioned = o.provisionDelayMs === null ? null : db.raw(`now() + make_interval(secs => ?)`, [o.provisionDelayMs / 1000]);
  const [row] = await db('sandbox_carrier_objects')
    .insert({ id: o.id, org_id: orgId, kind: o.kind, reference: o.reference ?? null, revision: 1, outcome: o.outcome, reason: o.reason, decided_at: decided, provisioned_at: provisioned, request: JSON.stringify(o.request) })
    .onConflict('id')
    .merge({
      revision: db.raw('sandbox_carrier_objects.revision + 1'),
      outcome: o.outcome,
      reason: o.reason,
      decided_at: decided,
      provisioned_at: provisioned,
      request: JSON.stringify(o.request),
      updated_at: db.fn.now(),
    })
    .where('sandbox_carrier_objects.org_id', orgId) // never another organization's object
    .returning('*');
  if (!row) throw new Error(`sandbox carrier id ${o.id} belongs to another organization`);
  return toObject(row);
}

/** A sandbox object of the organization, or undefined. */
export async function getSandboxObject(db: Db, orgId: string, id: string): Promise<SandboxCarrierObject | undefined> {
  const row = await db('sandbox_carrier_objects').where({ org_id: orgId, id }).first();
  return row ? toObject(row) : undefined;
}
