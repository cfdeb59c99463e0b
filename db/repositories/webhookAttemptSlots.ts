/**
 * Places of webhook attempts in flight (docs/operations.md "Fair sharing"): an attempt calls its
 * receiver only with a place, and an endpoint or an organization holds at most its limit of places at
 * once, across every worker. Every function takes the organization id first.
 */
import type { Db } from '../index';

/** Limits of {@link takeAttemptSlot}. */
export interface AttemptSlotLimits {
  /** Places one endpoint may hold at once. */
  perEndpoint: number;
  /** Places one organization may hold at once. */
  perOrg: number;
  /** How long a place is held at most, ms (an attempt's longest run plus a margin): a dead worker's place frees itself after this. */
  leaseMs: number;
}

/**
 * Takes a place for the attempt of `deliveryId` to `endpointId`, when the endpoint and the organization
 * are both under their limits. The organization's places are counted under a transaction-scoped
 * advisory lock (one taker at a time per organization), expired places are dropped first, and a
 * delivery that holds a place already (a retried activity) keeps it.
 * @returns true when the attempt may call its receiver; false when it must wait for a place
 */
export async function takeAttemptSlot(db: Db, orgId: string, endpointId: string, deliveryId: string, limits: AttemptSlotLimits): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw("SELECT pg_advisory_xact_lock(hashtextextended('webhook-attempt-slots/' || ?, 0))", [orgId]);
    await trx('webhook_attempt_slots').where({ org_id: orgId }).andWhere('expires_at', '<=', trx.fn.now()).delete();
    const [held] = await trx('webhook_attempt_slots')
      .where({ org_id: orgId })
      .andWhereNot({ delivery_id: deliveryId })
      .select(trx.raw('count(*)::int AS org'), trx.raw('(count(*) FILTER (WHERE endpoint_id = ?))::int AS endpoint', [endpointId]));
    if (held.org >= limits.perOrg || held.endpoint >= limits.perEndpoint) return false;
    const expires = trx.raw('now() + make_interval(secs => ?::double precision)', [limits.leaseMs / 1000]);
    await trx('webhook_attempt_slots')
      .insert({ delivery_id: deliveryId, org_id: orgId, endpoint_id: endpointId, expires_at: expires })
      .onConflict('delivery_id')
      .merge({ endpoint_id: endpointId, expires_at: expires });
    return true;
  });
}

/** Gives back the place of the attempt of `deliveryId` (none held is fine). */
export async function releaseAttemptSlot(db: Db, orgId: string, deliveryId: string): Promise<void> {
  await db('webhook_attempt_slots').where({ org_id: orgId, delivery_id: deliveryId }).delete();
}

/** Places the organization holds now, per endpoint (tests, benchmarks, operators). */
export async function attemptSlotsHeld(db: Db, orgId: string): Promise<Map<string, number>> {
  const rows = await db('webhook_attempt_slots').where({ org_id: orgId }).andWhere('expires_at', '>', db.fn.now()).groupBy('endpoint_id').select('endpoint_id', db.raw('count(*)::int AS n'));
  return new Map(rows.map((r: { endpoint_id: string; n: number }) => [r.endpoint_id, r.n]));
}
