/**
 * SQL that several migrations write the same way. Only migrations use it; a migration's statements must stay
 * what they were when it was first applied, so a change here must not change the SQL an applied migration runs
 * (white space aside).
 */

/**
 * The three triggers that make `table` append-only (README "API notes": the audit log and the billing ledger; UPDATE, DELETE and
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
