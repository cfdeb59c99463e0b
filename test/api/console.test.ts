/**
 * The operator console over a real socket and Postgres (docs/operations.md "Operator console"): signed-in members
 * only, their organization only; conversations listed with filters and text search; a live chat taken over from
 * the page, answered by the member and handed back; a viewer refused with a 403 page; another organization's
 * conversation a 404 page; a control on an ended conversation a 409 page; the live stream with the session cookie.
 */
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { Browser, hiddenFields } from '../helpers/browser';
import { publishDraft } from './agents-fixtures';
import { createMember } from '../../db/repositories/team';
import { hashPassword } from '../../services/team/passwords';
import { getConversation } from '../../db/repositories/conversations';
import { until } from '../helpers/wait';
import { RelayClient } from '../../providers/telephony/sandboxCaller';

const PASSWORD = 'a long enough password';

describe('operator console', () => {
  let t: TestApi;
  let origin: string;
  let org: { orgId: string; key: string; keyId: string };
  let admin: Browser;
  let viewer: Browser;
  let agentId: string;

  before(async () => {
    t = await startTestApi('console');
    origin = new URL(t.api.baseUrl).origin;
    org = await t.org('Console Org');
    await createMember(t.db, org.orgId, { email: 'admin@console.example', role: 'admin', passwordHash: await hashPassword(PASSWORD) });
    await createMember(t.db, org.orgId, { email: 'viewer@console.example', role: 'viewer', passwordHash: await hashPassword(PASSWORD) });
    admin = new Browser(origin);
    viewer = new Browser(origin);
    expect((await admin.signIn('admin@console.example', PASSWORD)).status).to.equal(303);
    expect((await viewer.signIn('viewer@console.example', PASSWORD)).status).to.equal(303);
    const res = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Welcome to the front desk.' } });
    agentId = res.body.data.id;
    await publishDraft(t.db, org, agentId, 'v1');
  });
  after(async () => {
    await t?.close();
  });

  const startChat = async (first?: string) => {
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    const id = res.body.data.session.id as string;
    if (first) await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: first } });
    return id;
  };
  /** Submits the control form of the live page whose hidden `action` is `action`. */
  const control = async (b: Browser, id: string, action: string, extra: Record<string, string> = {}) => {
    const page = await b.get(`/console/live/${id}`);
    const csrf = hiddenFields(page.html).csrf ?? '';
    return b.post(`/console/live/${id}/control`, { csrf, action, ...extra });
  };

  it('sends a signed-out visitor to sign in and back, and lists the conversations with filters and text search', async () => {
    const out = await new Browser(origin).get('/console/conversations?channel=chat');
    expect(out.status).to.equal(303);
    expect(out.location).to.equal(`/login?next=${encodeURIComponent('/console/conversations?channel=chat')}`);
    const id = await startChat('Do you sell marmalade?');
    const list = await admin.get('/console/conversations');
    expect(list.status).to.equal(200);
    expect(list.headers.get('content-security-policy')).to.include("script-src 'self'");
    expect(list.html).to.include(id);
    expect((await admin.get('/console/conversations?q=marmalade')).html).to.include(id);
    expect((await admin.get('/console/conversations?q=zebra')).html).to.not.include(id);
    expect((await admin.get('/console/conversations?channel=voice')).html).to.not.include(id);
    expect((await admin.get('/console/conversations/%zz')).status).to.equal(404);
    expect((await admin.get('/console/no-such-page')).status).to.equal(404);
    const bad = await admin.get('/console/conversations?channel=fax');
    expect(bad.status).to.equal(400);
    expect(bad.html).to.include('channel');
    const page = await admin.get(`/console/conversations/${id}`);
    expect(page.status).to.equal(200);
    expect(page.html).to.include('Do you sell marmalade?');
    expect(page.html).to.match(/Latency by stage/);
  });

  it('takes a live chat over from the page, writes to the person as a team member, and hands it back', async () => {
    const id = await startChat();
    const live = await admin.get('/console/live');
    expect(live.html).to.include(id);
    expect((await control(admin, id, 'take_over')).status).to.equal(303);
    expect((await getConversation(t.db, org.orgId, id))?.takenOverBy).to.match(/^mem_/);
    const held = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Hello? Anyone?' } });
    expect(held.body.data.reply).to.equal(null);
    expect((await control(admin, id, 'say', { content: 'Hi, this is Alex from the team.' })).status).to.equal(303);
    const page = await admin.get(`/console/live/${id}`);
    expect(page.html).to.include('Team member');
    expect(page.html).to.include('Hi, this is Alex from the team.');
    expect((await control(admin, id, 'hand_back')).status).to.equal(303);
    expect((await getConversation(t.db, org.orgId, id))?.takenOverBy).to.equal(null);
    // Each step is in the audit log with the member as the actor, as an API write would be.
    const audited = await until(async () => {
      const rows = await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'controlConversation' }).orderBy('seq');
      return rows.length >= 3 ? rows : null;
    }, 5000, 'the audit entries');
    expect(audited.map((a: { actor_id: string; status_code: number }) => [a.actor_id.slice(0, 4), a.status_code])).to.deep.equal([
      ['mem_', 303],
      ['mem_', 303],
      ['mem_', 303],
    ]);
  });

  it("says a line on a live call from the page, adds a message to the model's context, and ends the call", async () => {
    const token = await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { channel: 'voice' } });
    const relay = await RelayClient.open(`${t.api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${token.body.data.token}`);
    relay.send({ type: 'setup', sessionId: 'VXconsole', callSid: 'web', from: '', to: '', direction: 'inbound' });
    expect((await relay.reply()).text).to.equal('Welcome to the front desk.');
    const call = await until(async () => (await t.db('conversations').where({ org_id: org.orgId, channel: 'voice', status: 'active' }).first()) ?? null, 5000, 'the call');
    const page = await admin.get(`/console/live/${call.id}`);
    expect(page.html).to.include('Say it');
    expect(page.html).to.include('Transfer');
    expect(page.html).to.not.include('Take over');
    expect((await control(admin, call.id, 'say', { content: 'A colleague is joining the call.' })).status).to.equal(303);
    expect((await relay.reply()).text).to.equal('A colleague is joining the call.');
    expect((await control(admin, call.id, 'add_message', { content: 'The caller is a returning patient.' })).status).to.equal(303);
    const badTransfer = await control(admin, call.id, 'transfer', { to: 'not a number' });
    expect(badTransfer.status).to.equal(400);
    expect(badTransfer.html).to.include('E.164');
    expect((await control(admin, call.id, 'end')).status).to.equal(303);
    await relay.closedWith();
    expect(relay.end).to.not.equal(null);
    expect((await getConversation(t.db, org.orgId, call.id))?.endReason).to.equal('ended_by_api');
  });

  it('refuses a viewer (403 page), another organization (404 page) and an ended conversation (409 page)', async () => {
    const id = await startChat();
    const watch = await viewer.get(`/console/live/${id}`);
    expect(watch.status).to.equal(200);
    expect(watch.html).to.not.include('name="action"');
    const refused = await control(viewer, id, 'take_over');
    expect(refused.status).to.equal(403);
    expect(refused.html).to.include('may watch but not step in');
    const other = await t.org('Other Org');
    const theirs = (await t.call('POST', '/agents', { key: other.key, json: { name: 'Theirs', voiceId: 'voice_ava' } })).body.data.id;
    await publishDraft(t.db, other, theirs, 'v1');
    const foreign = (await t.call('POST', '/chat/sessions', { key: other.key, json: { agentId: theirs } })).body.data.session.id;
    const missing = await admin.get(`/console/conversations/${foreign}`);
    expect(missing.status).to.equal(404);
    expect(missing.headers.get('content-type')).to.match(/text\/html/);
    expect((await admin.get(`/console/live/${foreign}`)).status).to.equal(404);
    const page = await admin.get(`/console/live/${id}`);
    await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key });
    const ended = await admin.post(`/console/live/${id}/control`, { csrf: hiddenFields(page.html).csrf, action: 'take_over' });
    expect(ended.status).to.equal(409);
    expect(ended.html).to.include('ended');
    const forged = await admin.post(`/console/live/${id}/control`, { csrf: 'not-the-token', action: 'take_over' });
    expect(forged.status).to.equal(403);
  });

  it('streams a live conversation to a signed-in member, and serves its script and chart.js', async () => {
    const id = await startChat();
    const cookie = [...admin.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const ctrl = new AbortController();
    const res = await fetch(`${origin}/console/live/${id}/events`, { headers: { cookie }, signal: ctrl.signal });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('event: message')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).to.match(/^event: state\n/);
    expect(text).to.include('Welcome to the front desk.');
    ctrl.abort();
    const js = await admin.get('/console/assets/console.js');
    expect(js.status).to.equal(200);
    expect(js.html).to.include('EventSource');
    const chart = await admin.get('/console/assets/chart.umd.js');
    expect(chart.status).to.equal(200);
    expect(chart.html.length).to.be.greaterThan(100_000);
    expect((await admin.get('/console/analytics')).html).to.include('id="chart-data"');
  });
});

describe('pages for browsers', () => {
  let t: TestApi;
  let origin: string;

  before(async () => {
    t = await startTestApi('console_pages');
    origin = new URL(t.api.baseUrl).origin;
    const org = await t.org('Pages Org');
    await createMember(t.db, org.orgId, { email: 'owner@pages.example', role: 'owner', passwordHash: await hashPassword(PASSWORD) });
  });
  after(async () => {
    await t?.close();
  });

  it('answers an unknown path with a styled page to a browser and problem+json to an API client', async () => {
    const page = await fetch(`${origin}/no-such-page`, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(page.status).to.equal(404);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    const html = await page.text();
    expect(html).to.include('<title>Page not found · Agent Control Plane</title>');
    expect(html).to.include('There is no page at /no-such-page.');
    const json = await fetch(`${origin}/no-such-page`, { headers: { accept: 'application/json' } });
    expect(json.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect(((await json.json()) as { code: string }).code).to.equal('route_not_found');
    const api = await fetch(`${origin}/api/v1/no-such-thing`, { headers: { accept: 'text/html' } });
    expect(api.headers.get('content-type')).to.match(/^application\/problem\+json/);
  });

  it('shows a stale sign-in form again in words, confirms a sign-out, explains a forgotten password in words, and titles the home page once', async () => {
    const b = new Browser(origin);
    const form = await b.get('/login');
    expect(form.html).to.not.include('/team/members');
    expect(form.html).to.include('Ask an owner or admin of your organization to remove you from the team and invite your address again');
    b.cookies.set('__Host-acp_csrf', 'a'.repeat(32));
    const stale = await b.post('/login', { ...hiddenFields(form.html), email: 'owner@pages.example', password: PASSWORD });
    expect(stale.status).to.equal(403);
    expect(stale.headers.get('content-type')).to.match(/^text\/html/);
    expect(stale.html).to.include('This sign-in form had expired');
    // The form shown with the refusal works.
    expect((await b.post('/login', { ...hiddenFields(stale.html), email: 'owner@pages.example', password: PASSWORD })).status).to.equal(303);
    const home = await b.get('/login');
    const out = await b.post('/logout', hiddenFields(home.html));
    expect(out.location).to.equal('/login?signed_out=1');
    expect((await b.get(out.location!)).html).to.include('You are signed out.');
    const root = await b.get('/');
    expect(root.html).to.include('<title>Agent Control Plane</title>');
    expect(root.html).to.include('href="/console"');
  });
});
