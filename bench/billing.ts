/**
 * Billing benchmark (docs/benchmarks.md). One process: an embedded Postgres (`durable: false`), the
 * embedded Temporal dev server (in memory) and a worker with the real billing activities. Prints:
 *  1. month close: BENCH_BILLING_ORGS organizations (default 10,000) with BENCH_BILLING_USAGE usage
 *     entries each (default 10, three kinds) in last month; the time of one `billing-month` run
 *     (`once`) from start to result: every invoice inserted with its `invoice.finalized` event, in
 *     batches of 1,000 organizations per activity. Target < 60 s.
 *  2. wallet writes: top-ups (creditPayment) and usage charges (recordUsage) at concurrency 50 over
 *     100 organizations, per second, and a check that every balance equals its ledger sum.
 * Setup (organizations and usage rows, bulk-inserted in SQL) is not timed.
 *
 * Run: `BENCH_ONLY=billing npm run bench` or `npx tsx bench/billing.ts`.
 */
import crypto from 'node:crypto';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { startBenchStack } from './harness';
import { runBench } from './entry';
import { createBillingActivities } from '../activities/billing';
import { creditPayment, getWallet, ledgerSum } from '../db/repositories/billing';
import { recordUsage } from '../services/billing/usage';
import { periodOf, periodRange, previousPeriod } from '../domain/billing/periods';
import { startWorkflow, taskQueueName } from '../temporal.config';

const ORGS = Number(process.env.BENCH_BILLING_ORGS ?? 10_000);
const USAGE_PER_ORG = Number(process.env.BENCH_BILLING_USAGE ?? 10);
const WALLET_OPS = 4000;

/** Runs the billing section and prints its figures. */
export async function runBillingBench(): Promise<void> {
  const stack = await startBenchStack('billing');
  const { db, client, native } = stack;
  const taskQueue = `bench-billing-${crypto.randomBytes(3).toString('hex')}`;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  try {
    const period = previousPeriod(periodOf(Date.now()));
    const { start } = periodRange(period);
    await db.raw(`INSERT INTO organizations (id, name, created_at) SELECT 'org_bench' || lpad(g::text, 6, '0'), 'Bench ' || g, ? FROM generate_series(1, ?) g`, [start, ORGS]);
    await db.raw(
      `INSERT INTO usage_entries (id, org_id, kind, quantity, unit_price_cents, amount_cents, dedupe_key, created_at)
       SELECT 'use_bench' || o || '_' || u, 'org_bench' || lpad(o::text, 6, '0'), (ARRAY['conversation_message', 'llm_tokens', 'phone_number_purchase'])[1 + u % 3],
              1 + u % 7, 1, 1 + u % 7, 'bench:' || u, ?::timestamptz + ((o * 7 + u) % 600) * interval '1 hour'
       FROM generate_series(1, ?) o, generate_series(1, ?) u`,
      [start, ORGS, USAGE_PER_ORG],
    );
    await db.raw('ANALYZE usage_entries; ANALYZE organizations');
    const expected = Number((await db('usage_entries').sum({ s: 'amount_cents' }).first())!.s);

    // The billing month is bulk work: its queue (temporal.config.ts WORKFLOW_ROUTES).
    worker = await Worker.create({
      connection: native,
      taskQueue: taskQueueName(taskQueue, 'bulk'),
      workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'),
      activities: createBillingActivities({ db }) as never,
    });
    running = worker.run();
    const t0 = performance.now();
    const handle = await startWorkflow({ client, taskQueue }, 'billingMonth', { workflowId: `billing-month-bench-${taskQueue}`, args: [{ period, once: true }], orgId: null });
    const result = await handle.result();
    const seconds = (performance.now() - t0) / 1000;
    const events = Number((await db('events').where({ type: 'invoice.finalized' }).count({ n: '*' }).first())!.n);
    console.log(
      `month close: ${result.invoices} invoices (${ORGS} organizations × ${USAGE_PER_ORG} usage entries) in ${seconds.toFixed(1)} s = ${Math.round(result.invoices / seconds)} invoices/s; ` +
        `total ${result.totalCents} cents (usage ${expected}: ${result.totalCents === expected ? 'equal' : 'MISMATCH'}); ${events} invoice.finalized events; target < 60 s`,
    );

    const orgIds = Array.from({ length: 100 }, (_, i) => `org_bench${String(i + 1).padStart(6, '0')}`);
    let next = 0;
    let topUps = 0;
    let charges = 0;
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        for (let i = next++; i < WALLET_OPS; i = next++) {
          const orgId = orgIds[i % orgIds.length];
          if (i % 2 === 0) {
            await db.transaction((trx) => creditPayment(trx, orgId, { kind: 'topup', amountCents: 1000, paymentId: `pay_bench_${i}` }));
            topUps++;
          } else {
            await recordUsage(db, orgId, { kind: 'conversation_message', amountCents: 7, dedupeKey: `bench-charge:${i}` });
            charges++;
          }
        }
      }),
    );
    const walletSeconds = (performance.now() - t1) / 1000;
    let consistent = true;
    for (const orgId of orgIds) if ((await getWallet(db, orgId)).balanceCents !== (await ledgerSum(db, orgId))) consistent = false;
    console.log(
      `wallet writes: ${topUps} top-ups + ${charges} usage charges over ${orgIds.length} organizations at concurrency 50 in ${walletSeconds.toFixed(1)} s = ${Math.round((topUps + charges) / walletSeconds)} ledger writes/s; balances ${consistent ? 'equal' : 'DIFFER FROM'} their ledger sums`,
    );
  } finally {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await stack.close();
  }
}

if (require.main === module) runBench('bench billing', runBillingBench);
