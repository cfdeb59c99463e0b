/**
 * Token counting with `gpt-tokenizer` (the `o200k_base` encoding of the gpt-4o family), for the sandbox's usage
 * figures and for budgeting prompts. Text that spells a special token (`<|endoftext|>`) is counted as plain text,
 * as the API counts user input, and never throws.
 *
 * Chat overhead follows OpenAI's cookbook "How to count tokens with tiktoken" for the gpt-4o family: 3 tokens per
 * message (`<|start|>role…<|message|>…<|end|>`), 1 more when the message carries a `name`, and 3 for the assistant
 * reply the prompt primes. Tool calls of an assistant message count their name and JSON arguments; a tool result
 * counts its content (the cookbook gives no exact rule for them, so this is an estimate within a few tokens).
 */
import { decode, encode } from 'gpt-tokenizer';
import type { LlmMessage } from './index';

/** Tokens every message costs beyond its text (OpenAI cookbook, gpt-4o family). */
export const TOKENS_PER_MESSAGE = 3;
/** Tokens a message's `name` adds beyond its text. */
export const TOKENS_PER_NAME = 1;
/** Tokens that prime the assistant's reply (`<|start|>assistant<|message|>`). */
export const TOKENS_REPLY_PRIMING = 3;

const PLAIN = { disallowedSpecial: new Set<string>() };

/** Token ids of `text` (special-token spellings are plain text). */
export function encodeTokens(text: string): number[] {
  return encode(text, PLAIN);
}

/** Counts of recent texts: a conversation's prompt repeats its system prompt and history every turn. */
const counted = new Map<string, number>();
const COUNTED_MAX = 10_000;
/** Texts longer than this are counted without being remembered (UTF-16 code units). */
const COUNTED_TEXT_MAX = 16_384;

/** Number of tokens of `text`; 0 for the empty string. Remembers recent texts (a bounded cache, oldest out first). */
export function countTokens(text: string): number {
  if (text === '') return 0;
  const hit = counted.get(text);
  if (hit !== undefined) return hit;
  const n = encode(text, PLAIN).length;
  if (text.length <= COUNTED_TEXT_MAX) {
    if (counted.size >= COUNTED_MAX) counted.delete(counted.keys().next().value as string);
    counted.set(text, n);
  }
  return n;
}

/**
 * Prompt tokens of a chat request's messages, with the per-message overhead (module docstring).
 * @returns a count ≥ 3 (the reply priming) — what the upstream reports as `usage.prompt_tokens`, tools aside
 */
export function countMessages(messages: readonly LlmMessage[]): number {
  let total = TOKENS_REPLY_PRIMING;
  for (const m of messages) {
    total += TOKENS_PER_MESSAGE + countTokens(m.role) + countTokens(m.content ?? '');
    if (m.name) total += TOKENS_PER_NAME + countTokens(m.name);
    for (const call of m.toolCalls ?? []) total += countTokens(call.name) + countTokens(call.arguments);
  }
  return total;
}

/** Pieces of recent texts: the sandbox says the same answers again (a bounded cache, oldest out first). */
const pieced = new Map<string, readonly string[]>();
const PIECED_MAX = 2_000;

/**
 * `text` cut into the pieces a streaming model would send: one per token, except that tokens which end inside a
 * multi-byte UTF-8 character are joined with the next ones, so every piece is valid text. Remembers recent texts
 * up to `COUNTED_TEXT_MAX` code units (the pieces depend on the text alone).
 * @returns pieces whose concatenation is exactly `text` (shared: not to be changed)
 */
export function tokenPieces(text: string): readonly string[] {
  const hit = pieced.get(text);
  if (hit) return hit;
  const ids = encodeTokens(text);
  const pieces: string[] = [];
  let start = 0;
  for (let i = 0; i < ids.length; i++) {
    const piece = decode(ids.slice(start, i + 1));
    if (piece.endsWith('\uFFFD') && i + 1 < ids.length) continue;
    pieces.push(piece);
    start = i + 1;
  }
  if (text.length <= COUNTED_TEXT_MAX) {
    if (pieced.size >= PIECED_MAX) pieced.delete(pieced.keys().next().value as string);
    pieced.set(text, pieces);
  }
  return pieces;
}
