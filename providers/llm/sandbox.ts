/**
 * The sandbox LLM (README "Sandbox LLM"): the default adapter, deterministic and offline. It answers like a model
 * that follows the conversation runtime's instructions, from `LlmRequest.hints` and a few documented patterns, so
 * conversations, playbooks, tools and knowledge can be exercised end to end without a model. Same request, same
 * answer — ids included; nothing random, no clock.
 *
 * Rules, first match wins:
 * 0. `hints.analysis` → the JSON of `sandboxAnalysis` (a post-conversation analysis read from the transcript);
 * 1. `hints.refusal` → said verbatim; 2. `hints.say` → verbatim;
 * 3. no user message yet and `hints.greeting` → the greeting verbatim;
 * 4. the last message(s) are `tool` results → one sentence summarising them (`toolResultSentence`);
 * 5. `tools` given and the last message is a user message that names a tool (`matchTool`) → one call of that tool
 *    with arguments read from the message (`extractArguments`), `finishReason: 'tool_calls'`, content null;
 * 6. `hints.ask` → verbatim; 7. `hints.knowledge` non-empty → the best chunk quoted with its source (`quoteKnowledge`);
 * 8. otherwise a fixed reply that echoes the last user message (`genericReply`).
 * `maxTokens` cuts a text answer to that many tokens (`finishReason: 'length'`). Usage comes from `gpt-tokenizer`:
 * prompt = `countMessages(messages)`, completion = tokens of the text (of the name plus the arguments for a call).
 * Streaming yields one `delta` per token (./tokens `tokenPieces`), SANDBOX_LLM_TOKEN_DELAY_MS apart.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LlmMessage, LlmProvider, LlmRequest, LlmResponse, LlmStreamEvent, LlmTool, LlmToolCall, LlmUsage } from './index';
import { countMessages, countTokens, encodeTokens, tokenPieces } from './tokens';
import { decode } from 'gpt-tokenizer';
import { fieldJsonSchema, type AnalysisRequest } from '../../domain/conversations/analysis';

/** Options of the sandbox LLM. */
export interface SandboxLlmOptions {
  /** Pause before each streamed token after the first, ms (SANDBOX_LLM_TOKEN_DELAY_MS, default 0). */
  tokenDelayMs?: number;
}

/** Longest knowledge quote, characters (rule 7). */
export const KNOWLEDGE_QUOTE_CHARS = 300;
/** Longest excerpt of a tool result or of an echoed user message, characters. */
export const EXCERPT_CHARS = 200;

/** The sandbox adapter (module docstring). */
export class SandboxLlm implements LlmProvider {
  readonly name = 'sandbox';
  private readonly tokenDelayMs: number;

  /** @param opts token delay in ms */
  constructor(opts: SandboxLlmOptions = {}) {
    this.tokenDelayMs = opts.tokenDelayMs ?? 0;
  }

  /** The answer at once (after the token delays a stream would take). @throws the signal's reason when aborted */
  async complete(req: LlmRequest): Promise<LlmResponse> {
    let done: LlmResponse | undefined;
    for await (const ev of this.stream(req)) if (ev.type === 'done') done = ev.response;
    return done!;
  }

  /** The answer token by token (module docstring). @throws the signal's reason when aborted */
  async *stream(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    const signal = req.signal;
    signal?.throwIfAborted();
    const response = sandboxAnswer(req);
    if (response.content !== null) {
      let first = true;
      for (const piece of tokenPieces(response.content)) {
        if (!first && this.tokenDelayMs > 0) await pause(this.tokenDelayMs, signal);
        signal?.throwIfAborted();
        first = false;
        yield { type: 'delta', content: piece };
      }
    }
    for (const call of response.toolCalls) {
      signal?.throwIfAborted();
      yield { type: 'tool_call', call };
    }
    signal?.throwIfAborted();
    yield { type: 'done', response };
  }
}

/** Waits `ms`; rejects with the signal's reason when it aborts first. */
async function pause(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw err;
  }
}

/** The sandbox's whole answer to `req` (module docstring), computed synchronously. */
export function sandboxAnswer(req: LlmRequest): LlmResponse {
  const model = req.model ?? 'sandbox';
  const hints = req.hints ?? {};
  const messages = req.messages;
  const last = messages[messages.length - 1];
  const hasUser = messages.some((m) => m.role === 'user');

  const text = (content: string): LlmResponse => {
    let out = content;
    let finishReason: LlmResponse['finishReason'] = 'stop';
    if (req.maxTokens !== undefined && req.maxTokens >= 0) {
      const ids = encodeTokens(content);
      if (ids.length > req.maxTokens) {
        out = decode(ids.slice(0, req.maxTokens)).replace(/\uFFFD+$/, '');
        finishReason = 'length';
      }
    }
    return { content: out, toolCalls: [], finishReason, usage: usage(messages, countTokens(out)), model };
  };

  if (hints.analysis) return text(JSON.stringify(sandboxAnalysis(hints.analysis)));
  if (hints.refusal) return text(hints.refusal);
  if (hints.say) return text(hints.say);
  if (!hasUser && hints.greeting) return text(hints.greeting);
  if (last?.role === 'tool') return text(toolResultSentence(messages));
  if (last?.role === 'user' && req.tools?.length) {
    const tool = matchTool(last.content ?? '', req.tools);
    if (tool) {
      const args = JSON.stringify(extractArguments(last.content ?? '', tool.parameters));
      const call: LlmToolCall = { id: toolCallId(messages, tool.name, args), name: tool.name, arguments: args };
      return { content: null, toolCalls: [call], finishReason: 'tool_calls', usage: usage(messages, countTokens(call.name) + countTokens(args)), model };
    }
  }
  if (hints.ask) return text(hints.ask);
  if (hints.knowledge?.length) return text(quoteKnowledge(hints.knowledge[0]));
  return text(genericReply(messages));
}

function usage(messages: LlmMessage[], completionTokens: number): LlmUsage {
  const promptTokens = countMessages(messages);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** `call_` + 24 hex digits of a hash of the conversation so far and the call: deterministic, distinct per turn. */
function toolCallId(messages: LlmMessage[], name: string, args: string): string {
  const h = createHash('sha256').update(JSON.stringify(messages)).update('\n').update(name).update('\n').update(args);
  return `call_${h.digest('hex').slice(0, 24)}`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The first tool (in `tools` order) that `message` names, case-insensitively: it contains `/<name>`, or the name
 * itself, or the name with `_` and `-` read as spaces (`book_appointment` ← "please book appointment"), each as
 * whole words. @returns undefined when no tool is named
 */
export function matchTool(message: string, tools: readonly LlmTool[]): LlmTool | undefined {
  const text = message.toLowerCase();
  for (const tool of tools) {
    const name = tool.name.toLowerCase();
    const spaced = name.replace(/[_-]+/g, ' ').trim();
    if (text.includes(`/${name}`)) return tool;
    for (const form of [name, spaced]) {
      if (form && new RegExp(`(^|[^a-z0-9_])${escapeRegExp(form).replace(/ /g, '\\s+')}($|[^a-z0-9_])`).test(text)) return tool;
    }
  }
  return undefined;
}

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;
const E164 = /\+[1-9](?:[ .-]?\d){6,14}/;
const ISO_DATE_TIME = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/;
const ISO_DATE = /\b\d{4}-\d{2}-\d{2}\b/;

/**
 * Arguments for a call of a tool with JSON Schema `parameters`, read from `message`. For each property of
 * `parameters.properties`:
 * - an explicit pair `key: value` or `key=value` (key case-insensitive; value up to the next `,` `;` newline or
 *   `other_key:`; quotes `"…"` or `'…'` keep commas), converted to the property's type: `integer`/`number` from
 *   the number the value starts with, `boolean` from a leading true/false/yes/no, an `enum` value the value starts
 *   with (case-insensitive, in the enum's spelling); a value that does not convert is passed on as text;
 * - otherwise, for a string property whose name or `format` suggests it, the first match in the message of: an
 *   email (`email` in the name, format `email`), an E.164 number (`phone`, `mobile`, `cell`, `tel`, `e164`; spaces,
 *   dots and dashes dropped), an ISO 8601 date-time (format `date-time`, or `time`/`when`/`start`/`end` with a
 *   `T` time in the message), an ISO date (`date`, `day`, `birth`, format `date`).
 * Properties found nowhere are left out, required or not (the call is still made).
 * @returns an object of the found properties, in the schema's order
 */
export function extractArguments(message: string, parameters: Record<string, unknown>): Record<string, unknown> {
  const props = (parameters.properties ?? {}) as Record<string, Record<string, unknown>>;
  const keys = Object.keys(props);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const schema = props[key] ?? {};
    const explicit = explicitValue(message, key, keys);
    if (explicit !== undefined) {
      const value = coerce(explicit, schema);
      if (value !== undefined) {
        out[key] = value;
        continue;
      }
    }
    const typed = typedValue(message, key, schema);
    if (typed !== undefined) out[key] = typed;
  }
  return out;
}

function explicitValue(message: string, key: string, keys: string[]): string | undefined {
  const re = new RegExp(`(?:^|[^A-Za-z0-9_])${escapeRegExp(key)}\\s*[:=]\\s*`, 'i');
  const m = re.exec(message);
  if (!m) return undefined;
  const rest = message.slice(m.index + m[0].length);
  const quoted = /^"([^"]*)"|^'([^']*)'/.exec(rest);
  if (quoted) return quoted[1] ?? quoted[2];
  let end = rest.search(/[,;\n]/);
  if (end < 0) end = rest.length;
  // Stop before the next `other_key:` / `other_key=` pair of this schema.
  for (const other of keys) {
    if (other === key) continue;
    const next = new RegExp(`\\s${escapeRegExp(other)}\\s*[:=]`, 'i').exec(rest.slice(0, end));
    if (next) end = Math.min(end, next.index);
  }
  const value = rest.slice(0, end).trim().replace(/[.!?]$/, '');
  return value === '' ? undefined : value;
}

function coerce(raw: string, schema: Record<string, unknown>): unknown {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (Array.isArray(schema.enum)) {
    // The longest enum value the text starts with (values may hold spaces), in the enum's spelling.
    const lower = raw.toLowerCase();
    const hits = schema.enum.filter((e) => {
      const v = String(e).toLowerCase();
      return lower === v || (lower.startsWith(v) && /^[^A-Za-z0-9_]/.test(raw.slice(v.length)));
    });
    if (hits.length) return hits.sort((a, b) => String(b).length - String(a).length)[0];
  }
  if (type === 'integer' || type === 'number') {
    const m = /^[-+]?\d+(?:\.\d+)?/.exec(raw);
    if (!m) return raw;
    const n = Number(m[0]);
    return type === 'integer' && !Number.isInteger(n) ? raw : n;
  }
  if (type === 'boolean') {
    if (/^(true|yes|y)\b/i.test(raw)) return true;
    if (/^(false|no|n)\b/i.test(raw)) return false;
    return raw;
  }
  return raw;
}

function typedValue(message: string, key: string, schema: Record<string, unknown>): string | undefined {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (type !== undefined && type !== 'string') return undefined;
  const name = key.toLowerCase();
  const format = typeof schema.format === 'string' ? schema.format : '';
  if (format === 'email' || name.includes('email')) return EMAIL.exec(message)?.[0];
  if (/phone|mobile|cell|tel|e164/.test(name)) return E164.exec(message)?.[0].replace(/[ .-]/g, '');
  if (format === 'date-time' || /time|when|start|end/.test(name)) {
    const dt = ISO_DATE_TIME.exec(message)?.[0];
    if (dt) return dt;
  }
  if (format === 'date' || /date|day|birth/.test(name)) return ISO_DATE.exec(message)?.[0];
  return undefined;
}

/** `text` with runs of whitespace made one space, cut to `max` characters at a word boundary with `…`. */
function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * Rule 4: the trailing `tool` messages summarised: `Done: <excerpt>` (JSON compacted, `EXCERPT_CHARS` at most),
 * or `That did not work: <error>` for a JSON object with a string `error`; several results joined with `; `.
 */
export function toolResultSentence(messages: readonly LlmMessage[]): string {
  const results: LlmMessage[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) results.unshift(messages[i]);
  const parts = results.map((m) => {
    const content = m.content ?? '';
    let compact = content;
    try {
      const parsed: unknown = JSON.parse(content);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed) && typeof (parsed as { error?: unknown }).error === 'string') {
        return `That did not work: ${excerpt((parsed as { error: string }).error, EXCERPT_CHARS)}`;
      }
      compact = JSON.stringify(parsed);
    } catch {
      // not JSON: quoted as text
    }
    return `Done: ${excerpt(compact, EXCERPT_CHARS) || 'no result'}`;
  });
  return parts.join('; ');
}

/**
 * Rule 7: the first sentences of `chunk.text` that fit in `KNOWLEDGE_QUOTE_CHARS` (the first sentence cut at a word
 * boundary when it alone is longer), then ` (source: <source>)`.
 */
export function quoteKnowledge(chunk: { text: string; source: string }): string {
  const flat = chunk.text.replace(/\s+/g, ' ').trim();
  const sentences = flat.split(/(?<=[.!?])\s+/);
  let quote = '';
  for (const s of sentences) {
    const next = quote ? `${quote} ${s}` : s;
    if (next.length > KNOWLEDGE_QUOTE_CHARS) break;
    quote = next;
  }
  if (!quote) quote = excerpt(flat, KNOWLEDGE_QUOTE_CHARS);
  return `${quote} (source: ${chunk.source})`;
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

/** Words that make a user message count as positive (whole words, case-insensitive). */
const POSITIVE = /\b(thanks|thank you|great|perfect|excellent|awesome|wonderful|happy|love|good|helpful|appreciate)\b/gi;
/** Words that make a user message count as negative. */
const NEGATIVE = /\b(angry|annoyed|awful|bad|terrible|horrible|hate|frustrated|frustrating|upset|useless|worst|ridiculous|disappointed)\b/gi;
/** A last user message that closes the matter. */
const CLOSING = /\b(thanks|thank you|that'?s all|perfect|great|bye|goodbye|solved|resolved)\b/i;

/**
 * Rule 0: a deterministic post-conversation analysis (README "Sandbox LLM"), from the user's lines only:
 * - `outcome`: `transferred` when the end reason is `transferred`; `abandoned` with no user line; `resolved` when
 *   the last user line thanks, says goodbye or that it is solved (`CLOSING`); otherwise `unresolved`;
 * - `sentiment`: positive words minus negative words over all user lines (`POSITIVE`, `NEGATIVE`): > 0 positive,
 *   < 0 negative, else neutral;
 * - `summary`: `The user wrote N message(s), first: "<excerpt>"; the agent answered M time(s); ended: <reason>.`
 *   (`The user said nothing; ended: <reason>.` with no user line);
 * - `fields`: read from the user lines joined by newlines with `extractArguments` and the fields' JSON Schemas
 *   (`name: value` pairs, else an ISO date for a date field, …); a value that does not convert is passed on as
 *   written, so the analysis's type check drops it.
 */
export function sandboxAnalysis(req: AnalysisRequest): { summary: string; outcome: string; sentiment: string; fields: Record<string, unknown> } {
  const user = req.transcript.filter((l) => l.speaker === 'user').map((l) => l.text);
  const agentCount = req.transcript.length - user.length;
  const reason = req.endReason ?? 'unknown';
  const last = user[user.length - 1];
  const outcome = req.endReason === 'transferred' ? 'transferred' : !last ? 'abandoned' : CLOSING.test(last) ? 'resolved' : 'unresolved';
  const all = user.join('\n');
  const score = (all.match(POSITIVE)?.length ?? 0) - (all.match(NEGATIVE)?.length ?? 0);
  const sentiment = score > 0 ? 'positive' : score < 0 ? 'negative' : 'neutral';
  const summary = user.length
    ? `The user wrote ${user.length} message(s), first: "${excerpt(user[0], 120)}"; the agent answered ${agentCount} time(s); ended: ${reason}.`
    : `The user said nothing; ended: ${reason}.`;
  const schema = { type: 'object', properties: Object.fromEntries(req.fields.map((f) => [f.name, fieldJsonSchema(f)])) };
  return { summary, outcome, sentiment, fields: user.length ? extractArguments(all, schema) : {} };
}
