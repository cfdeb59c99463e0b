/**
 * Stripe's documented wire shapes for the loopback Stripe (../shared/providers/README.md): Stripe's OpenAPI 3
 * document of API version 2023-08-16 (`stripe/spec3.json`). Form request bodies (Stripe's bracket notation,
 * decoded with `qs`) are validated against each operation's `requestBody` schema, query parameters against its
 * declared parameters, and responses and event objects against the component schemas (`payment_intent`,
 * `customer`, `refund`, `dispute`, `charge`, `event`, `error`). A mismatch is a wire problem the tests assert absent.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import qs from 'qs';
import { providerDocumentsDir } from './wire';

let doc: any;

/**
 * Stripe's OpenAPI document (read once).
 * @throws Error in one line naming the file when the provider documents are missing
 */
export function stripeDocument(): any {
  if (doc) return doc;
  const file = path.join(providerDocumentsDir(), 'stripe', 'spec3.json');
  if (!fs.existsSync(file)) {
    const err = new Error(`the provider documents under ../shared/providers are missing: ${file} (see ../shared/providers/README.md, or set PROVIDER_DOCUMENTS_DIR)`);
    err.stack = `Error: ${err.message}`;
    throw err;
  }
  doc = withoutNullable(JSON.parse(fs.readFileSync(file, 'utf8')));
  return doc;
}

/**
 * OpenAPI 3.0's `nullable: true` as JSON Schema (Ajv refuses it beside `anyOf` or `$ref` without `type`):
 * `type: [t, "null"]`, or `anyOf: [the schema, {type: "null"}]`.
 */
function withoutNullable(node: any): any {
  if (Array.isArray(node)) return node.map(withoutNullable);
  if (!node || typeof node !== 'object') return node;
  const out: any = {};
  for (const [k, v] of Object.entries(node)) out[k] = withoutNullable(v);
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === 'string') {
      out.type = [out.type, 'null'];
      if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
      return out;
    }
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

// OpenAPI 3.0's `nullable` is understood by Ajv 8; form values are strings, hence the coercion of requests.
const ajvResponses = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const ajvForms = new Ajv({ strict: false, allErrors: true, validateFormats: false, coerceTypes: true });
let added = false;
const cache = new Map<string, ValidateFunction>();

function validator(kind: 'form' | 'response', key: string, schema: unknown): ValidateFunction {
  if (!added) {
    for (const ajv of [ajvResponses, ajvForms]) ajv.addSchema({ $id: 'stripe', components: stripeDocument().components }, 'stripe');
    added = true;
  }
  const k = `${kind} ${key}`;
  let v = cache.get(k);
  if (!v) {
    const rebased = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"stripe#/components/'));
    v = (kind === 'form' ? ajvForms : ajvResponses).compile(rebased);
    cache.set(k, v);
  }
  return v;
}

const errorsOf = (v: ValidateFunction) => (v.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);

/** Compiles the validators the stub uses, so the first answers are not delayed by compiling Stripe's schemas. */
export function warmStripeValidators(ops: Array<[string, string, number]>, components: string[]): void {
  for (const [template, method, status] of ops) {
    stripeResponseErrors(template, method, status, {});
    if (method === 'POST') stripeRequestErrors(template, method, {}, new URLSearchParams());
  }
  for (const c of components) stripeObjectErrors(c, {});
}

/** The OpenAPI operation of a Stripe path template. @throws when the document has none */
export function stripeOperation(template: string, method: string): any {
  const op = stripeDocument().paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`Stripe's OpenAPI document has no ${method} ${template}`);
  return op;
}

/** A Stripe form body (`a[b]=c`) as the nested object it encodes. */
export function decodeStripeForm(raw: string): Record<string, unknown> {
  return qs.parse(raw, { depth: 10, arrayLimit: 100 }) as Record<string, unknown>;
}

/** Errors of a request (form body, query) against its operation ([] when valid). */
export function stripeRequestErrors(template: string, method: string, form: Record<string, unknown>, query: URLSearchParams): string[] {
  const op = stripeOperation(template, method);
  const out: string[] = [];
  const declared = new Set<string>((op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name));
  for (const name of query.keys()) if (!declared.has(name.replace(/\[.*$/, ''))) out.push(`query parameter ${name} is not documented`);
  const schema = op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema;
  if (schema) {
    const v = validator('form', `${method} ${template}`, schema);
    if (!v(JSON.parse(JSON.stringify(form)))) out.push(...errorsOf(v));
  } else if (Object.keys(form).length) out.push('the operation takes no body');
  return out;
}

/** Errors of a response body against the operation's documented answer for `status` (`error` for 4xx/5xx). */
export function stripeResponseErrors(template: string, method: string, status: number, body: unknown): string[] {
  const op = stripeOperation(template, method);
  const schema = op.responses?.[String(status)]?.content?.['application/json']?.schema ?? (status >= 400 ? op.responses?.default?.content?.['application/json']?.schema : undefined);
  if (!schema) return [`no documented ${status} response`];
  const v = validator('response', `${method} ${template} ${status}`, schema);
  return v(body) ? [] : errorsOf(v);
}

/** Errors of an object against a component schema (`payment_intent`, `event`, …). */
export function stripeObjectErrors(component: string, value: unknown): string[] {
  const v = validator('response', `component ${component}`, { $ref: `#/components/schemas/${component}` });
  return v(value) ? [] : errorsOf(v);
}
