/**
 * The rules of sensitive record fields and of skill output schemas (docs/security.md "Sensitive record
 * fields"): which fields are sensitive by name, declaration or value (Luhn-valid card numbers), how they are
 * masked, and what an output schema lets through to the model.
 */
import { expect } from 'chai';
import { holdsCardNumber, isSensitiveField, maskValue, recordRules, sensitiveByName, splitSensitive } from '../../domain/records/sensitive';
import { isOutputSchema, outputPaths, projectOutput } from '../../domain/agents/skillOutput';
import { skillConfigErrors, skillOutputSchema } from '../../domain/agents/skillTypes';

describe('sensitive record fields (domain/records/sensitive.ts)', () => {
  it('makes fields named like a PIN, SSN, password or birth date sensitive, by whole words', () => {
    for (const name of ['pin', 'PIN', 'account_pin', 'accountPin', 'SSN', 'social_security_number', 'password', 'user-password', 'passcode', 'dob', 'date_of_birth', 'birthDate', 'cvv', 'card number']) {
      expect(sensitiveByName(name), name).to.equal(true);
    }
    for (const name of ['plan', 'shipping', 'spinner', 'opinion', 'pinnacle', 'account', 'tier', 'notes', 'passport_country']) {
      expect(sensitiveByName(name), name).to.equal(false);
    }
  });

  it('recognises card numbers by length and the Luhn check, whatever the field', () => {
    for (const v of ['4111 1111 1111 1111', '4111-1111-1111-1111', '4111111111111111', '378282246310005', '6011111111111117']) expect(holdsCardNumber(v), v).to.equal(true);
    for (const v of ['4111111111111112', '411111111111', '+14155550100', '2026-04-01', 'abcd 1111 1111 1111', '41111111111111111111']) expect(holdsCardNumber(v), v).to.equal(false);
    expect(isSensitiveField(new Map(), 'notes', '4111 1111 1111 1111')).to.equal(true);
  });

  it('lets the record schema declare a field sensitive, or lift the by-name default (never for a card number)', () => {
    const rules = recordRules([
      { name: 'member_code', sensitive: true },
      { name: 'pin', sensitive: false },
    ]);
    expect(isSensitiveField(rules, 'member_code', 'MC-1')).to.equal(true);
    expect(isSensitiveField(rules, 'pin', '1234')).to.equal(false);
    expect(isSensitiveField(rules, 'pin', '4111111111111111')).to.equal(true);
    expect(splitSensitive(rules, { member_code: 'MC-1', pin: '1234', plan: 'gold', dob: '', ssn: '123-45-6789' })).to.deep.equal({
      plain: { pin: '1234', plan: 'gold', dob: '' },
      sensitive: { member_code: 'MC-1', ssn: '123-45-6789' },
    });
  });

  it('masks a value as •• and its last two characters (just •• below four)', () => {
    expect(maskValue('4321')).to.equal('••21');
    expect(maskValue('4111 1111 1111 1111')).to.equal('••11');
    expect(maskValue('123')).to.equal('••');
  });
});

describe('skill output schemas (domain/agents/skillOutput.ts)', () => {
  const schema = {
    type: 'object',
    properties: {
      status: { type: 'string' },
      items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } } } },
      tags: { type: 'object', additionalProperties: { type: 'string' } },
    },
  };

  it('passes only the declared members, at every depth', () => {
    const out = projectOutput(schema, {
      status: 'ok',
      secret: 'x',
      items: [{ id: 'a', pin: '1' }, 'not an object'],
      tags: { a: 'b', c: { deep: 1 } },
    });
    expect(out).to.deep.equal({ status: 'ok', items: [{ id: 'a' }], tags: { a: 'b' } });
    expect(projectOutput(schema, 'a string where an object is declared')).to.equal(undefined);
    expect(projectOutput({ type: 'object' }, { anything: 1 })).to.deep.equal({});
  });

  it('names the declared paths for the report, and checks a configured schema', () => {
    expect(outputPaths(schema)).to.deep.equal(['status', 'items[].id', 'tags.*']);
    expect(isOutputSchema(schema)).to.equal(true);
    expect(isOutputSchema({ properties: { a: 'string' } })).to.equal(false);
    const base = { url: 'https://api.example.com/x', method: 'POST' };
    expect(skillConfigErrors('http_request', { ...base, outputSchema: { properties: { a: 1 } } })).to.deep.equal([{ field: 'config.outputSchema', message: 'must be a JSON Schema object (properties, items and additionalProperties schemas themselves)' }]);
    expect(skillConfigErrors('http_request', { ...base, outputSchema: schema })).to.deep.equal([]);
    expect(skillOutputSchema('http_request', base)).to.equal(undefined);
    expect(skillOutputSchema('lookup_record', {})).to.not.equal(undefined);
  });
});
