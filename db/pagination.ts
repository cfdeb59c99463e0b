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
  constructor() {
    super('The cursor is not valid for this list');
    this.name = 'InvalidCursorError';
  }
}

/** Opaque cursor text for a key (base64url JSON, tagged with the list's column). */
export function encodeCursor(column: string, key: string | number): string {
  return Buffer.from(JSON.stringify({ c: column, k: key })).toString('base64url');
}

/** The key inside a cursor. @throws InvalidCursorError when it is garbage or belongs to another column */
export function decodeCursor(column: string, cursor: string): string | number {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; k?: unknown };
    if (v && v.c === column && (typeof v.k === 'string' || typeof v.k === 'number')) return v.k;
  } catch {
    // fall through
  }
  throw new InvalidCursorError();
}

/**
 * Runs `query` for one page ordered by `column`.
 * @param query a builder already filtered (organization, parent); its select must include `column`
 * @param opts.limit page size (caller clamps it to 1..MAX_PAGE_LIMIT)
 * @param opts.cursor cursor from a previous page, if any
 * @param opts.column unique sortable column (qualified if the query joins)
 * @param opts.keyOf reads the key back from a row (default `row[column]`)
 * @throws InvalidCursorError
 */
export async function keysetPage<T>(
  query: Knex.QueryBuilder,
  opts: {
    limit: number;
    cursor?: string;
    column: string;
    direction?: 'asc' | 'desc';
    map: (row: any) => T | Promise<T>;
    keyOf?: (row: any) => string | number;
  },
): Promise<Page<T>> {
  const dir = opts.direction ?? 'asc';
  const q = query.clone();
  if (opts.cursor) {
    const key = decodeCursor(opts.column, opts.cursor);
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
