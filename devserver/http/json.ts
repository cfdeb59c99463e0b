/**
 * The proto3 JSON mapping (https://protobuf.dev/programming-guides/json/) over the descriptors of
 * @temporalio/proto, as Temporal's HTTP API applies it: lowerCamelCase names, 64-bit integers as
 * strings, enums by name, bytes as base64, Timestamp as RFC 3339, Duration as `"1.5s"`, fields at
 * their default value left out. Payloads use Temporal's shorthand unless turned off (the real
 * server's `?noPayloadShorthand`, temporalio/proposals api/http-api.md "Payload Formatting"): a
 * `json/plain` payload is its JSON value, a `binary/null` payload is `null`, anything else keeps
 * the `{ metadata, data }` form with base64 bytes; a `Payloads` message is the array of its
 * payloads. Input takes either form.
 */

/** The protobufjs reflection surface the mapping walks. */
interface PbField {
  name: string;
  type: string;
  repeated: boolean;
  map: boolean;
  keyType?: string;
  resolvedType: PbReflType | PbEnum | null;
  resolve(): PbField;
}
interface PbEnum {
  values: Record<string, number>;
  valuesById: Record<number, string>;
}
/** A protobufjs message type with reflection. */
export interface PbReflType {
  fullName: string;
  fields: Record<string, PbField>;
  fieldsArray: PbField[];
  encode(msg: unknown): { finish(): Uint8Array };
  decode(buf: Uint8Array): unknown;
  toObject(msg: unknown, opts: Record<string, unknown>): unknown;
  fromObject(obj: unknown): unknown;
}

/** Options of the mapping. */
export interface JsonMappingOptions {
  /** Temporal's payload shorthand (default true, as the real server's HTTP API). */
  payloadShorthand: boolean;
  /**
   * In the full form, a data-less `binary/null` payload (the SDKs' encoding of `undefined`/`null`:
   * a void result, a heartbeat without details) as a `json/plain` `null`: the Web UI parses every
   * payload's data as JSON (its decodePayload) and warns "Could not parse payload" on empty data.
   * Payloads carrying other metadata than `encoding` are left as they are.
   */
  nullPayloadAsJson?: boolean;
}

const PAYLOAD = '.temporal.api.common.v1.Payload';
const PAYLOADS = '.temporal.api.common.v1.Payloads';
const WRAPPERS = new Set(['DoubleValue', 'FloatValue', 'Int64Value', 'UInt64Value', 'Int32Value', 'UInt32Value', 'BoolValue', 'StringValue', 'BytesValue'].map((n) => `.google.protobuf.${n}`));

function isMessage(t: PbField['resolvedType']): t is PbReflType {
  return !!t && 'fieldsArray' in t;
}
function fullName(t: PbReflType): string {
  return t.fullName.startsWith('.') ? t.fullName : `.${t.fullName}`;
}
function resolved(f: PbField): PbField['resolvedType'] {
  if (!f.resolvedType) f.resolve();
  return f.resolvedType;
}

/** A Timestamp `{ seconds, nanos }` (seconds as decimal string or number) as RFC 3339 in UTC. */
function timestampToJson(v: { seconds?: string | number; nanos?: number }): string {
  const ms = Number(v.seconds ?? 0) * 1000;
  const nanos = Number(v.nanos ?? 0);
  const iso = new Date(ms).toISOString().replace(/\.\d{3}Z$/, '');
  if (!nanos) return `${iso}Z`;
  const nine = String(nanos).padStart(9, '0');
  const frac = nine.endsWith('000000') ? nine.slice(0, 3) : nine.endsWith('000') ? nine.slice(0, 6) : nine;
  return `${iso}.${frac}Z`;
}

/** A Duration as the JSON string `"<seconds>[.<fraction>]s"`. */
function durationToJson(v: { seconds?: string | number; nanos?: number }): string {
  const s = Number(v.seconds ?? 0);
  const n = Number(v.nanos ?? 0);
  if (!n) return `${s}s`;
  const neg = s < 0 || n < 0;
  const frac = String(Math.abs(n)).padStart(9, '0').replace(/0+$/, '');
  return `${neg && s === 0 ? '-' : ''}${s}.${frac}s`;
}

/** RFC 3339 → `{ seconds, nanos }`. Throws TypeError naming the value when it does not parse. */
function timestampFromJson(s: unknown): { seconds: number; nanos: number } {
  const m = typeof s === 'string' ? /^(.*?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(s) : null;
  const ms = m ? Date.parse(`${m[1]}${m[3]}`) : NaN;
  if (!m || Number.isNaN(ms)) throw new TypeError(`invalid timestamp ${JSON.stringify(s)}`);
  return { seconds: Math.floor(ms / 1000), nanos: Number((m[2] ?? '').padEnd(9, '0')) };
}

/** `"1.5s"` → `{ seconds, nanos }`. Throws TypeError naming the value when it does not parse. */
function durationFromJson(s: unknown): { seconds: number; nanos: number } {
  const m = typeof s === 'string' ? /^(-)?(\d+)(?:\.(\d{1,9}))?s$/.exec(s) : null;
  if (!m) throw new TypeError(`invalid duration ${JSON.stringify(s)}`);
  const sign = m[1] ? -1 : 1;
  return { seconds: sign * Number(m[2]), nanos: sign * Number((m[3] ?? '').padEnd(9, '0')) };
}

const b64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

/** A payload in protobufjs object form (bytes as base64 strings) → its HTTP JSON form. */
function payloadToJson(p: { metadata?: Record<string, string>; data?: string }, opts: JsonMappingOptions): unknown {
  const encoding = p.metadata?.encoding ? b64(p.metadata.encoding) : '';
  const otherMetadata = Object.keys(p.metadata ?? {}).some((k) => k !== 'encoding');
  if (!opts.payloadShorthand) {
    if (opts.nullPayloadAsJson && encoding === 'binary/null' && !otherMetadata && !p.data) {
      return { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('null').toString('base64') };
    }
    return p;
  }
  if (encoding === 'binary/null' && !otherMetadata) return null;
  if (encoding === 'json/plain' && !otherMetadata) {
    try {
      return JSON.parse(b64(p.data ?? ''));
    } catch {
      return p;
    }
  }
  return p;
}

/** A payload from JSON: the full `{ metadata, data }` form, or shorthand for a JSON value. */
function payloadFromJson(v: unknown): unknown {
  const isFull =
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    Object.keys(v).every((k) => k === 'metadata' || k === 'data') &&
    'metadata' in v;
  if (isFull) return v;
  if (v === null) return { metadata: { encoding: Buffer.from('binary/null').toString('base64') } };
  return {
    metadata: { encoding: Buffer.from('json/plain').toString('base64') },
    data: Buffer.from(JSON.stringify(v)).toString('base64'),
  };
}

/** Applies `fn` to one value, each element of a repeated field or each value of a map field. */
function eachValue(f: PbField, v: unknown, fn: (x: unknown) => unknown): unknown {
  if (f.map) return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, fn(x)]));
  if (f.repeated && Array.isArray(v)) return v.map(fn);
  return fn(v);
}

/** Walks an object of `type` (protobufjs `toObject` form, bytes/longs/enums as strings) into HTTP JSON. */
function walkOut(type: PbReflType, obj: Record<string, unknown>, opts: JsonMappingOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const f = type.fields[k];
    const t = f ? resolved(f) : null;
    if (!f || !isMessage(t) || v === null || v === undefined) {
      out[k] = v;
      continue;
    }
    out[k] = eachValue(f, v, (x) => messageOut(t, x as Record<string, unknown>, opts));
  }
  return out;
}

function messageOut(t: PbReflType, x: Record<string, unknown>, opts: JsonMappingOptions): unknown {
  const name = fullName(t);
  if (name === '.google.protobuf.Timestamp') return timestampToJson(x);
  if (name === '.google.protobuf.Duration') return durationToJson(x);
  if (name === '.google.protobuf.FieldMask') return ((x.paths as string[] | undefined) ?? []).join(',');
  if (WRAPPERS.has(name)) return x.value;
  if (name === PAYLOAD) return payloadToJson(x as { metadata?: Record<string, string>; data?: string }, opts);
  // Shorthand Payloads are the JSON array of their payloads.
  if (name === PAYLOADS && opts.payloadShorthand) return ((x.payloads as Array<{ metadata?: Record<string, string>; data?: string }> | undefined) ?? []).map((p) => payloadToJson(p, opts));
  return walkOut(t, x, opts);
}

/**
 * A message held as a plain object in the dev server (int64 as number, enums as number, bytes as
 * Buffer; the form handlers answer) → its HTTP JSON form. Goes through the wire encoding, so the
 * JSON carries exactly what a gRPC client would receive.
 */
export function toHttpJson(type: PbReflType, plain: unknown, opts: JsonMappingOptions): Record<string, unknown> {
  const msg = type.decode(type.encode(plain).finish());
  const obj = type.toObject(msg, { longs: String, enums: String, bytes: String, json: true }) as Record<string, unknown>;
  return walkOut(type, obj, opts);
}

/** Walks HTTP JSON into the protobufjs `fromObject` form (well-known types and payloads rewritten). */
function walkIn(type: PbReflType, obj: Record<string, unknown>, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const f = type.fields[k] ?? type.fieldsArray.find((x) => snake(x.name) === k);
    if (!f) throw new TypeError(`unknown field "${path}${k}"`);
    const t = resolved(f);
    if (v === null || v === undefined || !isMessage(t)) {
      out[f.name] = v;
      continue;
    }
    out[f.name] = eachValue(f, v, (x) => messageIn(t, x, `${path}${f.name}.`));
  }
  return out;
}

function messageIn(t: PbReflType, x: unknown, path: string): unknown {
  const name = fullName(t);
  if (name === '.google.protobuf.Timestamp') return timestampFromJson(x);
  if (name === '.google.protobuf.Duration') return durationFromJson(x);
  if (name === '.google.protobuf.FieldMask') return { paths: String(x).split(',').filter(Boolean) };
  if (WRAPPERS.has(name)) return { value: x };
  if (name === PAYLOAD) return payloadFromJson(x);
  if (name === PAYLOADS && Array.isArray(x)) return { payloads: x.map(payloadFromJson) };
  if (x === null || typeof x !== 'object' || Array.isArray(x)) throw new TypeError(`field "${path.slice(0, -1)}" must be an object`);
  return walkIn(t, x as Record<string, unknown>, path);
}

/** `workflowId` → `workflow_id` (proto field names are accepted on input, as protojson does). */
export function snake(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
/** `workflow_id` → `workflowId`. */
export function camel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * HTTP JSON (either name form; enums by name or number; int64 as string or number) → the dev
 * server's plain form of `type`. Throws TypeError naming the field for a value that does not fit.
 */
export function fromHttpJson(type: PbReflType, json: Record<string, unknown>): Record<string, unknown> {
  const obj = walkIn(type, json, '');
  let msg: unknown;
  try {
    msg = type.fromObject(obj);
  } catch (err) {
    throw new TypeError(err instanceof Error ? err.message : String(err));
  }
  return type.toObject(msg, { longs: Number, enums: Number, defaults: false, arrays: false, objects: false }) as Record<string, unknown>;
}

/** The field at a dotted path (`execution.workflow_id`) of `type`, and its parent message type. */
export function fieldAt(type: PbReflType, dotted: string): { field: PbField; names: string[] } | undefined {
  let t: PbReflType = type;
  const names: string[] = [];
  const parts = dotted.split('.');
  for (let i = 0; i < parts.length; i++) {
    const f = t.fields[camel(parts[i])];
    if (!f) return undefined;
    names.push(f.name);
    if (i === parts.length - 1) return { field: f, names };
    const next = resolved(f);
    if (!isMessage(next)) return undefined;
    t = next;
  }
  return undefined;
}

/**
 * Sets a string from a URL (path segment or query parameter) at a dotted path of a JSON object,
 * typed by the field: numbers for 32-bit integers and floats, booleans, repeated fields appended;
 * 64-bit integers, enums, bytes and strings stay strings (the JSON mapping accepts them so).
 * Unknown paths throw TypeError naming the parameter.
 */
export function setFromUrl(type: PbReflType, json: Record<string, unknown>, dotted: string, raw: string): void {
  const at = fieldAt(type, dotted);
  if (!at) throw new TypeError(`unknown parameter "${dotted}"`);
  const { field, names } = at;
  let value: unknown = raw;
  const t = resolved(field);
  if (['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32', 'double', 'float'].includes(field.type)) value = Number(raw);
  else if (field.type === 'bool') value = raw === 'true' || raw === '1' || raw === '';
  else if (isMessage(t)) {
    const name = fullName(t);
    if (name === '.google.protobuf.Timestamp' || name === '.google.protobuf.Duration' || name === '.google.protobuf.FieldMask') value = raw;
    else if (WRAPPERS.has(name)) value = name.includes('Bool') ? raw === 'true' : /Double|Float|Int32/.test(name) ? Number(raw) : raw;
    else throw new TypeError(`parameter "${dotted}" names a message`);
  }
  let o = json;
  for (const n of names.slice(0, -1)) o = (o[n] ??= {}) as Record<string, unknown>;
  const last = names[names.length - 1];
  if (field.repeated) ((o[last] ??= []) as unknown[]).push(value);
  else o[last] = value;
}
