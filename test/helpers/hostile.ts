/**
 * Hostile and schema-adjacent request bodies for property-based tests (fast-check), built from an
 * operation's JSON Schema as the OpenAPI document publishes it (`#/components/schemas/…` references).
 *
 * A body is one of:
 * - a hostile value at the top (null, a number, a string, an array, deep nesting, a prototype key);
 * - a schema-shaped body (required fields filled with plausible values) with one field, at any depth the
 *   schema describes, replaced by a hostile value: the wrong type, null, a huge or fractional number,
 *   a very long string, Unicode edge cases (lone surrogates, U+0000, RTL override, BOM, combining marks,
 *   astral characters), nesting deeper than the API allows, or an object carrying `__proto__` /
 *   `constructor` / `prototype` keys;
 * - a schema-shaped body with an unknown or prototype key added at some depth.
 */
import fc from 'fast-check';

type Json = Record<string, any>;

/** `FUZZ_SEED` (default 20261123) and `FUZZ_RUNS` (default 25 bodies per operation): the fuzzer's fixed seed and size. */
export function fuzzSettings(): { seed: number; numRuns: number } {
  const seed = Number(process.env.FUZZ_SEED ?? 20261123);
  const numRuns = Number(process.env.FUZZ_RUNS ?? 25);
  return { seed: Number.isFinite(seed) ? seed : 20261123, numRuns: Number.isInteger(numRuns) && numRuns > 0 ? numRuns : 25 };
}

/** A JSON value with own `__proto__`/`constructor`/`prototype` keys (JSON.parse makes them own properties). */
const prototypeObjects: unknown[] = [
  JSON.parse('{"__proto__":{"polluted":true}}'),
  JSON.parse('{"constructor":{"prototype":{"polluted":true}}}'),
  JSON.parse('{"prototype":1}'),
  JSON.parse('{"a":[{"__proto__":null}]}'),
];

/** Strings that have broken text handling somewhere. */
const hostileStrings: string[] = [
  '',
  ' ',
  '\ud800',
  'a\udfffb',
  '\u0000',
  'x\u0000y',
  '\u202eevil\u202c',
  '\u200f\u05e9\u05dc\u05d5\u05dd',
  '\ufeff',
  'e\u0301\u0301\u0301',
  '😀'.repeat(3),
  '../../etc/passwd',
  "'; DROP TABLE agents; --",
  '%00',
  '${7*7}{{7*7}}',
  '<script>alert(1)</script>',
  'x'.repeat(70_000),
  '1e309',
  '-0',
  'null',
  'true',
  '2026-02-30T25:61:61Z',
  '+1415555010\u0000',
];

/** Numbers at the edges of what JSON, JavaScript, int4, int8 and timers accept. */
const hostileNumbers: number[] = [0, -0, -1, 1.5, -1.5, 1e-300, 1e300, -1e300, 2 ** 31, 2 ** 53 + 2, 2 ** 63, -(2 ** 63), Number.MAX_VALUE, 4294967296, 86_400_001];

function nested(depth: number, leaf: unknown, asObject: boolean): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = asObject ? { a: v } : [v];
  return v;
}

/** Any hostile JSON value (no schema needed). */
export function hostileValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(null, true, false, [], {}, [null], [[]], ...hostileNumbers, ...hostileStrings, ...prototypeObjects),
    fc.integer({ min: 60, max: 200 }).map((d) => nested(d, 1, d % 2 === 0)),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.double(),
    fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map((n) => Number(n)),
    fc.array(fc.constantFrom<unknown>(null, 1, 'x', '\ud800', {}), { maxLength: 300 }),
  );
}

/** Follows `$ref`s (OpenAPI `#/components/schemas/<Name>` or JSON Schema `#/definitions/<Name>`). */
export function deref(schema: Json | undefined, components: Json, depth = 0): Json {
  let s = schema ?? {};
  while (s && typeof s.$ref === 'string' && depth++ < 20) s = components[s.$ref.split('/').pop()!] ?? {};
  return s ?? {};
}

/** A plausible value for a schema: enough to get past `required` and reach deeper checks. */
export function plausible(schema: Json | undefined, components: Json, depth = 0): unknown {
  const s = deref(schema, components);
  if (depth > 8) return null;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  for (const k of ['anyOf', 'oneOf'] as const) if (Array.isArray(s[k])) return plausible(s[k].find((x: Json) => deref(x, components).type !== 'null') ?? s[k][0], components, depth + 1);
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((x: Json) => plausible(x, components, depth + 1)));
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Json = {};
      for (const k of s.required ?? []) out[k] = plausible(s.properties?.[k], components, depth + 1);
      return out;
    }
    case 'array':
      return s.minItems ? Array.from({ length: s.minItems }, () => plausible(s.items, components, depth + 1)) : [];
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      if (s.format === 'date-time') return new Date().toISOString();
      if (s.format === 'uri') return 'https://example.com/';
      if (s.format === 'email') return 'a@example.com';
      if (typeof s.pattern === 'string' && /snake|\[a-z\]/.test(s.pattern)) return 'abc';
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    default:
      return null;
  }
}

/** A property path the schema describes (`[]` stands for "an array item") and the schema found there. */
export interface SchemaPath {
  path: string[];
  schema: Json;
}

/** Every property path the schema describes, to at most `maxDepth`. */
export function schemaPaths(schema: Json | undefined, components: Json, maxDepth = 6, prefix: string[] = [], seen = new Set<Json>()): SchemaPath[] {
  const s = deref(schema, components);
  if (prefix.length >= maxDepth || seen.has(s)) return [];
  const next = new Set(seen).add(s);
  const out: SchemaPath[] = [];
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) for (const x of s[k] ?? []) out.push(...schemaPaths(x, components, maxDepth, prefix, next));
  for (const [k, v] of Object.entries<Json>(s.properties ?? {})) {
    out.push({ path: [...prefix, k], schema: deref(v, components) });
    out.push(...schemaPaths(v, components, maxDepth, [...prefix, k], next));
  }
  if (s.items) {
    out.push({ path: [...prefix, '[]'], schema: deref(s.items, components) });
    out.push(...schemaPaths(s.items, components, maxDepth, [...prefix, '[]'], next));
  }
  return out;
}

/** The JSON types a schema admits (through anyOf/oneOf), e.g. `['array']`; empty when it admits anything. */
function typesOf(schema: Json, components: Json): string[] {
  const s = deref(schema, components);
  const own = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const alts = [...(s.anyOf ?? []), ...(s.oneOf ?? [])].flatMap((x: Json) => typesOf(x, components));
  if (Array.isArray(s.enum)) own.push(...new Set(s.enum.map((v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v))));
  return [...new Set([...own, ...alts])] as string[];
}

/**
 * Values of every JSON type the schema does not admit (type confusion at that depth): an object where an
 * array is expected, a string or an array where a number is, and so on; `null` when null is not allowed.
 */
export function wrongTypes(schema: Json, components: Json): unknown[] {
  const types = typesOf(schema, components);
  if (types.length === 0) return [];
  const admits = (t: string) => types.includes(t) || (t === 'number' && types.includes('integer'));
  const out: unknown[] = [];
  if (!admits('object')) out.push({}, { name: 'x' });
  if (!admits('array')) out.push([], ['x']);
  if (!admits('string')) out.push('x');
  if (!admits('number')) out.push(1);
  if (types.includes('integer')) out.push(1.5);
  if (!admits('boolean')) out.push(true);
  if (!admits('null')) out.push(null);
  return out;
}

/** `body` with the value at `path` replaced by `value`, creating objects and one-item arrays on the way. */
export function setPath(body: unknown, path: string[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (head === '[]') {
    const arr = Array.isArray(body) && body.length ? [...body] : [{}];
    arr[0] = setPath(arr[0], rest, value);
    return arr;
  }
  const obj: Json = body && typeof body === 'object' && !Array.isArray(body) ? { ...body } : {};
  Object.defineProperty(obj, head, { value: setPath(obj[head], rest, value), enumerable: true, writable: true, configurable: true });
  return obj;
}

/**
 * Bodies for an operation whose request schema is `schema` (undefined: the operation takes no body).
 * @returns an arbitrary of JSON values; send each with JSON.stringify
 */
export function hostileBodies(schema: Json | undefined, components: Json): fc.Arbitrary<unknown> {
  const base = schema ? plausible(schema, components) : {};
  const paths = schema ? schemaPaths(schema, components) : [];
  const options: fc.Arbitrary<unknown>[] = [hostileValue()];
  if (paths.length) {
    const mutated = fc.tuple(fc.constantFrom(...paths), hostileValue()).map(([p, v]) => setPath(base, p.path, v));
    options.push(mutated, mutated);
    const confused = paths.flatMap((p) => wrongTypes(p.schema, components).map((v) => setPath(base, p.path, v)));
    if (confused.length) options.push(fc.constantFrom(...confused), fc.constantFrom(...confused));
    options.push(
      fc.tuple(fc.constantFrom(...paths), fc.constantFrom('__proto__', 'constructor', 'prototype', 'unknownField')).map(([p, k]) => setPath(base, [...p.path.filter((x) => x !== '[]'), k], 1)),
    );
  }
  options.push(fc.constant(base));
  return fc.oneof(...options);
}

/**
 * Every schema path of `schema` with every wrong-typed value (wrongTypes), as bodies: the systematic
 * sweep beside the random ones, so type confusion at every depth is sent at least once.
 */
export function typeConfusedBodies(schema: Json | undefined, components: Json): unknown[] {
  if (!schema) return [];
  const base = plausible(schema, components);
  return schemaPaths(schema, components).flatMap((p) => wrongTypes(p.schema, components).map((v) => setPath(base, p.path, v)));
}

/** A request to a form endpoint: the raw body, its content type and, at times, an Authorization header. */
export interface HostileForm {
  body: string;
  contentType: string;
  authorization?: string;
}

/**
 * Hostile `application/x-www-form-urlencoded` requests for an operation's form schema (the OAuth endpoints;
 * RFC 6749 §4.1.3): each documented field absent, hostile (the strings above, repeated values), plausible
 * (its enum) or joined by prototype and unknown keys; at times a body that is not a form at all (broken
 * percent escapes, JSON, 70 KB of it), the wrong content type, or a malformed HTTP Basic header.
 */
export function hostileForms(schema: Json | undefined): fc.Arbitrary<HostileForm> {
  const names = [...Object.keys((schema?.properties ?? {}) as Json), '__proto__', 'constructor', 'prototype', 'x'];
  const value = (name: string): fc.Arbitrary<string[]> => {
    const enumValues = ((schema?.properties as Json | undefined)?.[name]?.enum ?? []) as string[];
    return fc.oneof(
      fc.constant([] as string[]),
      fc.constantFrom(...hostileStrings).map((s) => [s]),
      fc.array(fc.constantFrom(...hostileStrings, ...enumValues, 'oac_' + 'A'.repeat(22)), { minLength: 2, maxLength: 4 }),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => [s]),
      ...(enumValues.length ? [fc.constantFrom(...enumValues).map((s) => [s])] : []),
    );
  };
  const form = fc.tuple(...names.map((n) => value(n))).map((values) => {
    const params = new URLSearchParams();
    names.forEach((n, i) => values[i].forEach((v) => params.append(n, v)));
    return params.toString();
  });
  const raw = fc.constantFrom('%', '%E0%A4%A', 'a=%ZZ&&==&b', '=&=&=', 'grant_type', '{"grant_type":"authorization_code"}', 'x='.padEnd(70_000, 'y'), '\u0000=\u0000');
  const authorization = fc.constantFrom(
    undefined,
    'Basic',
    'Basic !!!',
    `Basic ${Buffer.from('oac_x').toString('base64')}`,
    `Basic ${Buffer.from(':').toString('base64')}`,
    `Basic ${Buffer.from('%ZZ:%').toString('base64')}`,
    'Bearer x',
  );
  const contentType = fc.constantFrom('application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=utf-8', 'application/json', 'text/plain');
  return fc.record({
    body: fc.oneof({ weight: 4, arbitrary: form }, { weight: 1, arbitrary: raw }),
    contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/x-www-form-urlencoded') }, { weight: 1, arbitrary: contentType }),
    authorization,
  });
}
