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
  type Member,
  type WebSession,
} from '../../db/repositories/team';
import { MAX_PASSWORD_LENGTH, normalizeEmail, passwordProblem, SESSION_TTL_SECONDS } from '../../domain/team';
import { signInKeys } from '../../domain/throttle';
import { hashKey } from '../../db/repositories/apiKeys';
import { reserveAttempt, settleSuccess } from '../../db/repositories/throttles';
import { randomBase62 } from '../../db/ids';
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

function loginForm(ctx: AppContext, status: number, opts: { next: string; email?: string; error?: string }): void {
  const csrf = anonymousCsrf(ctx);
  page(
    ctx,
    status,
    'Sign in',
    `${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}
<form method="post" action="/login">${hidden('csrf', csrf)}${hidden('next', opts.next)}
<label>Email <input type="email" name="email" autocomplete="username" required value="${esc(opts.email ?? '')}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required maxlength="${MAX_PASSWORD_LENGTH}"></label>
<button type="submit">Sign in</button></form>`,
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
<form method="post" action="/logout">${hidden('csrf', current.session.csrfToken)}<button type="submit">Sign out</button></form>`,
    );
    return;
  }
  loginForm(ctx, 200, { next });
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
  checkCsrf(form, readCookie(ctx, CSRF_COOKIE));
  const next = safeNext(field(form, 'next'));
  const email = normalizeEmail(field(form, 'email')) ?? '';
  const password = field(form, 'password').slice(0, MAX_PASSWORD_LENGTH + 1);
  const throttle = signInKeys(email, ctx.ip, hashKey);
  const reserved = await reserveAttempt(deps.db, throttle);
  if (!reserved.ok) {
    ctx.set('Retry-After', String(reserved.retryAfterSeconds));
    loginForm(ctx, 429, { next, email, error: `Too many sign-in attempts. Try again in ${reserved.retryAfterSeconds} seconds.` });
    return;
  }
  const member = email ? await findMemberByEmail(deps.db, email) : undefined;
  const ok = await verifyPassword(member?.passwordHash, password);
  if (!member || !ok) {
    // The reservation already counted this failure.
    loginForm(ctx, 401, { next, email, error: 'Wrong email or password.' });
    return;
  }
  await settleSuccess(deps.db, throttle);
  const token = randomBase62(24);
  await createSession(deps.db, member.orgId, member.id, token, randomBase62(24), SESSION_TTL_SECONDS);
  setCookie(ctx, SESSION_COOKIE, token, SESSION_TTL_SECONDS);
  ctx.status = 303;
  ctx.redirect(next);
}

/** POST /logout: ends the session (CSRF-checked) and clears the cookie; 303 to /login. */
export async function submitLogout(ctx: AppContext, deps: AppDeps): Promise<void> {
  const form = await readForm(ctx);
  const current = await currentSession(ctx, deps);
  if (current) {
    checkCsrf(form, current.session.csrfToken);
    await deleteSession(deps.db, current.session.orgId, current.session.id);
  }
  setCookie(ctx, SESSION_COOKIE, '', 0);
  ctx.status = 303;
  ctx.redirect('/login');
}

function acceptForm(ctx: AppContext, status: number, token: string, email: string, error?: string): void {
  page(
    ctx,
    status,
    'Join the organization',
    `${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}<p>Set a password for ${esc(email)} (at least 12 characters).</p>
<form method="post" action="/invitations/accept">${hidden('csrf', anonymousCsrf(ctx))}${hidden('token', token)}
<label>Your name <input type="text" name="name" maxlength="100"></label>
<label>Password <input type="password" name="password" autocomplete="new-password" required minlength="12" maxlength="${MAX_PASSWORD_LENGTH}"></label>
<button type="submit">Join</button></form>`,
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
  acceptForm(ctx, 200, token, inv.email);
}

/**
 * POST /invitations/accept: sets the password (argon2id) and makes the member, once; 303 to /login.
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
  if (problem) return acceptForm(ctx, 400, token, inv.email, `The password ${problem}.`);
  try {
    const m = await acceptInvitation(deps.db, token, { name: field(form, 'name').slice(0, 100), passwordHash: await hashPassword(password) });
    if (!m) return page(ctx, 410, 'Invitation not valid', `<p>${esc(INVALID_INVITATION)}</p>`);
  } catch (err) {
    if (err instanceof EmailTakenError) return page(ctx, 409, 'Already a member', `<p>${esc(inv.email)} is already a member. <a href="/login">Sign in</a>.</p>`);
    throw err;
  }
  ctx.status = 303;
  ctx.redirect('/login');
}
