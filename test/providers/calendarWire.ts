/**
 * The calendar providers' documented wire shapes, for the loopback stubs (../shared/providers/README.md): Google
 * Calendar API v3's discovery document (its `schemas` turned into JSON Schemas: `$ref` by name, every object closed
 * to the members it documents) and Cal.com API v2's OpenAPI 3 document (operations, parameters, request bodies,
 * responses). Every stub request and answer is validated against them; a mismatch is a wire problem the test asserts
 * absent.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { providerDocumentsDir } from './wire';

function readDocument(...parts: string[]): any {
  const file = path.join(providerDocumentsDir(), ...parts);
  if (!fs.existsSync(file)) {
    const err = new Error(`the provider documents under ../shared/providers are missing: ${file} (see ../shared/providers/README.md, or set PROVIDER_DOCUMENTS_DIR)`);
    err.stack = `Error: ${err.message}`;
    throw err;
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

const errorsOf = (v: ValidateFunction) => (v.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);

// ---------------------------------------------------------------------------------------------- Google Calendar

let googleDoc: any;
/** The Calendar v3 discovery document (read once). @throws Error in one line when the documents are missing */
export function googleDiscovery(): any {
  googleDoc ??= readDocument('google-calendar', 'calendar__v3.json');
  return googleDoc;
}

/** A discovery schema as a JSON Schema: `$ref` by name, objects closed to their documented members. */
function fromDiscovery(d: any): any {
  if (!d || typeof d !== 'object') return {};
  if (d.$ref) return { $ref: `google#/definitions/${d.$ref}` };
  const out: any = {};
  if (d.type && d.type !== 'any') out.type = d.type;
  if (d.enum) out.enum = d.enum;
  if (d.format && d.type === 'string' && ['date-time', 'date'].includes(d.format)) out.format = d.format;
  if (d.items) out.items = fromDiscovery(d.items);
  if (d.properties) {
    out.properties = Object.fromEntries(Object.entries(d.properties).map(([k, v]) => [k, fromDiscovery(v)]));
    out.additionalProperties = d.additionalProperties ? fromDiscovery(d.additionalProperties) : false;
  } else if (d.additionalProperties) out.additionalProperties = fromDiscovery(d.additionalProperties);
  return out;
}

const googleAjv = new Ajv({ strict: false, allErrors: true });
addFormats(googleAjv, ['date-time', 'date']);
let googleAdded = false;

/** Errors of `value` against the discovery schema `name` (e.g. `Event`, `FreeBusyRequest`); [] when valid. */
export function googleSchemaErrors(name: string, value: unknown): string[] {
  if (!googleAdded) {
    const defs = Object.fromEntries(Object.entries(googleDiscovery().schemas).map(([k, v]) => [k, fromDiscovery(v)]));
    googleAjv.addSchema({ $id: 'google', definitions: defs });
    googleAdded = true;
  }
  const v = googleAjv.getSchema(`google#/definitions/${name}`);
  if (!v) throw new Error(`the Calendar discovery document has no schema ${name}`);
  return v(value) ? [] : errorsOf(v);
}

/** The discovery method `resource.method` (httpMethod, path, parameters, request and response `$ref`). */
export function googleMethod(resource: string, method: string): any {
  const m = googleDiscovery().resources?.[resource]?.methods?.[method];
  if (!m) throw new Error(`the Calendar discovery document has no ${resource}.${method}`);
  return m;
}

/** Errors of the query parameters of a request against the method's documented query parameters. */
export function googleQueryErrors(resource: string, method: string, query: URLSearchParams): string[] {
  const params = { ...googleDiscovery().parameters, ...googleMethod(resource, method).parameters } as Record<string, any>;
  const out: string[] = [];
  for (const [k, v] of query) {
    const p = params[k];
    if (!p || p.location !== 'query') out.push(`query ${k} is not a documented parameter of ${resource}.${method}`);
    else if (p.enum && !p.enum.includes(v)) out.push(`query ${k}=${v} is not one of ${p.enum.join(', ')}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- Cal.com

let calDoc: any;
/** Cal.com's API v2 OpenAPI document (read once). @throws Error in one line when the documents are missing */
export function calcomOpenApi(): any {
  calDoc ??= readDocument('calcom', 'openapi.json');
  return calDoc;
}

const calAjv = new Ajv({ strict: false, allErrors: true, validateFormats: false, coerceTypes: true });
let calAdded = false;
const calCache = new Map<string, ValidateFunction>();

function calValidator(key: string, schema: unknown): ValidateFunction {
  if (!calAdded) {
    calAjv.addSchema({ $id: 'calcom', components: calcomOpenApi().components }, 'calcom');
    calAdded = true;
  }
  let v = calCache.get(key);
  if (!v) {
    v = calAjv.compile(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"calcom#/components/')));
    calCache.set(key, v);
  }
  return v;
}

/** The OpenAPI operation of a Cal.com path template and method. @throws when the document has none */
export function calcomOperation(template: string, method: string): any {
  const op = calcomOpenApi().paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`Cal.com's OpenAPI document has no ${method} ${template}`);
  return op;
}

/**
 * Errors of a request's headers and query against the operation's parameters: every required one present (the
 * `cal-api-version` header among them), no undocumented query parameter, each value valid for its schema.
 */
export function calcomParameterErrors(template: string, method: string, headers: Record<string, string | string[] | undefined>, query: URLSearchParams): string[] {
  const out: string[] = [];
  const params: any[] = calcomOperation(template, method).parameters ?? [];
  for (const p of params) {
    const value = p.in === 'header' ? headers[String(p.name).toLowerCase()] : p.in === 'query' ? query.get(p.name) ?? undefined : undefined;
    if (p.in !== 'header' && p.in !== 'query') continue;
    if (value === undefined) {
      if (p.required) out.push(`${p.in} ${p.name} is required`);
      continue;
    }
    const data = { value };
    const wrapped = calValidator(`wrap ${method} ${template} ${p.in} ${p.name}`, { type: 'object', properties: { value: p.schema ?? {} } });
    if (!wrapped(data)) out.push(`${p.in} ${p.name}=${String(value)}: ${errorsOf(wrapped).join('; ')}`);
  }
  const documented = new Set(params.filter((p) => p.in === 'query').map((p) => p.name));
  for (const k of query.keys()) if (!documented.has(k)) out.push(`query ${k} is not a documented parameter`);
  return out;
}

/** Errors of a JSON request body against the component schema `name`, closed to its documented members. */
export function calcomBodyErrors(name: string, body: unknown): string[] {
  const schema = calcomOpenApi().components.schemas[name];
  if (!schema) throw new Error(`Cal.com's OpenAPI document has no schema ${name}`);
  const v = calValidator(`body ${name}`, { $ref: `#/components/schemas/${name}` });
  const out = v(body) ? [] : errorsOf(v);
  const known = new Set(Object.keys(schema.properties ?? {}));
  for (const k of Object.keys((body as object) ?? {})) if (!known.has(k)) out.push(`${k} is not a member of ${name}`);
  return out;
}

/** Errors of a response body against the operation's documented response of `status`. */
export function calcomResponseErrors(template: string, method: string, status: number, body: unknown): string[] {
  const schema = calcomOperation(template, method).responses?.[String(status)]?.content?.['application/json']?.schema;
  if (!schema) return [`no documented ${status} response`];
  const v = calValidator(`res ${method} ${template} ${status}`, schema);
  return v(body) ? [] : errorsOf(v);
}
