/**
 * Plain `http://` for local development (docs/configuration.md "Plain HTTP for local development"): an
 * outbound URL a customer configures (an HTTP skill's endpoint) must be `https://`, except to a host the
 * operator lists in HTTP_ALLOW_PRIVATE_HOSTS — the addresses the SSRF guard (./guard.ts) already lets
 * through for development and tests — and never with NODE_ENV=production. Only IP literals can match:
 * the list holds addresses and CIDR ranges, not names (use `http://127.0.0.1:8080`, not `localhost`).
 */
import ipaddr from 'ipaddr.js';
import { parseAllowList, type AllowList } from './guard';

/** Who may be called over plain http. */
export interface PlainHttpPolicy {
  /** Addresses and ranges plain http may go to (HTTP_ALLOW_PRIVATE_HOSTS). */
  allow: AllowList;
  /** NODE_ENV=production: plain http is refused whatever the list says. */
  production: boolean;
}

/** The policy of the environment. @throws Error naming a malformed HTTP_ALLOW_PRIVATE_HOSTS entry */
export function plainHttpPolicy(env: NodeJS.ProcessEnv = process.env): PlainHttpPolicy {
  return { allow: parseAllowList(env.HTTP_ALLOW_PRIVATE_HOSTS), production: env.NODE_ENV === 'production' };
}

/** Whether `hostname` (a URL's, IPv6 in brackets or not) is an IP literal inside the allow-list. */
export function isListedHost(hostname: string, allow: AllowList): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  let ip = ipaddr.parse(bare);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return allow.ranges.some(([base, bits]) => base.kind() === ip.kind() && ip.match(base as never, bits));
}

/**
 * Why `url` may not be used, or null when it may: `https://` always may (the SSRF guard still judges
 * where it connects); `http://` only to a listed host outside production.
 */
export function plainHttpProblem(url: string, policy: PlainHttpPolicy): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (u.protocol === 'https:') return null;
  if (u.protocol !== 'http:') return 'must be an https URL';
  if (policy.production) return 'must be https: plain http is refused with NODE_ENV=production';
  if (!isListedHost(u.hostname, policy.allow)) {
    return `must be https: plain http only to an address listed in HTTP_ALLOW_PRIVATE_HOSTS (local development), and ${u.hostname} is not`;
  }
  return null;
}
