/**
 * What may reach a person (docs/api-notes.md "Conversations": outbound text): every line an agent says or writes — a
 * model's answer, a playbook's line, the greeting — passes through {@link speakable}, which removes what is
 * meant for the receipt and not for people, whichever model or channel produced it:
 * - citations `(source: …)` / `[source: …]` (the receipt's knowledge lookups name the sources);
 * - `{{placeholders}}` left unfilled;
 * - JSON objects (`{"…": …}`, and arrays of them) and stack frames (`at fn (file.ts:1:2)`);
 * - internal names and codes written in snake_case (`book_visit`, `caller_not_verified`) are read out as
 *   words (`book visit`), except inside e-mail addresses, URLs and paths.
 * Pure, and safe for streaming: it is applied to the whole text so far on every delta, and anything it would
 * remove once complete is already removed while it is still open (an unclosed `(source:` runs to the end), so
 * the text said so far only grows at its end (domain/conversations/runtime.ts GuardedStream).
 */

/** Longest opening of a removed construct that must stay unsaid until it is decided (`(sources:`). */
export const SPEAKABLE_HOLDBACK = 10;

const CITATION = /[ \t]*(?:\(\s*sources?\s*:[^)]*(?:\)|$)|\[\s*sources?\s*:[^\]]*(?:\]|$))/gi;
const PLACEHOLDER = /[ \t]*\{\{[^{}]*(?:\}\}|$)/g;
const STACK_FRAME = /(?:^|\n)[ \t]*at [\w$.<>[\] ]+\([^)\n]*(?:\)|$)[^\n]*/g;
const SNAKE = /(^|[^\w@./:\\-])([a-z]+(?:_[a-z]+)+)(?![\w@]|\.\w|\/)/g;

/** The end (exclusive) of a JSON value opened at `start` (`{` or `[`), or the text's length when unclosed. */
function jsonEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** `text` without JSON objects: a `{` followed by `"` or `}`, or a `[` followed by such a `{`, up to its close. */
function withoutJson(text: string): string {
  let out = '';
  let i = 0;
  const opening = /\[\s*\{\s*["}]|\{\s*["}]|\[\s*\{\s*$|\[\s*$|\{\s*$/g;
  for (let m = opening.exec(text); m; m = opening.exec(text)) {
    // An opening still undecided at the very end (`{`, `[`, `[{`) is held back by the stream, not removed.
    if (m.index + m[0].length === text.length && !/["}]$/.test(m[0])) break;
    const end = jsonEnd(text, m.index);
    out += text.slice(i, m.index).replace(/[ \t]+$/, '');
    i = end;
    opening.lastIndex = end;
  }
  return out + text.slice(i);
}

/**
 * The part of `text` fit to say to a person (module docstring).
 * @param text a reply, whole or as streamed so far
 * @returns the text with citations, placeholders, JSON and stack frames removed and snake_case names as words
 */
export function speakable(text: string): string {
  return withoutJson(text)
    .replace(CITATION, '')
    .replace(PLACEHOLDER, '')
    .replace(STACK_FRAME, '')
    .replace(SNAKE, (_m, before: string, name: string) => `${before}${name.replace(/_/g, ' ')}`);
}
