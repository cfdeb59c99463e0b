/**
 * One load generator process of bench/http.ts (docs/benchmarks.md), so the generators do not share an
 * event loop with each other, with the benchmark's parent or with the servers. Reads one JSON job from
 * argv[2]: `{ url, method?, body?, keys: string[], connections, seconds, perConnection? }` (each connection sends
 * its own key of `keys` as a Bearer token; none for an empty list; with `perConnection`, connection i cycles
 * through the requests of `perConnection[i % length]` instead of `url`'s), prints `READY`, waits for a line on stdin (so
 * the parent starts every generator at once and reads CPU counters around the load only), runs autocannon
 * (closed loop: each connection sends its next request when the answer came) and prints one JSON line
 * `RESULT {requests, rps, p50, p99, errors, non2xx, cpuMs}`: `requests` counted, latencies in ms, and
 * `cpuMs` the CPU time this process used during the run (from /proc; 0 where it is missing).
 *
 * With `rate` (requests per second) the load is an open loop instead: requests are due at that fixed rate
 * whatever the server's speed, spread evenly over each millisecond's timer tick, each sent on an idle
 * connection (undici's `Client` `dispatch`, one socket each, no pipelining); a request due while every connection waits
 * queues here, and its latency counts from when it was due (no coordinated omission). `rps` is then the rate
 * achieved and `offered` the rate asked: both servers of a comparison see the same arrivals, so each wakes
 * for the same load (docs/benchmarks.md "How the HTTP section measures").
 */
import autocannon from 'autocannon';
import { Client } from 'undici';
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
  /** Open loop at this many requests per second (this generator's share; `perConnection` is not used then); absent: closed loop. */
  rate?: number;
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
  /** The open loop's offered rate (req/s); absent in a closed loop. */
  offered?: number;
}

/** The value at fraction `q` of sorted `xs` (0 for none). */
function quantile(xs: Float64Array, q: number): number {
  return xs.length ? xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] : 0;
}

/**
 * Runs `job` as an open loop at `job.rate` requests per second for `job.seconds` (see the file's comment): opens
 * every connection with one request each, prints READY, waits for the start line like the closed loop.
 * Requests still unanswered at the end are waited for (up to 5 s) and counted; those never sent count as errors.
 */
async function openLoop(job: LoadJob): Promise<LoadResult> {
  const target = new URL(job.url);
  const clients = Array.from({ length: job.connections }, (_, i) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (job.keys.length) headers.authorization = `Bearer ${job.keys[i % job.keys.length]}`;
    return { client: new Client(target.origin, { pipelining: 1 }), headers };
  });
  const path = target.pathname + target.search;
  const method = job.method ?? 'GET';
  // Every connection opened and the client's code warm before READY (outside the measured window).
  await Promise.all(clients.map(async (c) => (await c.client.request({ method, path, headers: c.headers, body: job.body })).body.dump()));
  process.stdout.write('READY\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
  const cpuBefore = processCpu(process.pid)?.ms ?? 0;
  const idle = [...clients];
  const latencies: number[] = [];
  let errors = 0;
  let non2xx = 0;
  let due = 0;
  // Due times of requests waiting for a connection: a queue read from `head`.
  const backlog: number[] = [];
  let head = 0;
  const started = performance.now();
  const endAt = started + job.seconds * 1000;
  const send = (c: (typeof clients)[number], dueAt: number): void => {
    const done = (): void => {
      latencies.push(performance.now() - dueAt);
      if (head < backlog.length) send(c, backlog[head++]);
      else idle.push(c);
    };
    // `dispatch` with callbacks rather than `request`: no body stream per answer, so the generator's own CPU stays low.
    c.client.dispatch(
      { method, path, headers: c.headers, body: job.body },
      // The callbacks a `Client` takes directly (undici's handler interface before its controller form).
      {
        onConnect: () => undefined,
        onHeaders: (statusCode: number) => {
          if (statusCode < 200 || statusCode >= 300) non2xx++;
          return true;
        },
        onData: () => true,
        onComplete: done,
        onError: () => {
          errors++;
          done();
        },
      },
    );
  };
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      const until = Math.min(now, endAt);
      // Requests due by now at the fixed rate, each stamped with its own due time.
      const total = Math.floor(((until - started) * job.rate!) / 1000);
      for (; due < total; due++) {
        const dueAt = started + (due * 1000) / job.rate!;
        const c = idle.pop();
        if (c) send(c, dueAt);
        else backlog.push(dueAt);
      }
      if (now >= endAt) return resolve();
      // Wake when the next request is due (at least 1 ms on): no idle ticks below 1,000 req/s.
      setTimeout(tick, Math.max(1, started + ((due + 1) * 1000) / job.rate! - performance.now()));
    };
    tick();
  });
  const wallMs = performance.now() - started;
  // The answers of requests still in flight (the backlog left is dropped and counted as errors).
  errors += backlog.length - head;
  head = backlog.length;
  const drainUntil = performance.now() + 5000;
  while (idle.length < clients.length && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 5));
  const cpuMs = (processCpu(process.pid)?.ms ?? cpuBefore) - cpuBefore;
  await Promise.all(clients.map((c) => c.client.destroy()));
  const sorted = Float64Array.from(latencies).sort();
  return { requests: latencies.length, rps: (latencies.length * 1000) / wallMs, offered: job.rate, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), errors, non2xx, cpuMs };
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
  if (job.rate) {
    process.stdout.write(`RESULT ${JSON.stringify(await openLoop(job))}\n`);
    return;
  }
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
