/**
 * Places of webhook attempts in flight (docs/operations.md "Fair sharing"): an attempt calls its
 * receiver only with a place, and an endpoint or an organization holds at most its limit of places at
 * once, across every worker. An attempt without a place is noted as waiting; a freed place names the
 * oldest waiter that can take it, so its workflow can be woken. Every function takes the organization id first.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';

/** Limits of {@link takeAttemptSlot}. */
export interface AttemptSlotLimits {
  /** Places one endpoint may hold at once. */
  perEndpoint: number;
  /** Places one organization may hold at once. */
  perOrg: number;
  /** How long a place is held at most, ms (an attempt's longest run plus a margin): a dead worker's place frees itself after this. */
  leaseMs: number;
  /** How long a waiter is remembered, ms (past its longest wait): one whose workflow is gone is forgotten after this. */
  waitMs: number;
}

/** One taker or giver at a time per organization: a transaction-scoped advisory lock on its id. */
const lockOrganization = (trx: Knex.Transaction, orgId: string) => trx.raw("SELECT pg_advisory_xact_lock(hashtextextended('webhook-attempt-slots/' || ?, 0))", [orgId]);

const after = (trx: Knex.Transaction, ms: number) => trx.raw('now() + make_interval(secs => ?::double precision)', [ms / 1000]);

/**
 * Takes a place for the attempt of `deliveryId` to `endpointId`, when the endpoint and the organization
 * are both under their limits; otherwise notes the delivery as waiting (the first time it waits keeps its
 * turn). Expired rows are dropped first; a delivery holding a place already (a retried activity) keeps it.
 * @returns true when the attempt may call its receiver; false when it must wait for a place
 */
export async function takeAttemptSlot(db: Db, orgId: string, endpointId: string, deliveryId: string, limits: AttemptSlotLimits): Promise<boolean> {
  return db.transaction(async (trx) => {
    await lockOrganization(trx, orgId);
    await trx('webhook_attempt_slots').where({ org_id: orgId }).andWhere('expires_at', '<=', trx.fn.now()).delete();
    const [held] = await trx('webhook_attempt_slots')
      .where({ org_id: orgId, waiting: false })
      .andWhereNot({ delivery_id: deliveryId })
      .select(trx.raw('count(*)::int AS org'), trx.raw('(count(*) FILTER (WHERE endpoint_id = ?))::int AS endpoint', [endpointId]));
    const placed = held.org < limits.perOrg && held.endpoint < limits.perEndpoint;
    const expires = after(trx, placed ? limits.leaseMs : limits.waitMs);
    await trx('webhook_attempt_slots')
      .insert({ delivery_id: deliveryId, org_id: orgId, endpoint_id: endpointId, expires_at: expires, waiting: !placed })
      .onConflict('delivery_id')
      // A waiter keeps `since` (its turn); a place is held from now.
      .merge(placed ? { endpoint_id: endpointId, expires_at: expires, waiting: false, since: trx.fn.now() } : { endpoint_id: endpointId, expires_at: expires, waiting: true });
    return placed;
  });
}

/**
 * Gives back the place of the attempt of `deliveryId` (none held is fine) and picks the waiter to wake:
 * the organization's longest-waiting delivery whose endpoint is under `perEndpoint` now, whose waiting row
 * is removed (two freed places never wake the same waiter; it waits again if it finds no place).
 * @returns the delivery to wake, or null when nobody waits for a place it could take
 */
export async function releaseAttemptSlot(db: Db, orgId: string, deliveryId: string, perEndpoint: number): Promise<string | null> {
  return db.transaction(async (trx) => {
    await lockOrganization(trx, orgId);
    await trx('webhook_attempt_slots').where({ org_id: orgId, delivery_id: deliveryId }).delete();
    const next = await trx.raw(
      `DELETE FROM webhook_attempt_slots WHERE org_id = :orgId AND delivery_id = (
         SELECT w.delivery_id FROM webhook_attempt_slots w
          WHERE w.org_id = :orgId AND w.waiting AND w.expires_at > now()
            AND (SELECT count(*) FROM webhook_attempt_slots h
                  WHERE h.org_id = :orgId AND h.endpoint_id = w.endpoint_id AND NOT h.waiting AND h.expires_at > now()) < :perEndpoint
          ORDER BY w.since LIMIT 1)
       RETURNING delivery_id`,
      { orgId, perEndpoint },
    );
    return (next.rows[0]?.delivery_id as string | undefined) ?? null;
  });
}

/** Places the organization holds now, per endpoint (tests, benchmarks, operators). */
export async function attemptSlotsHeld(db: Db, orgId: string): Promise<Map<string, number>> {
  const rows = await db('webhook_attempt_slots')
    .where({ org_id: orgId, waiting: false })
    .andWhere('expires_at', '>', db.fn.now())
    .groupBy('endpoint_id')
    .select('endpoint_id', db.raw('count(*)::int AS n'));
  return new Map(rows.map((r: { endpoint_id: string; n: number }) => [r.endpoint_id, r.n]));
}
