/**
 * Webhook outbox admission benchmark (docs/benchmarks.md, docs/operations.md "Fair sharing"): the time of one admission
 * sweep's query (db/repositories/events.ts `lockOutboxBatch`, in its transaction) with organization A's backlog of
 * BENCH_OUTBOX_BACKLOG rows (default 2,000 and 10,000) over 20 endpoints, A at its organization's limit of admitted
 * deliveries, and a second organization with one row per endpoint behind A's: the sweep should cost what it admits
 * (the second organization's rows), not A's backlog.
 */
import { openBenchDatabase, percentile } from './harness';
import { runBench } from './entry';
import { createOrganization } from '../db/repositories/organizations';
import { createEndpoint } from '../db/repositories/webhookEndpoints';
import { lockOutboxBatch } from '../db/repositories/events';
import { emitEvent } from '../events/emit';

const BACKLOGS = (process.env.BENCH_OUTBOX_BACKLOG ?? '2000,10000').split(',').map(Number);
const SWEEPS = 60;
const ADMISSION = { perEndpoint: 4, perOrg: 8, leaseMs: 300_000 };

/** Runs the webhook-outbox section and prints its figures. */
export async function runWebhookOutboxBench(): Promise<void> {
  for (const backlog of BACKLOGS) {
    const { db, close } = await openBenchDatabase(`outbox${backlog}`);
    try {
      const orgs: string[] = [];
      for (const name of ['A', 'B']) {
        const org = await createOrganization(db, name);
        orgs.push(org.id);
        for (let i = 0; i < 20; i++) await createEndpoint(db, org.id, { url: `https://hooks.example/${name}/${i}`, description: null, eventTypes: ['call.completed'], enabled: true, secretSealed: 'sealed', secretPrefix: 'whsec_x' });
      }
      const at = new Date().toISOString();
      const data = (i: number) => ({ callId: `call_${i}`, direction: 'outbound', from: '+15550001111', to: '+15550002222', startedAt: at, endedAt: at, durationSeconds: 30 }) as never;
      for (let e = 0; e < backlog / 20; e++) await emitEvent(db, orgs[0], 'call.completed', data(e));
      await emitEvent(db, orgs[1], 'call.completed', data(backlog));
      // A's oldest 8 started and waiting for their first attempt: A is at its limit.
      await db.raw('UPDATE webhook_deliveries SET admitted_run = run, admitted_at = now() WHERE id IN (SELECT delivery_id FROM webhook_outbox WHERE org_id = ? ORDER BY id LIMIT 8)', [orgs[0]]);
      await db.raw('DELETE FROM webhook_outbox WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE admitted_run IS NOT NULL)');
      await db.raw('ANALYZE');
      const ms: number[] = [];
      let admitted = 0;
      for (let i = 0; i < SWEEPS; i++) {
        const t0 = performance.now();
        // Rolled back: every sweep sees the same outbox.
        await db
          .transaction(async (trx) => {
            admitted = (await lockOutboxBatch(trx, 100, ADMISSION)).length;
            throw new Error('rollback');
          })
          .catch(() => undefined);
        ms.push(performance.now() - t0);
      }
      console.log(`outbox of ${backlog + 20} rows (A ${backlog} at its limit, B 20): one admission sweep ${percentile(ms, 50).toFixed(2)} ms median, ${percentile(ms, 90).toFixed(2)} ms p90 (transaction included; ${SWEEPS} sweeps); it admits ${admitted} rows (B's 8)`);
    } finally {
      await close();
    }
  }
}

if (require.main === module) runBench('bench webhook-outbox', runWebhookOutboxBench);
