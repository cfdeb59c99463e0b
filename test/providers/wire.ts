/**
 * The providers' documented wire shapes, for the loopback stubs (../shared/providers/README.md):
 * Twilio's OpenAPI 3 documents (request forms, response bodies, documented examples) and the `telnyx`
 * SDK's own TypeScript declarations, turned into JSON Schemas with ts-json-schema-generator. Every stub
 * request and response is validated against them; a mismatch fails the test with the schema's errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';
import { createGenerator } from 'ts-json-schema-generator';

/**
 * Where the provider documents live: `../shared/providers` beside the clone, or `PROVIDER_DOCUMENTS_DIR`
 * when set (another checkout of them, or a missing path to check how the tests fail without them).
 */
export function providerDocumentsDir(): string {
  return process.env.PROVIDER_DOCUMENTS_DIR || path.join(__dirname, '..', '..', '..', 'shared', 'providers');
}

/**
 * Reads one provider document as JSON.
 * @throws Error naming the missing file when the documents are absent (a clone without `../shared`); its
 * stack is its message alone, so mocha reports it in one line
 */
function readProviderDocument(...parts: string[]): any {
  const file = path.join(providerDocumentsDir(), ...parts);
  if (!fs.existsSync(file)) {
    const err = new Error(`the provider documents under ../shared/providers are missing: ${file} (see ../shared/providers/README.md, or set PROVIDER_DOCUMENTS_DIR)`);
    err.stack = `Error: ${err.message}`;
    throw err;
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** Twilio's API 2010-04-01 OpenAPI document (read once). */
let twilioDoc: any;
function twilioOai(): any {
  twilioDoc ??= readProviderDocument('twilio-oai', 'twilio_api_v2010.json');
  return twilioDoc;
}

/**
 * Reads Twilio's document now, so that a stub refuses to start without it (one failure line for its
 * suite) instead of answering 500 to requests whose tests then fail on unrelated symptoms.
 * @throws Error in one line when the provider documents are missing
 */
export function requireTwilioDocument(): void {
  twilioOai();
}

const twilioAjv = new Ajv({ strict: false, allErrors: true, validateFormats: false, coerceTypes: 'array' });
let twilioAdded = false;
const twilioCache = new Map<string, ValidateFunction>();

function twilioValidator(key: string, schema: unknown): ValidateFunction {
  if (!twilioAdded) {
    twilioAjv.addSchema({ $id: 'twilio', components: twilioOai().components }, 'twilio');
    twilioAdded = true;
  }
  let v = twilioCache.get(key);
  if (!v) {
    // The document's local references (#/components/…) point into the schema registered as `twilio`.
    const rebased = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"twilio#/components/'));
    v = twilioAjv.compile(rebased);
    twilioCache.set(key, v);
  }
  return v;
}

/** The OpenAPI operation of a Twilio path template and method. @throws when the document has none */
export function twilioOperation(template: string, method: string): any {
  const op = twilioOai().paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`Twilio's OpenAPI document has no ${method} ${template}`);
  return op;
}

/** Errors of a Twilio form request against its operation's `requestBody` schema ([] when valid). */
export function twilioRequestErrors(template: string, method: string, form: Record<string, string | string[]>): string[] {
  const schema = twilioOperation(template, method).requestBody?.content?.['application/x-www-form-urlencoded']?.schema;
  if (!schema) return [];
  const v = twilioValidator(`req ${method} ${template}`, { ...schema, additionalProperties: false });
  const copy = JSON.parse(JSON.stringify(form));
  return v(copy) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Errors of a Twilio response body against the operation's documented response ([] when valid). */
export function twilioResponseErrors(template: string, method: string, status: number, body: unknown): string[] {
  const schema = twilioOperation(template, method).responses?.[String(status)]?.content?.['application/json']?.schema;
  if (!schema) return status === 204 ? [] : [`no documented ${status} response`];
  const v = twilioValidator(`res ${method} ${template} ${status}`, schema);
  return v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message}`);
}

/** The first documented example of an operation's response (Twilio's own sample values). */
export function twilioExample(template: string, method: string, status: number): any {
  const content = twilioOperation(template, method).responses?.[String(status)]?.content?.['application/json'];
  const first = Object.values(content?.examples ?? {})[0] as { value?: unknown } | undefined;
  return JSON.parse(JSON.stringify(first?.value ?? {}));
}

/** The telnyx SDK's declared types this file turns into schemas (test/providers/telnyxShapes.ts). */
let telnyxSchemas: Promise<Ajv> | undefined;

/** One Ajv holding a JSON Schema per type exported by telnyxShapes.ts (generated once per run, ~10 s). */
export function telnyxAjv(): Promise<Ajv> {
  telnyxSchemas ??= (async () => {
    const generator = createGenerator({
      path: path.join(__dirname, 'telnyxShapes.ts'),
      tsconfig: path.join(__dirname, '..', '..', 'tsconfig.json'),
      type: '*',
      skipTypeCheck: true,
      expose: 'export',
      topRef: true,
      jsDoc: 'none',
      additionalProperties: false,
    } as never);
    const schema = generator.createSchema('*') as { definitions: Record<string, unknown> };
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'telnyx', definitions: schema.definitions });
    return ajv;
  })();
  return telnyxSchemas;
}

/** Errors of a value against a type of telnyxShapes.ts ([] when valid). */
export async function telnyxShapeErrors(type: string, value: unknown): Promise<string[]> {
  const ajv = await telnyxAjv();
  const v = ajv.getSchema(`telnyx#/definitions/Wire${type}`);
  if (!v) throw new Error(`no schema for Telnyx type ${type}`);
  return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);
}
