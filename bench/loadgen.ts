/**
 * One load generator process of bench/http.ts (docs/benchmarks.md), so the generators do not share an
 * event loop with each other, with the benchmark's parent or with the servers. Reads one JSON job from
 * argv[2]: `{ url, method?, body?, keys: string[], connections, seconds, perConnection? }` (each connection sends
 * its own key of `keys` as a Bearer token; none for an empty list; with `perConnection`, connection i cycles
 * through the requests of `perConnection[i % length]` instead of `url`'s), prints `READY`, waits for a line on stdin (so
 * the parent starts every generator at once and reads CPU counters around the load only), runs autocannon
 * and prints one JSON line
 * `RESULT {requests, rps, p50, p99, errors, non2xx, cpuMs}`: `requests` counted, latencies in ms, and
 * `cpuMs` the CPU time this process used during the run (from /proc; 0 where it is missing).
 */
import autocannon from 'autocannon';
import { processCpu } from './harness';

/** A load generator's job (argv[2], JSON). */
export interface LoadJob {
  url: string;
  method?: 'GET' | 'PUT';
  body?: string;
  keys: string[];
  connections: number;
  seconds: number;
  /** Per connection, the requests it cycles through (path relative to `url`'s origin, method, JSON body). */
  perConnection?: { method: 'GET' | 'POST' | 'PUT'; path: string; body?: string }[][];
}

/** What a load generator prints after `RESULT `. */
export interface LoadResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  cpuMs: number;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]) as LoadJob;
  let next = 0;
  let conn = 0;
  const setupClient = (client: { setHeaders(h: Record<string, string>): void; setRequests(r: object[]): void }) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (job.keys.length) headers.authorization = `Bearer ${job.keys[next++ % job.keys.length]}`;
    const own = job.perConnection?.[conn++ % job.perConnection.length];
    if (own) client.setRequests(own.map((r) => ({ ...r, headers })));
    else client.setHeaders(headers);
  };
  process.stdout.write('READY\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
  const before = processCpu(process.pid)?.ms ?? 0;
  const r = await autocannon({
    url: job.url,
    method: job.method ?? 'GET',
    body: job.body,
    connections: job.connections,
    duration: job.seconds,
    setupClient,
  } as autocannon.Options);
  const cpuMs = (processCpu(process.pid)?.ms ?? before) - before;
  const out: LoadResult = { requests: r.requests.total, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx, cpuMs };
  process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench loadgen: ${String((err as Error)?.message ?? err)}\n`);
    process.exit(1);
  },
);
