/**
 * Widget voice tokens (docs/api-notes.md "Widget", "Voice in the widget"): what
 * `POST /chat/widget/sessions/{id}/voice-token` hands the widget so the visitor's browser can open the
 * ConversationRelay endpoint (api/voice/relay.ts, the same protocol the talk page speaks) with one agent's
 * published version. Form `wvt_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, signed with the
 * organization's talk-token secret under the widget-voice label (domain/tokenMac.ts, so no other kind of
 * token passes as one). It names the agent and version, the publishable key, the page origin and the widget
 * session it was minted for, and expires after {@link WIDGET_VOICE_TOKEN_TTL_SECONDS} — the expiry bounds
 * when a call may start, not how long it lasts. The relay accepts it only from its page origin (the
 * browser's `Origin` on the WebSocket handshake, RFC 6455 §4.1 / §10.2) and only while what it was derived
 * from still holds ({@link liveWidgetVoiceToken}), re-checked during the call.
 */
import type { Db } from '../db';
import { getActiveKey } from '../db/repositories/apiKeys';
import { existingTalkTokenSecret, publishedWidgetSettings } from '../db/repositories/agentVersions';
import { effectiveWidget } from '../domain/agents/compile';
import { originAllowed } from '../domain/keys';
import { macMatches, tokenMac } from '../domain/tokenMac';
import type { WidgetSettings } from '../schemas/types/agents';

/** Lifetime of a widget voice token, seconds: long enough to open the relay socket, short enough not to be worth stealing. */
export const WIDGET_VOICE_TOKEN_TTL_SECONDS = 60;

/** Claims of a widget voice token. */
export interface WidgetVoiceClaims {
  v: 1;
  org: string;
  /** The agent (`agt_…`) the publishable key is pinned to. */
  agt: string;
  /** Its published version when the token was minted (the call runs that frozen version). */
  ver: string;
  /** The publishable key of the widget session. */
  kid: string;
  /** The page origin the widget session was issued to. */
  ori: string;
  /** The widget's chat session (`cnv_…`), recorded on the call's conversation. */
  cnv: string;
  /** Expiry, Unix seconds. */
  exp: number;
  /** Unique token id. */
  jti: string;
}

const SHAPE = /^wvt_([A-Za-z0-9_-]{10,2000})\.([A-Za-z0-9_-]{43})$/;

/** Signs claims with the organization's talk-token secret. */
export function signWidgetVoiceToken(claims: WidgetVoiceClaims, secret: Buffer): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `wvt_${body}.${tokenMac('widgetVoice', secret, body).toString('base64url')}`;
}

/** True when `token` has the shape of a widget voice token. */
export function isWidgetVoiceToken(token: string): boolean {
  return SHAPE.test(token);
}

/**
 * Verifies a token's signature with the claimed organization's secret and, unless `nowSeconds` is 0, its expiry.
 * @returns the claims, or undefined when malformed, forged, of an unknown organization or expired
 */
export async function verifyWidgetVoiceToken(db: Db, token: string, nowSeconds = Math.floor(Date.now() / 1000)): Promise<WidgetVoiceClaims | undefined> {
  const m = SHAPE.exec(token);
  if (!m) return undefined;
  let claims: WidgetVoiceClaims;
  try {
    claims = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as WidgetVoiceClaims;
  } catch {
    return undefined;
  }
  if (claims?.v !== 1 || typeof claims.org !== 'string' || !/^org_[A-Za-z0-9]{8,40}$/.test(claims.org)) return undefined;
  const secret = await existingTalkTokenSecret(db, claims.org);
  if (!secret || !macMatches(Buffer.from(m[2], 'base64url'), tokenMac('widgetVoice', secret, m[1]))) return undefined;
  if (typeof claims.exp !== 'number' || (nowSeconds && claims.exp <= nowSeconds)) return undefined;
  return typeof claims.agt === 'string' && typeof claims.ver === 'string' && typeof claims.kid === 'string' && typeof claims.ori === 'string' ? claims : undefined;
}

/**
 * A widget voice token that still holds (docs/security.md "Revocation"): signed with the current talk-token
 * secret, presented from its own page origin, and — checked against Postgres — its publishable key still
 * active, pinned to the token's agent and allowing that origin, and the agent's published version still has
 * the widget on, and unexpired: what the relay checks before opening a call.
 * @param origin the `Origin` header of the WebSocket handshake (undefined when absent: refused)
 * @returns the claims, or undefined when any of that fails
 */
export async function liveWidgetVoiceToken(db: Db, token: string, origin: string | undefined): Promise<WidgetVoiceClaims | undefined> {
  const claims = await verifyWidgetVoiceToken(db, token);
  if (!claims || !origin || origin !== claims.ori) return undefined;
  return (await stillDerivable(db, claims)) ? claims : undefined;
}

/**
 * Whether the token of an open call still holds (docs/security.md "Revocation"): its signature with the
 * current secret and what it was derived from ({@link liveWidgetVoiceToken}), expiry aside — the relay
 * re-checks it while the call lasts and hangs up once it fails.
 */
export async function widgetVoiceTokenStillHolds(db: Db, token: string): Promise<boolean> {
  const claims = await verifyWidgetVoiceToken(db, token, 0);
  return !!claims && (await stillDerivable(db, claims));
}

async function stillDerivable(db: Db, claims: WidgetVoiceClaims): Promise<boolean> {
  const key = await getActiveKey(db, claims.org, 'publishable', claims.kid);
  if (!key || key.agentId !== claims.agt || (key.expiresAt && key.expiresAt.getTime() <= Date.now())) return false;
  if (!originAllowed(claims.ori, key.allowedOrigins ?? [])) return false;
  const published = await publishedWidgetSettings(db, claims.org, claims.agt);
  return !!published && effectiveWidget(published.settings as WidgetSettings | null).enabled;
}
