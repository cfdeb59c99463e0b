/**
 * Post-conversation analysis, the pure part (docs/api-notes.md "Conversation analysis"): the agent's extraction fields are
 * checked at save, the model is asked for one JSON object (`summary`, `outcome`, `sentiment`, `fields`), and its
 * answer is read back with every extracted value checked against its field's type — an invalid value is dropped
 * and named in `notes`, never stored.
 */
import type { FieldError } from '../errors';
import type { LlmMessage } from './llm';
import type { AnalysisField } from '../../schemas/types/agents';

/**
 * The closed set of outcomes: `resolved` (the caller's need was met), `transferred` (handed to a person or
 * another number), `abandoned` (the caller left before saying anything useful), `unresolved` (anything else).
 */
export const ANALYSIS_OUTCOMES = ['resolved', 'transferred', 'abandoned', 'unresolved'] as const;
/** One outcome of {@link ANALYSIS_OUTCOMES}. */
export type AnalysisOutcome = (typeof ANALYSIS_OUTCOMES)[number];
/** The sentiment of the caller over the whole conversation. */
export const ANALYSIS_SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
/** One sentiment of {@link ANALYSIS_SENTIMENTS}. */
export type AnalysisSentiment = (typeof ANALYSIS_SENTIMENTS)[number];

/** Longest stored summary, characters. */
export const SUMMARY_MAX_CHARS = 2000;
/** Longest stored string value of an extraction field, characters. */
export const FIELD_VALUE_MAX_CHARS = 1000;

/** One line of the transcript the analysis reads. */
export interface AnalysisLine {
  speaker: 'user' | 'agent';
  text: string;
}

/** What the analysis of one conversation is asked about (also the sandbox LLM's hint). */
export interface AnalysisRequest {
  transcript: AnalysisLine[];
  fields: AnalysisField[];
  /** Why the conversation ended (`ended_by_user`, `transferred`, …). */
  endReason: string | null;
}

/** The checked result of an analysis. */
export interface AnalysisResult {
  summary: string;
  outcome: AnalysisOutcome;
  sentiment: AnalysisSentiment;
  fields: Record<string, string | number | boolean>;
  /** One line per dropped value. */
  notes: string[];
}

/**
 * Errors of an agent's extraction fields, at save (`analysis.fields[<name>]…`): repeated names, an `enum` without
 * `values`, `values` on another type, repeated enum values. The JSON Schema checks shapes and lengths first.
 */
export function analysisFieldErrors(fields: readonly AnalysisField[] | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  for (const f of fields ?? []) {
    const at = `analysis.fields[${f.name}]`;
    if (seen.has(f.name)) errors.push({ field: at, message: 'duplicate field name' });
    seen.add(f.name);
    if (f.type === 'enum' && !f.values?.length) errors.push({ field: `${at}.values`, message: 'is required for an enum field' });
    if (f.type !== 'enum' && f.values !== undefined) errors.push({ field: `${at}.values`, message: 'is only allowed on an enum field' });
    if (f.values && new Set(f.values).size !== f.values.length) errors.push({ field: `${at}.values`, message: 'repeats a value' });
  }
  return errors;
}

/** The JSON Schema of one field's value as the model is told it (the sandbox reads values with it too). */
export function fieldJsonSchema(f: AnalysisField): Record<string, unknown> {
  const base: Record<string, unknown> = f.description ? { description: f.description } : {};
  switch (f.type) {
    case 'number':
      return { ...base, type: 'number' };
    case 'boolean':
      return { ...base, type: 'boolean' };
    case 'date':
      return { ...base, type: 'string', format: 'date' };
    case 'enum':
      return { ...base, type: 'string', enum: f.values ?? [] };
    default:
      return { ...base, type: 'string' };
  }
}

/**
 * The chat messages asking a model for the analysis: a system message stating the JSON object to answer with
 * (OpenAI "JSON mode" needs the word JSON in the prompt) and one user message holding the transcript.
 */
export function analysisMessages(req: AnalysisRequest): LlmMessage[] {
  const schema = {
    type: 'object',
    properties: {
      summary: { type: 'string', description: 'Two or three sentences on what was asked and what happened' },
      outcome: { type: 'string', enum: [...ANALYSIS_OUTCOMES] },
      sentiment: { type: 'string', enum: [...ANALYSIS_SENTIMENTS], description: "The caller's sentiment" },
      fields: { type: 'object', properties: Object.fromEntries(req.fields.map((f) => [f.name, fieldJsonSchema(f)])) },
    },
    required: ['summary', 'outcome', 'sentiment', 'fields'],
  };
  const system = [
    'You analyse a finished conversation between a user and an AI agent.',
    'Answer with one JSON object only, matching this JSON Schema:',
    JSON.stringify(schema),
    `Outcomes: resolved = the user's need was met; transferred = handed to a person or another number; abandoned = the user left before saying what they needed; unresolved = anything else.`,
    'In "fields", leave out any value the conversation does not state. Dates are YYYY-MM-DD.',
    `The conversation ended with reason: ${req.endReason ?? 'unknown'}.`,
  ].join('\n');
  const transcript = req.transcript.map((l) => `${l.speaker === 'user' ? 'User' : 'Agent'}: ${l.text}`).join('\n');
  return [
    { role: 'system', content: system },
    { role: 'user', content: transcript || '(no messages)' },
  ];
}

/** True for a real calendar date `YYYY-MM-DD` (ISO 8601 calendar date, extended format). */
export function isIsoDate(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** The value checked against the field's type, or a note saying why it is dropped. */
export function checkFieldValue(f: AnalysisField, value: unknown): { value: string | number | boolean } | { note: string } {
  const bad = (why: string) => ({ note: `${f.name}: dropped ${JSON.stringify(value)?.slice(0, 100)} (${why})` });
  switch (f.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? { value } : bad('not a number');
    case 'boolean':
      return typeof value === 'boolean' ? { value } : bad('not a boolean');
    case 'date':
      return typeof value === 'string' && isIsoDate(value) ? { value } : bad('not a YYYY-MM-DD date');
    case 'enum':
      return typeof value === 'string' && (f.values ?? []).includes(value) ? { value } : bad(`not one of ${(f.values ?? []).join(', ')}`);
    default:
      if (typeof value !== 'string' || !value.trim()) return bad('not a non-empty string');
      return { value: value.slice(0, FIELD_VALUE_MAX_CHARS) };
  }
}

/**
 * Reads the model's answer. Unknown outcome → `unresolved`, unknown sentiment → `neutral` (each with a note);
 * values of fields the agent does not define are ignored; invalid values are dropped with a note.
 * @throws Error when the answer is not a JSON object (the analysis is then recorded as failed)
 */
export function parseAnalysis(content: string | null, fields: readonly AnalysisField[]): AnalysisResult {
  let parsed: unknown;
  try {
    // Some models wrap JSON in a ```json fence even in JSON mode.
    parsed = JSON.parse((content ?? '').trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch {
    throw new Error('the model did not answer with JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the model did not answer with a JSON object');
  const o = parsed as Record<string, unknown>;
  const notes: string[] = [];
  let outcome = o.outcome as AnalysisOutcome;
  if (!ANALYSIS_OUTCOMES.includes(outcome)) {
    notes.push(`outcome: ${JSON.stringify(o.outcome)?.slice(0, 100)} is not a known outcome; unresolved recorded`);
    outcome = 'unresolved';
  }
  let sentiment = o.sentiment as AnalysisSentiment;
  if (!ANALYSIS_SENTIMENTS.includes(sentiment)) {
    notes.push(`sentiment: ${JSON.stringify(o.sentiment)?.slice(0, 100)} is not a known sentiment; neutral recorded`);
    sentiment = 'neutral';
  }
  const raw = o.fields && typeof o.fields === 'object' && !Array.isArray(o.fields) ? (o.fields as Record<string, unknown>) : {};
  const out: Record<string, string | number | boolean> = {};
  for (const f of fields) {
    if (raw[f.name] === undefined || raw[f.name] === null) continue;
    const checked = checkFieldValue(f, raw[f.name]);
    if ('value' in checked) out[f.name] = checked.value;
    else notes.push(checked.note);
  }
  const summary = typeof o.summary === 'string' ? o.summary.trim().slice(0, SUMMARY_MAX_CHARS) : '';
  return { summary, outcome, sentiment, fields: out, notes };
}
