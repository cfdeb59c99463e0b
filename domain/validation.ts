/**
 * Request-body validation against the generated JSON Schemas (schemas/*.schema.json) with ajv.
 * Every failure becomes 400 `validation_error` with one `{field, message}` per offending field.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { validationError, type FieldError } from './errors';
import { isStorableText, storableText } from './text';

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

/**
 * Compiles the validators of the named schemas now (ajv generates and compiles each one's code, milliseconds apiece),
 * instead of on the first request or event that needs each: a serving process does this when it is composed
 * (api/prepare.ts), so its first burst of requests after a deploy or restart does not stall on it.
 * @param names generated schema names (schemas/<Name>.schema.json); each is compiled once per process
 * @returns how many were compiled now (those compiled before are skipped)
 * @throws when a schema file is missing or does not compile
 */
export function compileSchemas(names: Iterable<string>): number {
  let n = 0;
  for (const name of names) {
    if (compiled.has(name)) continue;
    validatorFor(name);
    n++;
  }
  return n;
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

/** Object keys no request may use (OWASP "Prototype Pollution Prevention"). */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const UNSTORABLE = 'must not contain U+0000 or unpaired surrogate characters';

/**
 * What a parsed JSON value (a body, or path and query parameters) holds that nothing downstream
 * should meet, in one walk without recursion (any depth is safe to inspect):
 * - nesting of arrays/objects deeper than MAX_BODY_DEPTH: one `(body)` error and nothing else, since
 *   validators and stores walk values recursively;
 * - with `text` (default true), strings and keys Postgres cannot store: U+0000, which `text` and
 *   `jsonb` refuse, and unpaired surrogates, which are not Unicode text (RFC 8259 §8.2) and which
 *   `jsonb` refuses. One error per offending field, named by its dotted path (`members.0.name`), in
 *   document order; at most 20;
 * - keys named `__proto__`, `constructor` or `prototype` at any depth (PROTOTYPE_KEYS): one error per key,
 *   named by its path, whatever `text` says, so no merge or spread downstream can reach an object's
 *   prototype (OWASP "Prototype Pollution Prevention").
 * @param opts.prefilter default true: answer values without findings from a cheaper first walk
 */
export function jsonValueErrors(value: unknown, opts: { text?: boolean; prefilter?: boolean } = {}): FieldError[] {
  const checkText = opts.text !== false;
  // Every request body and path is checked: a walk that allocates nothing answers the common case
  // (nothing to report); only a value with a finding is walked again to name the fields. The two walks
  // apply the same rules; `prefilter: false` skips the first, so a test can show they agree.
  if (opts.prefilter !== false && !hasJsonValueFinding(value, checkText, 0)) return [];
  const out: FieldError[] = [];
  // Breadth first with an index, so fields are reported in document order level by level.
  const queue: { v: unknown; at: string; depth: number }[] = [{ v: value, at: '', depth: 0 }];
  for (let i = 0; i < queue.length; i++) {
    const { v, at, depth } = queue[i];
    if (typeof v === 'string') {
      if (checkText && out.length < 20 && !isStorableText(v)) out.push({ field: at || '(body)', message: UNSTORABLE });
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) return [{ field: '(body)', message: `must not nest arrays or objects deeper than ${MAX_BODY_DEPTH} levels` }];
    const entries: [string, unknown][] = Array.isArray(v) ? v.map((item, n) => [String(n), item]) : Object.entries(v);
    for (const [k, item] of entries) {
      const field = at ? `${at}.${k}` : k;
      if (!Array.isArray(v) && PROTOTYPE_KEYS.has(k)) {
        if (out.length < 20) out.push({ field: storableText(field), message: 'is a reserved name (__proto__, constructor and prototype are refused as keys)' });
      } else if (checkText && !isStorableText(k)) {
        if (out.length < 20) out.push({ field: storableText(field), message: 'names a field with U+0000 or unpaired surrogate characters' });
      } else {
        queue.push({ v: item, at: field, depth: depth + 1 });
      }
    }
  }
  return out;
}

/** Whether jsonValueErrors would report anything for `v` at `depth` (depth first, stops at the first finding). */
function hasJsonValueFinding(v: unknown, checkText: boolean, depth: number): boolean {
  if (typeof v === 'string') return checkText && !isStorableText(v);
  if (!v || typeof v !== 'object') return false;
  if (depth >= MAX_BODY_DEPTH) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (hasJsonValueFinding(v[i], checkText, depth + 1)) return true;
    return false;
  }
  for (const k of Object.keys(v)) {
    if (PROTOTYPE_KEYS.has(k) || (checkText && !isStorableText(k))) return true;
    if (hasJsonValueFinding((v as Record<string, unknown>)[k], checkText, depth + 1)) return true;
  }
  return false;
}
