/**
 * Rule 5 of the sandbox LLM (docs/api-notes.md "Sandbox LLM"; ./sandbox.ts): which tool a user message calls — a tool
 * it names, the `escalate` tool when it asks for a person, a playbook it asks for — and the call's arguments read
 * from the message. The analysis (./sandboxJudging.ts) reads its fields with `extractArguments` too.
 */
import type { LlmRequest, LlmTool } from './index';
import { ESCALATE_TOOL } from '../../domain/conversations/escalation';
import { keyWords, normalizeWords } from './sandboxWords';

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
