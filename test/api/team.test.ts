/**
 * Team (spec Team group; README "Team"): invitations through the sandbox mailer with a single-use,
 * expiring link, acceptance through the real form (CSRF token included), argon2id password hashes, role
 * changes and removal under the last-owner rule, and sign-in with lock-out and sign-out. Real HTTP on a
 * real Postgres.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { Browser, hiddenFields } from '../helpers/browser';
import { SandboxMailer } from '../../providers/mailer/sandbox';
import { createMember } from '../../db/repositories/team';
import { hashPassword } from '../../services/team/passwords';
import { LOCKOUT_THRESHOLD } from '../../domain/team';

const PASSWORD = 'a long enough password';

describe('Team (/team) and sign-in (/login)', () => {
  const mailer = new SandboxMailer();
  const t = useTestApi('team', {}, { providers: { mailer } });
  let origin: string;
  let org: { orgId: string; key: string };

  /** Invites `email` as `role` and returns the link the email carries, on this test server's origin. */
  async function invite(email: string, role: string, key = org.key): Promise<{ id: string; link: string }> {
    const res = await t.call('POST', '/team/invitations', { key, json: { email, role } });
    expect(res.status, res.text).to.equal(201);
    const mail = mailer.sent.at(-1)!;
    expect(mail.to).to.equal(email.toLowerCase());
    const link = new URL(/https?:\/\/\S+\/invitations\/accept\?token=\S+/.exec(mail.text)![0]);
    return { id: res.body.data.id, link: `${link.pathname}${link.search}` };
  }

  /** Accepts an invitation through the real form. */
  async function accept(link: string, password = PASSWORD) {
    const b = new Browser(origin);
    const form = await b.get(link);
    if (form.status !== 200) return form;
    return b.post('/invitations/accept', { ...hiddenFields(form.html), name: 'New Person', password });
  }

  before(async () => {
    origin = new URL(t.api.baseUrl).origin;
    org = await t.org('Team Org');
    await createMember(t.db, org.orgId, { email: 'founder@team.example', role: 'owner', passwordHash: await hashPassword(PASSWORD) });
  });

  it('invites by email, accepts once through the form, stores an argon2id hash, and signs the member in', async () => {
    const { id, link } = await invite('Dev@Team.example', 'developer');
    expect(mailer.sent.at(-1)!.text).to.not.include('undefined');
    const pending = await t.call('GET', '/team/invitations', { key: org.key });
    expect(pending.body.data.items.map((i: { id: string }) => i.id)).to.include(id);
    expect(pending.text).to.not.include(link.split('token=')[1]);
    const done = await accept(link);
    expect(done.status, done.html).to.equal(303);
    expect(done.location).to.equal('/login');
    const stored = await t.db('members').where({ email: 'dev@team.example' }).first();
    expect(stored.password_hash).to.match(/^\$argon2id\$/);
    expect(stored.role).to.equal('developer');
    // Single use.
    const again = await accept(link);
    expect(again.status).to.equal(410);
    const members = await t.call('GET', '/team/members', { key: org.key });
    expect(members.body.data.items.map((m: { email: string }) => m.email)).to.include('dev@team.example');
    expect(members.text).to.not.include('argon2');
    const b = new Browser(origin);
    const signedIn = await b.signIn('dev@team.example', PASSWORD);
    expect(signedIn.status).to.equal(303);
    const cookie = signedIn.headers.getSetCookie().find((c) => c.startsWith('__Host-acp_session='))!;
    expect(cookie).to.include('HttpOnly').and.include('Secure').and.include('SameSite=Lax').and.include('Path=/');
    expect((await b.get('/login')).html).to.include('Signed in as dev@team.example');
  });

  it('refuses an expired or revoked invitation, and a short password', async () => {
    const expired = await invite('late@team.example', 'viewer');
    await t.db('invitations').where({ id: expired.id }).update({ expires_at: t.db.raw("now() - interval '1 second'") });
    expect((await accept(expired.link)).status).to.equal(410);
    const revoked = await invite('nope@team.example', 'viewer');
    expect((await t.call('DELETE', `/team/invitations/${revoked.id}`, { key: org.key })).status).to.equal(200);
    expect((await accept(revoked.link)).status).to.equal(410);
    const short = await invite('short@team.example', 'viewer');
    const res = await accept(short.link, 'short');
    expect(res.status).to.equal(400);
    expect(res.html).to.include('at least 12 characters');
    expect(await t.db('members').where({ email: 'short@team.example' }).first()).to.equal(undefined);
  });

  it('validates invitations: the email field, an existing member, and a mailer refusal (nothing kept)', async () => {
    const bad = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'not-an-email', role: 'viewer' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].field).to.equal('email');
    const role = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'x@team.example', role: 'emperor' } });
    expect(role.status).to.equal(400);
    expect(role.body.errors.map((e: { field: string }) => e.field)).to.include('role');
    const exists = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'founder@team.example', role: 'viewer' } });
    expect(exists.status).to.equal(409);
    const failed = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'someone@fail.example', role: 'viewer' } });
    expect(failed.status).to.equal(502);
    expect(failed.body.code).to.equal('mailer_unavailable');
    const pending = await t.call('GET', '/team/invitations?limit=200', { key: org.key });
    expect(pending.body.data.items.map((i: { email: string }) => i.email)).to.not.include('someone@fail.example');
  });

  it('keeps the last owner: neither demoted nor removed; another owner makes it possible', async () => {
    const o = await t.org('One Owner');
    const only = await createMember(t.db, o.orgId, { email: 'solo@owner.example', role: 'owner', passwordHash: null });
    const demote = await t.call('PATCH', `/team/members/${only.id}`, { key: o.key, json: { role: 'admin' } });
    expect(demote.status).to.equal(409);
    expect(demote.body.code).to.equal('last_owner');
    const remove = await t.call('DELETE', `/team/members/${only.id}`, { key: o.key });
    expect(remove.status).to.equal(409);
    const second = await createMember(t.db, o.orgId, { email: 'second@owner.example', role: 'admin', passwordHash: null });
    expect((await t.call('PATCH', `/team/members/${second.id}`, { key: o.key, json: { role: 'owner' } })).body.data.role).to.equal('owner');
    expect((await t.call('PATCH', `/team/members/${only.id}`, { key: o.key, json: { role: 'viewer' } })).status).to.equal(200);
    expect((await t.call('DELETE', `/team/members/${only.id}`, { key: o.key })).status).to.equal(200);
    expect((await t.call('GET', '/team/members', { key: o.key })).body.data.items.map((m: { id: string }) => m.id)).to.deep.equal([second.id]);
  });

  it("answers 404 for another organization's member and invitation, and needs team scopes", async () => {
    const other = await t.org('Other Team');
    const theirs = await createMember(t.db, other.orgId, { email: 'theirs@other.example', role: 'viewer', passwordHash: null });
    expect((await t.call('PATCH', `/team/members/${theirs.id}`, { key: org.key, json: { role: 'admin' } })).status).to.equal(404);
    expect((await t.call('DELETE', `/team/members/${theirs.id}`, { key: org.key })).status).to.equal(404);
    const inv = await invite('guest@other.example', 'viewer', other.key);
    expect((await t.call('DELETE', `/team/invitations/${inv.id}`, { key: org.key })).status).to.equal(404);
    expect((await t.call('GET', '/team/members', { key: org.key })).text).to.not.include('theirs@other.example');
    const readOnly = (await t.org('Reader', ['team:read'])).key;
    expect((await t.call('GET', '/team/members', { key: readOnly })).status).to.equal(200);
    const w = await t.call('POST', '/team/invitations', { key: readOnly, json: { email: 'a@b.example', role: 'viewer' } });
    expect(w.status).to.equal(403);
    expect(w.body.code).to.equal('insufficient_scope');
  });

  it('locks an account after repeated failures, even for the right password, and answers unknown emails alike', async () => {
    await createMember(t.db, org.orgId, { email: 'locked@team.example', role: 'viewer', passwordHash: await hashPassword(PASSWORD) });
    const b = new Browser(origin);
    const unknown = await b.signIn('nobody@team.example', 'whatever password');
    const wrong = await b.signIn('locked@team.example', 'wrong password!!');
    expect(unknown.status).to.equal(401);
    expect(wrong.status).to.equal(401);
    expect(unknown.html).to.include('Wrong email or password.');
    for (let i = 1; i < LOCKOUT_THRESHOLD - 1; i++) expect((await b.signIn('locked@team.example', 'wrong password!!')).status).to.equal(401);
    const locking = await b.signIn('locked@team.example', 'wrong password!!');
    expect(locking.status).to.equal(429);
    const right = await b.signIn('locked@team.example', PASSWORD);
    expect(right.status).to.equal(429);
    expect(Number(right.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(b.cookies.has('__Host-acp_session')).to.equal(false);
  });

  it('refuses forms without the CSRF token, and signs out', async () => {
    const b = new Browser(origin);
    await b.get('/login');
    const forged = await b.post('/login', { email: 'founder@team.example', password: PASSWORD, next: '/login' });
    expect(forged.status).to.equal(403);
    const otherSite = await new Browser(origin).post('/login', { csrf: b.cookies.get('__Host-acp_csrf')!, email: 'founder@team.example', password: PASSWORD });
    expect(otherSite.status).to.equal(403);
    expect((await b.signIn('founder@team.example', PASSWORD)).status).to.equal(303);
    const home = await b.get('/login');
    expect((await b.post('/logout', {})).status).to.equal(403);
    const out = await b.post('/logout', hiddenFields(home.html));
    expect(out.status).to.equal(303);
    expect(b.cookies.has('__Host-acp_session')).to.equal(false);
    expect((await b.get('/login')).html).to.include('<h1>Sign in</h1>');
  });

  it('never redirects after sign-in to another site', async () => {
    const b = new Browser(origin);
    const res = await b.signIn('founder@team.example', PASSWORD, '//evil.example/x');
    expect(res.status).to.equal(303);
    expect(res.location).to.equal('/login');
  });
});
