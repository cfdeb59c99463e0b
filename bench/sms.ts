/**
 * SMS hub benchmark (docs/benchmarks.md). Everything in one process, as test/workflows/smsRegistration.test.ts
 * sets it up: an embedded Postgres, the embedded Temporal dev server (in memory), the real API over a
 * socket and a worker running workflows/smsRegistration.ts and workflows/smsMessage.ts with the real
 * activities and the sandbox carrier and telephony at zero delay (SANDBOX_CARRIER_DELAY_MS=0,
 * SANDBOX_TELEPHONY_DELAY_MS=0), whose verdicts and receipts come back as real signed HTTP callbacks.
 * Prints:
 *  1. registration: BENCH_SMS_ORGS organizations (default 500), each with a complete draft, POST
 *     /sms/submit at once; the time until all are `active` (and the submit answer p50/p99);
 *  2. sending: BENCH_SMS_SENDS texts (default 1000) round-robin across the organizations through POST
 *     /sms/messages → `sms-message/{id}` → delivery activity → sandbox receipt; accepted/s (202s), sent/s
 *     (workflow done) and delivered/s (receipt applied). Texts are replies (`trigger: reply`, replies
 *     exempt from quiet hours, the default), so no text is held whatever the time of day; every
 *     recipient has recorded consent and each organization's number is purchased and SMS-enabled.
 *
 * Run: `npx tsx bench/sms.ts` (or `runSmsBench()` from bench/index.ts). Setup (organizations, drafts,
 * numbers, consent) is not timed.
 */
import { Worker } from '@temporalio/worker';
import type { Db } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { usAreaCodes } from '../domain/sms/nanp';
import { bundleBenchWorkflows, pool, startBenchApi, startBenchStack } from './harness';
import { createSmsActivities } from '../activities/sms';
import { stopSandboxDispatchers } from '../providers/carrier/sandbox';
import { sandboxInventory } from '../providers/telephony/sandbox';
import { COMPLETE_BRAND } from '../test/api/sms-fixtures';
import { runBench } from './entry';

const ORGS = Number(process.env.BENCH_SMS_ORGS ?? 500);
const SENDS = Number(process.env.BENCH_SMS_SENDS ?? 1000);
/** Requests in flight during setup and sends. */
const CONCURRENCY = Number(process.env.BENCH_SMS_CONCURRENCY ?? 100);
/** Give up on a phase after this long. */
const PHASE_LIMIT_MS = 120_000;

/** A complete PRIVATE_PROFIT brand; campaign text is generated on save. */
const BRAND = COMPLETE_BRAND;

/** Recipients (fictional 555-01xx numbers, valid US numbers for libphonenumber). */
const RECIPIENTS = Array.from({ length: 20 }, (_, i) => `+1212555${String(100 + i).padStart(4, '0')}`);

interface BenchOrg {
  orgId: string;
  key: string;
  from: string;
}

type Caller = (key: string, method: string, p: string, json?: unknown) => Promise<{ status: number; body: any; ms: number }>;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
};

/** Polls `count()` every 100 ms until it reaches `n`. @returns ms from `t0` @throws after PHASE_LIMIT_MS */
async function waitCount(what: string, t0: number, n: number, count: () => Promise<number>, stuck: () => Promise<string>): Promise<number> {
  for (;;) {
    const c = await count();
    if (c >= n) return performance.now() - t0;
    if (performance.now() - t0 > PHASE_LIMIT_MS) throw new Error(`${what}: ${c}/${n} after ${PHASE_LIMIT_MS / 1000} s (${await stuck()})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function countWhere(db: Db, table: string, where: (q: any) => any): Promise<number> {
  const [{ n }] = await where(db(table)).count({ n: '*' });
  return Number(n);
}

/** Distinct purchasable numbers, one per organization, spread across US area codes. */
function numbersFor(n: number): string[] {
  const codes = usAreaCodes();
  const out: string[] = [];
  for (let round = 0; out.length < n; round++) {
    for (const code of codes) {
      const inv = sandboxInventory(code);
      if (inv[round]) out.push(inv[round].e164);
      if (out.length >= n) break;
    }
    if (round > 40) throw new Error(`the sandbox inventory cannot supply ${n} numbers`);
  }
  return out;
}

/** Creates the organizations with a complete draft, an SMS-enabled number and consented recipients (untimed). */
async function setup(db: Db, call: Caller, keyBrand: string, n: number): Promise<BenchOrg[]> {
  const numbers = numbersFor(n);
  const orgs: BenchOrg[] = [];
  for (let i = 0; i < n; i++) {
    const org = await createOrganization(db, `Bench SMS ${i}`);
    const { key } = await createSecretKey(db, org.id, { brand: keyBrand, scopes: NON_RESERVED_SCOPES });
    orgs.push({ orgId: org.id, key, from: numbers[i] });
  }
  const must = (what: string, r: { status: number; body: any }, ok: number) => {
    if (r.status !== ok) throw new Error(`${what} answered ${r.status}: ${JSON.stringify(r.body)}`);
  };
  await pool(orgs, CONCURRENCY, async (o) => {
    must('PUT /sms', await call(o.key, 'PUT', '/sms', BRAND), 200);
    const bought = await call(o.key, 'POST', '/numbers/purchase', { e164: o.from });
    must('POST /numbers/purchase', bought, 200);
    must('PUT /numbers/{id}/sms', await call(o.key, 'PUT', `/numbers/${bought.body.data.id}/sms`, { enabled: true }), 200);
    for (const to of RECIPIENTS.slice(0, 3)) {
      must('PUT consent', await call(o.key, 'PUT', `/sms/contacts/${encodeURIComponent(to)}/consent`, { source: 'web_form', proofText: 'Checked "Text me appointment updates" on acmedental.example.com/book' }), 200);
    }
  });
  return orgs;
}

/** Runs the SMS section and prints its figures. */
export async function runSmsBench(): Promise<void> {
  process.env.SANDBOX_CARRIER_DELAY_MS ??= '0';
  process.env.SANDBOX_TELEPHONY_DELAY_MS ??= '0';
  const started = performance.now();
  const stack = await startBenchStack('sms');
  const { db, native } = stack;
  let stopWorker: (() => Promise<void>) | undefined;
  let closeApi: (() => Promise<void>) | undefined;
  try {
    const { api, config, logger, taskQueue } = await startBenchApi(stack, 'sms');
    closeApi = () => api.close();
    const callbackUrl = `${api.baseUrl}/sms/provider-callbacks/sandbox`;
    const workflowBundle = await bundleBenchWorkflows();
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle,
      activities: createSmsActivities({ db, config, logger }, { carrierOptions: { delayMs: 0, callbackUrl }, telephonyOptions: { delayMs: 0, callbackUrl } }),
      maxConcurrentActivityTaskExecutions: 100,
      maxConcurrentWorkflowTaskExecutions: 100,
      maxCachedWorkflows: Math.max(1000, ORGS * 2),
    });
    const running = worker.run();
    stopWorker = async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
    };
    const call: Caller = async (key, method, p, json) => {
      const s = performance.now();
      const res = await fetch(`${api.baseUrl}${p}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(json !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: json !== undefined ? JSON.stringify(json) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined, ms: performance.now() - s };
    };

    const s0 = performance.now();
    const orgs = await setup(db, call, config.keyBrandPrefix, ORGS);
    console.log(`setup (untimed): ${ORGS} organizations with a complete draft, an SMS-enabled number and 3 consented recipients in ${((performance.now() - s0) / 1000).toFixed(1)} s`);

    // 1. Registration: every organization submits at once.
    const t0 = performance.now();
    const submits = await Promise.all(orgs.map((o) => call(o.key, 'POST', '/sms/submit')));
    const accepted = performance.now() - t0;
    const refused = submits.filter((r) => r.status !== 200);
    if (refused.length) throw new Error(`${refused.length} submits refused, e.g. ${refused[0].status} ${JSON.stringify(refused[0].body)}`);
    const lat = submits.map((r) => r.ms);
    const activeMs = await waitCount(
      'registration',
      t0,
      ORGS,
      async () => {
        const failed = await countWhere(db, 'sms_registrations', (q) => q.where({ status: 'failed' }));
        if (failed) throw new Error(`${failed} registrations failed`);
        return countWhere(db, 'sms_registrations', (q) => q.where({ status: 'active' }));
      },
      async () => JSON.stringify(await db('sms_registrations').select('status', 'provider_status').count({ n: '*' }).groupBy('status', 'provider_status')),
    );
    const events = await countWhere(db, 'events', (q) => q.where({ type: 'sms.registration.updated' }));
    console.log(
      `registration: ${ORGS} organizations submitted at once (all ${ORGS} answered 200 in ${(accepted / 1000).toFixed(2)} s; submit p50 ${pct(lat, 50).toFixed(0)} ms, p99 ${pct(lat, 99).toFixed(0)} ms)`,
    );
    console.log(`registration: all ${ORGS} active ${(activeMs / 1000).toFixed(2)} s after the submits began (${(ORGS / (activeMs / 1000)).toFixed(0)} registrations/s; ${events} sms.registration.updated events)`);

    // 2. Sending: replies across the organizations through sms-message/{id}.
    const sends = Array.from({ length: SENDS }, (_, i) => ({ org: orgs[i % orgs.length], to: RECIPIENTS[Math.floor(i / orgs.length) % 3] }));
    const sendLat: number[] = [];
    const t1 = performance.now();
    await pool(sends, CONCURRENCY, async (s, i) => {
      const r = await call(s.org.key, 'POST', '/sms/messages', { from: s.org.from, to: s.to, body: `Acme Dental: your visit #${i} is confirmed. Reply STOP to opt out.`, trigger: 'reply' });
      if (r.status !== 202) throw new Error(`send answered ${r.status}: ${JSON.stringify(r.body)}`);
      if (r.body.data.heldUntil !== null) throw new Error('a reply was held to the quiet-hours window');
      sendLat.push(r.ms);
    });
    const acceptedMs = performance.now() - t1;
    const outbound = (q: any) => q.where({ direction: 'outbound' });
    const stuck = async () => JSON.stringify(await outbound(db('sms_messages')).select('status').count({ n: '*' }).groupBy('status'));
    const sentMs = await waitCount('sending', t1, SENDS, () => countWhere(db, 'sms_messages', (q) => outbound(q).whereIn('status', ['sent', 'delivered'])), stuck);
    const deliveredMs = await waitCount('delivery', t1, SENDS, () => countWhere(db, 'sms_messages', (q) => outbound(q).where({ status: 'delivered' })), stuck);
    const failed = await countWhere(db, 'sms_messages', (q) => outbound(q).where({ status: 'failed' }));
    const rate = (ms: number) => (SENDS / (ms / 1000)).toFixed(0);
    console.log(`sending: ${SENDS} texts across ${orgs.length} organizations, ${CONCURRENCY} requests in flight (POST /sms/messages p50 ${pct(sendLat, 50).toFixed(0)} ms, p99 ${pct(sendLat, 99).toFixed(0)} ms)`);
    console.log(`sending: accepted (202) ${rate(acceptedMs)}/s (${(acceptedMs / 1000).toFixed(2)} s); sent by the workflow ${rate(sentMs)}/s (${(sentMs / 1000).toFixed(2)} s); delivered (receipt applied) ${rate(deliveredMs)}/s (${(deliveredMs / 1000).toFixed(2)} s); failed ${failed}`);
    console.log(`total wall time ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    stopSandboxDispatchers();
    await stopWorker?.();
    await closeApi?.();
    await stack.close();
  }
}

if (require.main === module) runBench('bench sms', runSmsBench);
