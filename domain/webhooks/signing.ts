/**
 * Standard Webhooks signing (https://www.standardwebhooks.com; spec "Events": signature scheme "not
 * shown", decided here): headers `webhook-id`, `webhook-timestamp` (Unix seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64-decoded
 * bytes after the `whsec_` prefix. Several signatures are space-separated (secret rotation).
 * Also: secret generation and sealing at rest.
 */
import crypto from 'node:crypto';

/** Prefix of every signing secret. */
export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` + base64 of 32 random bytes. */
export function generateSecret(): string {
  return SECRET_PREFIX + crypto.randomBytes(32).toString('base64');
}

/** The first characters of a secret, safe to show in listings (`whsec_AbCd`). */
export function secretDisplayPrefix(secret: string): string {
  return secret.slice(0, SECRET_PREFIX.length + 4);
}

/** The HMAC key bytes of a `whsec_…` secret. @throws Error when the secret is not `whsec_<base64>` */
export function secretKeyBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  const bytes = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  if (bytes.length < 24) throw new Error('a webhook secret carries at least 24 bytes');
  return bytes;
}

/**
 * One `v1,<base64>` signature of `id.timestamp.body`.
 * @param timestampSeconds Unix time in seconds, the `webhook-timestamp` header
 */
export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = crypto.createHmac('sha256', secretKeyBytes(secret)).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/** The three Standard Webhooks headers for a body, signed with every secret given (current first). */
export function signatureHeaders(secrets: string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => sign(s, id, timestampSeconds, body)).join(' '),
  };
}

const SEALED_V1 = 'v1:';
/** Legacy rows written before sealing was mandatory; read, never written (docs/security.md). */
const PLAIN = 'plain:';

/**
 * Seals a secret for storage: AES-256-GCM `v1:<iv>:<tag>:<ciphertext>` (base64 parts, 12-byte IV) with
 * the 32-byte `key` (WEBHOOK_SECRET_KEY). There is no unsealed form for new writes.
 * @throws Error when `key` is missing or not 32 bytes
 */
export function sealSecret(secret: string, key: Buffer | null): string {
  if (!key) throw new Error('WEBHOOK_SECRET_KEY is not set: webhook signing secrets are always sealed');
  if (key.length !== 32) throw new Error('WEBHOOK_SECRET_KEY must be 32 bytes, base64-encoded');
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${SEALED_V1}${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${ct.toString('base64')}`;
}

/**
 * Opens a sealed secret with the first of `keys` that authenticates it: the current key
 * (WEBHOOK_SECRET_KEY), then the previous one (WEBHOOK_SECRET_KEY_PREVIOUS) during a key rotation.
 * Legacy `plain:` rows are returned as they are.
 * @throws Error when no configured key opens it, or it is corrupt
 */
export function openSecret(sealed: string, keys: readonly (Buffer | null | undefined)[]): string {
  if (sealed.startsWith(PLAIN)) return sealed.slice(PLAIN.length);
  if (!sealed.startsWith(SEALED_V1)) throw new Error('unknown sealed-secret format');
  const usable = keys.filter((k): k is Buffer => !!k);
  if (!usable.length) throw new Error('webhook secret is sealed but WEBHOOK_SECRET_KEY is not set');
  const [iv, tag, ct] = sealed.slice(SEALED_V1.length).split(':').map((p) => Buffer.from(p, 'base64'));
  for (const key of usable) {
    try {
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
    } catch {
      // not this key (GCM authentication failed): try the next one
    }
  }
  throw new Error('webhook secret opens with neither WEBHOOK_SECRET_KEY nor WEBHOOK_SECRET_KEY_PREVIOUS');
}
