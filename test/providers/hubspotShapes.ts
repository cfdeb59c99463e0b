/**
 * HubSpot's wire shapes for the loopback HubSpot (../shared/providers/README.md: HubSpot's specs are not licensed
 * for copying; the official `@hubspot/api-client` carries the same shapes in its generated models). A model's
 * JSON Schema is built from the model class itself: its `attributeTypeMap` (wire name `baseName`, type, format),
 * its enums (exported beside it) and which members its declaration marks optional (`'name'?:`). Unknown members
 * are refused, so a request or answer off the models fails the test.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';

/** The model folders of the APIs the adapter calls. */
export const HUBSPOT_MODELS = {
  contacts: 'crm/contacts/models',
  notes: 'crm/objects/notes/models',
} as const;

const CODEGEN = path.dirname(require.resolve('@hubspot/api-client/lib/codegen/crm/contacts/models/Filter'));
const codegenRoot = path.resolve(CODEGEN, '..', '..', '..');

interface Attribute {
  name: string;
  baseName: string;
  type: string;
  format: string;
}

function schemaOfType(api: keyof typeof HUBSPOT_MODELS, type: string, enums: Record<string, Record<string, string>>, defs: Record<string, unknown>): any {
  const t = type.trim();
  if (t === 'string') return { type: 'string' };
  if (t === 'number') return { type: 'number' };
  if (t === 'boolean') return { type: 'boolean' };
  if (t === 'Date') return { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T' };
  if (t === 'any') return {};
  let m = /^Array<(.+)>$/.exec(t);
  if (m) return { type: 'array', items: schemaOfType(api, m[1], enums, defs) };
  m = /^\{ \[key: string\]: (.+); \}$/.exec(t);
  if (m) return { type: 'object', additionalProperties: schemaOfType(api, m[1], enums, defs) };
  if (/^(.+) \| null$/.test(t)) return { anyOf: [schemaOfType(api, t.replace(/ \| null$/, ''), enums, defs), { type: 'null' }] };
  if (enums[t]) return { type: 'string', enum: Object.values(enums[t]) };
  hubspotModelSchema(api, t, defs);
  return { $ref: `#/definitions/${t}` };
}

/**
 * The JSON Schema of a model class of an API (`#/definitions/<Model>` of `defs`, filled recursively).
 * @throws Error when the package has no such model
 */
export function hubspotModelSchema(api: keyof typeof HUBSPOT_MODELS, model: string, defs: Record<string, unknown> = {}): Record<string, unknown> {
  if (defs[model]) return defs;
  defs[model] = {}; // cycles
  const dir = path.join(codegenRoot, HUBSPOT_MODELS[api]);
  const mod = require(path.join(dir, model));
  const cls = mod[model];
  if (!cls?.getAttributeTypeMap) throw new Error(`@hubspot/api-client has no model ${model} in ${HUBSPOT_MODELS[api]}`);
  const enums: Record<string, Record<string, string>> = {};
  for (const [k, v] of Object.entries(mod)) if (k !== model && v && typeof v === 'object') enums[k] = v as Record<string, string>;
  const declaration = fs.readFileSync(path.join(dir, `${model}.d.ts`), 'utf8');
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const a of cls.getAttributeTypeMap() as Attribute[]) {
    properties[a.baseName] = schemaOfType(api, a.type, enums, defs);
    if (declaration.includes(`'${a.name}': `)) required.push(a.baseName);
  }
  defs[model] = { type: 'object', properties, required, additionalProperties: false };
  return defs;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const cache = new Map<string, ValidateFunction>();

/** Errors of a JSON value against a model of an API ([] when valid). */
export function hubspotShapeErrors(api: keyof typeof HUBSPOT_MODELS, model: string, value: unknown): string[] {
  const key = `${api}/${model}`;
  let v = cache.get(key);
  if (!v) {
    const defs = hubspotModelSchema(api, model);
    v = ajv.compile({ $ref: `#/definitions/${model}`, definitions: defs });
    cache.set(key, v);
  }
  return v(value) ? [] : (v.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '(body)'} ${e.message} ${JSON.stringify(e.params)}`);
}
