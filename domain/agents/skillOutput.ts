/**
 * A skill's output schema as a boundary (docs/security.md "Sensitive record fields"; OWASP ASVS V8.3.4, data minimisation):
 * when a skill has one, only the members it declares reach the model, the receipt and the playbook's
 * variables. The schema is the JSON Schema subset that describes data shapes — `type`, `properties`,
 * `additionalProperties`, `items` — and nothing else is interpreted. Pure functions.
 */

/** The subset of JSON Schema an output schema uses. */
export interface OutputSchema {
  type?: 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null' | string;
  properties?: Record<string, OutputSchema>;
  /** `true` or a schema: undeclared members kept (shaped by that schema); absent or `false`: dropped. */
  additionalProperties?: boolean | OutputSchema;
  items?: OutputSchema;
  description?: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * `value` cut down to what `schema` declares: objects keep the declared `properties` (each projected) and,
 * with `additionalProperties`, the other members; arrays project each item by `items`; a scalar is kept
 * when the schema's `type` (if any) is a scalar type. Anything the schema does not declare is dropped
 * (`undefined`).
 */
export function projectOutput(schema: OutputSchema, value: unknown): unknown {
  if (Array.isArray(value)) {
    if (schema.type !== undefined && schema.type !== 'array') return undefined;
    if (!schema.items) return [];
    return value.map((v) => projectOutput(schema.items!, v)).filter((v) => v !== undefined);
  }
  if (isPlainObject(value)) {
    if (schema.type !== undefined && schema.type !== 'object') return undefined;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const declared = schema.properties?.[k];
      const extra = schema.additionalProperties;
      const rule = declared ?? (extra === true ? {} : isPlainObject(extra) ? (extra as OutputSchema) : undefined);
      if (!rule) continue;
      const projected = projectOutput(rule, v);
      if (projected !== undefined) out[k] = projected;
    }
    return out;
  }
  if (schema.type === 'object' || schema.type === 'array') return undefined;
  return value;
}

/**
 * The paths an output schema declares, for the pre-publish report: `status`, `matches[].name`,
 * `matches[].fields.*` (an `additionalProperties` map).
 */
export function outputPaths(schema: OutputSchema, prefix = ''): string[] {
  const paths: string[] = [];
  if (schema.items) return outputPaths(schema.items, `${prefix}[]`);
  const props = Object.entries(schema.properties ?? {});
  for (const [k, s] of props) {
    const p = prefix ? `${prefix}.${k}` : k;
    const inner = s.properties || s.items || s.additionalProperties ? outputPaths(s, p) : [];
    paths.push(...(inner.length ? inner : [p]));
  }
  if (schema.additionalProperties) paths.push(prefix ? `${prefix}.*` : '*');
  return paths;
}

/** Whether `value` is usable as an output schema: an object whose `properties`, `items`, `additionalProperties` are schemas too. */
export function isOutputSchema(value: unknown, depth = 0): value is OutputSchema {
  if (!isPlainObject(value) || depth > 8) return false;
  const { properties, items, additionalProperties } = value as Record<string, unknown>;
  if (properties !== undefined && (!isPlainObject(properties) || !Object.values(properties).every((p) => isOutputSchema(p, depth + 1)))) return false;
  if (items !== undefined && !isOutputSchema(items, depth + 1)) return false;
  if (additionalProperties !== undefined && typeof additionalProperties !== 'boolean' && !isOutputSchema(additionalProperties, depth + 1)) return false;
  return true;
}
