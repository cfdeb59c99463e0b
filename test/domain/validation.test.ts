/**
 * domain/validation.ts `jsonValueErrors`: the allocation-free first walk that answers most request bodies
 * applies the same rules as the walk that names the fields.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { jsonValueErrors } from '../../domain/validation';
import { fuzzSettings, hostileValue } from '../helpers/hostile';

describe('jsonValueErrors', () => {
  it('reports the same findings with and without its first walk, for hostile values at every depth', () => {
    const value = fc.letrec((tie) => ({
      any: fc.oneof({ depthSize: 'small' }, hostileValue(), fc.array(tie('any'), { maxLength: 4 }), fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'a\u0000', '\udc00')), tie('any'), { maxKeys: 4 })),
    })).any;
    fc.assert(
      fc.property(value, fc.boolean(), (v, text) => {
        expect(jsonValueErrors(v, { text })).to.deep.equal(jsonValueErrors(v, { text, prefilter: false }));
      }),
      // A pure function: many more runs than the HTTP fuzzing's, at the same seed.
      { ...fuzzSettings(), numRuns: Math.max(500, fuzzSettings().numRuns) },
    );
  });

  it('finds what each rule refuses (so the comparison above has findings to compare)', () => {
    expect(jsonValueErrors({ a: { b: 'x\u0000' } })).to.deep.equal([{ field: 'a.b', message: 'must not contain U+0000 or unpaired surrogate characters' }]);
    expect(jsonValueErrors(JSON.parse('{"x":{"__proto__":1}}')).map((e) => e.field)).to.deep.equal(['x.__proto__']);
    expect(jsonValueErrors({ ['k\ud800']: 1 }).map((e) => e.field)).to.have.length(1);
    expect(jsonValueErrors({ ok: ['fine', 1, null] })).to.deep.equal([]);
  });
});
