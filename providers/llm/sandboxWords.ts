/**
 * Word handling the sandbox LLM's rules share (docs/api-notes.md "Sandbox LLM"): key words of a text (rule 5's
 * `whenToUse`, rule 7, the topic classification) and excerpts of a text (rules 4 and 8, the analysis summary).
 */

/** Words that carry no intent of their own, left out of key words (rule 5's `whenToUse`, rule 7). */
const STOP_WORDS = new Set(
  (
    'a an the and or but if so of to in on at by for from with about into over as is are was were be been am do does did ' +
    'i id im ive me my mine we our us you your yours he she it its they them their this that these those there here ' +
    'what when where which who whom whose why how can could would should will shall may might must ' +
    'like want wants wanted need needs needed wish please thanks thank hi hello hey yes no not just also some any ' +
    'get got make made let lets tell know have has had caller person customer user someone somebody they asks ask asking'
  ).split(' '),
);

/** A word reduced to a rough stem: `appointments` → `appointment`, `booking`/`booked` → `book`, `hours` → `hour`. */
export function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Text lower-cased with apostrophes dropped and everything but letters and digits made single spaces. */
export function normalizeWords(text: string): string {
  return text
    .toLowerCase()
    .replace(/['’]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** The key words of a text (rule 5's `whenToUse`, rule 7): its words of 3+ characters that are not stop words, stemmed. */
export function keyWords(text: string): Set<string> {
  return new Set(
    normalizeWords(text)
      .split(' ')
      .filter((w) => w.length >= 3 && !STOP_WORDS.has(w))
      .map(stem),
  );
}

/** `text` with runs of whitespace made one space, cut to `max` characters at a word boundary with `…`. */
export function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}
