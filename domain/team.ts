/**
 * Team rules (spec Team group, team:read / team:write; roles and their powers decided in docs/team-and-oauth.md "Team"):
 * which scopes each role may approve for an OAuth app, who may change whom, and the last-owner rule
 * (sign-in throttling is domain/throttle.ts).
 */
import { NON_RESERVED_SCOPES, type Scope } from './scopes';

/** Roles of a member, most powerful first. */
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
/** One role. */
export type Role = (typeof ROLES)[number];

/** True when `s` is a role. */
export function isRole(s: unknown): s is Role {
  return typeof s === 'string' && (ROLES as readonly string[]).includes(s);
}

/** Scopes a developer may not approve: the ones that manage people, credentials and money. */
const ADMIN_ONLY: ReadonlySet<Scope> = new Set<Scope>(['team:write', 'keys:write', 'billing:read', 'billing:write', 'audit:read', 'pubkeys:write', 'webhooks:write', 'integrations:connect']);

/**
 * The scopes a member of `role` may approve for an OAuth app (docs/team-and-oauth.md "Team"):
 * - `owner` and `admin`: every non-reserved scope;
 * - `developer`: every non-reserved scope except team:write, keys:write, billing:read, billing:write,
 *   audit:read, pubkeys:write, webhooks:write and integrations:connect;
 * - `viewer`: the `:read` scopes only, billing:read and audit:read excepted.
 */
export function approvableScopes(role: Role): ReadonlySet<Scope> {
  return APPROVABLE[role];
}

const APPROVABLE: Record<Role, ReadonlySet<Scope>> = {
  owner: new Set(NON_RESERVED_SCOPES),
  admin: new Set(NON_RESERVED_SCOPES),
  developer: new Set(NON_RESERVED_SCOPES.filter((s) => !ADMIN_ONLY.has(s))),
  viewer: new Set(NON_RESERVED_SCOPES.filter((s) => s.endsWith(':read') && !ADMIN_ONLY.has(s))),
};

/**
 * Why a caller acting with `actor` authority may not give `target` the role `next` (or remove it when
 * `next` is undefined), or undefined when allowed. Only an owner makes, demotes or removes an owner;
 * API keys (no member behind them) act as owners. The last-owner rule is checked in the data layer,
 * under a lock (db/repositories/team.ts).
 */
export function roleChangeRefusal(actor: Role, target: Role, next?: Role): string | undefined {
  if (actor === 'owner') return undefined;
  if (target === 'owner' || next === 'owner') return 'only an owner can make, demote or remove an owner';
  if (actor !== 'admin') return 'only an owner or an admin can change the team';
  return undefined;
}

/** Lifetime of an invitation, in seconds (7 days). */
export const INVITATION_TTL_SECONDS = 7 * 86_400;
/** Lifetime of a sign-in session, in seconds (12 h). */
export const SESSION_TTL_SECONDS = 12 * 3600;
/** Shortest password accepted (NIST SP 800-63B §5.1.1.2: at least 8 characters). */
export const MIN_PASSWORD_LENGTH = 12;
/** Longest password accepted (bounds the hashing work per request). */
export const MAX_PASSWORD_LENGTH = 256;

/** Why `password` is refused, or undefined when it is acceptable (NIST SP 800-63B §5.1.1.2: length, not composition). */
export function passwordProblem(password: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `must be at most ${MAX_PASSWORD_LENGTH} characters`;
  return undefined;
}

/** An email address normalized for comparison (trimmed, lower case), or undefined when it is not one (RFC 5321 shape, loosely). */
export function normalizeEmail(raw: string): string | undefined {
  const e = raw.trim().toLowerCase();
  return /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/.test(e) && e.length <= 254 ? e : undefined;
}

/**
 * A moment as people read it in an email, in UTC: "Thursday, November 26, 2026, 14:05 UTC" (English,
 * 24-hour clock; the zone is named, since the reader's own is unknown).
 */
export function humanUtcDate(at: Date): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', weekday: 'long', year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  return `${parts.weekday}, ${parts.month} ${parts.day}, ${parts.year}, ${parts.hour}:${parts.minute} UTC`;
}
