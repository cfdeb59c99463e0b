/**
 * The counterparts of bench/smsReplies.ts (docs/benchmarks.md "sms-replies") in a process of their own, so the
 * load generator's CPU (the HTTP client, the signing) is not counted in the service's CPU per text. Reads one JSON
 * job from argv[2]: `{ url, to, senders: string[], rate, total }` — `total` signed sandbox `message.inbound`
 * callbacks to `url`, paced at `rate` per second, the i-th from `senders[i % length]` to `to`, signed with the
 * callback secret of this process's environment (CARRIER_CALLBACK_SECRET, inherited from the bench). Prints `READY`,
 * waits for a line on stdin (the bench reads its CPU counters around the load only), sends, and prints one JSON line
 * `RESULT {offeredS, acceptedS, unsent, firstUnsent, cpuMs}`: the seconds from the first send to the last one sent and
 * to the last answer, the callbacks the saturated service did not accept (their texts were never stored, so no reply is owed), the first
 * such error, and this process's CPU (ms, from /proc; 0 where it is missing) during the load.
 */
import http from 'node:http';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../domain/sms/callbackSignature';
import { processCpu } from './harness';

/** The sender's job (argv[2], JSON). */
export interface SmsSenderJob {
  url: string;
  to: string;
  senders: string[];
  /** Texts per second. */
  rate: number;
  total: number;
  /**
   * Prefix of the carrier's message ids (default `SMbench`): a run after another on the same number needs its own, or
   * the service takes its texts for the carrier's retries of the earlier run's and stores each id once.
   */
  idPrefix?: string;
}

/** What the sender prints after `RESULT `. */
export interface SmsSenderResult {
  /** Seconds from the first callback sent to the last one sent (the rate offered). */
  offeredS: number;
  /** Seconds from the first callback sent to the last one answered (the rate the service accepted them at). */
  acceptedS: number;
  unsent: number;
  firstUnsent: string | null;
  cpuMs: number;
}

/**
 * POSTs `body` over `agent`'s kept-alive connections and resolves with the status and the answer's text; rejects on
 * a connection error or when no answer came within `timeoutMs`. Node's `http` client, not `fetch`: this process
 * shares the machine's cores with the service it measures, and `fetch` costs it several times the CPU per request.
 */
function post(agent: http.Agent, url: URL, headers: Record<string, string>, body: string, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]) as SmsSenderJob;
  const secret = callbackSecret('sandbox');
  const url = new URL(job.url);
  // As many connections as the texts in flight need (a carrier sends each callback on its own request).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  process.stdout.write('READY\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
  const cpu0 = processCpu(process.pid)?.ms ?? 0;
  const t0 = performance.now();
  const posts: Promise<void>[] = [];
  const unsent: string[] = [];
  for (let i = 0; i < job.total; i++) {
    const wait = t0 + (i * 1000) / job.rate - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const body = JSON.stringify({ type: 'message.inbound', id: `${job.idPrefix ?? 'SMbench'}${i}`, from: job.senders[i % job.senders.length], to: job.to, text: i % 2 ? 'What time do you open on Saturday?' : 'Do you take new patients?' });
    posts.push(
      post(agent, url, { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(secret, body) }, body, 30_000).then(
        (r) => {
          if (r.status !== 200) throw new Error(`callback answered ${r.status}: ${r.text}`);
        },
        (err: Error) => {
          // Not accepted in time (a saturated service): counted, not fatal.
          unsent.push(err.message);
        },
      ),
    );
  }
  const offeredS = (performance.now() - t0) / 1000;
  await Promise.all(posts);
  const out: SmsSenderResult = { offeredS, acceptedS: (performance.now() - t0) / 1000, unsent: unsent.length, firstUnsent: unsent[0] ?? null, cpuMs: (processCpu(process.pid)?.ms ?? cpu0) - cpu0 };
  process.stdout.write(`RESULT ${JSON.stringify(out)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench sms sender: ${String((err as Error)?.message ?? err)}\n`);
    process.exit(1);
  },
);
