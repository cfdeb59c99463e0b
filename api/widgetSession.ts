/**
 * Widget session tokens (README "Widget"): what `POST /chat/widget/sessions` hands the browser so it can
 * continue its one chat session, and nothing else. Form `wst_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`,
 * signed with the organization's talk-token secret (db agent_token_secrets), so any API process verifies it
 * without a lookup; it names the conversation, the publishable key and the page origin it was issued to,
 * and expires after {@link WIDGET_SESSION_TTL_SECONDS}.
 */
import crypto from 'node:crypto';
import type { Db } from '../db';
import { existingTalkTokenSecret } from '../db/repositories/agentVersions';

/** Lifetime of a widget session token, seconds (2 hours). */
export const WIDGET_SESSION_TTL_SECONDS = 7200;

/** Claims of a widget session token. */
export interface WidgetSessionClaims {
  v: 1;
  org: string;
  /** The conversation (`cnv_…`). */
  cnv: string;
  /** The publishable key that started it. */
  kid: string;
  /** The page origin it was issued to. */
  ori: string;
  /** Expiry, Unix seconds. */
  exp: number;
}

/** Signs claims. */
export function signWidgetSession(claims: WidgetSessionClaims, secret: Buffer): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `wst_${body}.${crypto.createHmac('sha256', secret).update(body).digest('base64url')}`;
}

/** True when the bearer token has the shape of a widget session token. */
export function isWidgetSessionToken(token: string): boolean {
  return /^wst_[A-Za-z0-9_-]{10,2000}\.[A-Za-z0-9_-]{43}$/.test(token);
}

/**
 * Verifies a token: signature with the claimed organization's secret, and expiry.
 * @returns the claims, or undefined when malformed, forged, of an unknown organization or expired
 */
export async function verifyWidgetSession(db: Db, token: string, nowSeconds = Math.floor(Date.now() / 1000)): Promise<WidgetSessionClaims | undefined> {
  if (!isWidgetSessionToken(token)) return undefined;
  const [body, sig] = token.slice(4).split('.');
  let claims: WidgetSessionClaims;
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as WidgetSessionClaims;
  } catch {
    return undefined;
  }
  if (claims?.v !== 1 || typeof claims.org !== 'string' || !/^org_[A-Za-z0-9]{8,40}$/.test(claims.org)) return undefined;
  const secret = await existingTalkTokenSecret(db, claims.org);
  if (!secret) return undefined;
  const expected = crypto.createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return undefined;
  return typeof claims.exp === 'number' && claims.exp > nowSeconds ? claims : undefined;
}
