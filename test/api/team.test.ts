/**
 * Team (spec Team group; docs/team-and-oauth.md "Team"): invitations through the sandbox mailer with a single-use,
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
import { SIGN_IN_POLICIES } from '../../domain/throttle';

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
    const mail = mailer.sent.at(-1)!;
    expect(mail.text).to.not.include('undefined');
    // It names the organization and the inviter (a secret key acts as an owner), with a human date in UTC.
    expect(mail.subject).to.equal('An owner of Team Org invited you to Team Org on Agent Control Plane');
    expect(mail.text).to.match(/^An owner of Team Org invited you to join Team Org on Agent Control Plane as developer\./);
    expect(mail.text).to.match(/until (Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), [A-Z][a-z]+ \d{1,2}, \d{4}, \d{2}:\d{2} UTC:/);
    expect(mail.text).to.not.match(/\d{4}-\d{2}-\d{2}T/);
    const pending = await t.call('GET', '/team/invitations', { key: org.key });
    expect(pending.body.data.items.map((i: { id: string }) => i.id)).to.include(id);
    expect(pending.text).to.not.include(link.split('token=')[1]);
    const done = await accept(link);
    expect(done.status, done.html).to.equal(303);
    // The sign-in page then says the password is set and fills in the address.
    expect(done.location).to.equal('/login?joined=1');
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

  it("answers an invitation to another organization's member as for any address (201), and tells them to sign in", async () => {
    const other = await t.org('Elsewhere Org');
    await createMember(t.db, other.orgId, { email: 'taken@elsewhere.example', role: 'viewer', passwordHash: null });
    const fresh = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'fresh@nowhere.example', role: 'viewer' } });
    const taken = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'Taken@Elsewhere.example', role: 'viewer' } });
    expect(fresh.status, fresh.text).to.equal(201);
    expect(taken.status, taken.text).to.equal(201);
    // The same answer shape: nothing tells the caller the address has an account elsewhere.
    expect(Object.keys(taken.body.data).sort()).to.deep.equal(Object.keys(fresh.body.data).sort());
    expect(taken.body.message).to.equal('Invitation sent to taken@elsewhere.example');
    const mail = mailer.sent.at(-1)!;
    expect(mail.to).to.equal('taken@elsewhere.example');
    expect(mail.text).to.include('existing account').and.include('/login');
    // A member of this organization may still be told.
    const mine = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'founder@team.example', role: 'viewer' } });
    expect(mine.status).to.equal(409);
    expect(mine.body.code).to.equal('member_exists');
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

  /** Signs in from `localAddress` in `n` parallel browsers. @returns the statuses, and one 429's Retry-After */
  async function burst(email: string, password: string, n: number, localAddress: string) {
    const results = await Promise.all(Array.from({ length: n }, () => new Browser(origin, { localAddress }).signIn(email, password)));
    const count = (status: number) => results.filter((r) => r.status === status).length;
    const retryAfter = Number(results.find((r) => r.status === 429)?.headers.get('retry-after'));
    return { evaluated: count(401), refused: count(429), signedIn: count(303), retryAfter };
  }

  it('throttles an account from one address, even for the right password, and unknown emails alike', async () => {
    await createMember(t.db, org.orgId, { email: 'locked@team.example', role: 'viewer', passwordHash: await hashPassword(PASSWORD) });
    const b = new Browser(origin, { localAddress: '127.0.0.6' });
    const unknown = await b.signIn('nobody@team.example', 'whatever password');
    const wrong = await b.signIn('locked@team.example', 'wrong password!!');
    expect(unknown.status).to.equal(401);
    expect(wrong.status).to.equal(401);
    expect(unknown.html).to.include('Wrong email or password.');
    const free = SIGN_IN_POLICIES.accountAddress.free;
    for (let i = 1; i < free; i++) {
      expect((await b.signIn('locked@team.example', 'wrong password!!')).status).to.equal(401);
      expect((await b.signIn('nobody@team.example', 'whatever password')).status).to.equal(401);
    }
    const right = await b.signIn('locked@team.example', PASSWORD);
    expect(right.status).to.equal(429);
    expect(Number(right.headers.get('retry-after'))).to.be.within(1, SIGN_IN_POLICIES.accountAddress.baseSeconds);
    expect(b.cookies.has('__Host-acp_session')).to.equal(false);
    const unknownThrottled = await b.signIn('nobody@team.example', 'whatever password');
    expect(unknownThrottled.status).to.equal(429);
    expect(Number(unknownThrottled.headers.get('retry-after'))).to.be.within(1, SIGN_IN_POLICIES.accountAddress.baseSeconds);
  });

  it('evaluates at most the limit of a parallel burst of guesses; the owner at another address still signs in', async () => {
    await createMember(t.db, org.orgId, { email: 'burst@team.example', role: 'viewer', passwordHash: await hashPassword(PASSWORD) });
    const attack = await burst('burst@team.example', 'wrong password!!', 24, '127.0.0.4');
    expect(attack, 'a burst of 24 wrong passwords').to.deep.include({ evaluated: SIGN_IN_POLICIES.accountAddress.free, refused: 24 - SIGN_IN_POLICIES.accountAddress.free, signedIn: 0 });
    expect(attack.retryAfter).to.be.within(1, SIGN_IN_POLICIES.accountAddress.baseSeconds);
    // The right password from the attacking address waits out the back-off; from another address it works.
    expect((await new Browser(origin, { localAddress: '127.0.0.4' }).signIn('burst@team.example', PASSWORD)).status).to.equal(429);
    expect((await new Browser(origin, { localAddress: '127.0.0.5' }).signIn('burst@team.example', PASSWORD)).status).to.equal(303);
  });

  it('backs off exponentially per account and address, and bounds what attackers impose on the owner to the account-wide back-off', async () => {
    await createMember(t.db, org.orgId, { email: 'target@team.example', role: 'viewer', passwordHash: await hashPassword(PASSWORD) });
    const { accountAddress, account } = SIGN_IN_POLICIES;
    // Two attacking addresses: 5 evaluated guesses each reach the account-wide limit of 10.
    const first = await burst('target@team.example', 'wrong password!!', 12, '127.0.1.1');
    const second = await burst('target@team.example', 'wrong password!!', 12, '127.0.1.2');
    expect(first.evaluated + second.evaluated).to.equal(account.free);
    // The owner elsewhere is held back by the account-wide back-off only (1 s now, at most 60 s ever).
    const owner = new Browser(origin, { localAddress: '127.0.1.3' });
    const held = await owner.signIn('target@team.example', PASSWORD);
    expect(held.status).to.equal(429);
    expect(Number(held.headers.get('retry-after'))).to.be.within(1, account.baseSeconds);
    await new Promise((r) => setTimeout(r, Number(held.headers.get('retry-after')) * 1000 + 100));
    expect((await owner.signIn('target@team.example', PASSWORD)).status).to.equal(303);
    // The attacker's own address stays closed, and each back-off it waits out doubles the next.
    expect((await burst('target@team.example', 'wrong password!!', 6, '127.0.1.1')).refused).to.equal(6);
    await t.db('sign_in_throttles').where('blocked_until', '>', t.db.fn.now()).update({ blocked_until: t.db.fn.now() });
    const next = await burst('target@team.example', 'wrong password!!', 8, '127.0.1.1');
    expect(next).to.deep.include({ evaluated: 1, refused: 7 });
    expect(next.retryAfter).to.be.within(accountAddress.baseSeconds * 2 - 1, accountAddress.baseSeconds * 2);
    await t.db('sign_in_throttles').where('blocked_until', '>', t.db.fn.now()).update({ blocked_until: t.db.fn.now() });
    const third = await burst('target@team.example', 'wrong password!!', 8, '127.0.1.1');
    expect(third).to.deep.include({ evaluated: 1, refused: 7 });
    expect(third.retryAfter).to.be.within(accountAddress.baseSeconds * 4 - 1, accountAddress.baseSeconds * 4);
  });

  it('limits one address across accounts: sign-ins to 30 unknown emails are refused after the address limit', async () => {
    const results = [];
    for (let i = 0; i < 30; i++) results.push((await new Browser(origin, { localAddress: '127.0.0.3' }).signIn(`nobody${i}@spray.example`, 'whatever password')).status);
    expect(results.filter((s) => s === 401)).to.have.length(SIGN_IN_POLICIES.address.free);
    expect(results.filter((s) => s === 429)).to.have.length(30 - SIGN_IN_POLICIES.address.free);
    // A parallel spray from a fresh address is held to the same count.
    const sprayed = await Promise.all(Array.from({ length: 30 }, (_, i) => new Browser(origin, { localAddress: '127.0.0.8' }).signIn(`spray${i}@spray.example`, 'whatever password')));
    expect(sprayed.filter((r) => r.status === 401)).to.have.length(SIGN_IN_POLICIES.address.free);
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
