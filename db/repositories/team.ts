/**
 * Members, invitations and sign-in sessions (spec Team group; docs/team-and-oauth.md "Team"). Passwords are stored as
 * argon2id hashes made by the caller (services/team/passwords.ts); invitation tokens and session
 * cookies only as SHA-256 hashes (they carry 192 random bits, so a fast hash is safe). Every function takes
 * the organization id, except those whose purpose is to find it from a credential (`findMemberByEmail`,
 * `findInvitationByToken`, `findSessionByToken`).
 */
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { fromColumns, fromNullableColumns } from '../rows';
import { hashKey } from './apiKeys';
import type { Role } from '../../domain/team';

/** A member as the API shows it (never the password hash). */
export interface Member {
  id: string;
  orgId: string;
  email: string;
  name: string;
  role: Role;
  createdAt: Date;
}

/** A member with what sign-in needs (throttling is db/repositories/throttles.ts). */
export interface MemberCredentials extends Member {
  passwordHash: string | null;
}

/** An invitation (never its token). */
export interface Invitation {
  id: string;
  orgId: string;
  email: string;
  role: Role;
  invitedBy: string | null;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
}

/** A sign-in session. */
export interface WebSession {
  id: string;
  orgId: string;
  memberId: string;
  csrfToken: string;
  expiresAt: Date;
}

/** The change would leave the organization without an owner (docs/team-and-oauth.md "Team": the last owner stays). */
export class LastOwnerError extends Error {
  constructor() {
    super('the last owner of an organization cannot be removed or demoted');
    this.name = 'LastOwnerError';
  }
}

/** The email already belongs to a member (of this or another organization). */
export class EmailTakenError extends Error {
  constructor(email: string) {
    super(`${email} is already a member`);
    this.name = 'EmailTakenError';
  }
}

const toMember = (r: Record<string, any>): Member => fromColumns(r, ['id', 'orgId', 'email', 'name', 'role', 'createdAt']);
const toCredentials = (r: Record<string, any>): MemberCredentials => ({
  ...toMember(r),
  ...fromNullableColumns(r, ['passwordHash']),
});
const toInvitation = (r: Record<string, any>): Invitation => ({
  ...fromColumns(r, ['id', 'orgId', 'email', 'role', 'expiresAt', 'createdAt']),
  ...fromNullableColumns(r, ['invitedBy', 'acceptedAt', 'revokedAt']),
});

/**
 * Adds a member. @param passwordHash argon2id hash (null: cannot sign in until a password is set)
 * @throws EmailTakenError when the email is already a member's
 */
export async function createMember(
  db: Db,
  orgId: string,
  m: { email: string; name?: string; role: Role; passwordHash: string | null },
): Promise<Member> {
  const [row] = await db('members')
    .insert({ id: newId('mem'), org_id: orgId, email: m.email.toLowerCase(), name: m.name ?? '', role: m.role, password_hash: m.passwordHash })
    .onConflict('email')
    .ignore()
    .returning('*');
  if (!row) throw new EmailTakenError(m.email);
  return toMember(row);
}

/** One page of the organization's members, oldest first. @throws InvalidCursorError */
export function listMembers(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<Member>> {
  return keysetPage(db('members').where({ org_id: orgId }).select('*'), { ...page, column: 'seq', map: toMember });
}

/** One member of the organization, or undefined (also for another organization's). */
export async function getMember(db: Db, orgId: string, memberId: string): Promise<Member | undefined> {
  const row = await db('members').where({ org_id: orgId, id: memberId }).first();
  return row ? toMember(row) : undefined;
}

/** The member signing in with this (normalized) email, with their password hash. */
export async function findMemberByEmail(db: Db, email: string): Promise<MemberCredentials | undefined> {
  const row = await db('members').where({ email }).first();
  return row ? toCredentials(row) : undefined;
}

/** Locks the organization's owners (in `trx`) and refuses a change that would leave none. @throws LastOwnerError */
async function keepAnOwner(trx: Db, orgId: string, memberId: string): Promise<Record<string, any> | undefined> {
  const owners = await trx('members').where({ org_id: orgId, role: 'owner' }).forUpdate().select('id');
  const row = await trx('members').where({ org_id: orgId, id: memberId }).forUpdate().first();
  if (row?.role === 'owner' && owners.length <= 1) throw new LastOwnerError();
  return row;
}

/**
 * Changes a member's role; demoting the last owner is refused. The member's OAuth grants keep their
 * scopes (an approval is not widened or narrowed by a later role change).
 * @param check called with the member before the write (the caller's permission rule); may throw
 * @returns the member as it is now, or undefined when the organization has no such member
 * @throws LastOwnerError
 */
export async function changeMemberRole(db: Db, orgId: string, memberId: string, role: Role, check: (m: Member) => void): Promise<Member | undefined> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const current = await t('members').where({ org_id: orgId, id: memberId }).first();
    if (!current) return undefined;
    check(toMember(current));
    if (role !== 'owner') await keepAnOwner(t, orgId, memberId);
    const [row] = await t('members').where({ org_id: orgId, id: memberId }).update({ role }).returning('*');
    return toMember(row);
  });
}

/**
 * Removes a member: their OAuth grants and access tokens are revoked in the same transaction (the change
 * feed evicts the tokens from every API process), then the row, its sessions and grants go.
 * @param check called with the member before anything is written; may throw
 * @returns the removed member, or undefined when the organization has no such member
 * @throws LastOwnerError
 */
export async function removeMember(db: Db, orgId: string, memberId: string, check: (m: Member) => void): Promise<Member | undefined> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const current = await t('members').where({ org_id: orgId, id: memberId }).first();
    if (!current) return undefined;
    check(toMember(current));
    await keepAnOwner(t, orgId, memberId);
    const grants = () => t('oauth_grants').where({ org_id: orgId, member_id: memberId }).select('id');
    // Their apps' access tokens and every key those tokens minted (api_keys.via_grant_id).
    await t('api_keys')
      .where({ org_id: orgId })
      .where((k) => k.whereIn('oauth_grant_id', grants()).orWhereIn('via_grant_id', grants()))
      .whereNull('revoked_at')
      .update({ revoked_at: t.fn.now() });
    await t('members').where({ org_id: orgId, id: memberId }).delete();
    return toMember(current);
  });
}

/**
 * Creates an invitation with a single-use token (returned once; stored as SHA-256).
 * @param ttlSeconds seconds until it expires
 */
export async function createInvitation(
  db: Db,
  orgId: string,
  inv: { email: string; role: Role; invitedBy: string | null; token: string; ttlSeconds: number },
): Promise<Invitation> {
  const [row] = await db('invitations')
    .insert({
      id: newId('inv'),
      org_id: orgId,
      email: inv.email,
      role: inv.role,
      invited_by: inv.invitedBy,
      token_hash: hashKey(inv.token),
      expires_at: db.raw('now() + make_interval(secs => ?)', [inv.ttlSeconds]),
    })
    .returning('*');
  return toInvitation(row);
}

/** One page of the organization's pending invitations (not accepted, not revoked; expired ones included), oldest first. */
export function listInvitations(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<Invitation>> {
  return keysetPage(db('invitations').where({ org_id: orgId }).whereNull('accepted_at').whereNull('revoked_at').select('*'), { ...page, column: 'seq', map: toInvitation });
}

/**
 * Revokes a pending invitation.
 * @param check called with the invitation, locked, before it is revoked (the caller's permission rule); may throw
 * @returns it, or undefined when the organization has no such pending invitation
 */
export async function revokeInvitation(db: Db, orgId: string, invitationId: string, check?: (inv: Invitation) => void): Promise<Invitation | undefined> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const pending = t('invitations').where({ org_id: orgId, id: invitationId }).whereNull('accepted_at');
    const current = await pending.clone().forUpdate().first();
    if (!current) return undefined;
    check?.(toInvitation(current));
    const [row] = await pending.clone().update({ revoked_at: t.raw('coalesce(revoked_at, now())') }).returning('*');
    return toInvitation(row);
  });
}

/** The invitation of a token, whatever its state (the caller tells expired, used and revoked apart). */
export async function findInvitationByToken(db: Db, token: string): Promise<Invitation | undefined> {
  const row = await db('invitations').where({ token_hash: hashKey(token) }).first();
  return row ? toInvitation(row) : undefined;
}

/**
 * Accepts an invitation once: marks it used and creates the member with the password hash, in one
 * transaction. @returns the new member, or undefined when the token is unknown, used, revoked or expired
 * @throws EmailTakenError
 */
export async function acceptInvitation(db: Db, token: string, m: { name: string; passwordHash: string }): Promise<Member | undefined> {
  return db.transaction(async (trx) => {
    const t = trx as unknown as Db;
    const [inv] = await t('invitations')
      .where({ token_hash: hashKey(token) })
      .whereNull('accepted_at')
      .whereNull('revoked_at')
      .where('expires_at', '>', t.fn.now())
      .update({ accepted_at: t.fn.now() })
      .returning('*');
    if (!inv) return undefined;
    return createMember(t, inv.org_id, { email: inv.email, name: m.name, role: inv.role, passwordHash: m.passwordHash });
  });
}

/**
 * Starts a sign-in session. @param token the cookie value (stored as SHA-256)
 * @param csrfToken the session's CSRF token (compared in constant time by the caller)
 */
export async function createSession(db: Db, orgId: string, memberId: string, token: string, csrfToken: string, ttlSeconds: number): Promise<void> {
  await db('web_sessions').insert({
    id: newId('wss'),
    org_id: orgId,
    member_id: memberId,
    token_hash: hashKey(token),
    csrf_token: csrfToken,
    expires_at: db.raw('now() + make_interval(secs => ?)', [ttlSeconds]),
  });
}

/** The live session of a cookie value with its member, or undefined (unknown, expired, or the member was removed). */
export async function findSessionByToken(db: Db, token: string): Promise<{ session: WebSession; member: Member } | undefined> {
  const row = await db('web_sessions as s')
    .join('members as m', 'm.id', 's.member_id')
    .where('s.token_hash', hashKey(token))
    .where('s.expires_at', '>', db.fn.now())
    .first('s.id as session_id', 's.csrf_token', 's.expires_at as session_expires_at', 'm.*');
  if (!row) return undefined;
  return {
    session: { id: row.session_id, orgId: row.org_id, memberId: row.id, csrfToken: row.csrf_token, expiresAt: row.session_expires_at },
    member: toMember(row),
  };
}

/** Ends a session (sign-out). */
export async function deleteSession(db: Db, orgId: string, sessionId: string): Promise<void> {
  await db('web_sessions').where({ org_id: orgId, id: sessionId }).delete();
}

/**
 * The member whose approval made the OAuth grant `grantId` (the grant behind an access token, or behind a
 * key such a token minted), or undefined when the grant or its member is gone.
 */
export async function memberOfGrant(db: Db, orgId: string, grantId: string): Promise<Member | undefined> {
  const row = await db('oauth_grants as g')
    .join('members as m', 'm.id', 'g.member_id')
    .where({ 'g.org_id': orgId, 'g.id': grantId })
    .first('m.*');
  return row ? toMember(row) : undefined;
}
