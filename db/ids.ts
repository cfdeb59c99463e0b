/**
 * Readable prefixed ids (STYLE.md, Stripe conventions): `org_…`, `key_…`, `smsreg_…`.
 * 16 random bytes (128 bits) in base62, so ids are unguessable and URL-safe.
 */
import crypto from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

/** One CSPRNG byte from a pooled buffer (one randomFillSync per 4 KiB instead of one per id). */
function randomByte(): number {
  if (poolAt >= pool.length) {
    pool = crypto.randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    poolAt = 0;
  }
  return pool[poolAt++];
}

/**
 * Base62 text carrying at least `bytes` × 8 random bits: ceil(bits / log2 62) characters, each drawn
 * uniformly by rejection sampling (bytes 248–255 are discarded, so there is no modulo bias).
 */
export function randomBase62(bytes: number): string {
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  while (out.length < width) {
    const b = randomByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** A new id such as `org_3fK9…` (prefix without the underscore). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(16)}`;
}

/**
 * A deterministic id such as `cnv_…` for a natural key (the same key always gives the same id, so storing
 * twice finds the first row): 24 base64url characters of SHA-256(`key`) without `-` and `_`.
 */
export function derivedId(prefix: string, key: string): string {
  return `${prefix}_${crypto.createHash('sha256').update(key).digest('base64url').replace(/[-_]/g, '').slice(0, 24)}`;
}
