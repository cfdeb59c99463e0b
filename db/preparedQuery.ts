/**
 * A hot path's statement run as a named prepared statement of `pg` on a connection of the Knex pool, without Knex's
 * raw formatting on every call (its `?` → `$n` rewrite and binding walk are regular expressions over the whole text
 * per execution, a visible share of an answered text's CPU: docs/benchmarks.md "sms-replies"). The text is rewritten
 * once per process, as Knex's Postgres dialect rewrites it (`positionBindings`), and named as {@link prepared} names
 * it, so a statement is the same whether it runs here or through `raw(...).options(prepared(sql))`. Inside a
 * transaction it runs through the transaction's `raw` (the transaction holds its connection).
 */
import type { Knex } from 'knex';
import { prepared, type Db } from './index';

/** Each statement's name and text with `$n` placeholders, by its text with `?` placeholders (one look-up per call). */
const statements = new Map<string, { name: string; text: string }>();

/**
 * `sql`'s statement name ({@link prepared}) and text with each unescaped `?` numbered `$1`, `$2` … and `\?` kept as a
 * literal `?` (Knex's Postgres rule).
 * @throws Error for `??` (an identifier binding of Knex, which this path does not format)
 */
function statementOf(sql: string): { name: string; text: string } {
  let s = statements.get(sql);
  if (s === undefined) {
    if (/(^|[^\\])\?\?/.test(sql)) throw new Error('runPrepared: `??` identifier bindings are not supported');
    let n = 0;
    s = { name: prepared(sql).name, text: sql.replace(/(\\*)(\?)/g, (_m, escapes: string) => (escapes.length % 2 ? '?' : `$${++n}`)) };
    statements.set(sql, s);
  }
  return s;
}

/**
 * Runs `sql` (with `?` placeholders, as for Knex's `raw`) with `bindings` as a named prepared statement.
 * @returns pg's result (`rows`, `rowCount`), as Knex's `raw` answers on Postgres
 * @throws Error when a binding is undefined (as Knex refuses it); what the statement throws (e.g. a unique violation)
 */
export async function runPrepared(conn: Db | Knex.Transaction, sql: string, bindings: readonly unknown[]): Promise<{ rows: any[]; rowCount: number | null }> {
  if (bindings.some((b) => b === undefined)) throw new Error(`runPrepared: undefined binding at ${bindings.findIndex((b) => b === undefined)}`);
  if ((conn as Knex.Transaction).isTransaction) return conn.raw(sql, bindings as Knex.RawBinding[]).options(prepared(sql));
  const { name, text } = statementOf(sql);
  const client = (await conn.client.acquireConnection()) as { query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: any[]; rowCount: number | null }> };
  try {
    return await client.query({ name, text, values: bindings as unknown[] });
  } finally {
    await conn.client.releaseConnection(client);
  }
}
