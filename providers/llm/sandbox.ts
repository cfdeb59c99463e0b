/**
 * The sandbox LLM (docs/api-notes.md "Sandbox LLM"): the default adapter, deterministic and offline. It answers like a model
 * that follows the conversation runtime's instructions, from `LlmRequest.hints` and a few documented patterns, so
 * conversations, playbooks, tools and knowledge can be exercised end to end without a model. Same request, same
 * answer — ids included; nothing random, no clock.
 *
 * Rules, first match wins:
 * 0. `hints.analysis` → the JSON of `sandboxAnalysis` (a post-conversation analysis read from the transcript);
 * 1. `hints.refusal` → said verbatim; 2. `hints.say` → verbatim;
 * 3. no user message yet and `hints.greeting` → the greeting verbatim;
 * 4. the last message(s) are `tool` results → plain sentences saying what happened (`toolResultSentence`): never
 *    the JSON, the error text or a tool name;
 * 5. `tools` given and the last message is a user message that names a tool (`matchTool`), asks for a person while the
 *    `escalate` tool is offered (`matchEscalation`), or starts a playbook
 *    of `hints.playbooks` by a trigger phrase or the key words of its `whenToUse` (`matchPlaybook`) → one call of that
 *    tool with arguments read from the message (`extractArguments`), `finishReason: 'tool_calls'`, content null;
 * 6. `hints.ask` → verbatim; 7. `hints.knowledge` non-empty → the sentences that best match the question, headings
 *    left out, no citation (`answerFromKnowledge`);
 * 8. otherwise a fixed reply that echoes the last user message (`genericReply`).
 * Rule 5 follows `toolChoice`: `none` calls nothing, a named function is called whatever the message says, `required`
 * calls the tool the message names, else the first tool. Between rules 5 and 6: a `responseFormat` → one JSON object
 * (`structuredAnswer`). `stop` ends a text answer before the first stop sequence.
 * Before rule 0: `hints.classification` (a semantic topic guardrail) → the JSON of `sandboxClassification`, which
 * decides by key words (docs/api-notes.md "Sandbox LLM").
 * Failures by model name, so a fallback model can be exercised offline: a model ending in `-rate-limited` fails as
 * `rate_limited` (an upstream 429), `-unavailable` as `unavailable` (a 5xx), `-timeout` as `timeout`, at once; then
 * `fallbackModel`, when the request has one, answers instead (./fallback.ts).
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
import { ESCALATE_TOOL } from '../../domain/conversations/escalation';
import { LlmProviderError, type LlmErrorKind } from './errors';
import { streamWithFallback } from './fallback';

/** Options of the sandbox LLM. */
export interface SandboxLlmOptions {
  /** Pause before each streamed token after the first, ms (SANDBOX_LLM_TOKEN_DELAY_MS, default 0). */
  tokenDelayMs?: number;
}

/** Longest knowledge answer, characters (rule 7). */
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

  /** The answer token by token (module docstring), from `fallbackModel` when the model fails by its name. @throws LlmProviderError for a failing model name; the signal's reason when aborted */
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    return streamWithFallback(req, 'sandbox', (r) => this.streamOnce(r));
  }

  private async *streamOnce(req: LlmRequest): AsyncIterable<LlmStreamEvent> {
    const signal = req.signal;
    signal?.throwIfAborted();
    const failure = sandboxModelFailure(req.model);
    if (failure) throw new LlmProviderError(failure, `the sandbox model ${req.model} fails as ${failure} (docs/api-notes.md "Sandbox LLM")`, failure === 'rate_limited' ? { status: 429, retryAfterSeconds: 1 } : failure === 'unavailable' ? { status: 503 } : {});
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

/** The failure a sandbox model name asks for (module docstring): `…-rate-limited`, `…-unavailable`, `…-timeout`; else null. */
export function sandboxModelFailure(model: string | undefined): LlmErrorKind | null {
  if (!model) return null;
  if (model.endsWith('-rate-limited')) return 'rate_limited';
  if (model.endsWith('-unavailable')) return 'unavailable';
  if (model.endsWith('-timeout')) return 'timeout';
  return null;
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
    // `stop`: the answer ends before the first stop sequence, which is left out (chat-completions `stop`).
    for (const seq of req.stop ?? []) {
      const at = seq ? out.indexOf(seq) : -1;
      if (at >= 0) out = out.slice(0, at);
    }
    if (req.maxTokens !== undefined && req.maxTokens >= 0) {
      const ids = encodeTokens(content);
      if (ids.length > req.maxTokens) {
        out = decode(ids.slice(0, req.maxTokens)).replace(/\uFFFD+$/, '');
        finishReason = 'length';
      }
    }
    return { content: out, toolCalls: [], finishReason, usage: usage(messages, countTokens(out)), model };
  };

  if (hints.classification) return text(JSON.stringify(sandboxClassification(hints.classification)));
  if (hints.analysis) return text(JSON.stringify(sandboxAnalysis(hints.analysis)));
  if (hints.refusal) return text(hints.refusal);
  if (hints.say) return text(hints.say);
  if (!hasUser && hints.greeting) return text(hints.greeting);
  if (last?.role === 'tool') return text(toolResultSentence(messages));
  if (last?.role === 'user' && req.tools?.length && req.toolChoice !== 'none') {
    const message = last.content ?? '';
    const forced = typeof req.toolChoice === 'object' ? req.tools.find((t) => t.name === (req.toolChoice as { name: string }).name) : undefined;
    const tool =
      forced ??
      matchTool(message, req.tools) ??
      matchEscalation(message, req.tools) ??
      matchPlaybook(message, hints.playbooks ?? [], req.tools) ??
      (req.toolChoice === 'required' ? req.tools[0] : undefined);
    if (tool) {
      const args = JSON.stringify(extractArguments(last.content ?? '', tool.parameters));
      const call: LlmToolCall = { id: toolCallId(messages, tool.name, args), name: tool.name, arguments: args };
      return { content: null, toolCalls: [call], finishReason: 'tool_calls', usage: usage(messages, countTokens(call.name) + countTokens(args)), model };
    }
  }
  if (req.responseFormat && last?.role === 'user') return text(JSON.stringify(structuredAnswer(req, last.content ?? '')));
  if (hints.ask) return text(hints.ask);
  if (hints.knowledge?.length) {
    const question = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    return text(answerFromKnowledge(question, hints.knowledge));
  }
  return text(genericReply(messages));
}

/**
 * The JSON object the sandbox answers a `response_format` with (docs/api-notes.md "Sandbox LLM"): for `json_schema`,
 * the schema's properties read from the user's message by `extractArguments` (missing ones left out, so a required
 * property the message does not give makes a non-conforming answer); for `json_object`, `{"answer": <the text rules
 * 6–8 would say>}`.
 */
function structuredAnswer(req: LlmRequest, message: string): Record<string, unknown> {
  const f = req.responseFormat!;
  if (f !== 'json_object') return extractArguments(message, f.schema);
  const plain = sandboxAnswer({ ...req, responseFormat: undefined, tools: undefined, stop: undefined, maxTokens: undefined });
  return { answer: plain.content ?? '' };
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

/**
 * What asks for a person (rule 5): "speak to a person", "talk to someone", "a real person", "human", "representative",
 * "operator", "manager", "supervisor", "emergency", "urgent", as whole words, ignoring case.
 */
export const ESCALATION_WORDS =
  /\b(?:(?:speak|talk|chat)\s+(?:to|with)\s+(?:(?:a|an)\s+)?(?:(?:actual|real|live)\s+)?(?:person|someone|somebody|human|agent|people)|real\s+person|live\s+agent|humans?|representative|operator|manager|supervisor|emergency|urgent)\b/i;

/** The `escalate` tool when it is offered and `message` asks for a person ({@link ESCALATION_WORDS}); else undefined. */
export function matchEscalation(message: string, tools: readonly LlmTool[]): LlmTool | undefined {
  const tool = tools.find((t) => t.name === ESCALATE_TOOL);
  return tool && ESCALATION_WORDS.test(message) ? tool : undefined;
}

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
function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** Text lower-cased with apostrophes dropped and everything but letters and digits made single spaces. */
function normalizeWords(text: string): string {
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

/**
 * Rule 5, playbooks: the tool of the playbook (in `playbooks` order, among `tools`) that `message` asks for —
 * first one of whose trigger phrases the message contains as whole words (case, punctuation and apostrophes
 * ignored); else the one whose `whenToUse` shares the most key words (`keyWords`) with the message, at least two
 * (or all of them when `whenToUse` has fewer), the first on a tie. @returns undefined when none
 */
export function matchPlaybook(message: string, playbooks: NonNullable<LlmRequest['hints']>['playbooks'] & object, tools: readonly LlmTool[]): LlmTool | undefined {
  const offered = playbooks.filter((p) => tools.some((t) => t.name === p.tool));
  const text = ` ${normalizeWords(message)} `;
  for (const p of offered) {
    if (p.triggerPhrases.some((phrase) => normalizeWords(phrase) && text.includes(` ${normalizeWords(phrase)} `))) return tools.find((t) => t.name === p.tool);
  }
  const said = keyWords(message);
  let best: { tool: string; shared: number } | undefined;
  for (const p of offered) {
    if (!p.whenToUse) continue;
    const wanted = keyWords(p.whenToUse);
    const shared = [...wanted].filter((w) => said.has(w)).length;
    if (wanted.size && shared >= Math.min(2, wanted.size) && (!best || shared > best.shared)) best = { tool: p.tool, shared };
  }
  return best ? tools.find((t) => t.name === best!.tool) : undefined;
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

/** Said for a failed tool result (rule 4): an apology and an offer of a person, never the error itself. */
export const TOOL_FAILURE_SENTENCE = "I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?";

/** `startTime` / `booking_id` → `start time` / `booking id`. */
function humanKey(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .toLowerCase()
    .trim();
}

/** Up to four `key: value` details of a result's top-level text, number and true/false members. */
function resultDetails(output: unknown): string[] {
  if (!output || typeof output !== 'object' || Array.isArray(output)) return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(output as Record<string, unknown>)) {
    if (out.length === 4) break;
    if (typeof v === 'boolean') out.push(`${humanKey(k)}: ${v ? 'yes' : 'no'}`);
    else if (typeof v === 'number') out.push(`${humanKey(k)}: ${v}`);
    else if (typeof v === 'string' && v.trim() && v.length <= 80 && !/[{}[\]]/.test(v)) out.push(`${humanKey(k)}: ${v.trim()}`);
  }
  return out;
}

/**
 * Rule 4: the trailing `tool` messages said as plain sentences. A result is a failure when it is a JSON object
 * with `ok: false` or a string `error`: then `TOOL_FAILURE_SENTENCE` (some failed, some not: `Part of that went
 * through, but not all of it.` before the offer). Otherwise `All done.`, followed by up to four details of the
 * result (its `output` when wrapped as `{ok, output}`): top-level text (≤ 80 characters), number and true/false
 * members as `Key: value, key: value.` with keys read as words; a text result adds its first `EXCERPT_CHARS`.
 */
export function toolResultSentence(messages: readonly LlmMessage[]): string {
  const results: LlmMessage[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) results.unshift(messages[i]);
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
    const d = resultDetails(obj && 'ok' in obj && 'output' in obj ? obj.output : obj);
    if (d.length) details.push(`${d.join(', ').replace(/^./, (c) => c.toUpperCase())}.`);
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
    chunkSentences(c.text).forEach((sentence, si) => {
      if (seen.has(sentence)) return;
      seen.add(sentence);
      const words = keyWords(sentence);
      all.push({ text: sentence, order: ci * 100_000 + si, score: [...wanted].filter((w) => words.has(w)).length });
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

/** Words that make a user message count as positive (whole words, case-insensitive). */
const POSITIVE = /\b(thanks|thank you|great|perfect|excellent|awesome|wonderful|happy|love|good|helpful|appreciate)\b/gi;
/** Words that make a user message count as negative. */
const NEGATIVE = /\b(angry|annoyed|awful|bad|terrible|horrible|hate|frustrated|frustrating|upset|useless|worst|ridiculous|disappointed)\b/gi;
/** A last user message that closes the matter. */
const CLOSING = /\b(thanks|thank you|that'?s all|perfect|great|bye|goodbye|solved|resolved)\b/i;

/**
 * Rule 0: a deterministic post-conversation analysis (docs/api-notes.md "Sandbox LLM"), from the user's lines only:
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

/**
 * Words of a topic or description that say nothing of what it covers ("medical advice" is about `medical`, not
 * `advice`): left out of a topic's terms by `sandboxClassification`.
 */
const GENERIC_TOPIC_WORDS = new Set(
  (
    'advice advise question help information info topic thing anything something everything stuff discuss discussion talk related general ' +
    'specific request issue matter opinion recommendation guidance support service answer detail about other'
  )
    .split(' ')
    .map(stem),
);

/**
 * Vocabularies of common blocked topics: a topic whose own words (name or description) include one of `names`
 * also has these `terms` (docs/api-notes.md "Sandbox LLM").
 */
const TOPIC_VOCABULARIES: { names: string[]; terms: string[] }[] = [
  {
    names: ['medical', 'medicine', 'medication', 'health', 'clinical', 'doctor', 'drug', 'pharma'],
    terms: [
      'medic', 'diagnos', 'symptom', 'dosage', 'dose', 'dosing', 'overdos', 'infect', 'prescri', 'antibiotic', 'amoxicillin', 'penicillin',
      'ibuprofen', 'acetaminophen', 'paracetamol', 'aspirin', 'opioid', 'fever', 'disease', 'illness', 'pills', 'vaccin', 'allerg', 'rash',
    ],
  },
  { names: ['legal', 'law', 'lawyer', 'attorney', 'lawsuit'], terms: ['legal', 'lawyer', 'attorney', 'lawsuit', 'sue', 'suing', 'liabil', 'litigat', 'custody', 'divorce'] },
  {
    names: ['financial', 'finance', 'investment', 'investing', 'tax', 'taxes', 'money'],
    terms: ['invest', 'stocks', 'crypto', 'bitcoin', 'retirement', 'portfolio', 'taxes', 'loan', 'mortgage', 'financ', 'dividend'],
  },
  { names: ['politics', 'political', 'election', 'elections'], terms: ['politic', 'election', 'vote', 'voting', 'president', 'democrat', 'republican', 'senat', 'congress', 'parliament'] },
];

/** Whether a message word matches a term: the term itself, or (terms of four letters or more) a word beginning with it. */
function matchesTerm(word: string, term: string): boolean {
  return word === term || (term.length >= 4 && word.startsWith(term));
}

/**
 * The sandbox's verdict on a semantic topic guardrail's question (`hints.classification`; docs/api-notes.md "Sandbox
 * LLM"). A topic's terms are the key words (`keyWords`) of its name and description that are not generic
 * (`GENERIC_TOPIC_WORDS`: advice, question, help, information, …), plus the vocabulary (`TOPIC_VOCABULARIES`) of
 * every common topic one of those words names: "medical advice" has `medical`, and through it `diagnos`, `dosage`,
 * `infect`, `amoxicillin`, `prescri`, … . A topic applies when a word of the message matches one of its terms (the
 * term itself, or, for terms of four letters or more, a word beginning with it: `infect` matches "infection").
 * @returns `{applies, reason}` as the classifier asks: the topics that apply in their order; the reason names the
 *   first word found, or says none was
 */
export function sandboxClassification(c: NonNullable<NonNullable<LlmRequest['hints']>['classification']>): { applies: string[]; reason: string } {
  const said = normalizeWords(c.message).split(' ').filter(Boolean);
  const applies: string[] = [];
  let reason = '';
  for (const t of c.topics) {
    const own = [...keyWords(`${t.topic} ${t.description ?? ''}`)].filter((w) => !GENERIC_TOPIC_WORDS.has(w));
    const terms = new Set(own);
    for (const v of TOPIC_VOCABULARIES) if (own.some((w) => v.names.some((n) => matchesTerm(w, stem(n))))) v.terms.forEach((x) => terms.add(x));
    const found = said.find((w) => [...terms].some((term) => matchesTerm(w, term)));
    if (found === undefined) continue;
    applies.push(t.topic);
    if (!reason) reason = `The message mentions "${found}", which is about ${t.topic}.`;
  }
  return { applies, reason: reason || "No blocked topic's key words appear in the message." };
}
