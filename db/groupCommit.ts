/**
 * Group commit: items submitted while a batch is in flight are written together by the next one, so
 * under load many requests share one statement (one round trip, one commit) while each caller still
 * waits for its own item's outcome. One batch is in flight at a time per instance, which also keeps
 * concurrent writers from piling up on the same rows (Postgres degrades sharply when many backends
 * update a few hot rows at once on few cores).
 */
export class GroupCommit<I, O> {
  private queue: { item: I; resolve: (out: O) => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  /** Batches written, the items in them and their summed duration (ms), for the benchmarks' figures. */
  readonly stats: GroupCommitStats = { batches: 0, items: 0, ms: 0 };

  /**
   * @param run writes one batch and returns one outcome per item, in order; a throw fails every
   *   item of that batch with the error, unless `opts.isolateFailures`
   * @param maxBatch most items per batch (bounded, e.g., by Postgres' 65,535 bind parameters)
   * @param opts.isolateFailures when a batch of several items throws, write its items again one by one
   *   (each alone with `run([item])`), so only the item at fault fails and the others keep their outcome
   */
  constructor(
    private readonly run: (batch: I[]) => Promise<O[]>,
    private readonly maxBatch = 500,
    private readonly opts: { isolateFailures?: boolean } = {},
  ) {}

  /** Resolves with the item's outcome once its batch is committed; rejects when the batch failed. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Let the requests already parsed in this turn of the event loop join the first batch.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
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
      }
      this.stats.batches++;
      this.stats.items += batch.length;
      this.stats.ms += performance.now() - t0;
    }
    this.flushing = false;
  }
}

/** Counters of one {@link GroupCommit}: batches written, the items in them, their summed duration in ms. */
export interface GroupCommitStats {
  batches: number;
  items: number;
  ms: number;
}
