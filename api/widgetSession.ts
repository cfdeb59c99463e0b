/**
 * Widget session tokens (docs/api-notes.md "Widget"): what `POST /chat/widget/sessions` hands the browser so it can
 * continue its one chat session, and nothing else. Form `wst_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`,
 * signed with the organization's talk-token secret (db agent_token_secrets) under the widget-session label
 * (domain/tokenMac.ts, so no other token kind passes as one); it names the conversation, the publishable key
 * and the page origin it was issued to, and expires after {@link WIDGET_SESSION_TTL_SECONDS}. Every request
 * also checks, through Postgres, that what it was derived from still holds ({@link liveWidgetSession}).
 */
import type { Db } from '../db';
import { existingTalkTokenSecret, publishedWidgetSettings } from '../db/repositories/agentVersions';
import { effectiveWidget } from '../domain/agents/compile';
import { originAllowed } from '../domain/keys';
import { macMatches, tokenMac } from '../domain/tokenMac';
import type { WidgetSettings } from '../schemas/types/agents';
import type { KeyCache } from './keyCache';

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
  return `wst_${body}.${tokenMac('widgetSession', secret, body).toString('base64url')}`;
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
  if (!macMatches(Buffer.from(sig, 'base64url'), tokenMac('widgetSession', secret, body))) return undefined;
  return typeof claims.exp === 'number' && claims.exp > nowSeconds ? claims : undefined;
}

/**
 * A widget session token that still holds (docs/security.md "Revocation"): signed (with the current
 * talk-token secret) and unexpired, and — checked on every request against Postgres, through the key cache
 * that every API process evicts on a revocation (api/keyCache.ts) — its publishable key is still active,
 * still pinned to an agent of the token's organization and still allows the token's origin, and that agent's
 * published version still has the widget on. Revoking the key, turning the widget off (publishing it off)
 * or rotating the talk-token secret therefore refuses the token on its next request.
 * @returns the claims, or undefined when any of that fails
 */
export async function liveWidgetSession(db: Db, keys: KeyCache, token: string): Promise<WidgetSessionClaims | undefined> {
  const claims = await verifyWidgetSession(db, token);
  if (!claims || typeof claims.kid !== 'string' || typeof claims.ori !== 'string') return undefined;
  const key = await keys.resolveById(claims.kid);
  if (!key || key.kind !== 'publishable' || key.orgId !== claims.org || !key.agentId) return undefined;
  if (!originAllowed(claims.ori, key.allowedOrigins ?? [])) return undefined;
  const published = await publishedWidgetSettings(db, claims.org, key.agentId);
  if (!published || !effectiveWidget(published.settings as WidgetSettings | null).enabled) return undefined;
  return claims;
}
