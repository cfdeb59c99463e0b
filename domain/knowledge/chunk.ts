/**
 * Chunking for knowledge retrieval (spec "Other endpoints": Knowledge): splits extracted text into passages of about
 * 800 characters that end on sentence boundaries (on a paragraph boundary when the chunk is already
 * well filled), with about 150 characters of overlap (whole trailing sentences of the previous chunk)
 * so a fact that straddles a boundary stays findable. Line breaks inside a paragraph are kept, so a heading
 * on its own line is not glued to the sentence after it.
 * Pure and deterministic: the same text always gives the same chunks, so re-indexing is idempotent.
 */

/** Sizes in characters (UTF-16 code units). */
export interface ChunkOptions {
  /** Chunks are filled up to this length (default 800). */
  targetChars?: number;
  /** Whole trailing sentences up to this length are repeated at the start of the next chunk (default 150). */
  overlapChars?: number;
  /** Hard cap: a sentence longer than this is cut at word boundaries (default 1 200). */
  maxChars?: number;
}

/** One chunk; `ordinal` counts from 0 within its source. */
export interface TextChunk {
  ordinal: number;
  content: string;
}

interface Unit {
  text: string;
  /** First unit of a paragraph: joined with a blank line rather than a space. */
  paragraphStart: boolean;
  /** Begins a line of its paragraph (a heading or list line ends before it): joined with a line break, so a heading is not glued to the sentence after it. */
  lineStart: boolean;
  /** On a paragraph's first unit: the whole paragraph's length (to prefer breaking before it). */
  paragraphLength: number;
}

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** Splits a long string at whitespace into pieces of at most `max` characters (hard cut when no space). */
function splitWords(text: string, max: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf(' ', max);
    if (cut < max / 2) cut = max;
    out.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/** Paragraphs → sentence units (sentences longer than the hard cap are cut at words). */
function toUnits(text: string, max: number): Unit[] {
  const units: Unit[] = [];
  for (const para of text.split(/\n\s*\n/)) {
    const p = para.replace(/\s*\n\s*/g, '\n').trim();
    if (!p) continue;
    let first = true;
    let afterNewline = false;
    for (const { segment } of segmenter.segment(p)) {
      const s = segment.trim();
      const lineStart = afterNewline;
      afterNewline = /\n\s*$/.test(segment);
      if (!s) continue;
      (s.length > max ? splitWords(s, max) : [s]).forEach((piece, i) => {
        units.push({ text: piece, paragraphStart: first, paragraphLength: first ? p.length : 0, lineStart: lineStart && i === 0 });
        first = false;
      });
    }
  }
  return units;
}

function join(units: Unit[]): string {
  return units.map((u, i) => (i === 0 ? u.text : (u.paragraphStart ? '\n\n' : u.lineStart ? '\n' : ' ') + u.text)).join('');
}

function joinedLength(units: Unit[]): number {
  return units.reduce((n, u, i) => n + u.text.length + (i === 0 ? 0 : u.paragraphStart ? 2 : 1), 0);
}

/**
 * Chunks `text` (already normalized: paragraphs separated by blank lines).
 * @returns chunks in document order; an empty or blank text gives none
 */
export function chunkText(text: string, opts: ChunkOptions = {}): TextChunk[] {
  const target = opts.targetChars ?? 800;
  const overlap = opts.overlapChars ?? 150;
  const max = Math.max(opts.maxChars ?? 1200, target);
  const units = toUnits(text, max);
  const chunks: TextChunk[] = [];
  let current: Unit[] = [];
  // How many leading units of `current` were carried over from the previous chunk; a chunk made of
  // nothing else is never emitted.
  let carried = 0;

  const emit = () => {
    chunks.push({ ordinal: chunks.length, content: join(current) });
    // Carry whole trailing sentences (never the whole chunk, so every chunk makes progress).
    let len = 0;
    let from = current.length;
    for (let i = current.length - 1; i > 0; i--) {
      len += current[i].text.length + 1;
      if (len > overlap) break;
      from = i;
    }
    current = current.slice(from);
    carried = current.length;
  };

  for (const unit of units) {
    if (current.length > carried) {
      const len = joinedLength(current);
      if (len + 2 + unit.text.length > target) emit();
      // Prefer a paragraph boundary: when the chunk is well filled and the next paragraph would not fit whole.
      else if (unit.paragraphStart && len >= target * 0.6 && len + 2 + unit.paragraphLength > target) emit();
    }
    // The carried overlap plus this unit may exceed the hard cap: drop the overlap then.
    if (current.length && current.length === carried && joinedLength(current) + 2 + unit.text.length > max) {
      current = [];
      carried = 0;
    }
    current.push(unit);
  }
  if (current.length > carried) chunks.push({ ordinal: chunks.length, content: join(current) });
  return chunks;
}
