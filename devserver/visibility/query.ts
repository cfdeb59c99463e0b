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
 */

// ---------------------------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// System attributes
// ---------------------------------------------------------------------------------------------

type SystemKind = 'keyword' | 'status' | 'datetime';

const SYSTEM_ATTRIBUTES: Record<string, { kind: SystemKind; get: (r: VisibilityRecord) => unknown }> = {
  WorkflowType: { kind: 'keyword', get: (r) => r.workflowType },
  WorkflowId: { kind: 'keyword', get: (r) => r.workflowId },
  RunId: { kind: 'keyword', get: (r) => r.runId },
  TaskQueue: { kind: 'keyword', get: (r) => r.taskQueue },
  ExecutionStatus: { kind: 'status', get: (r) => r.status },
  StartTime: { kind: 'datetime', get: (r) => r.startTime },
  CloseTime: { kind: 'datetime', get: (r) => r.closeTime },
  ExecutionTime: { kind: 'datetime', get: (r) => r.executionTime },
};

function systemAttribute(name: string): { kind: SystemKind; get: (r: VisibilityRecord) => unknown } | undefined {
  return Object.prototype.hasOwnProperty.call(SYSTEM_ATTRIBUTES, name) ? SYSTEM_ATTRIBUTES[name] : undefined;
}

function attributeValue(rec: VisibilityRecord, name: string): unknown {
  const sys = systemAttribute(name);
  if (sys) return sys.get(rec);
  const attrs = rec.searchAttributes;
  if (!attrs || !Object.prototype.hasOwnProperty.call(attrs, name)) return undefined;
  return attrs[name];
}

// ---------------------------------------------------------------------------------------------
// Datetime handling (RFC 3339)
// ---------------------------------------------------------------------------------------------

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

const datetimeCache = new Map<string, number | null>();

/**
 * Parse an RFC 3339 timestamp (`2021-08-22T15:04:05Z`, `...05.123456789+02:00`) to epoch
 * milliseconds (sub-millisecond digits are truncated). Returns null if it is not RFC 3339.
 */
function parseRfc3339(text: string): number | null {
  const cached = datetimeCache.get(text);
  if (cached !== undefined) return cached;
  let result: number | null = null;
  const m = RFC3339.exec(text);
  if (m) {
    const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    const ms = m[7] ? Number((m[7] + '00').slice(0, 3)) : 0;
    const valid =
      month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 60;
    if (valid) {
      let offsetMin = 0;
      if (!m[8]) {
        const oh = Number(m[10]);
        const om = Number(m[11]);
        if (oh <= 23 && om <= 59) offsetMin = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
        else offsetMin = NaN;
      }
      const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMin * 60_000;
      result = Number.isFinite(utc) ? utc : null;
    }
  }
  if (datetimeCache.size > 10_000) datetimeCache.clear();
  datetimeCache.set(text, result);
  return result;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** Epoch ms of a record-side datetime value (Date, or ISO / RFC 3339 string), else null. */
function recordDatetime(v: unknown): number | null {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.getTime();
  if (typeof v === 'string') {
    const r = parseRfc3339(v);
    if (r !== null) return r;
    const p = Date.parse(v);
    return /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(p) ? p : null;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

type TokenType = 'ident' | 'quotedIdent' | 'string' | 'number' | 'op' | 'lparen' | 'rparen' | 'comma' | 'eof';

interface Token {
  type: TokenType;
  /** Identifier name, string contents, operator text, or number source text. */
  text: string;
  /** Source text exactly as written (used in error messages). */
  raw: string;
  /** 1-based position of the first character. */
  pos: number;
}

const STRING_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '0': '\0',
  b: '\b',
  Z: '\x1a',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '`': '`',
};

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    const pos = i + 1;
    if (c === "'" || c === '"') {
      i++;
      let text = '';
      let closed = false;
      while (i < n) {
        const d = src[i]!;
        if (d === '\\') {
          if (i + 1 >= n) break;
          const e = src[i + 1]!;
          text += STRING_ESCAPES[e] ?? e;
          i += 2;
          continue;
        }
        if (d === c) {
          if (src[i + 1] === c) {
            // SQL-style doubled quote
            text += c;
            i += 2;
            continue;
          }
          i++;
          closed = true;
          break;
        }
        text += d;
        i++;
      }
      if (!closed) throw new VisibilityQueryError(`unterminated string literal starting at position ${pos}`, pos);
      tokens.push({ type: 'string', text, raw: src.slice(start, i), pos });
      continue;
    }
    if (c === '`') {
      const end = src.indexOf('`', i + 1);
      if (end < 0) throw new VisibilityQueryError(`unterminated backtick-quoted attribute name starting at position ${pos}`, pos);
      const name = src.slice(i + 1, end);
      if (name.length === 0) throw new VisibilityQueryError(`empty backtick-quoted attribute name at position ${pos}`, pos);
      i = end + 1;
      tokens.push({ type: 'quotedIdent', text: name, raw: src.slice(start, i), pos });
      continue;
    }
    const num = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      const after = src[i + num[0].length];
      if (after !== undefined && /[A-Za-z_]/.test(after)) {
        throw new VisibilityQueryError(
          `unexpected token '${readWord(src, i)}' at position ${pos} (names must start with a letter or underscore; wrap other attribute names in backticks)`,
          pos,
        );
      }
      i += num[0].length;
      tokens.push({ type: 'number', text: num[0], raw: num[0], pos });
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_]/.test(src[i]!)) i++;
      const word = src.slice(start, i);
      tokens.push({ type: 'ident', text: word, raw: word, pos });
      continue;
    }
    if (c === '(') {
      tokens.push({ type: 'lparen', text: c, raw: c, pos });
      i++;
      continue;
    }
    if (c === ')') {
      tokens.push({ type: 'rparen', text: c, raw: c, pos });
      i++;
      continue;
    }
    if (c === ',') {
      tokens.push({ type: 'comma', text: c, raw: c, pos });
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '!=' || two === '<>' || two === '>=' || two === '<=') {
      tokens.push({ type: 'op', text: two === '<>' ? '!=' : two, raw: two, pos });
      i += 2;
      continue;
    }
    if (c === '=' || c === '<' || c === '>') {
      tokens.push({ type: 'op', text: c, raw: c, pos });
      i++;
      continue;
    }
    throw new VisibilityQueryError(`unexpected character '${c}' at position ${pos}`, pos);
  }
  tokens.push({ type: 'eof', text: '', raw: '', pos: n + 1 });
  return tokens;
}

function readWord(src: string, i: number): string {
  let j = i;
  while (j < src.length && /[^\s(),=<>!'"`]/.test(src[j]!)) j++;
  return src.slice(i, Math.max(j, i + 1));
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

const KEYWORDS = new Set([
  'AND',
  'OR',
  'NOT',
  'IN',
  'BETWEEN',
  'STARTS_WITH',
  'IS',
  'NULL',
  'ORDER',
  'BY',
  'ASC',
  'DESC',
  'TRUE',
  'FALSE',
]);

function describe(t: Token): string {
  return t.type === 'eof' ? 'end of query' : `'${t.raw}' at position ${t.pos}`;
}

class Parser {
  private i = 0;

  constructor(private readonly tokens: Token[]) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (this.i < this.tokens.length - 1) this.i++;
    return t;
  }

  private isKeyword(t: Token, kw: string): boolean {
    return t.type === 'ident' && t.text.toUpperCase() === kw;
  }

  private acceptKeyword(kw: string): Token | null {
    if (this.isKeyword(this.peek(), kw)) return this.next();
    return null;
  }

  private expectKeyword(kw: string, context: string): Token {
    const t = this.peek();
    if (!this.isKeyword(t, kw)) throw this.error(`expected ${kw} ${context} but found ${describe(t)}`, t);
    return this.next();
  }

  private error(message: string, t: Token): VisibilityQueryError {
    return new VisibilityQueryError(message, t.pos);
  }

  parseQuery(): VisibilityQuery {
    let filter: VisibilityExpr | null = null;
    if (this.peek().type !== 'eof' && !this.isKeyword(this.peek(), 'ORDER')) {
      filter = this.parseOr();
    }
    const orderBy: VisibilityOrderBy[] = [];
    if (this.acceptKeyword('ORDER')) {
      this.expectKeyword('BY', 'after ORDER');
      do {
        orderBy.push(this.parseOrderItem());
      } while (this.peek().type === 'comma' && this.next());
    }
    const t = this.peek();
    if (t.type !== 'eof') {
      if (t.type === 'rparen') throw this.error(`unbalanced ')' at position ${t.pos}`, t);
      throw this.error(
        `unexpected token ${describe(t)}; expected AND, OR, ORDER BY or end of query`,
        t,
      );
    }
    return { filter, orderBy };
  }

  private parseOrderItem(): VisibilityOrderBy {
    const attribute = this.parseAttributeName('in ORDER BY');
    let direction: 'ASC' | 'DESC' = 'ASC';
    if (this.acceptKeyword('DESC')) direction = 'DESC';
    else this.acceptKeyword('ASC');
    return { attribute, direction };
  }

  private parseOr(): VisibilityExpr {
    let left = this.parseAnd();
    while (this.acceptKeyword('OR')) {
      const right = this.parseAnd();
      left = { kind: 'or', left, right };
    }
    return left;
  }

  private parseAnd(): VisibilityExpr {
    let left = this.parsePrimary();
    while (this.acceptKeyword('AND')) {
      const right = this.parsePrimary();
      left = { kind: 'and', left, right };
    }
    return left;
  }

  private parsePrimary(): VisibilityExpr {
    const t = this.peek();
    if (t.type === 'lparen') {
      this.next();
      if (this.peek().type === 'rparen') throw this.error(`empty parentheses at position ${t.pos}`, t);
      const inner = this.parseOr();
      const close = this.peek();
      if (close.type !== 'rparen') {
        throw this.error(`expected ')' to close '(' at position ${t.pos} but found ${describe(close)}`, close);
      }
      this.next();
      return inner;
    }
    if (this.isKeyword(t, 'NOT')) {
      throw this.error(
        `unsupported operator NOT at position ${t.pos}: only NOT IN, NOT BETWEEN, NOT STARTS_WITH and IS NOT NULL are supported`,
        t,
      );
    }
    return this.parsePredicate();
  }

  private parseAttributeName(where: string): string {
    const context = where ? `${where} ` : '';
    const t = this.peek();
    if (t.type === 'quotedIdent') {
      this.next();
      return t.text;
    }
    if (t.type === 'ident') {
      if (KEYWORDS.has(t.text.toUpperCase())) {
        throw this.error(
          `expected a search attribute name ${context}but found keyword ${describe(t)} (wrap attribute names in backticks to use a keyword)`,
          t,
        );
      }
      this.next();
      return t.text;
    }
    if (t.type === 'eof') throw this.error(`expected a search attribute name ${context}but found end of query`, t);
    throw this.error(`expected a search attribute name ${context}but found ${describe(t)}`, t);
  }

  private parsePredicate(): VisibilityExpr {
    const attrTok = this.peek();
    const attribute = this.parseAttributeName('');
    const t = this.peek();

    if (t.type === 'op') {
      this.next();
      const value = this.parseLiteral(t.raw);
      const expr: VisibilityExpr = { kind: 'compare', attribute, op: t.text as VisibilityCompareOp, value };
      return this.validate(expr, attrTok);
    }
    let negated = false;
    let notTok: Token | null = null;
    if (this.isKeyword(t, 'NOT')) {
      notTok = this.next();
      negated = true;
    }
    const opTok = this.peek();
    if (this.acceptKeyword('IN')) {
      const open = this.peek();
      if (open.type !== 'lparen') throw this.error(`expected '(' after IN but found ${describe(open)}`, open);
      this.next();
      if (this.peek().type === 'rparen') throw this.error(`empty IN list at position ${open.pos}`, this.peek());
      const values: VisibilityLiteral[] = [];
      for (;;) {
        values.push(this.parseLiteral('IN'));
        const sep = this.peek();
        if (sep.type === 'comma') {
          this.next();
          continue;
        }
        if (sep.type === 'rparen') {
          this.next();
          break;
        }
        throw this.error(`expected ',' or ')' in IN list but found ${describe(sep)}`, sep);
      }
      return this.validate({ kind: 'in', attribute, values, negated }, attrTok);
    }
    if (this.acceptKeyword('BETWEEN')) {
      const low = this.parseLiteral('BETWEEN');
      this.expectKeyword('AND', 'between the two BETWEEN bounds');
      const high = this.parseLiteral('BETWEEN ... AND');
      return this.validate({ kind: 'between', attribute, low, high, negated }, attrTok);
    }
    if (this.acceptKeyword('STARTS_WITH')) {
      const p = this.peek();
      const prefix = this.parseLiteral('STARTS_WITH');
      if (typeof prefix !== 'string') {
        throw this.error(`STARTS_WITH requires a quoted string prefix but found ${describe(p)}`, p);
      }
      return this.validate({ kind: 'startsWith', attribute, prefix, negated }, attrTok);
    }
    if (!negated && this.acceptKeyword('IS')) {
      const neg = this.acceptKeyword('NOT') !== null;
      this.expectKeyword('NULL', neg ? 'after IS NOT' : 'after IS');
      return this.validate({ kind: 'isNull', attribute, negated: neg }, attrTok);
    }
    if (notTok) {
      throw this.error(`expected IN, BETWEEN or STARTS_WITH after NOT but found ${describe(opTok)}`, opTok);
    }
    throw this.error(
      `expected an operator (=, !=, >, >=, <, <=, IN, NOT IN, BETWEEN, STARTS_WITH, IS NULL, IS NOT NULL) after attribute '${attribute}' but found ${describe(t)}`,
      t,
    );
  }

  private parseLiteral(after: string): VisibilityLiteral {
    const t = this.peek();
    switch (t.type) {
      case 'string':
        this.next();
        return t.text;
      case 'number': {
        this.next();
        const v = Number(t.text);
        if (!Number.isFinite(v)) throw this.error(`invalid number ${describe(t)}`, t);
        return v;
      }
      case 'ident': {
        const up = t.text.toUpperCase();
        if (up === 'TRUE' || up === 'FALSE') {
          this.next();
          return up === 'TRUE';
        }
        if (up === 'NULL') {
          throw this.error(`NULL is not a comparable value (${describe(t)}); use IS NULL or IS NOT NULL`, t);
        }
        throw this.error(
          `expected a value after ${after} but found ${describe(t)}; string values must be quoted and comparing two attributes is not supported`,
          t,
        );
      }
      case 'quotedIdent':
        throw this.error(
          `expected a value after ${after} but found attribute name ${describe(t)}; comparing two attributes is not supported`,
          t,
        );
      default:
        throw this.error(`expected a value after ${after} but found ${describe(t)}`, t);
    }
  }

  /** Type checks for system attributes (custom attribute types are unknown until match time). */
  private validate(expr: VisibilityExpr, attrTok: Token): VisibilityExpr {
    if (expr.kind === 'and' || expr.kind === 'or' || expr.kind === 'isNull') return expr;
    const sys = systemAttribute(expr.attribute);
    if (!sys) return expr;
    const where = `at position ${attrTok.pos}`;
    const values: VisibilityLiteral[] =
      expr.kind === 'compare'
        ? [expr.value]
        : expr.kind === 'in'
          ? expr.values
          : expr.kind === 'between'
            ? [expr.low, expr.high]
            : [expr.prefix];
    const opName =
      expr.kind === 'compare'
        ? expr.op
        : expr.kind === 'in'
          ? 'IN'
          : expr.kind === 'between'
            ? 'BETWEEN'
            : 'STARTS_WITH';
    switch (sys.kind) {
      case 'keyword':
        for (const v of values) {
          if (typeof v !== 'string') {
            throw new VisibilityQueryError(
              `${expr.attribute} ${where} is a Keyword attribute and must be compared with a quoted string, got ${JSON.stringify(v)}`,
              attrTok.pos,
            );
          }
        }
        return expr;
      case 'datetime':
        if (expr.kind === 'startsWith') {
          throw new VisibilityQueryError(
            `STARTS_WITH is only supported on Keyword attributes, not on Datetime attribute ${expr.attribute} ${where}`,
            attrTok.pos,
          );
        }
        for (const v of values) {
          if (typeof v !== 'string' || parseRfc3339(v) === null) {
            throw new VisibilityQueryError(
              `${expr.attribute} ${where} is a Datetime attribute; value ${JSON.stringify(v)} is not an RFC 3339 timestamp (e.g. '2021-08-22T15:04:05Z')`,
              attrTok.pos,
            );
          }
        }
        return expr;
      case 'status': {
        if (expr.kind !== 'in' && !(expr.kind === 'compare' && (expr.op === '=' || expr.op === '!='))) {
          throw new VisibilityQueryError(
            `operator ${opName} is not supported on ExecutionStatus ${where}; use =, !=, IN or NOT IN`,
            attrTok.pos,
          );
        }
        const canon = values.map((v) => {
          const s = typeof v === 'string' ? VISIBILITY_STATUSES.find((x) => x.toLowerCase() === v.toLowerCase()) : undefined;
          if (!s) {
            throw new VisibilityQueryError(
              `invalid ExecutionStatus value ${JSON.stringify(v)} ${where}; expected one of ${VISIBILITY_STATUSES.join(', ')}`,
              attrTok.pos,
            );
          }
          return s;
        });
        if (expr.kind === 'compare') return { ...expr, value: canon[0]! };
        if (expr.kind === 'in') return { ...expr, values: canon };
        return expr;
      }
    }
  }
}

/**
 * Parse a Temporal List Filter string (docs.temporal.io/list-filter) into a {@link VisibilityQuery}.
 *
 * Grammar: `[expr] [ORDER BY attr [ASC|DESC] {, attr [ASC|DESC]}]`, where `expr` combines
 * predicates with `AND` (binds tighter) and `OR`, grouped with parentheses. Predicates:
 * `attr (= | != | <> | > | >= | < | <=) value`, `attr [NOT] IN (v, ...)`,
 * `attr [NOT] BETWEEN v AND v`, `attr [NOT] STARTS_WITH 'prefix'`, `attr IS [NOT] NULL`.
 * Values: `'single'` or `"double"` quoted strings (backslash escapes and doubled quotes
 * allowed), numbers, `true` / `false`. Attribute names: `[A-Za-z_][A-Za-z0-9_]*` or
 * backtick-quoted.
 *
 * An empty / whitespace-only query yields `{ filter: null, orderBy: [] }` (match all).
 * System attributes are type-checked here: Keyword ones (WorkflowId, WorkflowType, RunId,
 * TaskQueue) need strings; StartTime / CloseTime / ExecutionTime need RFC 3339 strings;
 * ExecutionStatus needs one of {@link VISIBILITY_STATUSES} (matched case-insensitively and
 * canonicalised) with =, !=, IN or NOT IN.
 *
 * @throws VisibilityQueryError naming the offending token and its 1-based position.
 */
export function parseVisibilityQuery(query: string): VisibilityQuery {
  if (typeof query !== 'string') throw new VisibilityQueryError('query must be a string');
  if (query.trim() === '') return { filter: null, orderBy: [] };
  return new Parser(tokenize(query)).parseQuery();
}

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
