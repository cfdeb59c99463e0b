/**
 * The counterparts of bench/smsReplies.ts (docs/benchmarks.md "sms-replies") in a process of their own, so the
 * load generator's CPU (the fetch client, the signing) is not counted in the service's CPU per text. Reads one JSON
 * job from argv[2]: `{ url, to, senders: string[], rate, total }` — `total` signed sandbox `message.inbound`
 * callbacks to `url`, paced at `rate` per second, the i-th from `senders[i % length]` to `to`, signed with the
 * callback secret of this process's environment (CARRIER_CALLBACK_SECRET, inherited from the bench). Prints `READY`,
 * waits for a line on stdin (the bench reads its CPU counters around the load only), sends, and prints one JSON line
 * `RESULT {offeredS, acceptedS, unsent, firstUnsent, cpuMs}`: the seconds from the first send to the last one sent and
 * to the last answer, the callbacks the saturated service did not accept (their texts were never stored, so no reply is owed), the first
 * such error, and this process's CPU (ms, from /proc; 0 where it is missing) during the load.
 */
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

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]) as SmsSenderJob;
  const secret = callbackSecret('sandbox');
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
      fetch(job.url, { method: 'POST', headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(secret, body) }, body }).then(
        async (r) => {
          if (r.status !== 200) throw new Error(`callback answered ${r.status}: ${await r.text()}`);
          await r.arrayBuffer();
        },
        (err: Error & { cause?: unknown }) => {
          // Not accepted in time (the connect timeout of a saturated service): counted, not fatal.
          unsent.push(`${err.message} (${String((err.cause as Error | undefined)?.message ?? err.cause)})`);
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
