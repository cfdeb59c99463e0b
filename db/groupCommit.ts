/**
 * Group commit: items submitted while a batch is in flight are written together by a next one, so
 * under load many requests share one statement (one round trip, one commit) while each caller still
 * waits for its own item's outcome. By default one batch is in flight at a time per instance, which also
 * keeps concurrent writers from piling up on the same rows (Postgres degrades sharply when many backends
 * update a few hot rows at once on few cores); `maxInFlight` allows a few overlapping batches, each its
 * own statement on its own pooled connection, so a batch's round trip and the event loop's handling of
 * its answer no longer hold the next batch back.
 */
export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Keys of the items in flight, with their counts (only with `opts.key`). */
  private readonly busy = new Map<string, number>();
  private readonly maxInFlight: number;
  /** Batches written, items in them and their summed duration (ms), for the benchmarks' figures. */
  readonly stats: GroupCommitStats = { batches: 0, items: 0, ms: 0 };

  /**
   * @param run writes one batch and returns one outcome per item, in order; a throw fails every
   *   item of that batch with the error, unless `opts.isolateFailures`
   * @param maxBatch most items per batch (bounded, e.g., by Postgres' 65,535 bind parameters)
   * @param opts.isolateFailures when a batch of several items throws, write its items again one by one
   *   (each alone with `run([item])`), so only the item at fault fails and the others keep their outcome
   * @param opts.maxInFlight batches written at once (default 1); above 1, give `opts.key` where the order
   *   of related items matters
   * @param opts.key items with the same key are written in the order submitted: an item waits while an
   *   earlier one of its key is in flight (several of one key queued meanwhile share the next batch)
   */
  constructor(
    private readonly run: (batch: I[]) => Promise<O[]>,
    private readonly maxBatch = 500,
    private readonly opts: { isolateFailures?: boolean; maxInFlight?: number; key?: (item: I) => string } = {},
  ) {
    this.maxInFlight = Math.max(1, opts.maxInFlight ?? 1);
  }

  /** Resolves with the item's outcome once its batch is committed; rejects when the batch failed. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled && this.inFlight < this.maxInFlight) {
        this.scheduled = true;
        // Let the requests already parsed in this turn of the event loop join the batch.
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  /** Starts batches while fewer than `maxInFlight` run and something queued may go. */
  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.take();
      if (!batch.length) return; // everything queued waits for an earlier item of its key
      this.inFlight++;
      void this.write(batch).then(() => {
        this.inFlight--;
        if (this.opts.key) for (const b of batch) this.release(this.opts.key(b.item));
        this.pump();
      });
    }
  }

  /** Removes the next batch from the queue: up to maxBatch items whose key has nothing in flight. */
  private take(): Pending<I, O>[] {
    const key = this.opts.key;
    if (!key) return this.queue.splice(0, this.maxBatch);
    const batch: Pending<I, O>[] = [];
    const rest: Pending<I, O>[] = [];
    for (const q of this.queue) {
      if (batch.length < this.maxBatch && !this.busy.has(key(q.item))) batch.push(q);
      else rest.push(q);
    }
    for (const b of batch) {
      const k = key(b.item);
      this.busy.set(k, (this.busy.get(k) ?? 0) + 1);
    }
    this.queue = rest;
    return batch;
  }

  private release(k: string): void {
    const n = (this.busy.get(k) ?? 1) - 1;
    if (n > 0) this.busy.set(k, n);
    else this.busy.delete(k);
  }

  /** Writes one batch and settles its items; never rejects. */
  private async write(batch: Pending<I, O>[]): Promise<void> {
    const t0 = performance.now();
    try {
      const out = await this.run(batch.map((b) => b.item));
      for (let i = 0; i < batch.length; i++) batch[i].resolve(out[i]);
    } catch (err) {
      if (this.opts.isolateFailures && batch.length > 1) {
        for (const b of batch) await this.run([b.item]).then(([out]) => b.resolve(out), (alone: unknown) => b.reject(alone ?? new Error('group commit failed')));
      } else {
        for (const b of batch) b.reject(err ?? new Error('group commit failed'));
      }
    } finally {
      this.stats.batches++;
      this.stats.items += batch.length;
      this.stats.ms += performance.now() - t0;
    }
  }
}

/** A submitted item and its caller's settlement. */
interface Pending<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (err: unknown) => void;
}

/** Counters of one {@link GroupCommit}: batches written, the items in them, their summed duration in ms. */
export interface GroupCommitStats {
  batches: number;
  items: number;
  ms: number;
}
