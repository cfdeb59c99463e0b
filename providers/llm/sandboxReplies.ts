/**
 * What the sandbox LLM says when it calls no tool (docs/api-notes.md "Sandbox LLM"; ./sandbox.ts): tool results as
 * a person would say them (rule 4), an answer from knowledge chunks (rule 7) and the generic reply (rule 8).
 */
import type { LlmMessage } from './index';
import { excerpt, keyWords } from './sandboxWords';
import { asksForIdentifier, spokenDetails } from './sandboxSpoken';

/** Longest knowledge answer, characters (rule 7). */
export const KNOWLEDGE_QUOTE_CHARS = 300;
/** Longest excerpt of a tool result or of an echoed user message, characters. */
export const EXCERPT_CHARS = 200;

/** Said for a failed tool result (rule 4): an apology and an offer of a person, never the error itself. */
export const TOOL_FAILURE_SENTENCE = "I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?";

/**
 * Rule 4: the trailing `tool` messages said as a person would. A result is a failure when it is a JSON object
 * with `ok: false` or a string `error`: then `TOOL_FAILURE_SENTENCE` (some failed, some not: `Part of that went
 * through, but not all of it.` before the offer). Otherwise `All done.`, followed for each result (its `output` when
 * wrapped as `{ok, output}`) by up to four of its top-level members in one sentence (./sandboxSpoken.ts): "the
 * <key> is <value>", keys read as words, dates and times in words in `timeZone`, durations with their unit,
 * true/false as "it is …", no identifier unless the person's last message asks for one, no lists, objects or texts
 * over 80 characters; a text result adds its first `EXCERPT_CHARS`.
 * @param timeZone the agent's IANA time zone (`SandboxHints.timeZone`; default UTC)
 */
export function toolResultSentence(messages: readonly LlmMessage[], timeZone = 'UTC'): string {
  const results: LlmMessage[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) results.unshift(messages[i]);
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const idsAsked = asksForIdentifier(lastUser?.content ?? '');
  const details: string[] = [];
  let failed = 0;
  for (const m of results) {
    const content = m.content ?? '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      const flat = excerpt(content, EXCERPT_CHARS);
      if (flat) details.push(flat);
      continue;
    }
    const obj = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
    if (obj && (obj.ok === false || typeof obj.error === 'string')) {
      failed++;
      continue;
    }
    const d = spokenDetails(obj && 'ok' in obj && 'output' in obj ? obj.output : obj, timeZone, idsAsked);
    if (d) details.push(d);
  }
  if (failed === results.length && failed > 0) return TOOL_FAILURE_SENTENCE;
  if (failed) return `Part of that went through, but not all of it. ${TOOL_FAILURE_SENTENCE.replace(/^I'm sorry, I couldn't complete that just now\. /, '')}`;
  return ['All done.', ...details].join(' ');
}

/** Whether a line of a knowledge chunk is a heading: Markdown `#`, or a short line (≤ 8 words) without closing punctuation. */
function isHeading(line: string): boolean {
  if (/^#{1,6}\s/.test(line)) return true;
  if (/^([-*•]|\d+[.)])\s/.test(line)) return false;
  return !/[.!?:;)"'”’]$/.test(line) && line.split(/\s+/).length <= 8;
}

const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** The sentences of a chunk in order, headings left out, list markers dropped. */
function chunkSentences(text: string): string[] {
  const lines = text.split(/\n+/).map((l) => l.trim()).filter(Boolean);
  const out: string[] = [];
  for (const line of lines) {
    if (lines.length > 1 && isHeading(line)) continue;
    const body = line.replace(/^([-*•]|\d+[.)])\s+/, '');
    for (const { segment } of sentenceSegmenter.segment(body)) {
      const sentence = segment.replace(/\s+/g, ' ').trim();
      if (sentence) out.push(sentence);
    }
  }
  return out;
}

/** A chunk's sentences with their key words, as rule 7 scores them. */
type ScoredSentences = readonly { readonly text: string; readonly words: ReadonlySet<string> }[];

/**
 * Sentences and key words of recent chunks: the same chunks answer many questions, and both depend on the chunk's
 * text alone. A bounded cache, oldest out first; chunks longer than `SENTENCES_TEXT_MAX` are not remembered.
 */
const sentencesByChunk = new Map<string, ScoredSentences>();
const SENTENCES_MAX = 2_000;
/** Longest chunk text remembered, UTF-16 code units. */
const SENTENCES_TEXT_MAX = 16_384;

/** `chunkSentences` of `text` with each sentence's `keyWords` (cached above). */
function scoredSentences(text: string): ScoredSentences {
  const hit = sentencesByChunk.get(text);
  if (hit) return hit;
  const out = chunkSentences(text).map((sentence) => ({ text: sentence, words: keyWords(sentence) }));
  if (text.length <= SENTENCES_TEXT_MAX) {
    if (sentencesByChunk.size >= SENTENCES_MAX) sentencesByChunk.delete(sentencesByChunk.keys().next().value as string);
    sentencesByChunk.set(text, out);
  }
  return out;
}

/**
 * Rule 7: an answer from the retrieved chunks, without headings and without citing them (the receipt names the
 * sources). Sentences are read from every chunk (a line that is a heading — Markdown `#`, or at most eight words
 * without closing punctuation — is left out); each scores the number of the question's key words (`keyWords`) it
 * has. The best-scoring sentences (ties: the better chunk, then the earlier sentence) are taken while they fit in
 * `KNOWLEDGE_QUOTE_CHARS`, and said in document order. When no sentence shares a key word, the best chunk's first
 * sentences that fit are said. A single sentence longer than that is cut at a word with `…`.
 */
export function answerFromKnowledge(question: string, chunks: readonly { text: string; source: string }[]): string {
  const wanted = keyWords(question);
  const seen = new Set<string>();
  const all: { text: string; order: number; score: number }[] = [];
  chunks.forEach((c, ci) => {
    scoredSentences(c.text).forEach(({ text: sentence, words }, si) => {
      if (seen.has(sentence)) return;
      seen.add(sentence);
      let score = 0;
      for (const w of wanted) if (words.has(w)) score++;
      all.push({ text: sentence, order: ci * 100_000 + si, score });
    });
  });
  if (!all.length) return excerpt(chunks[0]?.text ?? '', KNOWLEDGE_QUOTE_CHARS);
  const ranked = all.some((x) => x.score > 0) ? [...all].filter((x) => x.score > 0).sort((a, b) => b.score - a.score || a.order - b.order) : all.filter((x) => x.order < 100_000);
  const picked: typeof all = [];
  let length = 0;
  for (const x of ranked) {
    const next = length + (picked.length ? 1 : 0) + x.text.length;
    if (next > KNOWLEDGE_QUOTE_CHARS) {
      if (picked.length) break;
      return excerpt(x.text, KNOWLEDGE_QUOTE_CHARS);
    }
    picked.push(x);
    length = next;
  }
  return picked
    .sort((a, b) => a.order - b.order)
    .map((x) => x.text)
    .join(' ');
}

/**
 * Rule 8: `Hello! How can I help you today?` before any user message; after one,
 * `I understand you said: "<excerpt of the last user message>". How can I help further?`.
 */
export function genericReply(messages: readonly LlmMessage[]): string {
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  if (!lastUser) return 'Hello! How can I help you today?';
  return `I understand you said: "${excerpt(lastUser.content ?? '', EXCERPT_CHARS)}". How can I help further?`;
}
