/**
 * HMAC signatures of provider callbacks (docs/sms.md "10DLC review, submission and carrier callbacks"). Header `X-Carrier-Signature: t=<unix seconds>,v1=<hex>` where
 * `v1 = HMAC-SHA256(secret, "carrier-callback.<t>.<raw body>")` (the callback label of domain/tokenMac.ts, so
 * no other signed value of the service passes as a callback), the scheme Stripe uses: the timestamp is signed so a
 * captured callback cannot be replayed after the tolerance window. Several `v1=` entries are accepted
 * (secret rotation on the provider's side).
 */
import crypto from 'node:crypto';
import { tokenMac } from '../tokenMac';

/** Name of the signature header (lower case, as Node presents it). */
export const SIGNATURE_HEADER = 'x-carrier-signature';

/** Seconds a signature stays valid around the receiver's clock. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * The callback secret of a provider: CARRIER_CALLBACK_SECRET_<PROVIDER>, else CARRIER_CALLBACK_SECRET.
 * There is no default value: the entry points fill CARRIER_CALLBACK_SECRET from DATA_DIR/secrets or
 * require it (docs/security.md). Read per call.
 * @throws Error when neither is set
 */
export function callbackSecret(provider: string): string {
  const secret = process.env[`CARRIER_CALLBACK_SECRET_${provider.toUpperCase()}`] || process.env.CARRIER_CALLBACK_SECRET;
  if (!secret) throw new Error('CARRIER_CALLBACK_SECRET is not set');
  return secret;
}

/**
 * Signature header value for `body` at `timestampSeconds`.
 * @param body the exact bytes that will be sent
 */
export function signCallback(secret: string, body: string | Buffer, timestampSeconds: number = Math.floor(Date.now() / 1000)): string {
  const mac = tokenMac('callback', secret, `${timestampSeconds}.`, body).toString('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}

/** Why a signature was refused (for the 401 detail; never reveals the expected value). */
export type SignatureProblem = 'missing' | 'malformed' | 'expired' | 'mismatch';

/**
 * Verifies a signature header against the raw body in constant time.
 * @param nowSeconds the receiver's clock (tests pass their own)
 * @returns null when valid, else the problem
 */
export function verifyCallbackSignature(
  secret: string,
  header: string | undefined,
  rawBody: string | Buffer,
  nowSeconds: number = Math.floor(Date.now() / 1000),
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): SignatureProblem | null {
  if (!header) return 'missing';
  let t: number | undefined;
  const sigs: string[] = [];
  for (const part of header.split(',')) {
    const [k, v] = part.trim().split('=', 2);
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v);
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/i.test(v)) sigs.push(v.toLowerCase());
  }
  if (t === undefined || sigs.length === 0) return 'malformed';
  if (Math.abs(nowSeconds - t) > toleranceSeconds) return 'expired';
  const expected = Buffer.from(tokenMac('callback', secret, `${t}.`, rawBody).toString('hex'), 'utf8');
  const ok = sigs.some((s) => crypto.timingSafeEqual(Buffer.from(s, 'utf8'), expected));
  return ok ? null : 'mismatch';
}
