/**
 * Cursor keys are checked against the list's key type when decoded (db/pagination.ts CursorKey; docs/api-notes.md: a cursor the list did not issue answers 400 `invalid_cursor`), including the timestamp
 * and tuple keys no list uses yet.
 */
import { expect } from 'chai';
import { decodeCursor, encodeCursor, InvalidCursorError, type CursorKey } from '../../db/pagination';

const forge = (c: string, k: unknown) => Buffer.from(JSON.stringify({ c, k })).toString('base64url');

describe('cursor keys (db/pagination.ts)', () => {
  const cases: Array<[CursorKey, unknown[], unknown[]]> = [
    ['serial', [1, 42, Number.MAX_SAFE_INTEGER], [0, -1, 1.5, 1e300, 2 ** 63, '12', 'abc', null, [1], true]],
    ['int', [0, 7, 2 ** 31 - 1], [-1, 2 ** 31, 0.5, '3', null]],
    ['text', ['a', 'voice_ava', 'x'.repeat(512)], ['', 'a\u0000b', '\ud800', 'x'.repeat(513), 1, null, ['a']]],
    ['timestamp', ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00.123Z', '2024-02-29T00:00:00.000000Z'], ['2026-11-22', '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-11-22T10:00:00+01:00', 'yesterday', 1764000000000]],
    [/^\+[1-9]\d{1,14}$/, ['+14155550100'], ['14155550100', '+1415555010\u0000', 'abc']],
    [['timestamp', 'serial'], [['2026-11-22T10:00:00Z', 3]], [['2026-11-22T10:00:00Z'], ['2026-11-22T10:00:00Z', 3, 4], [3, '2026-11-22T10:00:00Z'], '2026-11-22T10:00:00Z', []]],
  ];
  for (const [type, good, bad] of cases) {
    it(`accepts issued ${String(type)} keys and refuses forged ones`, () => {
      for (const k of good) expect(decodeCursor('t', encodeCursor('t', k as never), type), JSON.stringify(k)).to.deep.equal(k);
      for (const k of bad) expect(() => decodeCursor('t', forge('t', k), type), JSON.stringify(k)).to.throw(InvalidCursorError);
    });
  }

  it('refuses another list tag, garbage and overlong cursors', () => {
    expect(() => decodeCursor('seq', encodeCursor('a.seq', 1))).to.throw(InvalidCursorError);
    for (const c of ['', '!!!', 'bm90IGpzb24', 'A'.repeat(5000), Buffer.from('{"c":"seq","k":1e999}').toString('base64url')]) {
      expect(() => decodeCursor('seq', c), c.slice(0, 20)).to.throw(InvalidCursorError);
    }
  });
});
