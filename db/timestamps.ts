/** Row timestamps in the API's form. */

/**
 * A `timestamptz` column (a Date from pg, or its text) as ISO 8601 UTC (`2026-11-22T13:36:42.000Z`);
 * null or undefined (an unset column) as null.
 */
export function iso(d: Date | string): string;
export function iso(d: Date | string | null | undefined): string | null;
export function iso(d: Date | string | null | undefined): string | null {
  return d ? new Date(d).toISOString() : null;
}
