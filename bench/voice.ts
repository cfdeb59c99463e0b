/**
 * Voice benchmark (README "Benchmarks", "Voice calls"): BENCH_VOICE_CALLS (1,000) concurrent
 * ConversationRelay sessions on one API process with the sandbox LLM, every call rung through the signed
 * sandbox voice webhook and its relay socket opened as a carrier would (activities/providers/telephony/
 * sandboxCaller.ts). While all calls stay open, each caller says a final `prompt` about every
 * BENCH_VOICE_PROMPT_EVERY_MS (5,000 ms, jittered; people pause between sentences) for
 * BENCH_VOICE_SECONDS (15 s). Figures:
 *  - prompt → first `text` token, p50/p99: our own overhead (the sandbox LLM answers at once), measured by
 *    the caller, so it includes the socket both ways. Target p99 < 50 ms on a 2-core machine.
 *  - memory per open call: heap + external + array buffers after a forced GC with every call open, minus
 *    the same before the calls, divided by the calls. The carrier side (the caller's sockets) runs in the
 *    same process, so this is an upper bound of the service's share. Target < 200 KB.
 *
 * Run: `BENCH_ONLY=voice npm run bench` or `npx tsx bench/voice.ts`.
 */
import os from 'node:os';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createAgentActivities } from '../activities/agents';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { startApi } from '../api/server';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { openBenchDatabase } from './harness';
import { publishRequestHash } from '../domain/agents/compile';
import { sandboxInventory } from '../activities/providers/telephony/sandbox';
import { postSandboxWebhook, RelayClient } from '../activities/providers/telephony/sandboxCaller';
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
  const { db, databaseUrl, close: closeDatabase } = await openBenchDatabase('voice', { poolMax: 40 });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 10_000_000 });
  const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent') });
  const clients: RelayClient[] = [];
  try {
    const org = await createOrganization(db, 'Voice bench');
    const { key, info } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES, rateLimitPoints: 10_000_000 });
    const call = async (method: string, p: string, json?: unknown) => {
      const res = await fetch(`${api.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: json === undefined ? undefined : JSON.stringify(json) });
      const body = (await res.json()) as any;
      if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${JSON.stringify(body)}`);
      return body.data;
    };
    const agent = await call('POST', '/agents', { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hello, Sunrise Dental here.', instructions: 'Help callers with appointments.', dtmf: { enabled: true } });
    const pub = await createAgentActivities({ db }).compileAndPublishAgent({ orgId: org.id, agentId: agent.id, idempotencyKey: 'bench', requestHash: publishRequestHash({ note: null }), note: null, publishedBy: info.id });
    if (pub.kind !== 'published') throw new Error(`publish failed: ${JSON.stringify(pub)}`);
    const number = await call('POST', '/numbers/purchase', { e164: sandboxInventory('206')[0].e164 });
    await call('POST', `/numbers/${number.id}/assign`, { agentId: agent.id });

    const before = liveBytes();
    const tOpen = performance.now();
    for (let i = 0; i < CALLS; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, CALLS - i) }, async (_, j) => {
          const n = i + j;
          const callSid = `CAbench${String(n).padStart(6, '0')}`;
          const from = `+1206${String(2000000 + n).padStart(7, '0')}`;
          const hook = await postSandboxWebhook(`${api.baseUrl}/voice/sandbox/inbound`, { CallSid: callSid, From: from, To: number.e164 });
          const url = /<ConversationRelay url="([^"]+)"/.exec(hook.text)?.[1]?.replace(/&amp;/g, '&');
          if (!url) throw new Error(`webhook answered ${hook.status}: ${hook.text.slice(0, 200)}`);
          const c = await RelayClient.open(url, 60_000);
          c.send({ type: 'setup', sessionId: `VX${n}`, callSid, from, to: number.e164, direction: 'inbound', callStatus: 'in-progress', customParameters: {} });
          clients.push(c);
        }),
      );
    }
    // Every setup stored its conversation before memory is read.
    const stored = async () => Number((await db('conversations').where({ org_id: org.id }).count({ n: '*' }).first())?.n ?? 0);
    while (api.relay.sessions.size < CALLS || (await stored()) < CALLS) await new Promise((r) => setTimeout(r, 50));
    const openMs = performance.now() - tOpen;
    const perCallBytes = (liveBytes() - before) / CALLS;

    const firstToken: number[] = [];
    let errors = 0;
    const deadline = performance.now() + SECONDS * 1000;
    await Promise.all(
      clients.map(async (c, i) => {
        await new Promise((r) => setTimeout(r, Math.random() * EVERY_MS));
        for (let n = 0; performance.now() < deadline; n++) {
          const s = performance.now();
          try {
            c.send({ type: 'prompt', voicePrompt: PROMPTS[(i + n) % PROMPTS.length], lang: 'en-US', last: true });
            await c.firstToken();
            firstToken.push(performance.now() - s);
            await c.reply();
          } catch {
            errors++;
          }
          await new Promise((r) => setTimeout(r, EVERY_MS * (0.5 + Math.random())));
        }
      }),
    );
    console.log(`voice: ${CALLS} concurrent relay sessions on one API process, ${os.cpus().length} cores, sandbox LLM, a prompt per call every ~${EVERY_MS} ms for ${SECONDS} s`);
    console.log(`  calls opened            ${CALLS} in ${(openMs / 1000).toFixed(1)} s (signed webhook + relay socket + setup each)`);
    console.log(`  prompt → first token    p50 ${pct(firstToken, 50).toFixed(1)} ms   p99 ${pct(firstToken, 99).toFixed(1)} ms   (${firstToken.length} turns, ${errors} errors)   target p99 < 50 ms`);
    console.log(`  memory per open call    ${(perCallBytes / 1024).toFixed(0)} KB (service and caller sockets in one process: an upper bound)   target < 200 KB`);
  } finally {
    for (const c of clients) c.hangUp();
    // Each hang-up closes its conversation; let those writes finish before the pool closes.
    await Promise.all(clients.map((c) => c.closedWith().catch(() => undefined)));
    for (let i = 0; i < 600 && api.relay.sessions.size > 0; i++) await new Promise((r) => setTimeout(r, 50));
    await api.close();
    await closeDatabase();
  }
}

if (require.main === module) runBench('bench voice', runVoiceBench);
