/**
 * Throttling of credential guessing (OWASP ASVS 4.0 V2.2.1 "anti-automation … rate limiting, soft
 * lockouts"; NIST SP 800-63B §5.2.2 "rate limiting (throttling)"): sign-in at `POST /login` and client
 * authentication at the OAuth token and revocation endpoints (docs/team-and-oauth.md "Team" → "Sign-in").
 *
 * Each attempt names a few throttle keys — the account (or client) together with the client address, the
 * account (or client) alone, and the address alone — and is counted against all of them *before* the
 * password or secret is checked (db/repositories/throttles.ts, under row locks), so a burst of parallel
 * guesses evaluates at most `free` of them. A success clears the account's keys and gives its one point
 * back to the address. Back-off is exponential and bounded: an attacker without the password can keep
 * the account closed to other addresses for at most {@link SIGN_IN_POLICIES}.account.maxSeconds at a time,
 * while their own address waits longer and longer.
 */
import ipaddr from 'ipaddr.js';

/**
 * One throttle's rule: `free` attempts in a row pass at once; the attempt that reaches `free` (and each
 * after it) closes the key for `baseSeconds · 2^(attempts − free)` seconds, at most `maxSeconds`; a key
 * with no attempt for `forgetSeconds` starts again from zero.
 */
export interface ThrottlePolicy {
  free: number;
  baseSeconds: number;
  maxSeconds: number;
  forgetSeconds: number;
}

/** A throttle key with its rule; `key` is opaque (kind prefix + hash: no e-mail or address is stored). */
export interface ThrottleKey {
  key: string;
  policy: ThrottlePolicy;
  /** On success: `reset` clears the key (the account's), `refund` gives back this attempt's point (the address's). */
  onSuccess: 'reset' | 'refund';
}

/** Sign-in rules (docs/team-and-oauth.md "Team" → "Sign-in"). */
export const SIGN_IN_POLICIES = {
  /** One account from one address: 5 free, then 30 s doubling to 15 min. */
  accountAddress: { free: 5, baseSeconds: 30, maxSeconds: 900, forgetSeconds: 86_400 },
  /** One account from every address: 10 free, then 1 s doubling to 60 s — the most an attacker can impose on the owner. */
  account: { free: 10, baseSeconds: 1, maxSeconds: 60, forgetSeconds: 3600 },
  /** One address across every account and client: 20 failures free, then 60 s doubling to 1 h. */
  address: { free: 20, baseSeconds: 60, maxSeconds: 3600, forgetSeconds: 3600 },
} as const satisfies Record<string, ThrottlePolicy>;

/** OAuth client authentication rules (token and revocation endpoints; RFC 6749 §2.3.1 asks for brute-force protection). */
export const CLIENT_AUTH_POLICIES = {
  /** One client from one address: 10 free (a client's legitimate requests overlap), then 1 s doubling to 15 min. */
  clientAddress: { free: 10, baseSeconds: 1, maxSeconds: 900, forgetSeconds: 86_400 },
  /** One client from every address: 30 free, then 1 s doubling to 60 s. */
  client: { free: 30, baseSeconds: 1, maxSeconds: 60, forgetSeconds: 3600 },
} as const satisfies Record<string, ThrottlePolicy>;

/**
 * Seconds a key stays closed after its `attempts`-th attempt in a row (0 while attempts < free).
 * @param attempts attempts counted so far, this one included
 */
export function backoffSeconds(policy: ThrottlePolicy, attempts: number): number {
  if (attempts < policy.free) return 0;
  return Math.min(policy.maxSeconds, policy.baseSeconds * 2 ** Math.min(30, attempts - policy.free));
}

/**
 * The address a throttle counts: IPv4 (an IPv4-mapped IPv6 address as its IPv4), or the /64 of an IPv6
 * address (one subscriber usually holds a whole /64, RFC 6177). Unparsable input is kept as it is.
 */
export function throttleAddress(ip: string): string {
  try {
    const a = ipaddr.process(ip);
    if (a.kind() === 'ipv4') return a.toString();
    const parts = (a as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
    return `${parts.join(':')}::/64`;
  } catch {
    return ip;
  }
}

/**
 * The keys of one sign-in attempt. @param hash a one-way hash (the caller's SHA-256)
 * @param email the normalized e-mail, '' when none was given (then only the address is counted)
 */
export function signInKeys(email: string, ip: string, hash: (s: string) => string): ThrottleKey[] {
  const address = throttleAddress(ip);
  const keys: ThrottleKey[] = [{ key: `addr:${hash(address)}`, policy: SIGN_IN_POLICIES.address, onSuccess: 'refund' }];
  if (email) {
    keys.push({ key: `acct:${hash(email)}`, policy: SIGN_IN_POLICIES.account, onSuccess: 'reset' });
    keys.push({ key: `acct-addr:${hash(`${email}\n${address}`)}`, policy: SIGN_IN_POLICIES.accountAddress, onSuccess: 'reset' });
  }
  return keys;
}

/**
 * The keys of one OAuth client authentication (the address budget is shared with sign-in).
 * @param clientId as presented, '' when none was (then only the address is counted)
 */
export function clientAuthKeys(clientId: string, ip: string, hash: (s: string) => string): ThrottleKey[] {
  const address = throttleAddress(ip);
  const keys: ThrottleKey[] = [{ key: `addr:${hash(address)}`, policy: SIGN_IN_POLICIES.address, onSuccess: 'refund' }];
  if (clientId) {
    keys.push({ key: `client:${hash(clientId)}`, policy: CLIENT_AUTH_POLICIES.client, onSuccess: 'reset' });
    keys.push({ key: `client-addr:${hash(`${clientId}\n${address}`)}`, policy: CLIENT_AUTH_POLICIES.clientAddress, onSuccess: 'reset' });
  }
  return keys;
}
