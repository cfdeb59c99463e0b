/**
 * Recursive-descent parser of the List Filter language (docs.temporal.io/list-filter) into a
 * {@link VisibilityQuery}; system attributes are type-checked here. Grammar and limits: `query.ts`.
 */
import {
  VISIBILITY_STATUSES,
  VisibilityCompareOp,
  VisibilityExpr,
  VisibilityLiteral,
  VisibilityOrderBy,
  VisibilityQuery,
  VisibilityQueryError,
} from './ast';
import { parseRfc3339, systemAttribute } from './attributes';
import { Token, tokenize } from './lexer';

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
    return this.parseChain('OR', () => this.parseAnd());
  }

  private parseAnd(): VisibilityExpr {
    return this.parseChain('AND', () => this.parsePrimary());
  }

  /** A left-associative chain `operand (keyword operand)*` (AND binds tighter than OR: parseOr chains parseAnd). */
  private parseChain(keyword: 'OR' | 'AND', operand: () => VisibilityExpr): VisibilityExpr {
    const kind = keyword === 'OR' ? 'or' : 'and';
    let left = operand();
    while (this.acceptKeyword(keyword)) {
      const right = operand();
      left = { kind, left, right };
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
