/**
 * OAuth 2.0 client-side helpers (RFC 6749 §4.1 authorization-code grant; RFC 7636 PKCE with S256):
 * the state that binds an authorization to the organization that began it, and the PKCE pair.
 * Only the SHA-256 of a state is stored, so a database read cannot complete someone's authorization.
 */
import crypto from 'node:crypto';

/** A fresh opaque state (32 random bytes, base64url) and its storage hash. */
export function newOAuthState(): { state: string; hash: string } {
  const state = crypto.randomBytes(32).toString('base64url');
  return { state, hash: hashOAuthState(state) };
}

/** SHA-256 hex of a state, the form stored and looked up. */
export function hashOAuthState(state: string): string {
  return crypto.createHash('sha256').update(state, 'utf8').digest('hex');
}

/** A PKCE pair (RFC 7636 §4.1–4.2): a 43-character verifier and its S256 challenge. */
export function newPkcePair(): { verifier: string; challenge: string } {
  const verifier = crypto.randomBytes(32).toString('base64url');
  return { verifier, challenge: pkceChallenge(verifier) };
}

/** BASE64URL(SHA256(verifier)), the S256 `code_challenge` (RFC 7636 §4.2). */
export function pkceChallenge(verifier: string): string {
  return crypto.createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** How long a begun authorization may be completed (10 minutes, in ms). */
export const OAUTH_STATE_TTL_MS = 10 * 60 * 1000;
