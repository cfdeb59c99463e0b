/**
 * Signature checks of the carriers' voice webhooks (docs/voice.md), with node:crypto only.
 *
 * - Twilio ("Webhooks security"): `X-Twilio-Signature` is base64(HMAC-SHA1(auth token, URL + each POST
 *   parameter's name and value, sorted by name)). The URL is the full public URL Twilio requested. Twilio
 *   signs no timestamp, so a replay cannot be told by age; the call id's uniqueness (voice_calls) makes a
 *   replayed webhook find the call it created instead of a new one.
 * - Telnyx ("Webhook signing"): `telnyx-signature-ed25519` is base64(Ed25519 signature) over
 *   `{telnyx-timestamp}|{raw body}` with the account's public key; a timestamp more than
 *   {@link TELNYX_TOLERANCE_SECONDS} away from now is stale.
 */
import crypto from 'node:crypto';

/** How far a Telnyx timestamp may be from now, seconds. */
export const TELNYX_TOLERANCE_SECONDS = 300;

/** Twilio's signature of a form POST (also what the sandbox caller sends). */
export function twilioSignature(authToken: string, url: string, params: Readonly<Record<string, string>>): string {
  const data = url + Object.keys(params).sort().map((k) => k + params[k]).join('');
  return crypto.createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** True when `signature` is Twilio's signature of this request (constant-time comparison). */
export function verifyTwilioSignature(authToken: string, url: string, params: Readonly<Record<string, string>>, signature: string | undefined): boolean {
  if (!authToken || !signature) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && crypto.timingSafeEqual(expected, given);
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A Telnyx public key (base64 of the raw 32 bytes, as the portal shows it, or a PEM) as a KeyObject. @throws on a malformed key */
export function telnyxPublicKey(key: string): crypto.KeyObject {
  if (key.includes('BEGIN PUBLIC KEY')) return crypto.createPublicKey(key);
  const raw = Buffer.from(key, 'base64');
  if (raw.length !== 32) throw new Error('TELNYX_PUBLIC_KEY must be the base64 of a 32-byte Ed25519 key');
  return crypto.createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** Why a Telnyx signature was refused, or null when it holds. */
export function telnyxSignatureProblem(
  publicKey: crypto.KeyObject | undefined,
  rawBody: string | Buffer,
  signature: string | undefined,
  timestamp: string | undefined,
  nowSeconds = Math.floor(Date.now() / 1000),
): 'missing' | 'stale' | 'forged' | null {
  if (!publicKey || !signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return 'missing';
  if (Math.abs(nowSeconds - Number(timestamp)) > TELNYX_TOLERANCE_SECONDS) return 'stale';
  const sig = Buffer.from(signature, 'base64');
  if (sig.length !== 64) return 'forged';
  const signed = Buffer.concat([Buffer.from(`${timestamp}|`), Buffer.isBuffer(rawBody) ? rawBody : Buffer.from(rawBody)]);
  return crypto.verify(null, signed, publicKey, sig) ? null : 'forged';
}
