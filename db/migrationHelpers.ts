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

/**
 * `CREATE FUNCTION <name>() RETURNS trigger`: a statement-level trigger function of the change feed (db/changeFeed.ts,
 * channel `acp_changes`) that notifies `<table>:<key>,<key>…`, 200 keys a notification, with the keys each subquery
 * selects as `k` from the transition tables `old_rows` / `new_rows` (PL/pgSQL plans each statement when first run,
 * so each branch names only the transition tables its trigger declares).
 * @param keys the subquery per operation; `updated` defaults to `inserted`
 */
export function changeFeedFunction(name: string, keys: { deleted: string; inserted: string; updated?: string }): string {
  const loop = (select: string) => `FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT d.k, (row_number() OVER () - 1) / 200 AS g FROM (${select}) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;`;
  const update = keys.updated ? `ELSIF TG_OP = 'UPDATE' THEN\n        ${loop(keys.updated)}\n      ` : '';
  return `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE chunk text;
    BEGIN
      IF TG_OP = 'DELETE' THEN
        ${loop(keys.deleted)}
      ${update}ELSE
        ${loop(keys.inserted)}
      END IF;
      RETURN NULL;
    END $$;`;
}

/**
 * The statement-level triggers `<table>_inserts`, `_updates` and `_deletes` running the change-feed function `fn`
 * ({@link changeFeedFunction}); the update trigger sees `old_rows` too when `updateSeesOld`.
 * @returns three `CREATE TRIGGER` statements, one a line
 */
export function changeFeedTriggers(table: string, fn: string, updateSeesOld = false): string {
  return [
    `CREATE TRIGGER ${table}_inserts AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
    `CREATE TRIGGER ${table}_updates AFTER UPDATE ON ${table} REFERENCING ${updateSeesOld ? 'OLD TABLE AS old_rows ' : ''}NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
    `CREATE TRIGGER ${table}_deletes AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`,
  ].join('\n');
}

/** What a `down` runs to remove {@link changeFeedTriggers} of each table and the function `fn`. */
export function dropChangeFeed(tables: readonly string[], fn: string): string[] {
  return dropTriggers(tables.flatMap((t) => ['inserts', 'updates', 'deletes'].map((op) => [`${t}_${op}`, t] as const)), [fn]);
}
