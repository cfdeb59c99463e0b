/**
 * Talk tokens (spec "Agent lifecycle" rules 1-2, Test row `POST /agents/{agentId}/talk-token`): a
 * short-lived HMAC-SHA256 signed token bound to one frozen version (or, in draft mode, to a draft
 * version). Form: `tt_<base64url(JSON claims)>.<base64url(signature)>`; the signing secret is the
 * organization's (db agent_token_secrets), so any API process can verify it. The signature is MACed under
 * the talk-token label (domain/tokenMac.ts), so no other kind of token signed with that secret passes as one.
 */
import type { Db } from '../../db';
import { existingTalkTokenSecret } from '../../db/repositories/agentVersions';
import { macMatches, tokenMac } from '../../domain/tokenMac';

/** Claims carried by a talk token. */
export interface TalkTokenClaims {
  v: 1;
  /** Organization id. */
  org: string;
  /** Agent id. */
  agt: string;
  /** Frozen version id (published mode), else null. */
  ver: string | null;
  /** Draft version (draft mode), else null. */
  dv: number | null;
  ch: 'voice' | 'chat';
  /** Expiry, Unix seconds. */
  exp: number;
  /** Unique token id. */
  jti: string;
}

/** Signs claims with `secret`. */
export function signTalkToken(claims: TalkTokenClaims, secret: Buffer): string {
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `tt_${body}.${tokenMac('talkToken', secret, body).toString('base64url')}`;
}

/** The organization a token claims to belong to (to look up its secret), or undefined when malformed. */
export function talkTokenOrg(token: string): string | undefined {
  const m = /^tt_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as Partial<TalkTokenClaims>;
    return typeof claims.org === 'string' ? claims.org : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies signature and expiry.
 * @param nowSeconds current Unix time in seconds
 * @returns the claims, or undefined when the token is malformed, forged or expired
 */
export function verifyTalkToken(token: string, secret: Buffer, nowSeconds = Math.floor(Date.now() / 1000)): TalkTokenClaims | undefined {
  const m = /^tt_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m) return undefined;
  if (!macMatches(Buffer.from(m[2], 'base64url'), tokenMac('talkToken', secret, m[1]))) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as TalkTokenClaims;
    if (claims.v !== 1 || typeof claims.exp !== 'number' || claims.exp <= nowSeconds) return undefined;
    return claims;
  } catch {
    return undefined;
  }
}

/**
 * Verifies a talk token presented to a session endpoint (chat, voice): looks up the claimed
 * organization's secret, then checks signature and expiry.
 * @returns the claims, or undefined when the token is malformed, forged or expired
 */
export async function resolveTalkToken(db: Db, token: string): Promise<TalkTokenClaims | undefined> {
  const org = talkTokenOrg(token);
  if (!org) return undefined;
  const secret = await existingTalkTokenSecret(db, org);
  return secret ? verifyTalkToken(token, secret) : undefined;
}

/**
 * Whether a talk token that opened a session still carries a valid signature (docs/security.md
 * "Revocation"): checked while the session lasts, so rotating the organization's talk-token secret ends it.
 * Expiry is not checked again — it bounds when a session may start, not how long a call may last.
 */
export async function talkTokenStillSigned(db: Db, token: string): Promise<boolean> {
  const org = talkTokenOrg(token);
  const secret = org ? await existingTalkTokenSecret(db, org) : undefined;
  return !!secret && verifyTalkToken(token, secret, 0) !== undefined;
}
