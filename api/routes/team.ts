/**
 * Team (spec Team group, scopes team:read and team:write; paths and fields decided in docs/team-and-oauth.md "Team"):
 * members and their roles, invitations by email (mailer provider, single-use expiring token), removal,
 * and the OAuth grants members approved. The last owner cannot be removed or demoted. Called with an
 * OAuth access token, or with a key minted through one, the caller acts with the role of the member who
 * approved the app; any other secret key acts as an owner (it was minted by one).
 */
import type { AppContext, AppDeps, Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { listHandler, orgOf, pageParams, paged } from '../http';
import { setAuditResource } from '../middleware/audit';
import {
  changeMemberRole,
  createInvitation,
  findMemberByEmail,
  getMember,
  LastOwnerError,
  listInvitations,
  listMembers,
  memberOfGrant,
  removeMember,
  revokeInvitation,
  type Invitation,
  type Member,
} from '../../db/repositories/team';
import { getGrant, listGrants, revokeGrant, type OAuthGrant } from '../../db/repositories/oauth';
import { humanUtcDate, INVITATION_TTL_SECONDS, normalizeEmail, roleChangeRefusal, type Role } from '../../domain/team';
import { getOrganization } from '../../db/repositories/organizations';
import { PRODUCT_NAME } from '../pages/theme';
import { randomBase62 } from '../../db/ids';
import type { OAuthGrantView, TeamInvitation, TeamInvitationCreate, TeamMember, TeamMemberUpdate, TeamRemoval } from '../../schemas/types/team';

/** The wire form of a member. */
export function toMemberView(m: Member): TeamMember {
  return { id: m.id, email: m.email, name: m.name, role: m.role, createdAt: m.createdAt.toISOString() };
}

function toInvitationView(i: Invitation): TeamInvitation {
  return { id: i.id, email: i.email, role: i.role, invitedBy: i.invitedBy, expiresAt: i.expiresAt.toISOString(), createdAt: i.createdAt.toISOString() };
}

/** The wire form of a grant. */
export function toGrantView(g: OAuthGrant): OAuthGrantView {
  return { id: g.id, clientId: g.clientId, memberId: g.memberId, scopes: g.scopes, createdAt: g.createdAt.toISOString() };
}

/**
 * The caller's role and member id: the approving member's for an OAuth token and for a key minted
 * through one (AuthContext.grantId: delegation never raises the role), `owner` for a key an owner minted.
 */
async function actorOf(ctx: AppContext, db: AppDeps['db']): Promise<{ role: Role; memberId: string | null }> {
  const auth = ctx.state.auth!;
  if (!auth.grantId) return { role: 'owner', memberId: null };
  const m = await memberOfGrant(db, auth.orgId, auth.grantId);
  if (!m) throw new ApiError(401, 'invalid_token', 'The member who approved this token is no longer in the organization');
  return { role: m.role, memberId: m.id };
}

function forbidden(reason: string): ApiError {
  return new ApiError(403, 'role_not_allowed', `Not allowed: ${reason}`);
}

function lastOwner(): ApiError {
  return new ApiError(409, 'last_owner', 'The last owner of the organization cannot be removed or demoted; make another member an owner first');
}

/** GET /team/members: the organization's members, oldest first, cursor-paginated. */
export const listTeamMembers: Handler = listHandler(listMembers, toMemberView);

/**
 * PATCH /team/members/{id}: changes a member's role.
 * @throws 404 member_not_found; 403 role_not_allowed (only an owner makes, demotes or removes an owner;
 *   viewers and developers change nothing); 409 last_owner
 */
export const updateTeamMember: Handler = async (ctx, { db }) => {
  const { role } = ctx.request.body as unknown as TeamMemberUpdate;
  const actor = await actorOf(ctx, db);
  try {
    const m = await changeMemberRole(db, orgOf(ctx), ctx.params.id, role, (target) => {
      const refusal = roleChangeRefusal(actor.role, target.role, role);
      if (refusal) throw forbidden(refusal);
    });
    if (!m) throw notFound(`Member ${ctx.params.id}`, 'member_not_found');
    setAuditResource(ctx, 'member', m.id);
    return { data: toMemberView(m) };
  } catch (err) {
    if (err instanceof LastOwnerError) throw lastOwner();
    throw err;
  }
};

/**
 * DELETE /team/members/{id}: removes a member; their OAuth grants and tokens stop at once in every API process.
 * @throws 404 member_not_found; 403 role_not_allowed; 409 last_owner
 */
export const removeTeamMember: Handler = async (ctx, { db }) => {
  const actor = await actorOf(ctx, db);
  try {
    const m = await removeMember(db, orgOf(ctx), ctx.params.id, (target) => {
      const refusal = roleChangeRefusal(actor.role, target.role);
      if (refusal) throw forbidden(refusal);
    });
    if (!m) throw notFound(`Member ${ctx.params.id}`, 'member_not_found');
    setAuditResource(ctx, 'member', m.id);
    const data: TeamRemoval = { id: m.id, removed: true };
    return { data };
  } catch (err) {
    if (err instanceof LastOwnerError) throw lastOwner();
    throw err;
  }
};

/** GET /team/invitations: pending invitations (expired ones included, with their `expiresAt`), oldest first. */
export const listTeamInvitations: Handler = listHandler(listInvitations, toInvitationView);

/**
 * POST /team/invitations: invites a person by email (201). The email carries a single-use link to
 * `/invitations/accept?token=…`, valid 7 days; the token is never in an API answer. An address that
 * already has an account in another organization answers exactly like any other address (OWASP ASVS
 * V2.2 / WSTG-IDNT-04: no account enumeration); only its email differs, telling the person to sign in
 * with their existing account.
 * @throws 400 validation_error naming `email`; 403 role_not_allowed (inviting an owner takes an owner;
 *   inviting at all takes an owner or admin); 409 member_exists (a member of this organization only);
 *   502 mailer_unavailable (nothing kept)
 */
export const createTeamInvitation: Handler = async (ctx, { db, config, providers }) => {
  const body = ctx.request.body as unknown as TeamInvitationCreate;
  const email = normalizeEmail(body.email);
  if (!email) throw validationError([{ field: 'email', message: 'must be an email address' }]);
  const actor = await actorOf(ctx, db);
  const refusal = roleChangeRefusal(actor.role, 'viewer', body.role);
  if (refusal) throw forbidden(refusal);
  const orgId = orgOf(ctx);
  const existing = await findMemberByEmail(db, email);
  if (existing?.orgId === orgId) throw new ApiError(409, 'member_exists', `${email} is already a member`, { errors: [{ field: 'email', message: 'is already a member' }] });
  const token = randomBase62(24);
  const inv = await createInvitation(db, orgId, { email, role: body.role, invitedBy: actor.memberId, token, ttlSeconds: INVITATION_TTL_SECONDS });
  const link = `${config.publicBaseUrl}/invitations/accept?token=${token}`;
  const organization = (await getOrganization(db, orgId))?.name ?? 'an organization';
  const inviter = actor.memberId ? await getMember(db, orgId, actor.memberId) : undefined;
  const who = inviter ? (inviter.name ? `${inviter.name} (${inviter.email})` : inviter.email) : `An owner of ${organization}`;
  const opening = `${who} invited you to join ${organization} on ${PRODUCT_NAME} as ${body.role}.`;
  // An address signs in to one organization (docs/team-and-oauth.md "Team"), so a person who already has an account is
  // told to use it rather than sent a set-password link that could only fail.
  const text = existing
    ? `${opening}\n\nThis address already has an account: you can sign in with your existing account at ${config.publicBaseUrl}/login. An address belongs to one organization; to join ${organization} as well, ask the person who invited you to invite another address of yours.\n`
    : `${opening}\n\nSet your password here to accept. The link works once, until ${humanUtcDate(inv.expiresAt)}:\n${link}\n`;
  try {
    await providers.mailer.send({ to: email, subject: `${who.replace(/ \(.*\)$/, '')} invited you to ${organization} on ${PRODUCT_NAME}`, text });
  } catch (err) {
    await revokeInvitation(db, orgId, inv.id);
    ctx.state.log.warn({ err }, 'invitation email not sent');
    throw new ApiError(502, 'mailer_unavailable', 'The invitation email could not be sent; nothing was kept, try again');
  }
  setAuditResource(ctx, 'invitation', inv.id);
  return { data: toInvitationView(inv), status: 201, message: `Invitation sent to ${email}` };
};

/**
 * DELETE /team/invitations/{id}: revokes a pending invitation (its link stops working). An owner
 * invitation is managed by owners only, like owners themselves.
 * @throws 404 invitation_not_found; 403 role_not_allowed
 */
export const revokeTeamInvitation: Handler = async (ctx, { db }) => {
  const actor = await actorOf(ctx, db);
  const inv = await revokeInvitation(db, orgOf(ctx), ctx.params.id, (pending) => {
    const refusal = roleChangeRefusal(actor.role, pending.role);
    if (refusal) throw forbidden(refusal);
  });
  if (!inv) throw notFound(`Invitation ${ctx.params.id}`, 'invitation_not_found');
  const data: TeamRemoval = { id: inv.id, removed: true };
  return { data };
};

/** GET /team/grants[?memberId=]: live OAuth grants (apps members approved), oldest first. */
export const listTeamGrants: Handler = async (ctx, { db }) => {
  const memberId = typeof ctx.query.memberId === 'string' ? ctx.query.memberId : undefined;
  const page = pageParams(ctx);
  const out = await paged(() => listGrants(db, orgOf(ctx), page, memberId));
  return { data: { ...out, items: out.items.map(toGrantView) } };
};

/**
 * DELETE /team/grants/{id}: revokes an app's approval; every access and refresh token it issued stops at
 * once in every API process. A member may revoke their own grants; others' take an owner or admin.
 * @throws 404 grant_not_found; 403 role_not_allowed
 */
export const revokeTeamGrant: Handler = async (ctx, { db }) => {
  const actor = await actorOf(ctx, db);
  const orgId = orgOf(ctx);
  const existing = await getGrant(db, orgId, ctx.params.id);
  if (!existing) throw notFound(`Grant ${ctx.params.id}`, 'grant_not_found');
  if (actor.role !== 'owner' && actor.role !== 'admin' && existing.memberId !== actor.memberId) {
    throw forbidden("only an owner or an admin can revoke another member's grant");
  }
  const g = await revokeGrant(db, orgId, ctx.params.id);
  if (!g) throw notFound(`Grant ${ctx.params.id}`, 'grant_not_found');
  setAuditResource(ctx, 'oauth_grant', g.id);
  return { data: toGrantView(g) };
};

/** Handlers of this area by operationId. */
export const handlers = {
  listTeamMembers,
  updateTeamMember,
  removeTeamMember,
  listTeamInvitations,
  createTeamInvitation,
  revokeTeamInvitation,
  listTeamGrants,
  revokeTeamGrant,
};

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  listTeamMembers: { responseSchema: 'TeamMemberList' },
  updateTeamMember: { requestSchema: 'TeamMemberUpdate', responseSchema: 'TeamMember' },
  removeTeamMember: { responseSchema: 'TeamRemoval' },
  listTeamInvitations: { responseSchema: 'TeamInvitationList' },
  createTeamInvitation: { requestSchema: 'TeamInvitationCreate', responseSchema: 'TeamInvitation' },
  revokeTeamInvitation: { responseSchema: 'TeamRemoval' },
  listTeamGrants: { responseSchema: 'OAuthGrantList' },
  revokeTeamGrant: { responseSchema: 'OAuthGrantView' },
};
