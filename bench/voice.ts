/**
 * Voice benchmark (docs/benchmarks.md, docs/voice.md): BENCH_VOICE_CALLS (1,000) concurrent
 * ConversationRelay sessions on one API process with the sandbox LLM, every call rung through the signed
 * sandbox voice webhook and its relay socket opened as a carrier would (providers/telephony/
 * sandboxCaller.ts). While all calls stay open, each caller says a final `prompt` about every
 * BENCH_VOICE_PROMPT_EVERY_MS (5,000 ms, jittered; people pause between sentences) for
 * BENCH_VOICE_SECONDS (15 s). Figures:
 *  - prompt → first `text` token, p50/p99: our own overhead (the sandbox LLM answers at once), measured by
 *    the caller, so it includes the socket both ways. Target p99 < 50 ms on a 2-core machine.
 *  - memory per open call: heap + external + array buffers of the API process after a forced GC with every
 *    call open, minus the same before the calls, divided by the calls. Target < 200 KB.
 * The carrier side runs in its own process (bench/voiceCallers.ts); the API process's event-loop delay and
 * the CPU per turn of each party are printed too.
 *
 * Run: `BENCH_ONLY=voice npm run bench` or `npx tsx bench/voice.ts`.
 */
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { startApi } from '../api/server';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { apiCaller, cpuSnapshot, openBenchDatabase, publishForBench } from './harness';
import { sandboxInventory } from '../providers/telephony/sandbox';
import type { CallersJob, CallersResult } from './voiceCallers';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { runBench } from './entry';

const CALLS = Number(process.env.BENCH_VOICE_CALLS ?? 1000);
const SECONDS = Number(process.env.BENCH_VOICE_SECONDS ?? 15);
const EVERY_MS = Number(process.env.BENCH_VOICE_PROMPT_EVERY_MS ?? 5000);
const PROMPTS = ['When are you open on Saturday?', 'Can I move my appointment?', 'How much is a cleaning?', 'Thanks, that helps a lot', 'Where can I park?'];

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
/** Bytes the process holds for JavaScript after a full collection. */
function liveBytes(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

/** Runs the voice section and prints its figures. */
export async function runVoiceBench(): Promise<void> {
  const { db, databaseUrl, postmasterPid, close: closeDatabase } = await openBenchDatabase('voice', { poolMax: 40, serverUrl: process.env.DATABASE_URL });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 10_000_000 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  let hangUp = async (): Promise<void> => undefined;
  try {
    const org = await createOrganization(db, 'Voice bench');
    const { key, info } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES, rateLimitPoints: 10_000_000 });
    const call = apiCaller(api.baseUrl, key);
    const agent = await call('POST', '/agents', { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hello, Sunrise Dental here.', instructions: 'Help callers with appointments.', dtmf: { enabled: true } });
    await publishForBench(db, org.id, agent.id, info.id);
    const number = await call('POST', '/numbers/purchase', { e164: sandboxInventory('206')[0].e164 });
    await call('POST', `/numbers/${number.id}/assign`, { agentId: agent.id });

    const before = liveBytes();
    const tOpen = performance.now();
    const callers = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'voiceCallers.ts'), JSON.stringify({ baseUrl: api.baseUrl, to: number.e164, calls: CALLS, seconds: SECONDS, everyMs: EVERY_MS, prompts: PROMPTS } satisfies CallersJob)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    hangUp = async () => {
      if (callers.exitCode !== null) return;
      const exited = new Promise((r) => callers.once('exit', r));
      callers.stdin!.write('HANGUP\n');
      await exited;
    };
    let out = '';
    const seen = (marker: RegExp) =>
      new Promise<RegExpExecArray>((resolve, reject) => {
        const check = () => {
          const m = marker.exec(out);
          if (m) return resolve(m);
        };
        callers.stdout!.on('data', (buf: Buffer) => ((out += buf.toString()), check()));
        callers.once('exit', (code) => reject(new Error(`the callers exited with ${code}`)));
        check();
      });
    await seen(/OPENED\n/);
    // Every setup stored its conversation before memory is read.
    const stored = async () => Number((await db('conversations').where({ org_id: org.id }).count({ n: '*' }).first())?.n ?? 0);
    while (api.relay.sessions.size < CALLS || (await stored()) < CALLS) await new Promise((r) => setTimeout(r, 50));
    const openMs = performance.now() - tOpen;
    await db.raw('ANALYZE conversations'); // as autovacuum would have by now on a long-running service
    const perCallBytes = (liveBytes() - before) / CALLS;

    const loop = monitorEventLoopDelay({ resolution: 5 });
    const cpu0 = cpuSnapshot({ process: process.pid }, { postmasterPid });
    loop.enable();
    callers.stdin!.write('GO\n');
    const r = JSON.parse((await seen(/RESULT (.*)\n/))[1]) as CallersResult;
    loop.disable();
    const cpu1 = cpuSnapshot({ process: process.pid }, { postmasterPid });
    const perTurn = (k: string) => (((cpu1[k] ?? 0) - (cpu0[k] ?? 0)) * 1000) / Math.max(1, r.turns);
    console.log(`voice: ${CALLS} concurrent relay sessions on one API process, ${os.cpus().length} cores, sandbox LLM, a prompt per call every ~${EVERY_MS} ms for ${SECONDS} s; the callers (carrier side) in their own process`);
    console.log(`  calls opened            ${CALLS} in ${(openMs / 1000).toFixed(1)} s (signed webhook + relay socket + setup each)`);
    console.log(`  prompt → first token    p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms   (${r.turns} turns, ${r.errors} errors)   target p99 < 50 ms`);
    console.log(`  API event loop delay    p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms   p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms   max ${(loop.max / 1e6).toFixed(1)} ms`);
    if (cpu0.process !== undefined) console.log(`  CPU per turn            API process ${perTurn('process').toFixed(0)} µs   postgres ${perTurn('postgres').toFixed(0)} µs   callers ${((r.cpuMs * 1000) / Math.max(1, r.turns)).toFixed(0)} µs`);
    console.log(`  memory per open call    ${(perCallBytes / 1024).toFixed(0)} KB (the API process's heap, external and array buffers)   target < 200 KB`);
  } finally {
    // Each hang-up closes its conversation; let those writes finish before the pool closes.
    await hangUp();
    for (let i = 0; i < 600 && api.relay.sessions.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
    await api.close();
    await closeDatabase();
  }
}

if (require.main === module) runBench('bench voice', runVoiceBench);
