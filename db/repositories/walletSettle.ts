/**
 * The settle of deferred usage charges (docs/api-notes.md "Billing": deferred charges): the `wallet_pending_charges`
 * rows a hot statement recorded (./usage.ts `usageDeferredChargeCtes`, an agent's SMS reply) are moved, in one
 * statement per batch, into the append-only ledger (each with the ledger id reserved for it and its running
 * balance) and the wallet's balance (one update of its row), and deleted in that same statement — so a charge is
 * folded exactly once whether the statement commits or not, and a crash leaves it pending for the next settle.
 * The same statement emits `billing.wallet.low` and owes the auto-recharge when the batch crosses a threshold
 * (./usage.ts `walletChargeCtes`, `walletLowEventRow`). Pending rows are locked `FOR UPDATE SKIP LOCKED`, so
 * several processes may settle one organization at once: each folds other rows, in the wallet row's lock order.
 */
import type { Db } from '../index';
import { runPrepared } from '../preparedQuery';
import { NO_ORGANIZATION, prepareOnConnect } from '../groupCommit';
import { eventCtes, EVENTS_NOTIFY_SELECT } from './events';
import { usageOutcome, walletChargeCtes, walletLowEventRow } from './usage';
import type { WalletChange } from './billing';
import type { Knex } from 'knex';

/** Pending charges folded per settle statement (a larger backlog takes several). */
export const SETTLE_BATCH = 1000;

/**
 * Folds up to `limit` of the organization's pending charges, oldest first, into the ledger and the wallet, in one
 * statement on `db` (the pool, or the caller's transaction).
 * @returns how many it folded, and the wallet change of the batch (null when there was none: nothing pending,
 *   or every pending row held by another settle)
 */
export async function settlePendingCharges(db: Db | Knex.Transaction, orgId: string, limit = SETTLE_BATCH): Promise<{ settled: number; charge: WalletChange | null }> {
  const charge = walletChargeCtes(orgId);
  const ev = eventCtes(orgId, [], { extraRows: walletLowEventRow(0) });
  const sql = `WITH us_d AS (
       DELETE FROM wallet_pending_charges p
        USING (SELECT seq FROM wallet_pending_charges WHERE org_id = ? ORDER BY seq LIMIT ? FOR UPDATE SKIP LOCKED) s
        WHERE p.org_id = ? AND p.seq = s.seq
       RETURNING p.usage_entry_id, p.ledger_id, p.kind, p.amount_cents, p.seq
     ),
     us_c AS (
       SELECT us_d.usage_entry_id AS id, us_d.amount_cents, us_d.kind, us_d.ledger_id, us_d.seq AS ord,
              sum(us_d.amount_cents) OVER (ORDER BY us_d.seq) AS cum, sum(us_d.amount_cents) OVER () AS total
         FROM us_d
     ),
     ${charge.sql},
     ${ev.sql}
     SELECT (SELECT count(*) FROM us_l) AS settled,
            json_build_object('inserted', '[]'::json, 'wallet', (SELECT row_to_json(us_w) FROM us_w),
                              'last', (SELECT row_to_json(l) FROM (SELECT * FROM us_l ORDER BY us_l.seq DESC LIMIT 1) l)) AS usage,
            ${EVENTS_NOTIFY_SELECT}`;
  const row = (await runPrepared(db, sql, [orgId, limit, orgId, ...charge.bindings, ...ev.bindings])).rows[0];
  return { settled: Number(row.settled), charge: usageOutcome(row.usage).charge };
}

// The settle an answered text owes (services/billing/settle.ts `settleSoon`) is prepared on each connection the pool opens
// at start, as the text's own statements are: an organization none has folds nothing.
prepareOnConnect((trx) => settlePendingCharges(trx, NO_ORGANIZATION));

/**
 * Organizations with a pending charge recorded more than `minAgeMs` ago (the settle sweep's work: charges a process
 * that stopped or failed before settling left behind). Across organizations: each is then settled by its own id.
 * @param minAgeMs younger charges are left to the process that recorded them, ms
 */
export async function orgsWithPendingCharges(db: Db, minAgeMs: number, limit: number): Promise<string[]> {
  const res = await db.raw(
    `SELECT DISTINCT org_id FROM wallet_pending_charges WHERE created_at < now() - make_interval(secs => ?::float8 / 1000) LIMIT ?`,
    [minAgeMs, limit],
  );
  return res.rows.map((r: { org_id: string }) => r.org_id);
}
