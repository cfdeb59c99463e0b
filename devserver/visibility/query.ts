/**
 * Temporal visibility "List Filter" query language for the embedded dev server
 * (ListWorkflowExecutions / CountWorkflowExecutions).
 *
 * Source of the syntax: the public Temporal documentation page "List Filter"
 * (docs.temporal.io/list-filter). Facts taken from it:
 *  - operators `=, !=, >, >=, <, <=`, `AND`, `OR`, parentheses, `BETWEEN ... AND`,
 *    `IN (v, ...)`, `STARTS_WITH 'prefix'`, `IS NULL`, `IS NOT NULL`;
 *  - string literals in single or double quotes; integer and floating point numbers; booleans;
 *  - search attribute names are case sensitive; names containing characters outside
 *    `[a-zA-Z0-9]` may be wrapped in backticks;
 *  - datetimes are written as RFC 3339 strings, e.g. `StartTime > '2021-08-22T15:04:05+00:00'`;
 *  - `ORDER BY` is available on self-hosted servers.
 *
 * Everything here is pure (no I/O) and has no dependencies beyond the standard library.
 *
 * Deliberate choices / limits of this implementation (the dev server has no search
 * attribute type registry, so custom attribute semantics follow the decoded JS value):
 *  - A standalone logical `NOT expr` is rejected (it is not documented). `NOT` is accepted only
 *    in the operator forms `NOT IN`, `NOT BETWEEN` and `NOT STARTS_WITH`.
 *  - `<>` is accepted as an alias of `!=`.
 *  - Text search attributes are compared like Keyword (whole-value equality), not tokenized.
 *  - Keywords (AND, OR, IN, BETWEEN, ORDER BY, ASC, ...) are case-insensitive; attribute names
 *    are case-sensitive, as documented.
 *  - Any comparison against a missing attribute (undefined, null, empty KeywordList, or
 *    CloseTime of an open workflow) is false; `IS NULL` is true for it.
 *  - Default ordering (no ORDER BY): StartTime DESC, then RunId ASC. (The docs describe the
 *    Temporal server default as `CloseTime DESC NULLS FIRST, StartTime DESC`; this dev server
 *    uses the simpler StartTime order by design.)
 *
 * Modules: `ast.ts` (public types and the error), `attributes.ts` (system attributes, RFC 3339),
 * `lexer.ts`, `parser.ts`, `evaluate.ts` (matching and ORDER BY). This file is the entry point.
 */
export {
  VISIBILITY_STATUSES,
  VisibilityQueryError,
  type VisibilityCompareOp,
  type VisibilityExpr,
  type VisibilityLiteral,
  type VisibilityOrderBy,
  type VisibilityQuery,
  type VisibilityRecord,
  type VisibilityStatus,
} from './ast';
export { parseVisibilityQuery } from './parser';
export { compareForOrder, matchesVisibilityQuery } from './evaluate';
