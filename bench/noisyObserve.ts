/**
 * What the noisy-neighbour benchmark watches during a phase (bench/noisyNeighbour.ts): where the quiet
 * organizations' time goes. Per phase: the machine's load average at its start, the CPU of this process and of
 * the bench's Postgres (and of worker child processes), the event-loop delay of this process (Node
 * `monitorEventLoopDelay`), and, sampled every 500 ms, each task queue's backlog by priority key (DescribeTaskQueue
 * `reportStats`, Temporal "Task Queue Priority and Fairness") and each in-process SDK Worker's slots in use
 * (`Worker.getStatus()`: workflow activations and activities in flight); and how long this process's main thread was
 * runnable but waiting for a core (Linux schedstat) beside the CPU its other threads took (V8's GC helpers, the
 * SDK's Rust core, the workflow thread); this process's garbage-collection pauses by kind; and the whole machine's CPU from /proc/stat: cores busy, idle, and stolen by
 * the hypervisor (`steal`, proc(5)), which on a shared VM moves every figure without any process of ours causing it.
 * Each second is also kept (the main thread's wait, each process's cores, the machine's, this process's GC pauses, the
 * tables autovacuum works on), and `stop(seconds)` prints the seconds asked for: where the slowest samples fell.
 */
import fs from 'node:fs';
import os from 'node:os';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import type { Db } from '../db';
import type { Worker } from '@temporalio/worker';
import { cpuSnapshot, mainThreadRunqueueWaitMs, processCpu } from './harness';
import { GC_KINDS } from './firstSeconds';

/**
 * This process's main thread's time waiting for a core (ms) and the CPU of its other threads (ms: the process's
 * CPU less the main thread's, so threads that have exited count too).
 */
function threadSnapshot(): { mainWaitMs: number; otherThreadsMs: number } {
  const all = processCpu(process.pid)?.ms ?? 0;
  const main = processCpu(`${process.pid}/task/${process.pid}`)?.ms ?? 0;
  return { mainWaitMs: mainThreadRunqueueWaitMs(), otherThreadsMs: all - main };
}

/** The machine's CPU time so far (ms, all cores): busy (user, nice, system, irq, softirq), idle (idle, iowait) and steal; proc(5) /proc/stat. */
function machineSnapshot(): { busyMs: number; idleMs: number; stealMs: number } | undefined {
  try {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
    const tick = 1000 / 100; // USER_HZ is 100 on Linux (sysconf(_SC_CLK_TCK))
    return { busyMs: (f[0] + f[1] + f[2] + f[5] + f[6]) * tick, idleMs: (f[3] + f[4]) * tick, stealMs: (f[7] ?? 0) * tick };
  } catch {
    return undefined; // not Linux
  }
}

/** One task queue to watch. */
export interface WatchedQueue {
  /** Short label, e.g. `main`. */
  label: string;
  taskQueue: string;
  /** The in-process SDK Worker polling it, when there is one. */
  worker?: Worker;
}

interface Peak {
  max: number;
  sum: number;
  n: number;
}
const note = (m: Map<string, Peak>, k: string, v: number) => {
  const p = m.get(k) ?? { max: 0, sum: 0, n: 0 };
  p.max = Math.max(p.max, v);
  p.sum += v;
  p.n++;
  m.set(k, p);
};

/**
 * Starts watching a phase. @returns `stop()`, which resolves with the phase's lines to print
 * @param pids extra processes whose CPU to report (e.g. a bulk worker child), by label
 */
export function watchPhase(label: string, client: Client, queues: WatchedQueue[], opts: { postmasterPid?: number; pids?: Record<string, number>; db?: Db } = {}): (seconds?: number[]) => Promise<string[]> {
  const load = os.loadavg();
  const pids = { service: process.pid, ...opts.pids };
  const cpu0 = cpuSnapshot(pids, { postmasterPid: opts.postmasterPid });
  const threads0 = threadSnapshot();
  const machine0 = machineSnapshot();
  const t0 = performance.now();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  // This process's garbage-collection pauses by kind (Node.js perf_hooks `gc` entries: main-thread pause, ms).
  const gcKinds = new Map<string, { n: number; ms: number; max: number }>();
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      const g = gcKinds.get(kind) ?? { n: 0, ms: 0, max: 0 };
      g.n++;
      g.ms += e.duration;
      g.max = Math.max(g.max, e.duration);
      gcKinds.set(kind, g);
      gcTotal += e.duration;
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const backlog = new Map<string, Peak>();
  const slots = new Map<string, Peak>();
  let sampling = Promise.resolve();
  const sample = async () => {
    for (const q of queues) {
      for (const [kind, type] of [['wf', 1], ['act', 2]] as const) {
        const r = await client.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: q.taskQueue }, taskQueueType: type, reportStats: true }).catch(() => undefined);
        const byKey = r?.statsByPriorityKey ?? {};
        for (const key of [1, 3, 4]) note(backlog, `${q.label} ${kind} p${key}`, Number(byKey[key]?.approximateBacklogCount ?? 0));
      }
      if (q.worker) {
        const s = q.worker.getStatus();
        note(slots, `${q.label} wf`, s.numInFlightWorkflowActivations);
        note(slots, `${q.label} act`, s.numInFlightActivities);
      }
    }
  };
  const timer = setInterval(() => {
    sampling = sampling.then(sample);
  }, 500);
  // One row per second of the phase: deltas of the main thread's wait, each process's CPU and the machine's, GC pauses.
  type Row = { wait: number; cores: Record<string, number>; busy: number; gcMs: number; vacuum: Set<string> };
  const rows: Row[] = [];
  let prev = { at: performance.now(), wait: threads0.mainWaitMs, cpu: cpu0, machine: machine0, gc: 0 };
  let gcTotal = 0;
  let vacuum = new Set<string>();
  const backends = postgresBySession(opts.db);
  void backends.sample();
  const second = setInterval(() => {
    backends.sample();
    const at = performance.now();
    const cpu = cpuSnapshot(pids, { postmasterPid: opts.postmasterPid });
    const machine = machineSnapshot();
    const wait = mainThreadRunqueueWaitMs();
    const ms = at - prev.at;
    rows.push({
      wait: wait - prev.wait,
      cores: Object.fromEntries(Object.keys(cpu).map((k) => [k, (cpu[k] - (prev.cpu[k] ?? 0)) / ms])),
      busy: machine && prev.machine ? (machine.busyMs - prev.machine.busyMs) / ms : NaN,
      gcMs: gcTotal - prev.gc,
      vacuum,
    });
    prev = { at, wait, cpu, machine, gc: gcTotal };
    vacuum = new Set();
    // Autovacuum workers running now, by what they work on (PostgreSQL pg_stat_activity `backend_type`).
    opts.db
      ?.raw(`select query from pg_stat_activity where backend_type = 'autovacuum worker' and query <> ''`)
      .then((r: { rows: Array<{ query: string }> }) => r.rows.forEach((x) => vacuum.add(x.query.replace(/^autovacuum:\s*/, ''))))
      .catch(() => undefined);
  }, 1000);
  return async (seconds: number[] = []) => {
    clearInterval(timer);
    clearInterval(second);
    await sampling;
    await backends.sample();
    loop.disable();
    gcObserver.disconnect();
    const gc = [...gcKinds].map(([k, g]) => `${k} ${g.n} (${g.ms.toFixed(0)} ms, longest ${g.max.toFixed(0)})`).join(', ') || 'none';
    const wallMs = performance.now() - t0;
    const cpu1 = cpuSnapshot(pids, { postmasterPid: opts.postmasterPid });
    const threads1 = threadSnapshot();
    const machine1 = machineSnapshot();
    const machine =
      machine0 && machine1
        ? `; the machine (${os.availableParallelism()} cores): busy ${((machine1.busyMs - machine0.busyMs) / wallMs).toFixed(2)}, idle ${((machine1.idleMs - machine0.idleMs) / wallMs).toFixed(2)}, stolen by the hypervisor ${((machine1.stealMs - machine0.stealMs) / wallMs).toFixed(2)} cores`
        : '';
    const cores = Object.keys(cpu1)
      .map((k) => `${k} ${((cpu1[k] - (cpu0[k] ?? 0)) / wallMs).toFixed(2)}`)
      .join(', ');
    const fmt = (m: Map<string, Peak>) =>
      [...m]
        .filter(([, p]) => p.max > 0)
        .map(([k, p]) => `${k} ${(p.sum / p.n).toFixed(0)}/${p.max}`)
        .join(', ') || 'none';
    const wanted = [...new Set(seconds.map((x) => Math.floor(x)))].filter((x) => x >= 0 && x < rows.length).sort((a, b) => a - b);
    const timeline = wanted.map((i) => {
      const r = rows[i];
      const cores = Object.entries(r.cores)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ');
      return `[${label}] second ${i}: main thread waited ${r.wait.toFixed(0)} ms, GC ${r.gcMs.toFixed(0)} ms; cores ${cores}; machine busy ${r.busy.toFixed(2)}${r.vacuum.size ? `; autovacuum: ${[...r.vacuum].join(', ')}` : ''}`;
    });
    const vacuumSeconds = rows.filter((r) => r.vacuum.size).length;
    return [
      `[${label}] load average at start ${load.map((x) => x.toFixed(2)).join(' ')}; cores used: ${cores}; event-loop delay p50/p99/max ${(loop.percentile(50) / 1e6).toFixed(0)}/${(loop.percentile(99) / 1e6).toFixed(0)}/${(loop.max / 1e6).toFixed(0)} ms`,
      `[${label}] this process's main thread waited for a core ${((threads1.mainWaitMs - threads0.mainWaitMs) / (wallMs / 1000)).toFixed(0)} ms/s; its other threads used ${((threads1.otherThreadsMs - threads0.otherThreadsMs) / wallMs).toFixed(2)} cores${machine}`,
      `[${label}] this process's garbage-collection pauses: ${gc}`,
      `[${label}] backlog mean/max: ${fmt(backlog)}`,
      ...(opts.db ? [`[${label}] autovacuum at work in ${vacuumSeconds} of ${rows.length} seconds`] : []),
      ...(opts.db && opts.postmasterPid ? [`[${label}] Postgres's cores by the process its sessions serve (application_name): ${backends.report(wallMs, cpu1.postgres - (cpu0.postgres ?? 0))}`] : []),
      ...timeline,
      `[${label}] in-process worker slots in use mean/max: ${fmt(slots)}`,
    ];
  };
}

/**
 * Postgres's CPU split by the process each session serves: every second, the client backends of this database
 * (PostgreSQL `pg_stat_activity`: pid, `application_name`, which db/index.ts `createDb` sets per process) and each
 * one's CPU from /proc (proc(5) stat utime + stime). A backend first seen after the first sample counts from its
 * start; what backends spent after their last sample before exiting, and the server's own processes, is the rest.
 */
function postgresBySession(db: Db | undefined): { sample(): Promise<void>; report(wallMs: number, postgresMs: number): string } {
  const last = new Map<number, { app: string; ms: number }>();
  const byApp = new Map<string, number>();
  let first = true;
  let pending = Promise.resolve();
  const take = async () => {
    if (!db) return;
    const r = await db
      .raw(`select pid, coalesce(nullif(application_name, ''), '(unnamed)') as app from pg_stat_activity where datname = current_database() and backend_type = 'client backend'`)
      .catch(() => undefined);
    for (const { pid, app } of (r?.rows ?? []) as Array<{ pid: number; app: string }>) {
      const ms = processCpu(pid)?.ms;
      if (ms === undefined) continue;
      const seen = last.get(pid);
      const base = seen ? seen.ms : first ? ms : 0;
      byApp.set(app, (byApp.get(app) ?? 0) + ms - base);
      last.set(pid, { app, ms });
    }
    first = false;
  };
  return {
    sample: () => (pending = pending.then(take)),
    report: (wallMs, postgresMs) => {
      const named = [...byApp].sort((a, b) => b[1] - a[1]);
      const rest = postgresMs - named.reduce((n, [, ms]) => n + ms, 0);
      return [...named.map(([app, ms]) => `${app} ${(ms / wallMs).toFixed(2)}`), `the rest ${(Math.max(0, rest) / wallMs).toFixed(2)}`].join(', ');
    },
  };
}
