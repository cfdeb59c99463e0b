/**
 * Checks a model's answer against the `response_format` a caller asked for (OpenAI API reference "Structured
 * Outputs" and "JSON mode"): `json_object` wants one JSON object, `json_schema` one JSON object that its JSON Schema
 * accepts (ajv, every error collected). The answer is data here, not speech, so it is checked as the model wrote it.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { LlmRequest } from './llm';

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
/** Compiled schemas by their JSON text: a client sends the same schema request after request. */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 200;

/**
 * Compiles a caller's JSON Schema (kept for later requests, 200 at most).
 * @returns the validator, or the reason the schema cannot be compiled
 */
export function compileAnswerSchema(schema: Record<string, unknown>): ValidateFunction | string {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (!v) {
    try {
      const { $id: _id, $schema: _s, ...rest } = schema;
      v = ajv.compile(rest);
    } catch (err) {
      return (err as Error).message;
    }
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, v);
  }
  return v;
}

/**
 * Whether `text` conforms to `format`.
 * @returns null when it does; else why not, in one sentence naming the first offending place
 *   (`the answer is not JSON`, `the answer is not a JSON object`, `/city must be string`, …)
 */
export function structuredOutputProblem(text: string, format: NonNullable<LlmRequest['responseFormat']>): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the answer is not JSON';
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'the answer is not a JSON object';
  if (format === 'json_object') return null;
  const v = compileAnswerSchema(format.schema);
  if (typeof v === 'string') return `the schema cannot be used: ${v}`;
  if (v(value)) return null;
  return (v.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '(answer)'} ${e.message ?? 'is invalid'}`)
    .join('; ');
}
