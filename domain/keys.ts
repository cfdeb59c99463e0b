/**
 * Rules of keys managed through the API (spec "Authentication" 1 and 3, "Scopes"; docs/api-notes.md
 * "Credentials and tenancy"): which scopes a key may grant, rotation grace bounds, and the allowed-origins
 * list of publishable keys (origins as RFC 6454 defines them: scheme, host, port).
 */
import type { FieldError } from './errors';
import { isScope, RESERVED_SCOPES, type Scope } from './scopes';

/** Default grace period of a rotated secret key, in seconds (24 h). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;
/** Longest grace period a rotation may ask for, in seconds (7 days). */
export const MAX_ROTATION_GRACE_SECONDS = 604_800;
/** Most origins one publishable key may list. */
export const MAX_ALLOWED_ORIGINS = 50;
/** The one wildcard form accepted: any port of http://localhost (local development). */
export const LOCALHOST_ANY_PORT = 'http://localhost:*';

/**
 * Field errors for a requested scope list: unknown scopes and reserved scopes (which no key may hold,
 * spec "Scope rules" 5), each named by its index (`scopes.2`).
 */
export function scopeGrantErrors(scopes: readonly string[], field = 'scopes'): FieldError[] {
  const errors: FieldError[] = [];
  scopes.forEach((s, i) => {
    if (!isScope(s)) errors.push({ field: `${field}.${i}`, message: `"${s}" is not a scope` });
    else if (RESERVED_SCOPES.has(s)) errors.push({ field: `${field}.${i}`, message: `"${s}" is reserved and cannot be granted` });
  });
  return errors;
}

/**
 * The scopes of `requested` the granting key does not hold itself: a key never creates (or rotates into)
 * a key with more power than its own. Empty when the grant is allowed.
 * @param held the scopes of the calling key
 */
export function scopesBeyond(held: ReadonlySet<string>, requested: readonly string[]): Scope[] {
  return [...new Set(requested)].filter((s) => !held.has(s)) as Scope[];
}

/**
 * Checks and normalizes one allowed origin: `scheme://host[:port]` with scheme http or https, no user
 * info, path, query or fragment; the default port and letter case are normalized away
 * (`https://Example.com:443` → `https://example.com`). `http://localhost:*` is kept as written.
 * @returns the normalized origin, or the reason it is refused
 */
export function normalizeOrigin(raw: string): { origin: string } | { error: string } {
  if (raw === LOCALHOST_ANY_PORT) return { origin: raw };
  if (raw.includes('*')) return { error: `wildcards are not allowed (only "${LOCALHOST_ANY_PORT}" exactly)` };
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(raw);
  if (!m) return { error: 'must be an origin such as https://example.com (scheme, host and optional port)' };
  if (m[3] !== '') return { error: 'must not have a path, query or fragment (not even a trailing "/")' };
  if (m[2].includes('@')) return { error: 'must not contain user information' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { error: 'is not a valid origin' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { error: 'scheme must be http or https' };
  if (!url.hostname) return { error: 'must name a host' };
  return { origin: url.origin };
}

/**
 * Parses a publishable key's allowed-origins list: each entry normalized (`normalizeOrigin`), duplicates
 * after normalization dropped, order kept.
 * @returns the normalized list and one field error per refused entry (`allowedOrigins.3`)
 */
export function parseAllowedOrigins(list: readonly string[], field = 'allowedOrigins'): { origins: string[]; errors: FieldError[] } {
  const origins: string[] = [];
  const errors: FieldError[] = [];
  list.forEach((raw, i) => {
    const r = normalizeOrigin(raw);
    if ('error' in r) errors.push({ field: `${field}.${i}`, message: r.error });
    else if (!origins.includes(r.origin)) origins.push(r.origin);
  });
  return { origins, errors };
}

/**
 * True when a browser's `Origin` header value is on the list: an exact match of the normalized origin,
 * or any port of `http://localhost` when `http://localhost:*` is listed. `null`, absent or malformed
 * origins never match. For the widget routes (spec "Authentication" 3).
 */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (!origin) return false;
  const r = normalizeOrigin(origin);
  if ('error' in r || r.origin === LOCALHOST_ANY_PORT) return false;
  if (allowed.includes(r.origin)) return true;
  return allowed.includes(LOCALHOST_ANY_PORT) && /^http:\/\/localhost(:\d+)?$/.test(r.origin);
}
