/**
 * Relay references (docs/voice.md): the short-lived signed value a voice webhook's markup puts in
 * the ConversationRelay URL, naming the organization, agent, pinned published version and call the
 * socket may open. Form `vrf_<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`, signed with the
 * organization's talk-token secret (db agent_token_secrets) under its own label, so a reference is never
 * accepted as a talk token or widget session token and any API process verifies it.
 */
import type { Db } from '../../db';
import { existingTalkTokenSecret, talkTokenSecret } from '../../db/repositories/agentVersions';
import { macMatches, tokenMac } from '../../domain/tokenMac';
import { context, propagation } from '@opentelemetry/api';

/** Lifetime of a reference, seconds: the carrier opens the socket right after reading the markup. */
export const RELAY_REFERENCE_TTL_SECONDS = 120;

/** Claims of a relay reference. */
export interface RelayReferenceClaims {
  v: 1;
  org: string;
  agt: string;
  /**
   * The published version the call is pinned to; null for a call placed by `POST /calls` in draft mode,
   * whose relay compiles the agent's draft when the socket opens.
   */
  ver: string | null;
  /** The call (`call_…`). */
  call: string;
  /** 1 when the relay speaks the greeting itself (campaign calls); 0 when the markup's welcomeGreeting does. */
  grt: 0 | 1;
  /** The campaign of an outbound campaign call, else absent. */
  cmp?: string;
  /** 1 for a call placed by `POST /calls`: its variables and metadata are read from the stored call. */
  plc?: 1;
  /**
   * The W3C `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header) of the trace the reference was
   * signed in (the carrier webhook's request), when tracing is on: the relay's `voice.call` span continues it.
   */
  tp?: string;
  /** Expiry, Unix seconds. */
  exp: number;
}

function mac(secret: Buffer, body: string): Buffer {
  return tokenMac('relayReference', secret, body);
}

/**
 * Signs a reference for the claims' organization (creating its secret on first use). Inside a sampled trace (the
 * carrier webhook's request span) the reference carries its `traceparent` as `tp`, so the call's relay joins it.
 */
export async function signRelayReference(db: Db, claims: Omit<RelayReferenceClaims, 'v' | 'exp' | 'tp'>, ttlSeconds = RELAY_REFERENCE_TTL_SECONDS): Promise<string> {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  const full: RelayReferenceClaims = { v: 1, ...claims, ...(carrier.traceparent ? { tp: carrier.traceparent } : {}), exp: Math.floor(Date.now() / 1000) + ttlSeconds };
  const body = Buffer.from(JSON.stringify(full)).toString('base64url');
  return `vrf_${body}.${mac(await talkTokenSecret(db, claims.org), body).toString('base64url')}`;
}

/**
 * Verifies a reference: shape, the claimed organization's signature, expiry.
 * @returns the claims, or undefined when malformed, forged (also: signed by another organization) or expired
 */
export async function verifyRelayReference(db: Db, ref: string, nowSeconds = Math.floor(Date.now() / 1000)): Promise<RelayReferenceClaims | undefined> {
  const m = /^vrf_([A-Za-z0-9_-]{10,2000})\.([A-Za-z0-9_-]{43})$/.exec(ref);
  if (!m) return undefined;
  let claims: RelayReferenceClaims;
  try {
    claims = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as RelayReferenceClaims;
  } catch {
    return undefined;
  }
  if (claims?.v !== 1 || typeof claims.org !== 'string' || !/^org_[A-Za-z0-9]{8,40}$/.test(claims.org)) return undefined;
  const secret = await existingTalkTokenSecret(db, claims.org);
  if (!secret) return undefined;
  if (!macMatches(Buffer.from(m[2], 'base64url'), mac(secret, m[1]))) return undefined;
  return typeof claims.exp === 'number' && claims.exp > nowSeconds ? claims : undefined;
}
