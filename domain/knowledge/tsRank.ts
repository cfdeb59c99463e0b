/**
 * PostgreSQL's `ts_rank(tsvector, tsquery, 32)` over an OR of lexemes, computed in this process with the same
 * single-precision arithmetic (PostgreSQL source src/backend/utils/adt/tsrank.c: `calc_rank_or`, default weights
 * {D 0.1, C 0.2, B 0.4, A 1.0}, normalization 32 = rank / (rank + 1)), so an in-process ranking gives the scores
 * and order Postgres gives (services/knowledge/lexicalIndex.ts; docs/knowledge.md "Retrieval"). Also the parser
 * of a tsvector's text output (PostgreSQL docs "Text Search Types": `'lexeme':1,5A 'other'`).
 */

const f = Math.fround;
/** Weights by class D, C, B, A, as Postgres stores them (float4). */
const WEIGHTS = [f(0.1), f(0.2), f(0.4), f(1.0)];
/** The weight class of a position's letter suffix (none: D). */
const CLASS: Record<string, number> = { A: 3, B: 2, C: 1, D: 0 };

/** A tsvector as ranking reads it: lexeme → the weight class of each stored position (a lexeme without positions has [0]). */
export type LexemeWeights = Map<string, Uint8Array>;

/**
 * Parses a tsvector's text output into its lexemes and their positions' weight classes.
 * @throws Error on text that is not a tsvector's output
 */
export function parseTsvector(text: string): LexemeWeights {
  const out: LexemeWeights = new Map();
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (text[i] === ' ') i++;
    if (i >= n) break;
    if (text[i] !== "'") throw new Error(`not a tsvector at ${i}`);
    let lex = '';
    i++;
    for (;;) {
      if (i >= n) throw new Error('unterminated lexeme');
      const ch = text[i];
      if (ch === "'" && text[i + 1] === "'") {
        lex += "'";
        i += 2;
      } else if (ch === '\\') {
        lex += text[i + 1];
        i += 2;
      } else if (ch === "'") {
        i++;
        break;
      } else {
        lex += ch;
        i++;
      }
    }
    const classes: number[] = [];
    if (text[i] === ':') {
      i++;
      for (;;) {
        while (i < n && text[i] >= '0' && text[i] <= '9') i++;
        const w = CLASS[text[i]];
        if (w !== undefined) i++;
        classes.push(w ?? 0);
        if (text[i] !== ',') break;
        i++;
      }
    }
    out.set(lex, Uint8Array.from(classes.length ? classes : [0]));
  }
  return out;
}

/**
 * `ts_rank(doc, 'l1' | 'l2' | …, 32)` as a float4 value: Postgres's `calc_rank_or` over the distinct `lexemes`
 * (each matched exactly, no prefix), then rank / (rank + 1).
 * @param lexemes distinct lexemes of the query
 */
export function tsRankOr(doc: LexemeWeights, lexemes: readonly string[]): number {
  if (!doc.size || !lexemes.length) return 0;
  let res = 0;
  for (const lex of lexemes) {
    const post = doc.get(lex);
    if (!post) continue;
    let resj = 0;
    let wjm = -1;
    let jm = 0;
    for (let j = 0; j < post.length; j++) {
      const w = WEIGHTS[post[j]];
      resj = f(resj + f(w / ((j + 1) * (j + 1))));
      if (w > wjm) {
        wjm = w;
        jm = j;
      }
    }
    // float arithmetic inside the parentheses, the division by the double constant and the sum in double, stored as float.
    res = f(res + f(f(wjm + resj) - f(wjm / ((jm + 1) * (jm + 1)))) / 1.64493406685);
  }
  res = f(res / lexemes.length);
  return f(res / f(res + 1));
}

/**
 * A float4 as node-postgres hands it over (Postgres prints the shortest text that reads back as the same float4,
 * `extra_float_digits` 1, and pg parses that text): the double nearest that shortest decimal.
 */
export function float4AsClientReads(x: number): number {
  if (x === 0 || !Number.isFinite(x)) return x;
  const held = clientReads.get(x);
  if (held !== undefined) return held;
  let out = x;
  for (let p = 1; p <= 9; p++) {
    const v = Number(x.toPrecision(p));
    if (f(v) === x) {
      out = v;
      break;
    }
  }
  if (clientReads.size >= 100_000) clientReads.clear();
  clientReads.set(x, out);
  return out;
}

/** float4AsClientReads' answers (a function of the value alone). */
const clientReads = new Map<number, number>();
