/**
 * Text Postgres can store. `text` and `jsonb` refuse U+0000, and `jsonb` refuses unpaired UTF-16
 * surrogates (which are not Unicode text, RFC 8259 §8.2; as `text` parameters the driver silently
 * turns them into U+FFFD). The API rejects such strings in request bodies (api/middleware/body.ts);
 * what must be kept anyway, such as an audit entry's path, is made storable with storableText.
 */

/** True when `s` has no U+0000 and no unpaired surrogate. */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/** `s` with U+0000 and unpaired surrogates replaced by U+FFFD. */
export function storableText(s: string): string {
  return (s as string & { toWellFormed(): string }).toWellFormed().replace(/\u0000/g, '\uFFFD');
}

/** A parsed JSON value with every string, keys included, made storable as by storableText. */
export function storableJson(v: unknown): unknown {
  if (typeof v === 'string') return storableText(v);
  if (Array.isArray(v)) return v.map(storableJson);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, item]) => [storableText(k), storableJson(item)]));
  }
  return v;
}
