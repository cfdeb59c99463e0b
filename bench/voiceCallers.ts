/**
 * The carrier side of bench/voice.ts in its own process (docs/benchmarks.md), so the API process serves
 * only the service and its figures (CPU, memory, event loop) are its own. Reads one JSON job from argv[2]:
 * `{ baseUrl, to, calls, seconds, everyMs, prompts }`. Rings the signed sandbox voice webhook for `calls`
 * callers and opens each relay socket with its `setup` as a carrier would (providers/telephony/
 * sandboxCaller.ts), prints `OPENED`, waits for a line on stdin, then has each caller say a final `prompt`
 * about every `everyMs` (jittered) for `seconds`, and prints
 * `RESULT {turns, errors, p50, p99, cpuMs}`: prompt → first `text` token in ms as the caller measures it,
 * and this process's CPU during the prompts. A second line on stdin hangs every call up; it exits when the
 * sockets closed.
 */
import { postSandboxWebhook, RelayClient } from '../providers/telephony/sandboxCaller';
import { processCpu } from './harness';

/** The job (argv[2], JSON). */
export interface CallersJob {
  baseUrl: string;
  to: string;
  calls: number;
  seconds: number;
  everyMs: number;
  prompts: string[];
}

/** What the callers print after `RESULT `. */
export interface CallersResult {
  turns: number;
  errors: number;
  p50: number;
  p99: number;
  cpuMs: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

const lines: string[] = [];
const waiters: (() => void)[] = [];
process.stdin.on('data', (buf: Buffer) => {
  for (const l of buf.toString().split('\n').filter(Boolean)) lines.push(l);
  while (waiters.length && lines.length) (lines.shift(), waiters.shift()!());
});
const nextLine = () => new Promise<void>((resolve) => (lines.length ? (lines.shift(), resolve()) : waiters.push(resolve)));

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2]) as CallersJob;
  const clients: RelayClient[] = [];
  for (let i = 0; i < job.calls; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, job.calls - i) }, async (_, j) => {
        const n = i + j;
        const callSid = `CAbench${String(n).padStart(6, '0')}`;
        const from = `+1206${String(2000000 + n).padStart(7, '0')}`;
        const hook = await postSandboxWebhook(`${job.baseUrl}/voice/sandbox/inbound`, { CallSid: callSid, From: from, To: job.to });
        const url = /<ConversationRelay url="([^"]+)"/.exec(hook.text)?.[1]?.replace(/&amp;/g, '&');
        if (!url) throw new Error(`webhook answered ${hook.status}: ${hook.text.slice(0, 200)}`);
        const c = await RelayClient.open(url, 60_000);
        c.send({ type: 'setup', sessionId: `VX${n}`, callSid, from, to: job.to, direction: 'inbound', callStatus: 'in-progress', customParameters: {} });
        clients.push(c);
      }),
    );
  }
  process.stdout.write('OPENED\n');
  await nextLine();
  const cpu0 = processCpu(process.pid)?.ms ?? 0;
  const firstToken: number[] = [];
  let errors = 0;
  const deadline = performance.now() + job.seconds * 1000;
  await Promise.all(
    clients.map(async (c, i) => {
      await new Promise((r) => setTimeout(r, Math.random() * job.everyMs));
      for (let n = 0; performance.now() < deadline; n++) {
        const s = performance.now();
        try {
          c.send({ type: 'prompt', voicePrompt: job.prompts[(i + n) % job.prompts.length], lang: 'en-US', last: true });
          await c.firstToken();
          firstToken.push(performance.now() - s);
          await c.reply();
        } catch {
          errors++;
        }
        await new Promise((r) => setTimeout(r, job.everyMs * (0.5 + Math.random())));
      }
    }),
  );
  const result: CallersResult = { turns: firstToken.length, errors, p50: pct(firstToken, 50), p99: pct(firstToken, 99), cpuMs: (processCpu(process.pid)?.ms ?? cpu0) - cpu0 };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  await nextLine();
  for (const c of clients) c.hangUp();
  await Promise.all(clients.map((c) => c.closedWith().catch(() => undefined)));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench voice callers: ${String((err as Error)?.message ?? err)}\n`);
    process.exit(1);
  },
);
