/**
 * Cursor pagination shared by every list (DESIGN.md "Wire conventions": `data = { items, nextCursor,
 * hasMore }`, `?limit=` default 50, max 200, opaque `?cursor=` stable under inserts).
 *
 * Keyset pagination on one unique, sortable column (a `bigserial` sequence, a per-parent number, …):
 * the cursor carries the last key seen, so rows inserted meanwhile never shift a page or repeat a row.
 */
import type { Knex } from 'knex';

/** Default and largest page sizes. */
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 200;

/** One page of a list. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** A cursor that was not produced by this service (or by another list). */
export class InvalidCursorError extends Error {
  constructor(detail = 'The cursor is not valid for this list') {
    super(detail);
    this.name = 'InvalidCursorError';
  }
}

/**
 * The type of a list's key, checked when a cursor is decoded so that a forged key never reaches a query
 * (docs/api-notes.md: a cursor the list did not issue answers 400 `invalid_cursor`, never a 500):
 * - `serial`: a `bigserial` sequence (`seq`), an integer 1..2^53−1 (node-postgres reads int8 as a JS
 *   number, db/index.ts, so no issued key is larger);
 * - `int`: an `integer` column (a version or row number), an integer 0..2^31−1;
 * - `text`: a string of 1..512 characters Postgres can store (no U+0000, no unpaired surrogate);
 * - `timestamp`: an ISO 8601 UTC timestamp (`2026-11-22T10:00:00.000Z`) naming a real instant;
 * - a RegExp: `text` that also matches it (e.g. an E.164 number, a voice id);
 * - an array of these: a tuple key of exactly that arity, each part checked.
 */
export type CursorKey = 'serial' | 'int' | 'text' | 'timestamp' | RegExp | readonly CursorKey[];

/** A decoded key: what encodeCursor was given. */
export type CursorValue = string | number | readonly CursorValue[];

/** Longest cursor text accepted (issued cursors are far shorter). */
const MAX_CURSOR_CHARS = 2048;
const INT4_MAX = 2 ** 31 - 1;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

function keyFits(type: CursorKey, k: unknown): boolean {
  if (type instanceof RegExp) return keyFits('text', k) && type.test(k as string);
  if (Array.isArray(type)) return Array.isArray(k) && k.length === type.length && type.every((t, i) => keyFits(t, k[i]));
  switch (type) {
    case 'serial':
      return typeof k === 'number' && Number.isSafeInteger(k) && k >= 1;
    case 'int':
      return typeof k === 'number' && Number.isInteger(k) && k >= 0 && k <= INT4_MAX;
    case 'text':
      return typeof k === 'string' && k.length >= 1 && k.length <= 512 && !k.includes('\u0000') && (k as string & { isWellFormed(): boolean }).isWellFormed();
    case 'timestamp':
      return typeof k === 'string' && ISO_UTC.test(k) && !Number.isNaN(Date.parse(k)) && new Date(k).toISOString().slice(0, 19) === k.slice(0, 19);
    default:
      return false;
  }
}

/** Opaque cursor text for a key (base64url JSON, tagged with the list's column). */
export function encodeCursor(column: string, key: CursorValue): string {
  return Buffer.from(JSON.stringify({ c: column, k: key })).toString('base64url');
}

/**
 * The key inside a cursor, checked against the key's type (CursorKey) before any query sees it.
 * @param column the list's tag (its key column, e.g. `seq`, `a.seq`, `voice.id`)
 * @param cursor the `?cursor=` text
 * @param type the key's type (default `serial`)
 * @throws InvalidCursorError when the cursor is garbage, belongs to another list, or its key does not fit `type`
 */
export function decodeCursor(column: string, cursor: string, type: CursorKey = 'serial'): CursorValue {
  if (cursor.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+={0,2}$/.test(cursor)) throw new InvalidCursorError();
  let v: { c?: unknown; k?: unknown } | undefined;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; k?: unknown };
  } catch {
    throw new InvalidCursorError();
  }
  if (!v || typeof v !== 'object' || v.c !== column) throw new InvalidCursorError();
  if (!keyFits(type, v.k)) throw new InvalidCursorError('The cursor\'s position is not a position of this list');
  return v.k as CursorValue;
}

/**
 * Runs `query` for one page ordered by `column`.
 * @param query a builder already filtered (organization, parent); its select must include `column`
 * @param opts.limit page size (caller clamps it to 1..MAX_PAGE_LIMIT)
 * @param opts.cursor cursor from a previous page, if any
 * @param opts.column unique sortable column (qualified if the query joins)
 * @param opts.key the column's type (default `serial`, the `seq` bigserial most lists use); a cursor whose
 *   key does not fit it is refused before the query runs
 * @param opts.keyOf reads the key back from a row (default `row[column]`)
 * @throws InvalidCursorError
 */
export async function keysetPage<T>(
  query: Knex.QueryBuilder,
  opts: {
    limit: number;
    cursor?: string;
    column: string;
    key?: 'serial' | 'int' | 'text' | 'timestamp';
    direction?: 'asc' | 'desc';
    map: (row: any) => T | Promise<T>;
    keyOf?: (row: any) => string | number;
  },
): Promise<Page<T>> {
  const dir = opts.direction ?? 'asc';
  const q = query.clone();
  if (opts.cursor) {
    const key = decodeCursor(opts.column, opts.cursor, opts.key ?? 'serial') as string | number;
    q.where(opts.column, dir === 'asc' ? '>' : '<', key);
  }
  const rows: any[] = await q.orderBy(opts.column, dir).limit(opts.limit + 1);
  const hasMore = rows.length > opts.limit;
  const pageRows = rows.slice(0, opts.limit);
  const keyOf = opts.keyOf ?? ((row: any) => row[opts.column.split('.').pop()!]);
  const items: T[] = [];
  for (const r of pageRows) items.push(await opts.map(r));
  const last = pageRows[pageRows.length - 1];
  return { items, hasMore, nextCursor: hasMore && last ? encodeCursor(opts.column, keyOf(last)) : null };
}
