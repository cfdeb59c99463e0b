/**
 * The first seconds of a load apart from the rest, in the process serving it (docs/benchmarks.md "sms-replies"): where a
 * cold process — one just deployed or restarted — spends its first burst. Per window it records the process's CPU
 * (`process.cpuUsage`), the event-loop delay (`monitorEventLoopDelay`), the garbage collector's pauses (`PerformanceObserver`
 * of `gc` entries, Node.js "Performance measurement APIs"), and the Knex pool (tarn): connections opened, how long each
 * acquisition waited for a connection, the most connections in use and acquirers waiting at once (sampled every 10 ms);
 * and the statements every pg `Client` of the process sent: prepared ones (named, db/index.ts `prepared`) already parsed
 * on their connection, those run there for the first time (Postgres parses and plans them then), and unnamed ones
 * (parsed and planned on every run), with the most frequent of the last two.
 */
import { constants, monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';
import { tapStatements } from '../test/helpers/pgTap';
import type { Db } from '../db';

/** The tarn pool under a Knex handle, as far as these figures read it (tarn 3 `Pool`). */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
  on(event: 'acquireRequest', fn: (eventId: number) => void): void;
  on(event: 'acquireSuccess' | 'acquireFail', fn: (eventId: number) => void): void;
  on(event: 'createSuccess', fn: (eventId: number) => void): void;
  removeListener(event: string, fn: (...args: never[]) => void): void;
}

/** The figures of one window. */
export interface WindowFigures {
  /** The window's length, ms. */
  ms: number;
  /** CPU of this process (user + system), ms. */
  cpuMs: number;
  /** Event-loop delay p50, p99 and max, ms. */
  loop: { p50: number; p99: number; max: number };
  /** Garbage-collector pauses: how many, their sum and the longest, ms, and by kind. */
  gc: { count: number; ms: number; maxMs: number; kinds: string };
  /** Statements sent: prepared ones already parsed on their connection, prepared ones parsed there now, unnamed ones; the texts of the last two by count. */
  statements: { prepared: number; parsed: number; unnamed: number; top: [string, number][] };
  /** The pool: connections opened, acquisitions and their wait (mean, p99, max, ms), most in use and most waiting at once. */
  pool: { opened: number; acquired: number; waitMean: number; waitP99: number; waitMax: number; maxUsed: number; maxPending: number; open: number };
}

/** `PerformanceEntry.detail.kind` of a `gc` entry (Node.js perf_hooks `constants.NODE_PERFORMANCE_GC_*`). */
export const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'mark-compact',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

const hrUs = () => Number(process.hrtime.bigint() / 1000n);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
};

/** One window's collectors. */
class Window {
  readonly t0 = performance.now();
  private readonly cpu0 = process.cpuUsage();
  private cpu?: NodeJS.CpuUsage;
  private t1?: number;
  readonly loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  readonly gc: number[] = [];
  /** Pauses by kind (scavenge, mark-compact, …): count and ms. */
  readonly gcKinds = new Map<string, { n: number; ms: number }>();
  readonly waits: number[] = [];
  readonly statements = { prepared: 0, parsed: 0, unnamed: 0 };
  readonly cold = new Map<string, number>();
  opened = 0;
  maxUsed = 0;
  maxPending = 0;
  open = 0;

  constructor() {
    this.loop.enable();
  }

  close(pool: TarnPool | undefined): void {
    this.loop.disable();
    this.cpu = process.cpuUsage(this.cpu0);
    this.t1 = performance.now();
    this.open = pool ? pool.numUsed() + pool.numFree() : 0;
  }

  figures(): WindowFigures {
    const cpu = this.cpu ?? process.cpuUsage(this.cpu0);
    const w = this.waits;
    return {
      ms: (this.t1 ?? performance.now()) - this.t0,
      cpuMs: (cpu.user + cpu.system) / 1000,
      loop: { p50: this.loop.percentile(50) / 1e6, p99: this.loop.percentile(99) / 1e6, max: this.loop.max / 1e6 },
      statements: { ...this.statements, top: [...this.cold].sort((a, b) => b[1] - a[1]).slice(0, 8) },
      gc: { count: this.gc.length, ms: this.gc.reduce((a, b) => a + b, 0), maxMs: Math.max(0, ...this.gc), kinds: [...this.gcKinds].map(([k, v]) => `${k} ${v.n}/${v.ms.toFixed(0)} ms`).join(', ') },
      pool: { opened: this.opened, acquired: w.length, waitMean: w.length ? w.reduce((a, b) => a + b, 0) / w.length : 0, waitP99: pct(w, 99), waitMax: Math.max(0, ...w), maxUsed: this.maxUsed, maxPending: this.maxPending, open: this.open },
    };
  }
}

/**
 * Starts recording the first `firstMs` of a load and, from then on, the rest. At the split it calls `onSplit` (e.g. to
 * snapshot other counters or switch a profile).
 * @returns `stop()`, which ends the rest and answers both windows' figures
 */
export function recordFirstSeconds(db: Db, firstMs: number, onSplit?: () => void): { readonly startUs: number; readonly splitUs: number; stop(): { first: WindowFigures; rest: WindowFigures } } {
  const pool = (db.client as { pool?: TarnPool }).pool;
  const first = new Window();
  let rest: Window | undefined;
  const current = () => rest ?? first;
  const asked = new Map<number, number>();
  const onRequest = (id: number) => asked.set(id, performance.now());
  const onAcquired = (id: number) => {
    const t = asked.get(id);
    asked.delete(id);
    if (t !== undefined) current().waits.push(performance.now() - t);
  };
  const onCreated = () => current().opened++;
  pool?.on('acquireRequest', onRequest);
  pool?.on('acquireSuccess', onAcquired);
  pool?.on('acquireFail', (id) => asked.delete(id));
  pool?.on('createSuccess', onCreated);
  // Every pg Client of this process (the service's pool, the change feed, the rate limits'): what each statement costs Postgres.
  const untap = tapStatements(({ text, name, client }) => {
    const w = current();
    if (name && (client as { connection?: { parsedStatements?: Record<string, string> } }).connection?.parsedStatements?.[name] !== undefined) w.statements.prepared++;
    else {
      if (name) w.statements.parsed++;
      else w.statements.unnamed++;
      const k = `${name ? 'parsed ' : 'unnamed '}${text.replace(/\s+/g, ' ').slice(0, 60)}`;
      w.cold.set(k, (w.cold.get(k) ?? 0) + 1);
    }
  });
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const w = e.startTime < first.t0 + firstMs ? first : current();
      w.gc.push(e.duration);
      const kind = GC_KINDS[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other';
      const k = w.gcKinds.get(kind) ?? { n: 0, ms: 0 };
      k.n++;
      k.ms += e.duration;
      w.gcKinds.set(kind, k);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  const sampler = setInterval(() => {
    if (!pool) return;
    const w = current();
    w.maxUsed = Math.max(w.maxUsed, pool.numUsed());
    w.maxPending = Math.max(w.maxPending, pool.numPendingAcquires());
  }, 10);
  const split = setTimeout(() => {
    first.close(pool);
    rest = new Window();
    onSplit?.();
  }, firstMs);
  return {
    /** When the first window starts and ends, µs of the monotonic clock (`process.hrtime`, a CPU profile's timestamps). */
    startUs: hrUs() - (performance.now() - first.t0) * 1000,
    splitUs: hrUs() - (performance.now() - first.t0 - firstMs) * 1000,
    stop() {
      clearTimeout(split);
      clearInterval(sampler);
      untap();
      gc.disconnect();
      pool?.removeListener('acquireRequest', onRequest);
      pool?.removeListener('acquireSuccess', onAcquired);
      pool?.removeListener('createSuccess', onCreated);
      if (!rest) first.close(pool);
      else rest.close(pool);
      return { first: first.figures(), rest: (rest ?? first).figures() };
    },
  };
}

/** One line per window for a section's output: `label` names the load's unit (e.g. `texts`). */
export function describeWindow(name: string, w: WindowFigures): string {
  const p = w.pool;
  const st = w.statements;
  return (
    `${name} (${(w.ms / 1000).toFixed(1)} s): CPU ${((100 * w.cpuMs) / w.ms).toFixed(0)} % of a core; event-loop delay p50 ${w.loop.p50.toFixed(0)} ms, p99 ${w.loop.p99.toFixed(0)} ms, max ${w.loop.max.toFixed(0)} ms; ` +
    `GC ${w.gc.count} pauses, ${w.gc.ms.toFixed(0)} ms (${((100 * w.gc.ms) / w.ms).toFixed(1)} %), longest ${w.gc.maxMs.toFixed(1)} ms (${w.gc.kinds}); ` +
    `pool: ${p.opened} connections opened (${p.open} open at the end), ${p.acquired} acquisitions waiting mean ${p.waitMean.toFixed(1)} ms, p99 ${p.waitP99.toFixed(1)} ms, max ${p.waitMax.toFixed(1)} ms; at most ${p.maxUsed} in use and ${p.maxPending} waiting at once; ` +
    `statements: ${st.prepared} prepared ones already parsed on their connection, ${st.parsed} parsed and planned there first, ${st.unnamed} unnamed (parsed and planned each time)` +
    st.top.map(([k, n]) => `\n      ${n}  ${k}`).join('')
  );
}
