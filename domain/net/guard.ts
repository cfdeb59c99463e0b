/**
 * SSRF guard of the outbound HTTP helper (DESIGN.md "Providers": `http` = fetch with SSRF guard).
 *
 * A fetch of a caller-supplied URL (knowledge sources, later webhooks and skills) must never reach the
 * service's own network: loopback, RFC 1918 private, link-local (which holds the cloud metadata
 * endpoint 169.254.169.254), carrier-grade NAT, multicast, unique-local IPv6 and every other
 * non-global range are refused unless an operator lists them in the allow-list
 * (`HTTP_ALLOW_PRIVATE_HOSTS`, for development and tests). The check runs on the addresses DNS
 * returns (before connecting, so a refused name never gets a connection) and again on the socket's
 * actual remote address, and the connection is made to the very address that was checked (the
 * lookup is pinned), so DNS rebinding between check and connect cannot slip through.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** Cloud metadata endpoints: refused even when a covering range is allow-listed, unless listed exactly. */
export const METADATA_ADDRESSES: readonly string[] = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '169.254.170.2'];

/** Addresses and ranges an operator explicitly permits despite being non-global. */
export interface AllowList {
  /** Parsed `ip/prefix` entries (a bare IP is a /32 or /128). */
  ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

/** Why an address was refused; `null` when it may be contacted. */
export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * Parses an allow-list such as `127.0.0.1,10.0.0.0/8,::1`. Entries are IP addresses or CIDR ranges,
 * separated by commas or whitespace. Host names are not accepted: the guard judges addresses.
 * @throws Error naming the first malformed entry
 */
export function parseAllowList(text: string | undefined): AllowList {
  const ranges: AllowList['ranges'] = [];
  for (const raw of (text ?? '').split(/[\s,]+/)) {
    const entry = raw.trim();
    if (!entry) continue;
    try {
      if (entry.includes('/')) {
        ranges.push(normalizeRange(ipaddr.parseCIDR(entry)));
      } else {
        const ip = normalize(ipaddr.parse(entry));
        ranges.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      throw new Error(`HTTP_ALLOW_PRIVATE_HOSTS: "${entry}" is not an IP address or CIDR range`);
    }
  }
  return { ranges };
}

function normalizeRange([ip, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  return [ip, bits];
}

/** IPv4-mapped IPv6 (`::ffff:127.0.0.1`) is judged as the IPv4 address it carries. */
function normalize(ip: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) return (ip as ipaddr.IPv6).toIPv4Address();
  return ip;
}

function inAllowList(ip: ipaddr.IPv4 | ipaddr.IPv6, allow: AllowList): boolean {
  return allow.ranges.some(([base, bits]) => base.kind() === ip.kind() && ip.match(base as never, bits));
}

/**
 * Judges one IP address (text form, IPv4 or IPv6, optionally with a zone). Only globally routable
 * unicast addresses pass, plus allow-listed ones; metadata endpoints pass only when listed exactly.
 */
export function checkAddress(address: string, allow: AllowList = { ranges: [] }): AddressVerdict {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = normalize(ipaddr.parse(address.replace(/%.*$/, '')));
  } catch {
    return { allowed: false, reason: `"${address}" is not an IP address` };
  }
  const text = ip.toString();
  const isMetadata = METADATA_ADDRESSES.some((m) => ipaddr.parse(m).toString() === text);
  if (isMetadata) {
    const exact = allow.ranges.some(([base, bits]) => base.toString() === text && bits === (ip.kind() === 'ipv4' ? 32 : 128));
    return exact ? { allowed: true } : { allowed: false, reason: `${text} is a cloud metadata address` };
  }
  const range = ip.range();
  if (range === 'unicast') return { allowed: true };
  if (inAllowList(ip, allow)) return { allowed: true };
  return { allowed: false, reason: `${text} is a ${describeRange(range)} address` };
}

function describeRange(range: string): string {
  const names: Record<string, string> = {
    loopback: 'loopback',
    private: 'private (RFC 1918)',
    linkLocal: 'link-local',
    carrierGradeNat: 'carrier-grade NAT',
    multicast: 'multicast',
    uniqueLocal: 'unique-local',
    unspecified: 'unspecified',
    broadcast: 'broadcast',
  };
  return names[range] ?? `non-public (${range})`;
}

/** A refused destination: never retried (the same URL would be refused again). */
export class SsrfRefusedError extends Error {
  readonly code = 'ssrf_refused';
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`Refused to connect to ${host}: ${reason}`);
    this.name = 'SsrfRefusedError';
  }
}

/**
 * Throws SsrfRefusedError when `hostname` is an IP literal that may not be contacted (IP literals
 * skip DNS, so the lookup hook never sees them). Host names pass here and are judged at lookup.
 */
export function assertHostLiteralAllowed(hostname: string, allow: AllowList): void {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) {
    const v = checkAddress(bare, allow);
    if (!v.allowed) throw new SsrfRefusedError(hostname, v.reason);
  }
}

/**
 * DNS answered that a host name does not exist or has no address (`ENOTFOUND`, `ENODATA`; RFC 8020
 * NXDOMAIN): asking again with the same name gets the same answer, so it is not retried. A resolver that
 * could not answer (`EAI_AGAIN`, a timeout) is a different, transient error and keeps its own code.
 */
export class HostUnresolvableError extends Error {
  /** The resolver's code (`ENOTFOUND`, `ENODATA`), kept so callers matching on it still do. */
  readonly code: string;
  constructor(
    readonly host: string,
    resolverCode: string,
  ) {
    super(`The host name ${host} does not resolve (DNS ${resolverCode})`);
    this.name = 'HostUnresolvableError';
    this.code = resolverCode;
  }
}

/** Resolver codes that are a definitive "no such host" rather than a failure to ask. */
const UNRESOLVABLE_CODES = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `net.connect` lookup function that resolves with the system resolver, refuses the host when any
 * of its addresses is not allowed (a name that points partly inside is treated as inside), and hands
 * net exactly the checked addresses, so the connection goes where the check looked. A name DNS says
 * does not exist fails with HostUnresolvableError (final), a refused address with SsrfRefusedError (final).
 * @param resolve injectable resolver (tests); default `dns.lookup(hostname, { all: true })`
 */
export function guardedLookup(
  allow: AllowList,
  resolve: (hostname: string) => Promise<dns.LookupAddress[]> = (h) => dns.promises.lookup(h, { all: true, verbatim: true }),
) {
  return (hostname: string, options: dns.LookupOptions | number | undefined, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(new HostUnresolvableError(hostname, 'ENODATA') as NodeJS.ErrnoException, '', undefined);
          return;
        }
        for (const a of addresses) {
          const v = checkAddress(a.address, allow);
          if (!v.allowed) {
            callback(new SsrfRefusedError(hostname, v.reason), '', undefined);
            return;
          }
        }
        const opts = typeof options === 'object' && options ? options : {};
        const wanted = opts.family === 4 || opts.family === 6 ? addresses.filter((a) => a.family === opts.family) : addresses;
        const list = wanted.length ? wanted : addresses;
        if (opts.all) callback(null, list);
        else callback(null, list[0].address, list[0].family);
      },
      (err: NodeJS.ErrnoException) =>
        callback(UNRESOLVABLE_CODES.has(err?.code ?? '') ? (new HostUnresolvableError(hostname, err.code!) as NodeJS.ErrnoException) : err, '', undefined),
    );
  };
}
