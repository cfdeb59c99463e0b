/**
 * Generates one `schemas/<Type>.schema.json` per exported interface or type alias of
 * `schemas/types/*.ts`, with ts-json-schema-generator (`npm run schemas`). ajv validates request
 * bodies with them and the OpenAPI document embeds them; test/schemas.test.ts fails when the
 * committed files are stale. Annotations (`@maxLength`, `@format`, …) become schema keywords.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createGenerator } from 'ts-json-schema-generator';

const TYPES_DIR = path.join(__dirname, 'types');

/** Exported type names per source file, in file order. */
export function schemaTypeNames(): string[] {
  const names: string[] = [];
  for (const file of fs.readdirSync(TYPES_DIR).filter((f) => f.endsWith('.ts')).sort()) {
    const src = fs.readFileSync(path.join(TYPES_DIR, file), 'utf8');
    for (const m of src.matchAll(/^export (?:interface|type) ([A-Za-z0-9_]+)/gm)) names.push(m[1]);
  }
  return names;
}

/** Builds every schema as pretty JSON text. @returns map of file name → contents */
export function buildSchemas(): Record<string, string> {
  const generator = createGenerator({
    path: path.join(TYPES_DIR, '*.ts'),
    tsconfig: path.join(__dirname, '..', 'tsconfig.json'),
    skipTypeCheck: true,
    additionalProperties: false,
    expose: 'export',
    topRef: false,
    jsDoc: 'extended',
  });
  const out: Record<string, string> = {};
  for (const type of schemaTypeNames()) {
    const schema = generator.createSchema(type);
    schema.$id = `${type}.schema.json`;
    out[`${type}.schema.json`] = JSON.stringify(schema, null, 2) + '\n';
  }
  return out;
}

if (require.main === module) {
  const files = buildSchemas();
  for (const f of fs.readdirSync(__dirname).filter((f) => f.endsWith('.schema.json'))) {
    if (!files[f]) fs.unlinkSync(path.join(__dirname, f));
  }
  for (const [file, text] of Object.entries(files)) {
    fs.writeFileSync(path.join(__dirname, file), text);
  }
  console.log(`wrote ${Object.keys(files).length} schemas to schemas/`);
}
