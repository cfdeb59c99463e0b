/**
 * Request-body validation against the generated JSON Schemas (schemas/*.schema.json) with ajv.
 * Every failure becomes 400 `validation_error` with one `{field, message}` per offending field.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { validationError, type FieldError } from './errors';
import { isStorableText, storableText } from '../db/text';

// schemas/ beside api/ when run from source (tsx); two levels up when run from the compiled dist/api/.
const SCHEMA_DIR = [path.join(__dirname, '..', 'schemas'), path.join(__dirname, '..', '..', 'schemas')].find((d) =>
  fs.existsSync(path.join(d, 'SmsRegistrationDraft.schema.json')),
) ?? path.join(__dirname, '..', 'schemas');
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const compiled = new Map<string, ValidateFunction>();

/** The generated schema of a type, e.g. `loadSchema('SmsRegistrationDraft')`. @throws when the file is missing */
export function loadSchema(name: string): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, `${name}.schema.json`), 'utf8'));
}

/** Names of every generated schema file (schemas/<Name>.schema.json), sorted. */
export function listSchemaNames(): string[] {
  return fs
    .readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.schema.json'))
    .map((f) => f.slice(0, -'.schema.json'.length))
    .sort();
}

function validatorFor(name: string): ValidateFunction {
  let v = compiled.get(name);
  if (!v) {
    const schema = loadSchema(name);
    delete schema.$id;
    v = ajv.compile(schema);
    compiled.set(name, v);
  }
  return v;
}

function fieldOf(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const extra = String((e.params as { additionalProperty: string }).additionalProperty);
    return base ? `${base}.${extra}` : extra;
  }
  if (e.keyword === 'required') {
    const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const missing = String((e.params as { missingProperty: string }).missingProperty);
    return base ? `${base}.${missing}` : missing;
  }
  return e.instancePath.replace(/^\//, '').replace(/\//g, '.') || '(body)';
}

/** Turns ajv errors into one readable message per field (anyOf/null noise dropped). */
export function toFieldErrors(errors: ErrorObject[]): FieldError[] {
  const byField = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    const f = fieldOf(e);
    byField.set(f, [...(byField.get(f) ?? []), e]);
  }
  const out: FieldError[] = [];
  for (const [field, errs] of byField) {
    const e =
      errs.find((x) => x.keyword === 'enum') ??
      errs.find((x) => x.keyword === 'additionalProperties') ??
      errs.find((x) => x.keyword !== 'anyOf' && !(x.keyword === 'type' && (x.params as { type: string }).type === 'null')) ??
      errs[0];
    let message: string;
    switch (e.keyword) {
      case 'enum':
        message = `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
        break;
      case 'additionalProperties':
        message = 'is not a known field';
        break;
      case 'required':
        message = 'is required';
        break;
      case 'type': {
        const raw = (e.params as { type: string | string[] }).type;
        const types = (Array.isArray(raw) ? raw : String(raw).split(',')).filter((x) => x !== 'null');
        const nullable =
          (Array.isArray(raw) ? raw : String(raw).split(',')).includes('null') ||
          errs.some((x) => x.keyword === 'type' && (x.params as { type: unknown }).type === 'null');
        message = `must be ${types.join(' or ')}${nullable ? ' or null' : ''}`;
        break;
      }
      default:
        message = e.message ?? 'is invalid';
    }
    out.push({ field, message });
  }
  return out;
}

/**
 * Validates `body` against schema `name`.
 * @returns the body, typed
 * @throws ApiError 400 validation_error naming every offending field
 */
export function validateBody<T>(name: string, body: unknown): T {
  const errors = schemaErrors(name, body);
  if (errors.length) throw validationError(errors);
  return body as T;
}

/**
 * Like validateBody but returns the field errors instead of throwing, so a caller can add its own
 * checks and answer every problem at once. A body that is not a JSON object is one `(body)` error.
 */
export function schemaErrors(name: string, body: unknown): FieldError[] {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    return [{ field: '(body)', message: 'must be a JSON object' }];
  }
  const v = validatorFor(name);
  return v(body) ? [] : toFieldErrors(v.errors ?? []);
}

/** Concatenates error lists keeping the first error of each field. */
export function mergeFieldErrors(...lists: FieldError[][]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of lists.flat()) {
    if (seen.has(e.field)) continue;
    seen.add(e.field);
    out.push(e);
  }
  return out;
}

/** Deepest nesting of arrays and objects a request body may have (the spec's deepest shapes use under 10). */
export const MAX_BODY_DEPTH = 64;

/**
 * One `(body)` error when a parsed JSON body nests arrays/objects deeper than `max` levels (checked
 * without recursion, so any depth is safe to inspect); none otherwise. Validators and stores walk
 * bodies recursively, so the limit comes first.
 */
export function nestingErrors(value: unknown, max = MAX_BODY_DEPTH): FieldError[] {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (depth >= max) return [{ field: '(body)', message: `must not nest arrays or objects deeper than ${max} levels` }];
    for (const item of Array.isArray(v) ? v : Object.values(v)) if (item && typeof item === 'object') stack.push([item, depth + 1]);
  }
  return [];
}

/**
 * Strings of a parsed JSON body (keys included) that Postgres cannot store: U+0000, which `text` and
 * `jsonb` refuse, and unpaired surrogates, which are not Unicode text (RFC 8259 §8.2) and which `jsonb`
 * refuses. One error per offending field, named by its dotted path (`members.0.name`); at most `max`.
 */
export function unstorableTextErrors(value: unknown, max = 20): FieldError[] {
  const out: FieldError[] = [];
  const message = 'must not contain U+0000 or unpaired surrogate characters';
  const walk = (v: unknown, at: string): void => {
    if (out.length >= max) return;
    if (typeof v === 'string') {
      if (!isStorableText(v)) out.push({ field: at || '(body)', message });
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, at ? `${at}.${i}` : String(i)));
    } else if (v && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        const field = at ? `${at}.${k}` : k;
        if (!isStorableText(k)) out.push({ field: storableText(field), message: 'names a field with U+0000 or unpaired surrogate characters' });
        else walk(item, field);
      }
    }
  };
  walk(value, '');
  return out;
}
