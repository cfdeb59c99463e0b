/**
 * Sign-in for the consent page (docs/team-and-oauth.md "Team" → "Sign-in"): `GET/POST /login`, `POST /logout`, and the
 * invitation page `GET/POST /invitations/accept` where an invited person sets a password. Sessions live in
 * Postgres (db/repositories/team.ts) behind an opaque `__Host-acp_session` cookie; every form carries a
 * CSRF token; sign-in attempts are throttled per account + address, account and address with
 * exponential back-off, counted before the password is checked (domain/throttle.ts).
 */
import type { AppContext, AppDeps } from '../context';
import {
  acceptInvitation,
  createSession,
  deleteSession,
  EmailTakenError,
  findInvitationByToken,
  findMemberByEmail,
  findSessionByToken,
  getMember,
  type Invitation,
  type Member,
  type WebSession,
} from '../../db/repositories/team';
import { MAX_PASSWORD_LENGTH, normalizeEmail, passwordProblem, SESSION_TTL_SECONDS } from '../../domain/team';
import { signInKeys } from '../../domain/throttle';
import { hashKey } from '../../db/repositories/apiKeys';
import { reserveAttempt, settleSuccess } from '../../db/repositories/throttles';
import { randomBase62 } from '../../db/ids';
import { getOrganization } from '../../db/repositories/organizations';
import { findClient } from '../../db/repositories/oauth';
import { hashPassword, verifyPassword } from '../../services/team/passwords';
import { anonymousCsrf, checkCsrf, CSRF_COOKIE, esc, field, hidden, page, readCookie, readForm, SESSION_COOKIE, setCookie } from './forms';

/** The signed-in member and their session, or undefined. */
export async function currentSession(ctx: AppContext, deps: AppDeps): Promise<{ session: WebSession; member: Member } | undefined> {
  const token = readCookie(ctx, SESSION_COOKIE);
  if (!token || !/^[A-Za-z0-9]{32,64}$/.test(token)) return undefined;
  return findSessionByToken(deps.db, token);
}

/** Where to go after signing in: a local path only (no open redirect), else the sign-in page itself. */
function safeNext(next: string): string {
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/login';
}

/** Name of the short-lived cookie that carries the e-mail of a person who just joined to the sign-in form. */
const JOINED_COOKIE = '__Host-acp_joined';

/**
 * How a forgotten password is reset today (docs/team-and-oauth.md "Team": there is no self-service reset,
 * since the service sends no mail but invitations): an owner or admin removes the member and invites the
 * address again; the new link sets a new password.
 */
const FORGOT_PASSWORD =
  'Forgot your password? Ask an owner or admin of your organization to remove you from the team and invite your address again; the new invitation link lets you set a new password.';

/** The address and organization name a `__Host-acp_joined` cookie carries, or undefined for anything else. */
function readJoined(cookie: string): { email: string; organization?: string } | undefined {
  try {
    const v = JSON.parse(decodeURIComponent(cookie)) as { email?: unknown; organization?: unknown };
    const email = typeof v.email === 'string' ? normalizeEmail(v.email) : undefined;
    if (!email) return undefined;
    return { email, organization: typeof v.organization === 'string' ? v.organization.slice(0, 200) : undefined };
  } catch {
    return undefined;
  }
}

/** The name of an organization, or undefined. */
async function organizationName(deps: AppDeps, orgId: string): Promise<string | undefined> {
  return (await getOrganization(deps.db, orgId))?.name;
}

/**
 * The organization a sign-in is for, when `next` is a consent URL (`/oauth/authorize?client_id=oac_…`):
 * the app's organization. Undefined otherwise (the sign-in page is the same for every organization).
 */
async function organizationOfNext(deps: AppDeps, next: string): Promise<string | undefined> {
  if (!next.startsWith('/oauth/authorize?')) return undefined;
  const clientId = new URLSearchParams(next.slice(next.indexOf('?') + 1)).get('client_id') ?? '';
  if (!/^oac_[A-Za-z0-9]{10,40}$/.test(clientId)) return undefined;
  const client = await findClient(deps.db, clientId);
  return client ? organizationName(deps, client.orgId) : undefined;
}

async function loginForm(
  ctx: AppContext,
  deps: AppDeps,
  status: number,
  opts: { next: string; email?: string; error?: string; notice?: string; organization?: string },
): Promise<void> {
  const csrf = anonymousCsrf(ctx);
  const organization = opts.organization ?? (await organizationOfNext(deps, opts.next));
  page(
    ctx,
    status,
    'Sign in',
    `${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}${opts.notice ? `<p class="notice" role="status">${esc(opts.notice)}</p>` : ''}
<form method="post" action="/login">${hidden('csrf', csrf)}${hidden('next', opts.next)}
<label>Email <input type="email" name="email" autocomplete="username" required value="${esc(opts.email ?? '')}"${opts.email ? '' : ' autofocus'}></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="${MAX_PASSWORD_LENGTH}"${opts.email ? ' autofocus' : ''}></label>
<div class="actions"><button type="submit" class="primary">Sign in</button></div></form>
<p class="muted" id="forgot">${FORGOT_PASSWORD}</p>`,
    { organization },
  );
}

/** GET /login: the sign-in form, or who is signed in (with a sign-out button). */
export async function showLogin(ctx: AppContext, deps: AppDeps): Promise<void> {
  const next = safeNext(field(ctx.query, 'next'));
  const current = await currentSession(ctx, deps);
  if (current && next !== '/login') {
    ctx.redirect(next);
    return;
  }
  if (current) {
    page(
      ctx,
      200,
      'Signed in',
      `<p>Signed in as ${esc(current.member.email)} (${esc(current.member.role)}).</p>
<form method="post" action="/logout">${hidden('csrf', current.session.csrfToken)}<div class="actions"><button type="submit" class="secondary">Sign out</button></div></form>`,
      { organization: await organizationName(deps, current.member.orgId) },
    );
    return;
  }
  // Just joined (submitAcceptInvitation): say the password is set and fill in the address. The cookie's
  // content is only shown back, never looked up, so a hand-made cookie tells nothing about any account.
  const joined = field(ctx.query, 'joined') === '1' ? readJoined(readCookie(ctx, JOINED_COOKIE) ?? '') : undefined;
  if (joined) {
    setCookie(ctx, JOINED_COOKIE, '', 0);
    return loginForm(ctx, deps, 200, { next, email: joined.email, notice: 'Your password is set. Sign in with it to continue.', organization: joined.organization });
  }
  await loginForm(ctx, deps, 200, { next, ...(field(ctx.query, 'signed_out') === '1' ? { notice: 'You are signed out.' } : {}) });
}

/**
 * POST /login: checks the CSRF token, counts the attempt against the throttle (account + address,
 * account, address; OWASP ASVS V2.2.1) before anything else, then the password (argon2id); on success
 * starts a session and answers 303 to `next`. Wrong email and wrong password answer alike (401), in the
 * same time, and are throttled alike.
 * @answers 429 with `Retry-After` (seconds) while a throttle key is closed; the password is then not checked
 */
export async function submitLogin(ctx: AppContext, deps: AppDeps): Promise<void> {
  const form = await readForm(ctx);
  const next = safeNext(field(form, 'next'));
  const email = normalizeEmail(field(form, 'email')) ?? '';
  try {
    checkCsrf(form, readCookie(ctx, CSRF_COOKIE));
  } catch {
    // A stale form (its CSRF cookie expired or was replaced): the form again with a fresh token, in words.
    await loginForm(ctx, deps, 403, { next, email, error: 'This sign-in form had expired. Enter your password again to sign in.' });
    return;
  }
  const password = field(form, 'password').slice(0, MAX_PASSWORD_LENGTH + 1);
  const throttle = signInKeys(email, ctx.ip, hashKey);
  const reserved = await reserveAttempt(deps.db, throttle);
  if (!reserved.ok) {
    ctx.set('Retry-After', String(reserved.retryAfterSeconds));
    await loginForm(ctx, deps, 429, { next, email, error: `Too many sign-in attempts. Try again in ${reserved.retryAfterSeconds} seconds.` });
    return;
  }
  const member = email ? await findMemberByEmail(deps.db, email) : undefined;
  const ok = await verifyPassword(member?.passwordHash, password);
  if (!member || !ok) {
    // The reservation already counted this failure.
    await loginForm(ctx, deps, 401, { next, email, error: 'Wrong email or password.' });
    return;
  }
  await settleSuccess(deps.db, throttle);
  const token = randomBase62(24);
  await createSession(deps.db, member.orgId, member.id, token, randomBase62(24), SESSION_TTL_SECONDS);
  setCookie(ctx, SESSION_COOKIE, token, SESSION_TTL_SECONDS);
  ctx.status = 303;
  ctx.redirect(next);
}

/** POST /logout: ends the session (CSRF-checked) and clears the cookie; 303 to /login, which confirms it. */
export async function submitLogout(ctx: AppContext, deps: AppDeps): Promise<void> {
  const form = await readForm(ctx);
  const current = await currentSession(ctx, deps);
  if (current) {
    checkCsrf(form, current.session.csrfToken);
    await deleteSession(deps.db, current.session.orgId, current.session.id);
  }
  setCookie(ctx, SESSION_COOKIE, '', 0);
  ctx.status = 303;
  ctx.redirect('/login?signed_out=1');
}

/** Who invited, to start a sentence: the inviting member's name and address, or "An owner" when a secret key sent the invitation (keys act as owners). */
async function inviterOf(deps: AppDeps, inv: Invitation): Promise<string> {
  const m = inv.invitedBy ? await getMember(deps.db, inv.orgId, inv.invitedBy) : undefined;
  return m ? (m.name ? `${m.name} (${m.email})` : m.email) : 'An owner';
}

async function acceptForm(ctx: AppContext, deps: AppDeps, status: number, token: string, inv: Invitation, error?: string): Promise<void> {
  const organization = (await organizationName(deps, inv.orgId)) ?? 'the organization';
  page(
    ctx,
    status,
    `Join ${organization}`,
    `${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}<p>${esc(await inviterOf(deps, inv))} invited <strong>${esc(inv.email)}</strong> to join <strong>${esc(organization)}</strong> as ${esc(inv.role)}. Set a password (at least 12 characters) to accept.</p>
<form method="post" action="/invitations/accept">${hidden('csrf', anonymousCsrf(ctx))}${hidden('token', token)}
<label>Your name <input type="text" name="name" maxlength="100" autocomplete="name"></label>
<label>Password <input type="password" name="password" autocomplete="new-password" required minlength="12" maxlength="${MAX_PASSWORD_LENGTH}"></label>
<div class="actions"><button type="submit" class="primary">Join ${esc(organization)}</button></div></form>`,
    { organization },
  );
}

const INVALID_INVITATION = 'This invitation link is unknown, already used, revoked or expired. Ask for a new invitation.';

/** The pending, unexpired invitation of a token, or undefined. */
async function pendingInvitation(deps: AppDeps, token: string) {
  if (!/^[A-Za-z0-9]{32,64}$/.test(token)) return undefined;
  const inv = await findInvitationByToken(deps.db, token);
  return inv && !inv.acceptedAt && !inv.revokedAt && inv.expiresAt.getTime() > Date.now() ? inv : undefined;
}

/** GET /invitations/accept?token=…: the set-password form, or 410 when the link no longer works. */
export async function showAcceptInvitation(ctx: AppContext, deps: AppDeps): Promise<void> {
  const token = field(ctx.query, 'token');
  const inv = await pendingInvitation(deps, token);
  if (!inv) return page(ctx, 410, 'Invitation not valid', `<p>${esc(INVALID_INVITATION)}</p>`);
  await acceptForm(ctx, deps, 200, token, inv);
}

/**
 * POST /invitations/accept: sets the password (argon2id) and makes the member, once; 303 to
 * `/login?joined=1`, which then says the password is set and fills in the address.
 * @answers 400 with the form for a refused password; 410 for a used, revoked or expired invitation
 */
export async function submitAcceptInvitation(ctx: AppContext, deps: AppDeps): Promise<void> {
  const form = await readForm(ctx);
  checkCsrf(form, readCookie(ctx, CSRF_COOKIE));
  const token = field(form, 'token');
  const inv = await pendingInvitation(deps, token);
  if (!inv) return page(ctx, 410, 'Invitation not valid', `<p>${esc(INVALID_INVITATION)}</p>`);
  const password = field(form, 'password');
  const problem = passwordProblem(password);
  if (problem) return acceptForm(ctx, deps, 400, token, inv, `The password ${problem}.`);
  try {
    const m = await acceptInvitation(deps.db, token, { name: field(form, 'name').slice(0, 100), passwordHash: await hashPassword(password) });
    if (!m) return page(ctx, 410, 'Invitation not valid', `<p>${esc(INVALID_INVITATION)}</p>`);
  } catch (err) {
    if (err instanceof EmailTakenError) return page(ctx, 409, 'Already a member', `<p>${esc(inv.email)} is already a member. <a href="/login">Sign in</a>.</p>`);
    throw err;
  }
  // The sign-in page then says the password is set and fills in the address (10 minutes, this browser only).
  setCookie(ctx, JOINED_COOKIE, encodeURIComponent(JSON.stringify({ email: inv.email, organization: await organizationName(deps, inv.orgId) })), 600);
  ctx.status = 303;
  ctx.redirect('/login?joined=1');
}
