/**
 * Retention (devserver/README.md "Retention"): the real server keeps a closed run for its namespace's retention period
 * (`workflowExecutionRetentionTtl`, 24 hours unless the namespace sets another) and then deletes it — its state, its
 * history, its visibility record and, when it is still the workflow's current run, the current-run record, so a start
 * with the same workflow id is no longer refused by it (docs.temporal.io glossary, "Retention Period").
 * Without it a long-lived `npm start` grows by every run it ever ran, in memory and in what a restart reads back.
 */
import type { Execution } from '../types';

/** A namespace's retention unless RegisterNamespace sets another (ms): a day, as the real server's default namespace. */
export const DEFAULT_RETENTION_MS = 86_400_000;

/** How often the dev server looks for runs past their retention (wall-clock ms). */
export const RETENTION_SWEEP_MS = 60_000;

/**
 * Closed runs in the order they expire, one queue per namespace (one retention each, so close order is expiry order).
 * Runs are added in close order: live closes come in clock order, and a restart adds its restored runs sorted by
 * close time first (devserver/index.ts). A run added out of order is not lost, only deleted once the runs before it are.
 */
export class RetentionQueue {
  private readonly byNamespace = new Map<string, { runs: Execution[]; head: number }>();

  /** Adds a closed run (its `closeTime` set, server clock ms). */
  add(exec: Execution): void {
    let q = this.byNamespace.get(exec.namespace);
    if (!q) {
      q = { runs: [], head: 0 };
      this.byNamespace.set(exec.namespace, q);
    }
    q.runs.push(exec);
  }

  /**
   * Takes the runs whose retention has passed by `nowMs`, oldest first.
   * @param retentionMs the namespace's retention period (ms) by name
   */
  takeExpired(nowMs: number, retentionMs: (namespace: string) => number): Execution[] {
    const out: Execution[] = [];
    for (const [ns, q] of this.byNamespace) {
      const keep = retentionMs(ns);
      while (q.head < q.runs.length && (q.runs[q.head].closeTime ?? 0) + keep <= nowMs) out.push(q.runs[q.head++]);
      // Drop the taken entries once they are half the array, so the queue never holds more than twice its runs.
      if (q.head > 1024 && q.head * 2 > q.runs.length) {
        q.runs.splice(0, q.head);
        q.head = 0;
      }
    }
    return out;
  }

  /** Closed runs waiting for their retention to pass. */
  get size(): number {
    let n = 0;
    for (const q of this.byNamespace.values()) n += q.runs.length - q.head;
    return n;
  }
}
