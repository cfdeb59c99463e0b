/**
 * Columns and SQL that several migrations write the same way. Only migrations use it; a migration's statements must stay
 * what they were when it was first applied, so a change here must not change the SQL an applied migration runs
 * (white space aside).
 */
import type { Knex } from 'knex';

/**
 * The first columns of a tenant table (DESIGN.md: every query is scoped by organization): `id text` primary key
 * and `org_id text not null` referencing `organizations(id)` ON DELETE CASCADE.
 */
export function tenantKeys(t: Knex.CreateTableBuilder): void {
  t.text('id').primary();
  t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
}

/** Each named column as `timestamptz not null default now()` (e.g. `created_at`, `updated_at`). */
export function timestampsNow(t: Knex.CreateTableBuilder, knex: Knex, ...columns: string[]): void {
  for (const c of columns) t.timestamp(c, { useTz: true }).notNullable().defaultTo(knex.fn.now());
}

/**
 * The three triggers that make `table` append-only (docs/api-notes.md: the audit log and the billing ledger; UPDATE, DELETE and
 * TRUNCATE raise): row-level BEFORE UPDATE and BEFORE DELETE, statement-level BEFORE TRUNCATE, each running
 * the trigger function `fn` (which lets a cascade from a deleted organization through).
 * @returns three `CREATE TRIGGER <table>_no_update|_no_delete|_no_truncate …;` statements, one a line
 */
export function appendOnlyTriggers(table: string, fn: string): string {
  return [
    `CREATE TRIGGER ${table}_no_update BEFORE UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
    `CREATE TRIGGER ${table}_no_delete BEFORE DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}();`,
    `CREATE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
  ].join('\n');
}

/**
 * `DROP TRIGGER IF EXISTS <trigger> ON <table>;` for each `[trigger, table]`, then `DROP FUNCTION IF EXISTS <fn>();`
 * for each function: what a `down` runs to remove the triggers its `up` created and the functions they ran.
 * @returns the statements in that order, one an item
 */
export function dropTriggers(triggers: ReadonlyArray<readonly [trigger: string, table: string]>, functions: readonly string[]): string[] {
  return [...triggers.map(([trigger, table]) => `DROP TRIGGER IF EXISTS ${trigger} ON ${table};`), ...functions.map((fn) => `DROP FUNCTION IF EXISTS ${fn}();`)];
}

/**
 * The closing columns of a table of runs that finish (a simulation, an eval run): `error text`, `created_at`
 * (`timestamptz not null default now()`) and `completed_at timestamptz`, null until the run finished.
 */
export function runEndColumns(t: Knex.CreateTableBuilder, knex: Knex): void {
  t.text('error');
  timestampsNow(t, knex, 'created_at');
  t.timestamp('completed_at', { useTz: true });
}

/** `ALTER TABLE <table> ADD CONSTRAINT <table>_status_check …`: a run's `status` is `running`, `completed` or `failed`. */
export function runStatusCheck(table: string): string {
  return `ALTER TABLE ${table} ADD CONSTRAINT ${table}_status_check CHECK (status IN ('running', 'completed', 'failed'))`;
}
