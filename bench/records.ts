/**
 * Records benchmark (docs/benchmarks.md, docs/api-notes.md "Integrations and records"). An embedded Postgres
 * (`durable: false`) and the API over HTTP. BENCH_RECORDS (default 100,000) records of one organization
 * (bulk-inserted in SQL, not timed, plus 10,000 of another organization), then BENCH_RECORDS_RUNS (50)
 * requests of each search through `GET /records` — phone (exact), email (case-insensitive), name
 * (substring), `q` — and `GET /records/{id}`, each with its audit entry. Prints p50/p99 per kind.
 * Target: p99 < 100 ms for phone, email and one record.
 *
 * Run: `BENCH_ONLY=records npm run bench` or `npx tsx bench/records.ts`.
 */
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { startApi } from '../api/server';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { runBench } from './entry';
import { benchCaller, openBenchDatabase } from './harness';

const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000);
const RUNS = Number(process.env.BENCH_RECORDS_RUNS ?? 50);

/** Milliseconds at percentile `p` of `xs`. */
function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs the records section and prints its figures. */
export async function runRecordsBench(): Promise<void> {
  const { db, databaseUrl, close: closeDatabase } = await openBenchDatabase('records', { poolMax: 20 });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 10_000_000 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  try {
    const org = await createOrganization(db, 'Records bench');
    const noise = await createOrganization(db, 'Other records');
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES, rateLimitPoints: 10_000_000 });
    const insert = (orgId: string, prefix: string, n: number) =>
      db.raw(
        `INSERT INTO records (id, org_id, name, phone, email, fields, source, external_id)
         SELECT ?::text || lpad(g::text, 9, '0'), ?, 'Customer ' || g || ' Smith', '+1415' || (2000000 + g), 'customer' || g || '@example.com',
                jsonb_build_object('plan', CASE WHEN g % 2 = 0 THEN 'basic' ELSE 'premium' END), 'csv', '+1415' || (2000000 + g)
           FROM generate_series(1, ?) g`,
        [prefix, orgId, n],
      );
    const t0 = performance.now();
    await insert(org.id, 'rec_bench', RECORDS);
    await insert(noise.id, 'rec_noise', 10_000);
    await db.raw('ANALYZE records');
    console.log(`setup: ${RECORDS} records (+10,000 of another organization) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const call = benchCaller(api.baseUrl, key);
    const time = async (path: (i: number) => string) => {
      const xs: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const s = performance.now();
        const r = await call('GET', path(i));
        if (r.status !== 200) throw new Error(`${path(i)} answered ${r.status}`);
        xs.push(performance.now() - s);
      }
      return xs;
    };
    const n = (i: number) => 1 + ((i * 7919) % RECORDS);
    const rows: [string, number[]][] = [
      ['GET /records?phone=…  (exact)', await time((i) => `/records?phone=%2B1415${2_000_000 + n(i)}`)],
      ['GET /records?email=…  (case-insensitive)', await time((i) => `/records?email=CUSTOMER${n(i)}@EXAMPLE.COM`)],
      ['GET /records?name=…   (substring, limit 50)', await time((i) => `/records?name=customer%20${n(i)}%20`)],
      ['GET /records?q=…      (any of the three)', await time((i) => `/records?q=customer${n(i)}@example.com`)],
      ['GET /records/{id}', await time((i) => `/records/rec_bench${String(n(i)).padStart(9, '0')}`)],
    ];
    for (const [label, xs] of rows) console.log(`  ${label.padEnd(46)} p50 ${percentile(xs, 50).toFixed(1)} ms   p99 ${percentile(xs, 99).toFixed(1)} ms`);
    const audited = Number((await db('audit_logs').where({ org_id: org.id, resource_type: 'record' }).count({ n: '*' }).first())!.n);
    console.log(`  audit entries written for the reads: ${audited} (expected ${rows.length * RUNS}); target p99 < 100 ms for phone, email and one record`);
  } finally {
    await api.close();
    await closeDatabase();
  }
}

if (require.main === module) runBench('records bench', runRecordsBench);
