/** The committed JSON Schemas are exactly what `npm run schemas` generates from schemas/types/*.ts. */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { buildSchemas } from '../schemas/generate';

describe('generated JSON Schemas', () => {
  it('are up to date with the TypeScript types (run `npm run schemas` when this fails)', function () {
    this.timeout(120_000);
    const dir = path.join(__dirname, '..', 'schemas');
    const expected = buildSchemas();
    const committed = fs.readdirSync(dir).filter((f) => f.endsWith('.schema.json')).sort();
    expect(committed, 'schema files').to.deep.equal(Object.keys(expected).sort());
    const stale = committed.filter((f) => fs.readFileSync(path.join(dir, f), 'utf8') !== expected[f]);
    expect(stale, 'stale schema files').to.deep.equal([]);
  });

  it('describe the SMS draft with the decided formats and limits', () => {
    const draft = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'schemas', 'SmsRegistrationDraft.schema.json'), 'utf8'));
    expect(draft.additionalProperties).to.equal(false);
    expect(draft.required ?? []).to.deep.equal([]);
    expect(draft.properties.description.maxLength).to.equal(4096);
    expect(draft.definitions.EntityType.enum).to.include('SOLE_PROPRIETOR');
  });
});
