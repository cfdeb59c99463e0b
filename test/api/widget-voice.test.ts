/**
 * Widget voice tokens (docs/api-notes.md "Voice in the widget"): minted for a widget session from its page origin
 * with that session's token, they open the ConversationRelay endpoint — only from that origin, only before they
 * expire — for the key's agent's published version; a relay socket opened with one ends once the publishable key
 * is revoked. Refusals: another origin, another session's token, a key instead of the session token, voice
 * turned off in the widget settings, an expired or forged token.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { signWidgetVoiceToken } from '../../api/widgetVoice';
import { talkTokenSecret } from '../../db/repositories/agentVersions';

const SITE = 'https://shop.example.com';

/** A relay socket opened with `origin` (as a browser sends it), collecting the frames it receives. */
function openRelay(url: string, origin?: string): Promise<{ ws: WebSocket; frames: any[]; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, ...(origin ? { origin } : {}) });
    const frames: any[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
    ws.once('open', () => resolve({ ws, frames, closed }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

/** Waits until the frames hold `n` final `text` tokens (answers spoken in full). */
async function answers(frames: any[], n: number): Promise<string[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const out: string[] = [];
    let cur = '';
    for (const f of frames) {
      if (f.type !== 'text') continue;
      cur += f.token;
      if (f.last) {
        out.push(cur);
        cur = '';
      }
    }
    if (out.length >= n) return out;
    if (Date.now() > deadline) throw new Error(`only ${out.length} answers: ${JSON.stringify(frames)}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe('widget voice tokens (widget session → ConversationRelay)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let pk: string;
  let pkId: string;

  const raw = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    fetch(`${t.api.baseUrl}${path}`, { method, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
  const startSession = async (key = pk) => {
    const res = await raw('POST', '/chat/widget/sessions', { authorization: `Bearer ${key}`, origin: SITE }, {});
    expect(res.status).to.equal(201);
    return ((await res.json()) as { data: any }).data;
  };
  const mint = (sessionId: string, token: string, origin: string | null = SITE) =>
    raw('POST', `/chat/widget/sessions/${sessionId}/voice-token`, { authorization: `Bearer ${token}`, ...(origin ? { origin } : {}) });

  before(async () => {
    t = await startTestApi('widgetvoice');
    org = await t.org('Voice Widget Co');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Shop voice', voiceId: 'voice_ava', greeting: 'Hello, you are talking to the shop.' } })).body.data.id;
    await publishDraft(t.db, org, agentId, 'v1');
    const created = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'shop', agentId, allowedOrigins: [SITE] } });
    expect(created.status, created.text).to.equal(201);
    pk = created.body.data.key;
    pkId = created.body.data.id;
  });
  after(async () => t?.close());

  it('mints a short-lived token for the session from its origin, and the relay talks to the published version with it from that origin only', async () => {
    const s = await startSession();
    expect(s.voice).to.equal(true);
    const res = await mint(s.session.id, s.sessionToken);
    expect(res.status).to.equal(201);
    expect(res.headers.get('access-control-allow-origin')).to.equal(SITE);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const v = ((await res.json()) as { data: any }).data;
    expect(v.token).to.match(/^wvt_/);
    expect(v.agentId).to.equal(agentId);
    expect(v.relayUrl).to.equal(`${t.api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${encodeURIComponent(v.token)}`);
    const ttl = (Date.parse(v.expiresAt) - Date.now()) / 1000;
    expect(ttl).to.be.within(30, 61);

    // Another page origin, or none, cannot open the relay with it.
    for (const origin of ['https://evil.example.com', undefined]) {
      const err = await openRelay(v.relayUrl, origin).then(() => null, (e) => e);
      expect(err?.status, String(origin)).to.equal(401);
    }
    const call = await openRelay(v.relayUrl, SITE);
    call.ws.send(JSON.stringify({ type: 'setup', sessionId: 'widget-1', callSid: 'widget', from: '', to: '', direction: 'inbound', customParameters: {} }));
    expect((await answers(call.frames, 1))[0]).to.equal('Hello, you are talking to the shop.');
    call.ws.send(JSON.stringify({ type: 'prompt', voicePrompt: 'Are you open today?', lang: 'en-US', last: true }));
    expect((await answers(call.frames, 2))[1].length).to.be.greaterThan(0);
    call.ws.close(1000, 'hung up');
    await call.closed;
    const stored = await t.db('conversations').where({ org_id: org.orgId, agent_id: agentId, channel: 'voice' }).first();
    expect(stored).to.include({ channel: 'voice', mode: 'published', key_id: pkId });
    expect(stored.metadata).to.include({ origin: SITE, widgetSessionId: s.session.id });
  });

  it('refuses another origin, another session, a key instead of the session token, and a widget with voice turned off', async () => {
    const a = await startSession();
    const b = await startSession();
    const evil = await mint(a.session.id, a.sessionToken, 'https://evil.example.com');
    expect(evil.status).to.equal(403);
    expect(((await evil.json()) as { code: string }).code).to.equal('origin_not_allowed');
    const other = await mint(b.session.id, a.sessionToken);
    expect(other.status).to.equal(403);
    expect(((await other.json()) as { code: string }).code).to.equal('session_token_mismatch');
    for (const key of [pk, org.key, 'wst_forged.sig']) {
      const res = await mint(a.session.id, key);
      expect(res.status, key).to.equal(401);
      expect(((await res.json()) as { code: string }).code).to.equal('invalid_token');
    }
    // The CORS preflight of the mint answers the allowed origin only.
    const pre = await raw('OPTIONS', `/chat/widget/sessions/${a.session.id}/voice-token`, { origin: SITE, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' });
    expect(pre.status).to.equal(204);
    expect(pre.headers.get('access-control-allow-origin')).to.equal(SITE);

    const quiet = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Text only', voiceId: 'voice_ava' } })).body.data.id;
    const put = await t.call('PUT', `/agents/${quiet}/widget`, { key: org.key, json: { enabled: true, title: 'Text only', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help', voice: false } });
    expect(put.status, put.text).to.equal(200);
    await publishDraft(t.db, org, quiet, 'q1');
    const quietKey = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'quiet', agentId: quiet, allowedOrigins: [SITE] } })).body.data.key;
    const q = await startSession(quietKey);
    expect(q.voice).to.equal(false);
    const refused = await mint(q.session.id, q.sessionToken);
    expect(refused.status).to.equal(409);
    expect(((await refused.json()) as { code: string }).code).to.equal('voice_unavailable');
  });

  it('refuses an expired or forged token at the relay, and hangs up an open call once the publishable key is revoked', async () => {
    const s = await startSession();
    const secret = await talkTokenSecret(t.db, org.orgId);
    const version = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data.publishedVersionId;
    const claims = { v: 1 as const, org: org.orgId, agt: agentId, ver: version, kid: pkId, ori: SITE, cnv: s.session.id, jti: 'j1' };
    const relay = (token: string) => `${t.api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${encodeURIComponent(token)}`;
    const expired = signWidgetVoiceToken({ ...claims, exp: Math.floor(Date.now() / 1000) - 1 }, secret);
    const valid = signWidgetVoiceToken({ ...claims, exp: Math.floor(Date.now() / 1000) + 60 }, secret);
    const forged = valid.slice(0, -2) + (valid.endsWith('AA') ? 'BB' : 'AA');
    for (const token of [expired, forged]) {
      const err = await openRelay(relay(token), SITE).then(() => null, (e) => e);
      expect(err?.status).to.equal(401);
    }
    const call = await openRelay(relay(valid), SITE);
    call.ws.send(JSON.stringify({ type: 'setup', sessionId: 'widget-2', callSid: 'widget', from: '', to: '', direction: 'inbound', customParameters: {} }));
    await answers(call.frames, 1);
    const revoked = await t.call('DELETE', `/publishable-keys/${pkId}`, { key: org.key });
    expect(revoked.status, revoked.text).to.be.oneOf([200, 204]);
    const closed = await call.closed;
    expect(closed.code).to.equal(1008);
    // Nor can a new token be minted: the session token died with its key.
    expect((await mint(s.session.id, s.sessionToken)).status).to.equal(401);
  });
});
