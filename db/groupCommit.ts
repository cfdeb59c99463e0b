import type { Knex } from 'knex';

/**
 * Group commit: items submitted while a batch is in flight are written together by the next one, so
 * under load many requests share one statement (one round trip, one commit) while each caller still
 * waits for its own item's outcome. One batch is in flight at a time per instance, which also keeps
 * concurrent writers from piling up on the same rows (Postgres degrades sharply when many backends
 * update a few hot rows at once on few cores).
 */
export class GroupCommit<I, O> {
  private queue: { item: I; at: number; resolve: (out: O) => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  /** Batches written, the items in them, their summed duration and the items' summed wait (ms), for the benchmarks' figures. */
  readonly stats: GroupCommitStats = emptyStats();

  /**
   * @param run writes one batch and returns one outcome per item, in order; a throw fails every
   *   item of that batch with the error, unless `opts.isolateFailures`
   * @param maxBatch most items per batch (bounded, e.g., by Postgres' 65,535 bind parameters)
   * @param opts.isolateFailures when a batch of several items throws, write its items again one by one
   *   (each alone with `run([item])`), so only the item at fault fails and the others keep their outcome
   * @param opts.onIdle called when the last batch has been written and nothing is queued (synchronously, before
   *   any further `submit` can run)
   */
  constructor(
    private readonly run: (batch: I[]) => Promise<O[]>,
    private readonly maxBatch = 500,
    private readonly opts: { isolateFailures?: boolean; onIdle?: () => void } = {},
  ) {}

  /** Resolves with the item's outcome once its batch is committed; rejects when the batch failed. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, at: performance.now(), resolve, reject });
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
      const t1 = performance.now();
      this.stats.batches++;
      this.stats.items += batch.length;
      this.stats.ms += t1 - t0;
      for (const b of batch) this.stats.waitMs += t1 - b.at;
    }
    this.flushing = false;
    this.opts.onIdle?.();
  }
}

/**
 * Counters of one {@link GroupCommit}: batches written, the items in them, their summed duration in ms, and the items'
 * summed wait in ms from `submit` to their batch's outcome (the batch in flight before theirs, then their own).
 */
export interface GroupCommitStats {
  batches: number;
  items: number;
  ms: number;
  waitMs: number;
}

/** Counters with nothing counted yet. */
export function emptyStats(): GroupCommitStats {
  return { batches: 0, items: 0, ms: 0, waitMs: 0 };
}

/** Adds `s`'s counters into `sum` (the figures of several writers together). @returns `sum` */
export function addStats(sum: GroupCommitStats, s: GroupCommitStats): GroupCommitStats {
  sum.batches += s.batches;
  sum.items += s.items;
  sum.ms += s.ms;
  sum.waitMs += s.waitMs;
  return sum;
}

/**
 * A {@link GroupCommit} per database handle and organization, made on first use: statements of one organization
 * batch together (its repository's SQL is scoped by that organization id), organizations never wait for each other.
 * A transaction handle is never batched (its statement must run in that transaction): its item runs alone.
 * Failures are isolated (`isolateFailures`): a batch that throws is written again item by item.
 */
export class PerOrgGroupCommit<I, O> {
  private readonly writers = new WeakMap<Knex, Map<string, GroupCommit<I, O>>>();
  /** What the writers dropped when idle had written, per database handle (kept for {@link stats}). */
  private readonly retired = new WeakMap<Knex, GroupCommitStats>();

  /**
   * @param run writes one batch of one organization, one outcome per item in order (as for {@link GroupCommit})
   * @param opts.prepareOnConnect its statement is one a connection prepares when the pool opens it
   *   ({@link prepareOnConnect}): `run` is then also called with an empty batch, in a transaction rolled back
   */
  constructor(
    private readonly run: (db: Knex, orgId: string, batch: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
    opts: { prepareOnConnect?: boolean } = {},
  ) {
    if (opts.prepareOnConnect) prepareOnConnect((trx) => this.run(trx, NO_ORGANIZATION, []));
  }

  /** Resolves with the item's outcome once its batch is committed. @throws what writing the item alone threw */
  submit(db: Knex, orgId: string, item: I): Promise<O> {
    if ((db as Knex.Transaction).isTransaction) return this.run(db, orgId, [item]).then((out) => out[0]);
    let perOrg = this.writers.get(db);
    if (!perOrg) this.writers.set(db, (perOrg = new Map()));
    let writer = perOrg.get(orgId);
    if (!writer) {
      const writers = perOrg;
      const created: GroupCommit<I, O> = new GroupCommit((batch) => this.run(db, orgId, batch), this.maxBatch, {
        isolateFailures: true,
        // An organization's writer lives only while it has work, so a process serving many organizations keeps
        // one writer per organization with texts in flight, not one per organization it ever served.
        onIdle: () => {
          if (writers.get(orgId) !== created) return;
          writers.delete(orgId);
          this.retired.set(db, addStats(this.retired.get(db) ?? emptyStats(), created.stats));
        },
      });
      perOrg.set(orgId, (writer = created));
    }
    return writer.submit(item);
  }

  /** Batches written so far on `db`, all organizations together (the benchmarks' figures). */
  stats(db: Knex): GroupCommitStats {
    const sum = addStats(emptyStats(), this.retired.get(db) ?? emptyStats());
    for (const w of this.writers.get(db)?.values() ?? []) addStats(sum, w.stats);
    return sum;
  }
}

/**
 * A condition on a batch's item number `k` (0 … batch size − 1) that every item meets, added where a statement
 * unpacks its batch as `alias` (`jsonb_to_recordset … AS bx(k int, …)`). Postgres plans a set-returning function at
 * 100 rows and a range of unknown selectivity at 0.5 % of them, so the batch is planned at about one row: each item's
 * row is then found by its primary key (a nested loop), not by scanning the organization's rows into a hash table —
 * which the planner prefers when the table's statistics predate its rows (a table that grew since its last ANALYZE).
 * A statement that looks rows up by id also checks their organization with {@link inOrganization}.
 * PostgreSQL docs "Row Estimation Examples" (`DEFAULT_RANGE_INEQ_SEL`).
 */
export const plannedAsFew = (alias: string): string => `${alias}.k BETWEEN 0 AND 1000000`;

/** {@link plannedAsFew} for the usual alias of a statement's batch, `bx`. */
export const BATCH_PLANNED_AS_FEW = plannedAsFew('bx');

/**
 * SQL: the row's organization column `column` equals `org` (a column of the batch or a parameter), written so the
 * planner cannot use it as an index condition: the row beside it looked up by id is then found by its primary key.
 * Compared plainly (`t.org_id = bx.org_id`), a plan made while the table has never been analyzed (a new database:
 * the statements prepared on connect are planned then, and a generic plan is kept until an ANALYZE re-plans it,
 * db/index.ts `planCacheMode`) costs the primary key and any index that leads with `org_id` alike, and may take the
 * latter: each lookup then reads all the organization's rows. Measured (bench sms-replies, 2026-12-01): 4,000–5,000
 * rows filtered per lookup after 20 s of texts, 150,000 buffers per batch, Postgres's CPU per text 5–6 ms against
 * 3 ms. An expression matches an index only if the index is built on it (PostgreSQL docs "Indexes on Expressions"),
 * and `||` on a column is not simplified away. Same result: `org_id` is never null.
 */
export const inOrganization = (column: string, org: string): string => `(${column} || '') = ${org}`;

/** The organization id the statements prepared on connect run with: none has it, so their empty batch touches no row. */
export const NO_ORGANIZATION = 'org_none';

const preparers: ((trx: Knex.Transaction) => Promise<unknown>)[] = [];

/**
 * Registers a hot statement to prepare on each connection the pool opens at start (db/index.ts `openPoolMinimum`):
 * `prepare` runs it there once with an empty batch, in a transaction that is rolled back, so the connection has parsed
 * and planned it (a named statement of `pg`: db/index.ts `prepared`) before the first request needs it. Postgres keeps a
 * session's prepared statements across a rollback (PostgreSQL "PREPARE": they live until the session ends).
 */
export function prepareOnConnect(prepare: (trx: Knex.Transaction) => Promise<unknown>): void {
  preparers.push(prepare);
}

/** The statements registered with {@link prepareOnConnect}, in order. */
export function connectPreparers(): readonly ((trx: Knex.Transaction) => Promise<unknown>)[] {
  return preparers;
}
