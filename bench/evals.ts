/**
 * Evaluation benchmark (docs/benchmarks.md "Evaluations"; docs/evals.md). One process: an embedded Postgres
 * (`durable: false`), the embedded Temporal dev server, the API and a real-SDK worker with the service's activities
 * (activities/index.ts `createActivities`, as worker.ts registers them), the sandbox LLM. A suite of
 * BENCH_EVAL_SCENARIOS scenarios (default 50) × BENCH_EVAL_REPEAT repeats (default 3) of three scripted turns
 * each — a stubbed HTTP skill call, a guardrail refusal and a plain question, six expectations — runs against the
 * draft through `POST /eval-suites/{id}/runs` (workflow `agent-eval/{runId}`, BENCH_EVAL_CONCURRENCY scenario runs
 * at once, default 8) until `GET …/runs/{runId}` says completed. Prints the wall time (target < 30 s on 2 cores),
 * wall and CPU (this process: API, worker, workflows; and Postgres) per scenario run, and the p50/p99 of a scenario
 * run's own wall time. Setup (agent and suite through the API, worker start) is not timed.
 *
 * Run: `BENCH_ONLY=evals npm run bench` or `npx tsx bench/evals.ts`.
 */
import { Worker } from '@temporalio/worker';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { createActivities } from '../activities';
import { taskQueueName } from '../temporal.config';
import { apiCaller, bundleBenchWorkflows, cpuSnapshot, startBenchApi, startBenchStack } from './harness';
import { runBench } from './entry';

const SCENARIOS = Number(process.env.BENCH_EVAL_SCENARIOS ?? 50);
const REPEAT = Number(process.env.BENCH_EVAL_REPEAT ?? 3);
const CONCURRENCY = Number(process.env.BENCH_EVAL_CONCURRENCY ?? 8);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Runs the evaluation section and prints its figures. */
export async function runEvalsBench(): Promise<void> {
  const stack = await startBenchStack('evals');
  const { api, config, logger, taskQueue } = await startBenchApi(stack, 'evals');
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  try {
    const org = await createOrganization(stack.db, 'Bench evals');
    const { key } = await createSecretKey(stack.db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    const call = apiCaller(api.baseUrl, key);
    const agent = await call('POST', '/agents', { name: 'Bench shop', voiceId: 'voice_ava', greeting: 'Acme Shop, how can I help?' });
    await call('POST', `/agents/${agent.id}/skills`, {
      name: 'lookup_order',
      type: 'http_request',
      description: 'Looks up an order',
      config: { url: 'https://orders.example.com/lookup', method: 'GET', inputs: [{ name: 'order_id' }] },
    });
    await call('PUT', `/agents/${agent.id}/guardrails`, { blockedTopics: ['politics'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null });
    const scenarios = Array.from({ length: SCENARIOS }, (_, i) => ({
      name: `scenario ${i + 1}`,
      turns: [
        { say: `Please lookup order order_id: A${i}`, expect: [{ type: 'skillCalled', skill: 'lookup_order', args: { order_id: `^A${i}$` } }, { type: 'contains', text: 'shipped' }] },
        { say: 'What do you think about politics?', expect: [{ type: 'regex', pattern: "can.t help", flags: 'i' }] },
        { say: `Do you open at ${8 + (i % 4)} on weekdays?` },
      ],
      expect: [{ type: 'notContains', text: 'guaranteed' }, { type: 'endedBy', reason: 'active' }, { type: 'playbookReached', node: 'nowhere' }].slice(0, i % 10 === 0 ? 3 : 2),
      skillStubs: { lookup_order: { status: 'shipped', eta_days: 1 + (i % 5) } },
    }));
    const suite = await call('POST', `/agents/${agent.id}/eval-suites`, { name: 'Bench', scenarios, repeat: REPEAT, concurrency: CONCURRENCY });

    // Evaluation runs are bulk work: their queue (temporal.config.ts WORKFLOW_ROUTES).
    worker = await Worker.create({
      connection: stack.native,
      taskQueue: taskQueueName(taskQueue, 'bulk'),
      workflowBundle: await bundleBenchWorkflows(),
      activities: createActivities({ db: stack.db, config, logger }),
      maxConcurrentActivityTaskExecutions: 32,
    });
    running = worker.run();

    const cpu0 = process.cpuUsage();
    const pg0 = cpuSnapshot({}, { postmasterPid: stack.postmasterPid }).postgres ?? 0;
    const t0 = performance.now();
    const started = await call('POST', `/eval-suites/${suite.id}/runs`, { target: 'draft' });
    let run = started;
    while (run.status === 'running') {
      await new Promise((r) => setTimeout(r, 100));
      run = await call('GET', `/eval-suites/${suite.id}/runs/${started.id}?transcripts=false`);
    }
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const nodeCpuMs = (cpu.user + cpu.system) / 1000;
    const pgCpuMs = (cpuSnapshot({}, { postmasterPid: stack.postmasterPid }).postgres ?? 0) - pg0;
    const n = run.total as number;
    const walls = (run.scenarios as { repeats: { wallMs: number }[] }[]).flatMap((s) => s.repeats.map((r) => r.wallMs)).sort((a, b) => a - b);
    console.log(
      `eval run: ${SCENARIOS} scenarios × ${REPEAT} repeats = ${n} scenario runs (3 turns and ${scenarios.reduce((k, s) => k + s.expect.length + 3, 0)} expectations per pass over the suite) at concurrency ${CONCURRENCY}: ` +
        `${(wallMs / 1000).toFixed(1)} s wall (target < 30 s), status ${run.status}, pass rate ${run.passRate?.toFixed(3)}, ${run.flaky.length} flaky`,
    );
    console.log(
      `per scenario run: ${(wallMs / n).toFixed(1)} ms wall (throughput), CPU ${(nodeCpuMs / n).toFixed(1)} ms node (API + worker + workflows) + ${(pgCpuMs / n).toFixed(1)} ms Postgres; ` +
        `a scenario run's own wall time p50 ${pct(walls, 50).toFixed(0)} ms, p99 ${pct(walls, 99).toFixed(0)} ms`,
    );
  } finally {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await api.close();
    await stack.close();
  }
}

if (require.main === module) runBench('bench evals', runEvalsBench);
