/**
 * Readable prefixed ids (STYLE.md, Stripe conventions): `org_…`, `key_…`, `smsreg_…`.
 * 16 random bytes (128 bits) in base62, so ids are unguessable and URL-safe.
 */
import crypto from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 text of `bytes` random bytes (about 1.34 characters per byte). */
export function randomBase62(bytes: number): string {
  const buf = crypto.randomBytes(bytes);
  let n = BigInt('0x' + buf.toString('hex'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  return out.padStart(width, '0');
}

/** A new id such as `org_3fK9…` (prefix without the underscore). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBase62(16)}`;
}
