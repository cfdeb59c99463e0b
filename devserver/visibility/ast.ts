/**
 * The parsed form of a Temporal visibility List Filter (docs.temporal.io/list-filter): the record
 * a filter is evaluated against, the expression tree, ORDER BY keys and the error type. Pure types;
 * see `query.ts` for the supported syntax and the deliberate limits.
 */


/** Workflow execution status names as they appear in List Filters (`ExecutionStatus = 'Running'`). */
export type VisibilityStatus =
  | 'Running'
  | 'Completed'
  | 'Failed'
  | 'Canceled'
  | 'Terminated'
  | 'ContinuedAsNew'
  | 'TimedOut';

/** Every valid {@link VisibilityStatus}, in Temporal enum order. */
export const VISIBILITY_STATUSES: readonly VisibilityStatus[] = [
  'Running',
  'Completed',
  'Failed',
  'Canceled',
  'Terminated',
  'ContinuedAsNew',
  'TimedOut',
];

/**
 * One row of the visibility store, as the dev server keeps it.
 *
 * `searchAttributes` holds decoded custom search attribute values keyed by (case-sensitive)
 * name: `string` (Keyword / Text, or a Datetime as an ISO/RFC 3339 string), `number`
 * (Int / Double), `boolean` (Bool), `Date` (Datetime) or `string[]` (KeywordList).
 * `undefined` / `null` / `[]` mean "not set".
 */
export interface VisibilityRecord {
  namespace: string;
  workflowId: string;
  runId: string;
  workflowType: string;
  taskQueue: string;
  status: VisibilityStatus;
  startTime: Date;
  executionTime: Date;
  closeTime: Date | null;
  searchAttributes: Record<string, unknown>;
}

/**
 * Raised by {@link parseVisibilityQuery} for any syntax or type error. The message says what is
 * wrong and where (1-based character position), prefixed with `invalid query: `, so it can be
 * returned verbatim as a gRPC INVALID_ARGUMENT status message.
 */
export class VisibilityQueryError extends Error {
  /** 1-based character position in the query string the error refers to, if any. */
  readonly position: number | undefined;

  constructor(message: string, position?: number) {
    super(`invalid query: ${message}`);
    this.name = 'VisibilityQueryError';
    this.position = position;
  }
}

/** A literal value written in a query: quoted string, number, or `true` / `false`. */
export type VisibilityLiteral = string | number | boolean;

/** Binary comparison operators (`<>` is normalised to `!=`). */
export type VisibilityCompareOp = '=' | '!=' | '>' | '>=' | '<' | '<=';

/**
 * Filter expression tree. `attribute` is the name exactly as written (backticks removed).
 * `negated` marks the `NOT IN` / `NOT BETWEEN` / `NOT STARTS_WITH` / `IS NOT NULL` forms.
 */
export type VisibilityExpr =
  | { kind: 'and'; left: VisibilityExpr; right: VisibilityExpr }
  | { kind: 'or'; left: VisibilityExpr; right: VisibilityExpr }
  | { kind: 'compare'; attribute: string; op: VisibilityCompareOp; value: VisibilityLiteral }
  | { kind: 'in'; attribute: string; values: VisibilityLiteral[]; negated: boolean }
  | { kind: 'between'; attribute: string; low: VisibilityLiteral; high: VisibilityLiteral; negated: boolean }
  | { kind: 'startsWith'; attribute: string; prefix: string; negated: boolean }
  | { kind: 'isNull'; attribute: string; negated: boolean };

/** One `ORDER BY` key. */
export interface VisibilityOrderBy {
  attribute: string;
  direction: 'ASC' | 'DESC';
}

/**
 * Parsed List Filter. `filter === null` means "match every execution" (empty query, or a query
 * that is only an ORDER BY clause). `orderBy` is empty when no ORDER BY clause was given, in
 * which case {@link compareForOrder} applies the default order.
 */
export interface VisibilityQuery {
  filter: VisibilityExpr | null;
  orderBy: VisibilityOrderBy[];
}
