/**
 * Watches every statement of this process at pg's `Client.prototype.query`, where every pool's statements
 * pass (the service's Knex pool, the change feed's and the rate limits' own pools): the tests that count
 * statements or rows and the benchmarks' statement counts (bench/harness.ts, bench/firstSeconds.ts).
 */
import pg from 'pg';

/** One statement as pg's `Client.query` received it. */
export interface TappedStatement {
  /** The statement's SQL text ('' when the caller passed none, as a prepared statement's later use may). */
  text: string;
  /** The prepared statement's name, when it has one. */
  name?: string;
  /** The client it runs on (its connection knows which named statements it has parsed so far). */
  client: pg.Client;
}

/**
 * Calls `observe` with every statement any pg client of this process runs, before pg sees it, until the
 * returned function is called, which restores pg's own `query`. When `observe` returns a function, that
 * function gets the statement's result (promise calls only; a failed statement is not reported). Taps nest:
 * each restores what it replaced.
 */
export function tapStatements(observe: (s: TappedStatement) => ((result: pg.QueryResult) => void) | void): () => void {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { text?: string; name?: string } | undefined;
    const onResult = observe({ text: typeof q === 'string' ? q : (q?.text ?? ''), name: typeof q === 'object' ? q?.name : undefined, client: this });
    const out = (query as (...a: unknown[]) => unknown).apply(this, args) as Promise<pg.QueryResult> | undefined;
    if (onResult && typeof out?.then === 'function') out.then(onResult, () => undefined);
    return out;
  } as typeof query;
  return () => {
    pg.Client.prototype.query = query;
  };
}
