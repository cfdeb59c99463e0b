/**
 * Stored rows → API shapes for the repositories (DESIGN.md: db/ owns the query functions and their rows).
 * Each helper reads the column `snake_case(field)` of every named field (`rateLimitPoints` →
 * `rate_limit_points`) and returns `{ field: value }` in the order given, so a mapper spreads them in
 * the order of its type. A field whose column has another name is written out in the mapper.
 */
import { iso } from './timestamps';

const COLUMN_OF = new Map<string, string>();

/** `rateLimitPoints` → `rate_limit_points` (a digit stays with its word: `e164` → `e164`). */
export function columnOf(field: string): string {
  let c = COLUMN_OF.get(field);
  if (c === undefined) COLUMN_OF.set(field, (c = field.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`)));
  return c;
}

function pick<F extends string>(r: Record<string, any>, fields: readonly F[], value: (v: any) => unknown): { [K in F]: any } {
  const out: Record<string, unknown> = {};
  for (const f of fields) out[f] = value(r[columnOf(f)]);
  return out as { [K in F]: any };
}

/** The named fields as stored (`r[snake_case(field)]`). */
export function fromColumns<F extends string>(r: Record<string, any>, fields: readonly F[]): { [K in F]: any } {
  return pick(r, fields, (v) => v);
}

/** The named fields as stored, null where the column is NULL or not selected. */
export function fromNullableColumns<F extends string>(r: Record<string, any>, fields: readonly F[]): { [K in F]: any } {
  return pick(r, fields, (v) => v ?? null);
}

/** The named `timestamptz` fields as ISO 8601 UTC strings, null where unset (db/timestamps.ts `iso`). */
export function fromTimestampColumns<F extends string>(r: Record<string, any>, fields: readonly F[]): { [K in F]: any } {
  return pick(r, fields, iso);
}

/** The named numeric fields as numbers (pg returns `bigint` and `numeric` columns as text). */
export function fromNumericColumns<F extends string>(r: Record<string, any>, fields: readonly F[]): { [K in F]: any } {
  return pick(r, fields, Number);
}

/**
 * How {@link rowMapper} reads a field from its column `snake_case(field)`: `value` as stored; `nullable` null where
 * the column is NULL or not selected; `list` and `object` an empty array or object there (a fresh one per row);
 * `iso` a `timestamptz` as ISO 8601 UTC, null where unset (db/timestamps.ts `iso`). A function reads the whole row,
 * for a field whose column has another name or whose value is computed.
 */
export type ColumnRead = 'value' | 'nullable' | 'list' | 'object' | 'iso' | ((r: Record<string, any>) => unknown);

function reader(column: string, read: ColumnRead): (r: Record<string, any>) => unknown {
  if (typeof read === 'function') return read;
  switch (read) {
    case 'value':
      return (r) => r[column];
    case 'nullable':
      return (r) => r[column] ?? null;
    case 'list':
      return (r) => r[column] ?? [];
    case 'object':
      return (r) => r[column] ?? {};
    case 'iso':
      return (r) => iso(r[column]);
  }
}

/**
 * A row → record mapper declared once per shape (at module load): every field of `T` names how it is read
 * ({@link ColumnRead}), in the order of the record's members, which is the order of its JSON. Per row it
 * runs one small function per field.
 */
export function rowMapper<T>(fields: { readonly [K in keyof T]-?: ColumnRead }): (r: Record<string, any>) => T {
  const plan = Object.entries(fields as Record<string, ColumnRead>).map(([field, read]) => [field, reader(columnOf(field), read)] as const);
  return (r) => {
    const out: Record<string, unknown> = {};
    for (const [field, read] of plan) out[field] = read(r);
    return out as T;
  };
}
