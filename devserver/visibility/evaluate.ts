/**
 * Evaluation of a parsed List Filter against visibility records, and the ORDER BY comparator
 * (docs.temporal.io/list-filter). Never throws: type mismatches make a predicate false.
 */
import type { VisibilityCompareOp, VisibilityExpr, VisibilityLiteral, VisibilityOrderBy, VisibilityQuery, VisibilityRecord } from './ast';
import { attributeValue, parseRfc3339, recordDatetime } from './attributes';

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

function isMissing(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0);
}

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Compare one scalar record value with a query literal. Returns -1/0/1, or null when the two
 * cannot be compared (type mismatch), in which case every predicate on them is false.
 */
function compareScalar(recVal: unknown, lit: VisibilityLiteral): number | null {
  if (recVal instanceof Date) {
    if (typeof lit !== 'string') return null;
    const a = recordDatetime(recVal);
    const b = parseRfc3339(lit);
    return a === null || b === null ? null : sign(a - b);
  }
  if (typeof recVal === 'string') {
    if (typeof lit !== 'string') return null;
    const a = parseRfc3339(recVal);
    if (a !== null) {
      const b = parseRfc3339(lit);
      if (b !== null) return sign(a - b);
    }
    return compareStrings(recVal, lit);
  }
  if (typeof recVal === 'number') {
    if (typeof lit === 'number') return sign(recVal - lit);
    if (typeof lit === 'string' && lit.trim() !== '' && Number.isFinite(Number(lit))) return sign(recVal - Number(lit));
    return null;
  }
  if (typeof recVal === 'bigint') {
    if (typeof lit === 'number') return sign(Number(recVal) - lit);
    return null;
  }
  if (typeof recVal === 'boolean') {
    let b: boolean | null = null;
    if (typeof lit === 'boolean') b = lit;
    else if (typeof lit === 'string' && /^(true|false)$/i.test(lit)) b = lit.toLowerCase() === 'true';
    if (b === null) return null;
    return recVal === b ? 0 : recVal ? 1 : -1;
  }
  return null;
}

function compareOp(c: number, op: VisibilityCompareOp): boolean {
  switch (op) {
    case '=':
      return c === 0;
    case '!=':
      return c !== 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
  }
}

type PositiveExpr = Exclude<VisibilityExpr, { kind: 'and' | 'or' | 'isNull' }>;

/** Predicate on one scalar ignoring `negated` (the caller applies it); null = incomparable. */
function scalarPredicate(v: unknown, expr: PositiveExpr): boolean | null {
  switch (expr.kind) {
    case 'compare': {
      const c = compareScalar(v, expr.value);
      return c === null ? null : compareOp(c, expr.op);
    }
    case 'in': {
      let comparable = false;
      for (const lit of expr.values) {
        const c = compareScalar(v, lit);
        if (c === null) continue;
        comparable = true;
        if (c === 0) return true;
      }
      return comparable ? false : null;
    }
    case 'between': {
      const lo = compareScalar(v, expr.low);
      const hi = compareScalar(v, expr.high);
      if (lo === null || hi === null) return null;
      return lo >= 0 && hi <= 0;
    }
    case 'startsWith':
      if (typeof v !== 'string') return null;
      return v.startsWith(expr.prefix);
  }
}

function evaluate(expr: VisibilityExpr, rec: VisibilityRecord): boolean {
  switch (expr.kind) {
    case 'and':
      return evaluate(expr.left, rec) && evaluate(expr.right, rec);
    case 'or':
      return evaluate(expr.left, rec) || evaluate(expr.right, rec);
    case 'isNull': {
      const missing = isMissing(attributeValue(rec, expr.attribute));
      return expr.negated ? !missing : missing;
    }
    default: {
      const v = attributeValue(rec, expr.attribute);
      if (isMissing(v)) return false;
      const negative = expr.kind === 'compare' ? expr.op === '!=' : expr.negated;
      const positive: PositiveExpr = expr.kind === 'compare' && expr.op === '!=' ? { ...expr, op: '=' } : expr;
      if (Array.isArray(v)) {
        // KeywordList: a positive predicate holds if any element satisfies it; `!=` and the
        // NOT forms hold if no element satisfies the positive form.
        let anyComparable = false;
        let any = false;
        for (const el of v) {
          const r = scalarPredicate(el, positive);
          if (r === null) continue;
          anyComparable = true;
          if (r) {
            any = true;
            break;
          }
        }
        if (!anyComparable) return false;
        return negative ? !any : any;
      }
      const r = scalarPredicate(v, positive);
      if (r === null) return false;
      return negative ? !r : r;
    }
  }
}

/**
 * Does `rec` satisfy the filter of `q`? A null filter matches everything.
 *
 * Semantics: predicates on a missing attribute are false (only `IS NULL` is true); values of
 * mismatched type are never equal/ordered (the predicate is false); Datetime values (Date, or an
 * RFC 3339 string on either side) are compared as instants; strings compare by UTF-16 code
 * units (so `BETWEEN 'order-' AND 'order-~'` behaves as documented); KeywordList (string[])
 * attributes match `=` / `IN` / `STARTS_WITH` / ranges when any element does, and `!=` /
 * `NOT ...` when no element does. Never throws.
 */
export function matchesVisibilityQuery(q: VisibilityQuery, rec: VisibilityRecord): boolean {
  return q.filter === null ? true : evaluate(q.filter, rec);
}

// ---------------------------------------------------------------------------------------------
// Ordering
// ---------------------------------------------------------------------------------------------

function typeRank(v: unknown): number {
  if (typeof v === 'number' || typeof v === 'bigint') return 0;
  if (v instanceof Date) return 1;
  if (typeof v === 'string') return 2;
  if (typeof v === 'boolean') return 3;
  if (Array.isArray(v)) return 4;
  return 5;
}

/** Total order on attribute values for sorting; missing values sort as the largest. */
function compareValues(a: unknown, b: unknown): number {
  const am = isMissing(a);
  const bm = isMissing(b);
  if (am || bm) return am && bm ? 0 : am ? 1 : -1;
  // Datetime stored as string vs Date: compare as instants.
  if ((a instanceof Date || typeof a === 'string') && (b instanceof Date || typeof b === 'string')) {
    if (a instanceof Date || b instanceof Date || (parseRfc3339(a as string) !== null && parseRfc3339(b as string) !== null)) {
      const ta = recordDatetime(a);
      const tb = recordDatetime(b);
      if (ta !== null && tb !== null) return sign(ta - tb);
    }
  }
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' || typeof a === 'bigint') return sign(Number(a) - Number(b as number));
  if (a instanceof Date) return sign(a.getTime() - (b as Date).getTime());
  if (typeof a === 'string') return compareStrings(a, b as string);
  if (typeof a === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (Array.isArray(a)) return compareStrings(a.map(String).join('\u0000'), (b as unknown[]).map(String).join('\u0000'));
  return compareStrings(String(a), String(b));
}

const DEFAULT_ORDER: VisibilityOrderBy[] = [{ attribute: 'StartTime', direction: 'DESC' }];

/**
 * Comparator for `Array.prototype.sort` implementing the query's ORDER BY clause; keys are
 * system attribute names (StartTime, CloseTime, ExecutionTime, WorkflowId, WorkflowType, RunId,
 * TaskQueue, ExecutionStatus) or custom search attribute names. Missing values (e.g. CloseTime
 * of a running workflow) sort as larger than any value: last for ASC, first for DESC.
 * Without ORDER BY the order is StartTime DESC. Ties are always broken by RunId ascending, so
 * the order is total and stable across pages.
 */
export function compareForOrder(q: VisibilityQuery): (a: VisibilityRecord, b: VisibilityRecord) => number {
  const keys = q.orderBy.length > 0 ? q.orderBy : DEFAULT_ORDER;
  return (a, b) => {
    for (const k of keys) {
      const c = compareValues(attributeValue(a, k.attribute), attributeValue(b, k.attribute));
      if (c !== 0) return k.direction === 'DESC' ? -c : c;
    }
    return compareStrings(a.runId, b.runId);
  };
}
