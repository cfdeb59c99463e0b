/**
 * Tokenizer of the List Filter language (docs.temporal.io/list-filter): quoted strings (single or
 * double quotes, backslash escapes, doubled quotes), backtick-quoted attribute names, numbers,
 * identifiers/keywords, parentheses, commas and the comparison operators (`<>` becomes `!=`).
 */
import { VisibilityQueryError } from './ast';

/** Kinds of List Filter tokens. */
export type TokenType = 'ident' | 'quotedIdent' | 'string' | 'number' | 'op' | 'lparen' | 'rparen' | 'comma' | 'eof';

/** One token with its 1-based source position (for error messages). */
export interface Token {
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

/**
 * Splits a List Filter into tokens, ending with an `eof` token.
 * @throws VisibilityQueryError for an unterminated string or backtick name, or an unexpected character.
 */
export function tokenize(src: string): Token[] {
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
