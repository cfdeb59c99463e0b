/**
 * Settling deferred usage charges (docs/api-notes.md "Billing": deferred charges). A hot statement (an agent's SMS
 * reply) records its charge as pending instead of taking the wallet row's lock; this module folds the pending
 * charges into the ledger and the wallet (db/repositories/walletSettle.ts, one statement per batch):
 * 1. {@link settleSoon}, called by the process that recorded a charge right after its commit: one settle of the
 *    organization within `WALLET_SETTLE_DELAY_MS` (default 200 ms), however many charges were recorded meanwhile, and
 *    one at a time per organization in the process;
 * 2. the sweep ({@link startWalletSettleSweep}, beside the worker in `npm start` and `start:worker`): charges older
 *    than 2 s that no settle took (their process stopped or its settle failed). Several may sweep (rows are locked).
 * The balance shown is exact meanwhile (it subtracts the pending charges); `billing.wallet.low` and the
 * auto-recharge fire from the settle that folds the crossing charge.
 */
import type { Logger } from 'pino';
import { envNumber } from '../../config';
import type { Db } from '../../db';
import { startPeriodicSweep, type PeriodicSweep } from '../periodicSweep';
import { orgsWithPendingCharges, settlePendingCharges, SETTLE_BATCH } from '../../db/repositories/walletSettle';

/** Settles owed per organization in this process: whether one is scheduled or running, and whether another is owed after it. */
const owed = new Map<string, { again: boolean; done: Promise<void> }>();

/**
 * Folds every pending charge of the organization (batch after batch).
 * @returns how many charges it folded
 * @throws what the statement throws (the charges stay pending)
 */
export async function settleOrganization(db: Db, orgId: string): Promise<number> {
  let total = 0;
  for (;;) {
    const { settled } = await settlePendingCharges(db, orgId);
    total += settled;
    if (settled < SETTLE_BATCH) return total;
  }
}

/**
 * Owes one settle of the organization's pending charges soon (after `WALLET_SETTLE_DELAY_MS`, default 200 ms), so
 * the charges recorded meanwhile are folded together: one statement per organization per delay, not per charge.
 * Never throws: a settle that fails is logged and left to the sweep.
 * @returns a promise of the settle that will fold the charges recorded before this call (tests, shutdown)
 */
export function settleSoon(db: Db, orgId: string, log?: { warn: (obj: object, msg: string) => void }): Promise<void> {
  const current = owed.get(orgId);
  if (current) {
    current.again = true;
    return current.done;
  }
  const delayMs = envNumber('WALLET_SETTLE_DELAY_MS', 200);
  const state = { again: false, done: Promise.resolve() };
  state.done = (async () => {
    try {
      do {
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
        state.again = false; // a call from here on owes another round: its charge may commit after this statement's snapshot
        await settleOrganization(db, orgId);
      } while (state.again);
    } catch (err) {
      log?.warn({ err, orgId }, 'wallet settle failed; the settle sweep retries it');
    } finally {
      owed.delete(orgId);
    }
  })();
  owed.set(orgId, state);
  return state.done;
}

/**
 * Waits for every settle this process owes (shutdown: the app's `close`, after it stopped taking requests), so a
 * stop never leaves a timer to fire on a closed pool. Never throws.
 */
export async function settlesOwed(): Promise<void> {
  await Promise.all([...owed.values()].map((s) => s.done));
}

/** A running settle sweep: `sweep()` settles every organization with a charge older than the minimum age now and answers how many charges it folded. */
export type WalletSettleSweep = PeriodicSweep;

/**
 * Starts the sweep of pending charges no settle took (run it beside the worker: `npm start`, `start:worker`).
 * @param opts.intervalMs how often it looks, ms (default WALLET_SETTLE_SWEEP_INTERVAL_MS, 1000; 0: only `sweep()`)
 * @param opts.minAgeMs younger charges are left to the process that recorded them, ms (default 2000)
 */
export function startWalletSettleSweep(opts: { db: Db; logger: Logger; intervalMs?: number; minAgeMs?: number }): WalletSettleSweep {
  const intervalMs = opts.intervalMs ?? envNumber('WALLET_SETTLE_SWEEP_INTERVAL_MS', 1000);
  const minAgeMs = opts.minAgeMs ?? 2000;
  const log = opts.logger.child({ component: 'wallet-settle-sweep' });
  return startPeriodicSweep(
    async (stopped) => {
      let total = 0;
      for (const orgId of await orgsWithPendingCharges(opts.db, minAgeMs, 100)) {
        if (stopped()) break;
        total += await settleOrganization(opts.db, orgId);
      }
      return total;
    },
    intervalMs,
    log,
    'wallet settle sweep failed; retrying on the next tick',
  );
}
