/**
 * A hot path's statement run as a named prepared statement of `pg` on a connection of the Knex pool, without Knex's
 * raw formatting on every call (its `?` → `$n` rewrite and binding walk are a regular expression over the whole text
 * per execution: a tenth of an answered text's CPU in the API, docs/benchmarks.md "sms-replies"). The text is rewritten
 * once per process, exactly as Knex's Postgres dialect rewrites it (`positionBindings`), and named as {@link prepared}
 * names it, so a statement is the same whether it runs here or through `raw(...).options(prepared(sql))`.
 * Inside a transaction the statement runs through the transaction's `raw` (its connection is Knex's).
 */
import type { Knex } from 'knex';
import { prepared, type Db } from './index';

/** The text of each statement with `$n` placeholders, by its text with `?` placeholders. */
const positioned = new Map<string, string>();

/**
 * `sql` with each unescaped `?` numbered `$1`, `$2` … and `\?` kept as a literal `?` (Knex's Postgres rule).
 * @throws Error for `??` (an identifier binding of Knex, which this path does not format)
 */
function positionedText(sql: string): string {
  let text = positioned.get(sql);
  if (text === undefined) {
    if (/(^|[^\\])\?\?/.test(sql)) throw new Error('runPrepared: `??` identifier bindings are not supported');
    let n = 0;
    text = sql.replace(/(\\*)(\?)/g, (_m, escapes: string) => (escapes.length % 2 ? '?' : `$${++n}`));
    positioned.set(sql, text);
  }
  return text;
}

/**
 * Runs `sql` (with `?` placeholders, as for Knex's `raw`) with `bindings` as a named prepared statement.
 * @returns pg's result (`rows`, `rowCount`), as Knex's `raw` answers on Postgres
 * @throws Error when a binding is undefined (as Knex refuses it); what the statement throws (e.g. a unique violation)
 */
export async function runPrepared(conn: Db | Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<{ rows: any[]; rowCount: number | null }> {
  if (bindings.some((b) => b === undefined)) throw new Error(`runPrepared: undefined binding at ${bindings.findIndex((b) => b === undefined)}`);
  if ((conn as Knex.Transaction).isTransaction) return conn.raw(sql, bindings as Knex.RawBinding[]).options(prepared(sql));
  const text = positionedText(sql);
  const client = (await conn.client.acquireConnection()) as { query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: any[]; rowCount: number | null }> };
  try {
    return await client.query({ name: prepared(sql).name, text, values: bindings as unknown[] });
  } finally {
    await conn.client.releaseConnection(client);
  }
}
