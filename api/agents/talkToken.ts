/**
 * Talk tokens (spec "Agent lifecycle" rules 1-2, Test row `POST /agents/{agentId}/talk-token`): a
 * short-lived HMAC-SHA256 signed token bound to one frozen version (or, in draft mode, to a draft
 * version). Form: `tt_<base64url(JSON claims)>.<base64url(signature)>`; the signing secret is the
 * organization's (db agent_token_secrets), so any API process can verify it.
 */
import crypto from 'node:crypto';
import type { Db } from '../../db';
import { existingTalkTokenSecret } from '../../db/repositories/agentVersions';

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
  const sig = crypto.createHmac('sha256', secret).update(body).digest('base64url');
  return `tt_${body}.${sig}`;
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
  const expected = crypto.createHmac('sha256', secret).update(m[1]).digest();
  const given = Buffer.from(m[2], 'base64url');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return undefined;
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
