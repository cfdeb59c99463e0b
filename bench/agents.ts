/**
 * Agent publish benchmark (docs/benchmarks.md): publish compile time for an agent with 50 skills (10 of each
 * skill type), 20 playbooks of 30 nodes each (valid graphs driving those skills) and 1,000 ready
 * knowledge chunks. Three measurements, each p50/p99:
 *  (a) pure compile + validate (`compileDraft` + `snapshotChecksum`, api/agents/compile.ts) on a
 *      loaded draft bundle: no I/O;
 *  (b) the publish activity `compileAndPublishAgent` (one DB transaction: lock, load, compile, insert
 *      the version, emit `agent.published`), called directly;
 *  (c) `POST /agents/{id}/publish` end to end over HTTP: the API starts `agentPublishWorkflow` on the
 *      in-process Temporal dev server, a real-SDK worker runs the activity, the handler answers 201.
 * The agent is built through the HTTP API (as a customer would); knowledge chunks are inserted through
 * the knowledge repository (no network, no ingestion workflow).
 *
 * Run: `npx tsx bench/agents.ts` (embedded Postgres unless DATABASE_URL names a server).
 * BENCH_COMPILE_RUNS (default 500), BENCH_ACTIVITY_RUNS (100) and BENCH_E2E_RUNS (100) set the sample sizes
 * (at least 100 so p99 is not just the maximum); the whole run takes about 20 s on 2 cores.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { loadDraftBundle } from '../db/repositories/agents';
import { createSource, indexChunks, markProcessing } from '../db/repositories/knowledge';
import { compileDraft, canonicalJson, publishRequestHash, snapshotChecksum } from '../domain/agents/compile';
import { createAgentActivities } from '../activities/agents';
import { startApi } from '../api/server';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { startDevServer } from '../devserver';
import type { PlaybookEdge, PlaybookGraph, PlaybookNode } from '../schemas/types/playbooks';
import { runBench } from './entry';
import { benchCaller, installBenchRuntime, openBenchDatabase } from './harness';

const COMPILE_RUNS = Number(process.env.BENCH_COMPILE_RUNS ?? 500);
const ACTIVITY_RUNS = Number(process.env.BENCH_ACTIVITY_RUNS ?? 100);
const E2E_RUNS = Number(process.env.BENCH_E2E_RUNS ?? 100);
const SKILLS_PER_TYPE = 10; // × 5 types = 50 skills
const PLAYBOOKS = 20;
const KNOWLEDGE_SOURCES = 10;
const CHUNKS_PER_SOURCE = 100; // × 10 sources = 1,000 chunks

/** The 50 skill create bodies: 10 of each catalogue type, valid against the type's config schema. */
function skillBodies(): { name: string; type: string; description: string; config: Record<string, unknown> }[] {
  const out: { name: string; type: string; description: string; config: Record<string, unknown> }[] = [];
  for (let i = 0; i < SKILLS_PER_TYPE; i++) {
    out.push({
      name: `lookup_${i}`,
      type: 'http_request',
      description: `Looks up the caller's account in system ${i}`,
      config: {
        url: `https://api${i}.example.com/v1/accounts/lookup`,
        method: i % 2 ? 'GET' : 'POST',
        headers: { 'x-tenant': `tenant-${i}` },
        inputs: [{ name: 'name' }, { name: 'reason' }, { name: 'email', required: false, description: 'contact email' }],
        timeoutMs: 5000,
      },
    });
    out.push({
      name: `book_${i}`,
      type: 'book_appointment',
      description: `Books a slot in calendar ${i}`,
      config: { url: `https://cal${i}.example.com/book`, durationMinutes: 15 + 5 * i, timeZone: 'America/Chicago', collectNotes: i % 2 === 0 },
    });
    out.push({
      name: `text_${i}`,
      type: 'send_sms',
      description: `Texts a confirmation (template ${i})`,
      config: { to: i % 3 ? 'caller' : '+15125550100', template: `Hi {{name}}, about your {{reason}}: we will call you at {{phone}}. Ref ${i}.` },
    });
    out.push({
      name: `transfer_${i}`,
      type: 'transfer_call',
      description: `Transfers to desk ${i}`,
      config: { phoneNumber: `+1512555${String(1000 + i).padStart(4, '0')}`, announceSummary: i % 2 === 1 },
    });
    out.push({ name: `goodbye_${i}`, type: 'end_call', description: `Ends the call (closing ${i})`, config: { closingLine: `Thanks for calling, goodbye (${i}).` } });
  }
  return out;
}

/**
 * A valid 30-node playbook graph: start, six `ask` nodes, a `say`, a `branch` on `reason` into two
 * 10-node paths of skills, asks and says, both joining the end node. Skills are picked by `p` so the
 * 20 playbooks use all 50 skills.
 */
function playbookGraph(p: number): PlaybookGraph {
  const k = (j: number) => (p + j) % SKILLS_PER_TYPE;
  const nodes: PlaybookNode[] = [
    { id: 'start', type: 'start' },
    { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
    { id: 'ask_phone', type: 'ask', prompt: 'What is the best number to reach you?', gathers: 'phone' },
    { id: 'ask_time', type: 'ask', prompt: 'When would suit you?', gathers: 'start_time' },
    { id: 'ask_reason', type: 'ask', prompt: 'What is this about: billing or booking?', gathers: 'reason' },
    { id: 'ask_email', type: 'ask', prompt: 'And your email?', gathers: 'email' },
    { id: 'ask_notes', type: 'ask', prompt: 'Anything we should know?', gathers: 'notes' },
    { id: 'say_thanks', type: 'say', prompt: 'Thank you, one moment while I check.' },
    { id: 'route', type: 'branch', on: 'reason' },
  ];
  const chainOf = (tag: string, j: number): PlaybookNode[] => [
    { id: `${tag}_lookup`, type: 'skill', skill: `lookup_${k(j)}` },
    { id: `${tag}_say1`, type: 'say', prompt: 'I found your account.' },
    { id: `${tag}_book`, type: 'skill', skill: `book_${k(j + 1)}` },
    { id: `${tag}_text`, type: 'skill', skill: `text_${k(j + 2)}` },
    { id: `${tag}_ask_more`, type: 'ask', prompt: 'Anything else?', gathers: 'anything_else' },
    { id: `${tag}_lookup2`, type: 'skill', skill: `lookup_${k(j + 3)}`, inputs: { reason: 'anything_else' } },
    { id: `${tag}_say2`, type: 'say', prompt: 'All set.' },
    { id: `${tag}_text2`, type: 'skill', skill: `text_${k(j + 4)}` },
    { id: `${tag}_handoff`, type: 'skill', skill: j % 2 ? `transfer_${k(j + 5)}` : `goodbye_${k(j + 5)}` },
    { id: `${tag}_bye`, type: 'say', prompt: 'Goodbye.' },
  ];
  const a = chainOf('billing', 0);
  const b = chainOf('booking', 1);
  nodes.push(...a, ...b, { id: 'end', type: 'end' });
  const edges: PlaybookEdge[] = [];
  for (let i = 0; i < 8; i++) edges.push({ from: nodes[i].id, to: nodes[i + 1].id });
  edges.push({ from: 'route', to: a[0].id, when: 'billing' }, { from: 'route', to: b[0].id });
  for (const chain of [a, b]) {
    for (let i = 0; i + 1 < chain.length; i++) edges.push({ from: chain[i].id, to: chain[i + 1].id });
    edges.push({ from: chain[chain.length - 1].id, to: 'end' });
  }
  return { nodes, edges };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

interface Row {
  name: string;
  runs: number;
  times: number[];
}

/** Runs the agents section and prints its table. */
export async function runAgentsBench(): Promise<void> {
  const started = performance.now();
  installBenchRuntime();
  const { db, databaseUrl, embedded, close: closeDatabase } = await openBenchDatabase('agents', { serverUrl: process.env.DATABASE_URL });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 1_000_000_000 });
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const orgId = (await createOrganization(db, 'Bench Org')).id;
    const { key, info } = await createSecretKey(db, orgId, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });

    const server = await startDevServer({ log: () => {} });
    cleanups.push(() => server.stop());
    const connection = await Connection.connect({ address: server.address });
    cleanups.push(() => connection.close());
    const native = await NativeConnection.connect({ address: server.address });
    cleanups.push(() => native.close());
    const taskQueue = `bench-agents-${crypto.randomBytes(4).toString('hex')}`;
    const api = await startApi({ db, databaseUrl, config, logger: createLogger('silent'), temporal: { client: new Client({ connection }), taskQueue } });
    cleanups.push(() => api.close());

    const call = benchCaller(api.baseUrl, key);
    const must = async (expected: number, method: string, p: string, json?: unknown, headers?: Record<string, string>) => {
      const r = await call(method, p, json, headers);
      if (r.status !== expected) throw new Error(`${method} ${p} answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body?.data;
    };

    // --- Setup through the HTTP API: agent, 50 skills, 20 playbooks, guardrails, caller verification.
    const setupStart = performance.now();
    const agent = await must(201, 'POST', '/agents', {
      name: 'Front desk',
      description: 'Answers the clinic line',
      persona: 'A calm, friendly receptionist for Riverside Clinic.',
      instructions: 'Help callers book, reschedule and ask billing questions. '.repeat(20),
      greeting: 'Thanks for calling Riverside Clinic, how can I help?',
      variables: [{ name: 'clinic_name', defaultValue: 'Riverside Clinic' }, { name: 'city', defaultValue: 'Austin' }],
    });
    const agentId: string = agent.id;
    const skills = skillBodies();
    for (const s of skills) await must(201, 'POST', `/agents/${agentId}/skills`, s);
    for (let p = 0; p < PLAYBOOKS; p++) {
      await must(201, 'POST', `/agents/${agentId}/playbooks`, { name: `intake_${p}`, description: `Intake flow ${p}`, graph: playbookGraph(p) });
    }
    await must(200, 'PUT', `/agents/${agentId}/guardrails`, {
      blockedTopics: ['medical advice', 'politics'],
      forbiddenPhrases: ['guaranteed cure'],
      redactPii: true,
      profanityFilter: true,
      escalateOn: ['caller asks for a human'],
      maxConversationMinutes: 30,
    });
    await must(200, 'PUT', `/agents/${agentId}/caller-verification`, {
      enabled: true,
      method: 'sms_otp',
      requiredForSkills: skills.filter((s) => s.type === 'book_appointment').map((s) => s.name),
      maxAttempts: 3,
    });
    const apiSetupMs = performance.now() - setupStart;

    // --- 1,000 ready chunks through the knowledge repository (10 sources × 100 chunks).
    const kStart = performance.now();
    let chunks = 0;
    for (let s = 0; s < KNOWLEDGE_SOURCES; s++) {
      const src = await createSource(db, orgId, { agentId, kind: 'text', name: `FAQ part ${s}`, text: `synthetic FAQ ${s}` }, async () => undefined);
      await markProcessing(db, orgId, src.id);
      const rows = Array.from({ length: CHUNKS_PER_SOURCE }, (_, j) => ({
        ordinal: j,
        content: `Question ${s}.${j}: what are the opening hours on day ${j % 7}? Answer: the clinic opens at ${7 + (j % 3)} am and closes at ${5 + (j % 4)} pm; parking is free. `.repeat(4),
      }));
      chunks += (await indexChunks(db, orgId, src.id, rows)) ?? 0;
    }
    const knowledgeMs = performance.now() - kStart;

    // --- Check the draft is what we meant: valid, with every part counted.
    const bundle = (await loadDraftBundle(db, orgId, agentId))!;
    const check = compileDraft(bundle);
    if (check.errors.length) throw new Error(`bench draft does not compile: ${JSON.stringify(check.errors.slice(0, 5))}`);
    const nodeCount = bundle.playbooks.reduce((n, p) => n + p.graph.nodes.length, 0);
    const readyChunks = check.snapshot.knowledge.reduce((n, k) => n + k.chunkCount, 0);
    if (bundle.skills.length !== 50 || bundle.playbooks.length !== PLAYBOOKS || nodeCount !== PLAYBOOKS * 30 || readyChunks !== chunks || chunks !== 1000) {
      throw new Error(`unexpected draft: ${bundle.skills.length} skills, ${bundle.playbooks.length} playbooks, ${nodeCount} nodes, ${readyChunks} chunks`);
    }
    const snapshotBytes = Buffer.byteLength(canonicalJson(check.snapshot));

    const rows: Row[] = [];

    // (a) Pure compile + validate (no I/O), warm.
    for (let i = 0; i < 10; i++) snapshotChecksum(compileDraft(bundle).snapshot);
    const compileOnly: number[] = [];
    const compileAndChecksum: number[] = [];
    for (let i = 0; i < COMPILE_RUNS; i++) {
      const t0 = performance.now();
      const r = compileDraft(bundle);
      const t1 = performance.now();
      snapshotChecksum(r.snapshot);
      const t2 = performance.now();
      compileOnly.push(t1 - t0);
      compileAndChecksum.push(t2 - t0);
    }
    rows.push({ name: '(a) compileDraft (resolve + validate)', runs: COMPILE_RUNS, times: compileOnly });
    rows.push({ name: '(a) compileDraft + snapshotChecksum', runs: COMPILE_RUNS, times: compileAndChecksum });

    // Draft load alone (the activity's read side), for reference.
    const loads: number[] = [];
    for (let i = 0; i < 5; i++) await loadDraftBundle(db, orgId, agentId);
    for (let i = 0; i < COMPILE_RUNS; i++) {
      const t0 = performance.now();
      await loadDraftBundle(db, orgId, agentId);
      loads.push(performance.now() - t0);
    }
    rows.push({ name: '    loadDraftBundle (DB read only)', runs: COMPILE_RUNS, times: loads });

    // (b) The publish activity: one transaction per publish, each with a fresh Idempotency-Key.
    const acts = createAgentActivities({ db });
    const publishInput = (k: string) => ({ orgId, agentId, idempotencyKey: k, requestHash: publishRequestHash({ note: null }), note: null, publishedBy: info.id });
    for (let i = 0; i < 3; i++) await acts.compileAndPublishAgent(publishInput(`warm-act-${i}`));
    const activity: number[] = [];
    for (let i = 0; i < ACTIVITY_RUNS; i++) {
      const t0 = performance.now();
      const out = await acts.compileAndPublishAgent(publishInput(`act-${i}`));
      activity.push(performance.now() - t0);
      if (out.kind !== 'published' || out.replayed) throw new Error(`activity publish ${i}: ${JSON.stringify(out)}`);
    }
    rows.push({ name: '(b) compileAndPublishAgent activity', runs: ACTIVITY_RUNS, times: activity });

    // (c) End to end: POST /agents/{id}/publish → workflow on the dev server → worker → 201.
    const bundleStart = performance.now();
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'),
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    const bundleMs = performance.now() - bundleStart;
    const worker = await Worker.create({ connection: native, taskQueue, workflowBundle, activities: acts });
    const running = worker.run();
    cleanups.push(async () => {
      worker.shutdown();
      await running.catch(() => undefined);
    });
    for (let i = 0; i < 3; i++) await must(201, 'POST', `/agents/${agentId}/publish`, {}, { 'idempotency-key': `warm-e2e-${i}` });
    const e2e: number[] = [];
    for (let i = 0; i < E2E_RUNS; i++) {
      const t0 = performance.now();
      const v = await must(201, 'POST', `/agents/${agentId}/publish`, { note: `bench ${i}` }, { 'idempotency-key': `e2e-${i}-${crypto.randomUUID()}` });
      e2e.push(performance.now() - t0);
      if (!v?.isPublished) throw new Error(`e2e publish ${i} did not publish: ${JSON.stringify(v)}`);
    }
    rows.push({ name: '(c) POST /agents/{id}/publish (HTTP+workflow)', runs: E2E_RUNS, times: e2e });
    const versions = (await db('agent_versions').where({ agent_id: agentId }).count({ n: '*' }).first()) as { n: string | number };

    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    console.log(`\nAgent publish (docs/benchmarks.md): ${os.cpus().length} cores (${cpu}), Node ${process.version}, ${os.platform()} ${os.arch()}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM`);
    console.log(
      `draft: ${bundle.skills.length} skills (5 types × ${SKILLS_PER_TYPE}), ${bundle.playbooks.length} playbooks × 30 nodes = ${nodeCount} nodes, ` +
        `${bundle.knowledge.length} knowledge sources with ${readyChunks} ready chunks; snapshot ${(snapshotBytes / 1024).toFixed(1)} KiB canonical JSON, ` +
        `${check.warnings.length} warning(s)`,
    );
    console.log(
      `setup: ${skills.length + PLAYBOOKS + 3} API calls in ${(apiSetupMs / 1000).toFixed(2)} s; ${chunks} chunks indexed in ${(knowledgeMs / 1000).toFixed(2)} s; ` +
        `workflow bundle built in ${(bundleMs / 1000).toFixed(2)} s; Postgres: ${embedded ? 'embedded (fsync off)' : 'DATABASE_URL'}; Temporal: in-process dev server (memory)`,
    );
    console.log('measurement                                      runs    p50 ms    p99 ms    min ms    max ms   mean ms');
    for (const r of rows) {
      const s = [...r.times].sort((x, y) => x - y);
      const mean = s.reduce((x, y) => x + y, 0) / s.length;
      console.log(
        `${r.name.padEnd(47)} ${String(r.runs).padStart(5)} ${percentile(s, 50).toFixed(2).padStart(9)} ${percentile(s, 99).toFixed(2).padStart(9)} ${s[0].toFixed(2).padStart(9)} ${s[s.length - 1].toFixed(2).padStart(9)} ${mean.toFixed(2).padStart(9)}`,
      );
    }
    console.log(`(sequential, one at a time, after warm-up; ${versions.n} versions published in all; p99 = nearest-rank)`);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await closeDatabase();
  }
  console.log(`(agents bench took ${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

if (require.main === module) runBench('bench agents', runAgentsBench);
