/**
 * Revocation is immediate everywhere (docs/security.md "Revocation"): revoking a publishable key, turning the
 * widget off, deleting an OAuth app, removing a member, rotating the talk-token secret — every session and
 * token derived from it is refused on its next request (401), and an open event stream or relay socket is
 * closed. And each token kind is MACed under its own label (domain/tokenMac.ts): a talk token renamed as a
 * widget session token, or any kind renamed as another, fails its signature. Real sockets and Postgres; the
 * sandbox LLM slowed down so a stream stays open while the credential is revoked.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import WebSocket from 'ws';
import OpenAI from 'openai';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { SandboxLlm } from '../../providers/llm/sandbox';
import { rotateTalkTokenSecret, talkTokenSecret } from '../../db/repositories/agentVersions';
import { createMember } from '../../db/repositories/team';
import { createClient, createGrant, saveTokens } from '../../db/repositories/oauth';
import { signTalkToken, verifyTalkToken } from '../../api/agents/talkToken';
import { signWidgetSession, verifyWidgetSession } from '../../api/widgetSession';
import { signRelayReference, verifyRelayReference } from '../../services/voice/reference';
import { TOKEN_LABELS, tokenMac } from '../../domain/tokenMac';
import { signCallback, verifyCallbackSignature } from '../../domain/sms/callbackSignature';
import { mediaSignature } from '../../api/sms/media';

const SITE = 'https://shop.example.com';
const LONG = 'Please tell me, in as many words as you like, everything about your opening hours, parking, prices and the history of the shop';

/** Reads an event stream, calling `onEvent` as each event arrives; resolves with every event at the end. */
async function readStream(res: Response, onEvent: (e: EventSourceMessage) => void = () => undefined): Promise<EventSourceMessage[]> {
  const events: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (e) => {
      events.push(e);
      onEvent(e);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  return events;
}

describe('revocation is immediate everywhere; each token kind has its own MAC', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;

  const widget = (enabled: boolean) => ({ enabled, title: 'Shop', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' });
  const newPublishableKey = async (key = org.key) => {
    const r = await t.call('POST', '/publishable-keys', { key, json: { name: 'shop', agentId, allowedOrigins: [SITE] } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data as { id: string; key: string };
  };
  const widgetSession = async (pk: string) => {
    const res = await fetch(`${t.api.baseUrl}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${pk}`, origin: SITE, 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).to.equal(201);
    return ((await res.json()) as any).data as { session: { id: string }; sessionToken: string };
  };
  const asSession = (token: string, method: 'GET' | 'POST', path: string, body?: unknown, accept?: string) =>
    fetch(`${t.api.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, origin: SITE, ...(body ? { 'content-type': 'application/json' } : {}), ...(accept ? { accept } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const codeOf = async (res: Response) => ((await res.json()) as { code: string }).code;

  /** Streams a turn with `authorization`, calls `revoke` on the first delta; the events and how long the stream stayed open after it. */
  const streamAndRevoke = async (path: string, headers: Record<string, string>, revoke: () => Promise<unknown>) => {
    const res = await fetch(`${t.api.baseUrl}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ content: LONG }) });
    expect(res.status).to.equal(200);
    let revokedAt = 0;
    let revoking: Promise<unknown> | undefined;
    const events = await readStream(res, (e) => {
      if (e.event === 'message.delta' && !revoking) revoking = revoke().then(() => (revokedAt = Date.now()));
    });
    await revoking;
    return { events, types: events.map((e) => e.event ?? 'message'), openAfterMs: Date.now() - revokedAt };
  };
  const expectClosedByRevocation = (r: { events: EventSourceMessage[]; types: string[]; openAfterMs: number }) => {
    expect(r.types[r.types.length - 1], r.types.join(',')).to.equal('done');
    expect(r.types).to.not.include('message.completed');
    const error = r.events.find((e) => e.event === 'error');
    expect(JSON.parse(error!.data)).to.include({ status: 401, code: 'credential_revoked' });
    expect(r.openAfterMs).to.be.below(2500);
  };

  before(async () => {
    // 80 ms a token: a long reply streams for several seconds, time to revoke while it is open.
    t = await startTestApi('revocation', {}, { providers: { llm: new SandboxLlm({ tokenDelayMs: 80 }) } });
    org = await t.org('Shop');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Shop helper', voiceId: 'voice_ava', greeting: 'Hi' } })).body.data.id;
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: widget(true) });
    await publishDraft(t.db, org, agentId, 'r1');
  });
  after(async () => t?.close());

  it('MACs each token kind under its own label: a talk token renamed wst_ (and any kind renamed another) fails its signature', async () => {
    const s = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session;
    const tt = (await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { channel: 'chat' } })).body.data.token as string;
    const renamed = `wst_${tt.slice(3)}`;
    expect(await verifyWidgetSession(t.db, renamed)).to.equal(undefined);
    const res = await asSession(renamed, 'GET', `/chat/sessions/${s.id}`);
    expect(res.status).to.equal(401);
    expect(await codeOf(res)).to.equal('invalid_token');
    // The other direction, and the relay reference, signed with the same organization secret.
    const secret = await talkTokenSecret(t.db, org.orgId);
    const wst = signWidgetSession({ v: 1, org: org.orgId, cnv: s.id, kid: 'pk_x', ori: SITE, exp: Math.floor(Date.now() / 1000) + 60 }, secret);
    expect(verifyTalkToken(`tt_${wst.slice(4)}`, secret)).to.equal(undefined);
    const vrf = await signRelayReference(t.db, { org: org.orgId, agt: agentId, ver: 'ver_x', call: 'call_x', grt: 1 });
    expect(verifyTalkToken(`tt_${vrf.slice(4)}`, secret)).to.equal(undefined);
    expect(await verifyRelayReference(t.db, `vrf_${tt.slice(3)}`)).to.equal(undefined);
    expect(verifyTalkToken(signTalkToken(JSON.parse(Buffer.from(tt.slice(3).split('.')[0], 'base64url').toString()), secret), secret)).to.not.equal(undefined);
    // Links and callbacks too: one secret, one text, a different MAC for every label.
    const labels = Object.keys(TOKEN_LABELS) as (keyof typeof TOKEN_LABELS)[];
    expect(labels.length).to.be.greaterThanOrEqual(6);
    const macs = labels.map((k) => tokenMac(k, 'one-secret', 'same text').toString('hex'));
    expect(new Set(macs).size).to.equal(labels.length);
    const plain = crypto.createHmac('sha256', 'one-secret').update('med_1.1700000000').digest('hex');
    expect(mediaSignature('med_1', 1_700_000_000, 'one-secret')).to.not.equal(plain);
    const now = Math.floor(Date.now() / 1000);
    const forgedCallback = `t=${now},v1=${crypto.createHmac('sha256', 'one-secret').update(`${now}.{}`).digest('hex')}`;
    expect(verifyCallbackSignature('one-secret', forgedCallback, '{}', now)).to.equal('mismatch');
    expect(verifyCallbackSignature('one-secret', signCallback('one-secret', '{}', now), '{}', now)).to.equal(null);
  });

  it('revoking a publishable key refuses its widget sessions on their next request and closes an open stream', async () => {
    const pk = await newPublishableKey();
    const a = await widgetSession(pk.key);
    const b = await widgetSession(pk.key);
    expect((await asSession(a.sessionToken, 'GET', `/chat/sessions/${a.session.id}`)).status).to.equal(200);
    const r = await streamAndRevoke(`/chat/sessions/${b.session.id}/messages`, { authorization: `Bearer ${b.sessionToken}`, origin: SITE }, () => t.call('DELETE', `/publishable-keys/${pk.id}`, { key: org.key }));
    expectClosedByRevocation(r);
    for (const [method, path, body] of [['GET', `/chat/sessions/${a.session.id}`, undefined], ['POST', `/chat/sessions/${a.session.id}/messages`, { content: 'hi' }]] as const) {
      const res = await asSession(a.sessionToken, method, path, body);
      expect(res.status, `${method} ${path}`).to.equal(401);
      expect(await codeOf(res)).to.equal('invalid_token');
    }
  });

  it('turning the widget off (published) refuses the sessions it started on their next request', async () => {
    const pk = await newPublishableKey();
    const s = await widgetSession(pk.key);
    expect((await asSession(s.sessionToken, 'GET', `/chat/sessions/${s.session.id}`)).status).to.equal(200);
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: widget(false) });
    expect((await asSession(s.sessionToken, 'GET', `/chat/sessions/${s.session.id}`)).status, 'a draft edit is not live yet').to.equal(200);
    await publishDraft(t.db, org, agentId, 'r-off');
    expect((await asSession(s.sessionToken, 'GET', `/chat/sessions/${s.session.id}`)).status).to.equal(401);
    expect((await asSession(s.sessionToken, 'POST', `/chat/sessions/${s.session.id}/messages`, { content: 'hi' })).status).to.equal(401);
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: widget(true) });
    await publishDraft(t.db, org, agentId, 'r-on');
  });

  it('revoking a secret key closes the stream it opened', async () => {
    const created = await t.call('POST', '/api-keys', { key: org.key, json: { name: 'streamer', scopes: ['chat:read', 'chat:write'] } });
    expect(created.status, created.text).to.equal(201);
    const { id, secret: key } = created.body.data;
    const started = await t.call('POST', '/chat/sessions', { key, json: { agentId } });
    expect(started.status, started.text).to.equal(201);
    const s = started.body.data.session;
    const r = await streamAndRevoke(`/chat/sessions/${s.id}/messages`, { authorization: `Bearer ${key}` }, () => t.call('DELETE', `/api-keys/${id}`, { key: org.key }));
    expectClosedByRevocation(r);
    expect((await t.call('GET', `/chat/sessions/${s.id}`, { key })).status).to.equal(401);
  });

  it('revoking a secret key ends its open POST /responses stream with an error event; the response is still stored', async () => {
    const created = await t.call('POST', '/api-keys', { key: org.key, json: { name: 'responses streamer', scopes: ['chat:read', 'chat:write'] } });
    expect(created.status, created.text).to.equal(201);
    const { id, secret: key } = created.body.data;
    const client = new OpenAI({ apiKey: key, baseURL: t.api.baseUrl, maxRetries: 0 });
    const stream = await client.responses.create({ model: agentId, input: LONG, stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    let revoking: Promise<number> | undefined;
    for await (const e of stream) {
      events.push(e);
      if (e.type === 'response.output_text.delta' && !revoking) revoking = t.call('DELETE', `/api-keys/${id}`, { key: org.key }).then((r) => {
          expect(r.status, r.text).to.be.below(300);
          return Date.now();
        });
    }
    const openAfterMs = Date.now() - (await revoking!);
    const types = events.map((e) => e.type);
    expect(types[types.length - 1], types.join(',')).to.equal('error');
    expect(types).to.not.include('response.completed');
    expect(events[events.length - 1]).to.deep.include({ type: 'error', code: 'credential_revoked', param: null });
    expect(events.map((e) => e.sequence_number)).to.deep.equal(events.map((_e, i) => i));
    expect(openAfterMs).to.be.below(2500);
    // The turn ran on and its response is stored, as a chat turn is (docs/security.md "Revocation").
    const responseId = (events[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    let stored = await t.call('GET', `/responses/${responseId}`, { key: org.key });
    for (const started = Date.now(); stored.status === 404 && Date.now() - started < 20_000; stored = await t.call('GET', `/responses/${responseId}`, { key: org.key })) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stored.status, stored.text).to.equal(200);
    expect(stored.body.status).to.equal('completed');
    expect((await t.call('GET', `/responses/${responseId}`, { key })).status).to.equal(401);
  });

  it('revoking a secret key ends its open /chat/completions stream with an error event the openai client raises', async () => {
    const created = await t.call('POST', '/api-keys', { key: org.key, json: { name: 'completions streamer', scopes: ['chat:read', 'chat:write'] } });
    expect(created.status, created.text).to.equal(201);
    const { id, secret: key } = created.body.data;
    const client = new OpenAI({ apiKey: key, baseURL: t.api.baseUrl, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: LONG }], stream: true });
    let deltas = 0;
    let revoking: Promise<number> | undefined;
    let raised: unknown;
    try {
      for await (const c of stream) {
        if (c.choices[0]?.delta?.content) deltas++;
        if (deltas === 1 && !revoking) revoking = t.call('DELETE', `/api-keys/${id}`, { key: org.key }).then((r) => {
            expect(r.status, r.text).to.be.below(300);
            return Date.now();
          });
      }
    } catch (err) {
      raised = err;
    }
    const openAfterMs = Date.now() - (await revoking!);
    expect(raised, 'the stream ended without an error').to.be.instanceOf(OpenAI.APIError);
    expect((raised as InstanceType<typeof OpenAI.APIError>).code).to.equal('credential_revoked');
    expect(openAfterMs).to.be.below(2500);
    expect((await t.call('GET', '/models', { key })).status).to.equal(401);
  });

  it('deleting an OAuth app closes the streams of its tokens and ends the widget sessions of publishable keys they minted; removing a member does the same', async () => {
    const issue = async (email: string) => {
      const member = await createMember(t.db, org.orgId, { email, role: 'admin', passwordHash: null });
      const { client } = await createClient(t.db, org.orgId, { brand: t.config.keyBrandPrefix, name: `App of ${email}`, confidential: true, redirectUris: ['https://app.example/cb'], scopes: ['chat:read', 'chat:write', 'pubkeys:write'] });
      const grant = await createGrant(t.db, org.orgId, { clientId: client.id, memberId: member.id, scopes: ['chat:read', 'chat:write', 'pubkeys:write'] });
      const token = `${t.config.keyBrandPrefix}_oat_${crypto.randomBytes(24).toString('hex').slice(0, 32)}`;
      await saveTokens(t.db, org.orgId, { grantId: grant.id, name: 'app', brand: t.config.keyBrandPrefix, accessToken: token, accessTokenExpiresAt: new Date(Date.now() + 3_600_000), scopes: grant.scopes });
      return { member, client, token };
    };
    const app = await issue('app-owner@shop.example');
    const pk = await newPublishableKey(app.token);
    const ws = await widgetSession(pk.key);
    const s = (await t.call('POST', '/chat/sessions', { key: app.token, json: { agentId } })).body.data.session;
    const r = await streamAndRevoke(`/chat/sessions/${s.id}/messages`, { authorization: `Bearer ${app.token}` }, () => t.call('DELETE', `/oauth-clients/${app.client.id}`, { key: org.key }));
    expectClosedByRevocation(r);
    expect((await asSession(ws.sessionToken, 'GET', `/chat/sessions/${ws.session.id}`)).status).to.equal(401);

    const other = await issue('leaver@shop.example');
    const s2 = (await t.call('POST', '/chat/sessions', { key: other.token, json: { agentId } })).body.data.session;
    const r2 = await streamAndRevoke(`/chat/sessions/${s2.id}/messages`, { authorization: `Bearer ${other.token}` }, () => t.call('DELETE', `/team/members/${other.member.id}`, { key: org.key }));
    expectClosedByRevocation(r2);
  });

  it('rotating the talk-token secret refuses widget sessions and talk tokens at once and closes an open talk-token socket', async () => {
    const pk = await newPublishableKey();
    const ws = await widgetSession(pk.key);
    const tt = (await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: {} })).body.data.token as string;
    const relayUrl = `${t.api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${encodeURIComponent(tt)}`;
    const socket = new WebSocket(relayUrl);
    const heard: string[] = [];
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await new Promise<void>((resolve, reject) => {
      socket.on('open', () => resolve());
      socket.on('error', reject);
    });
    socket.on('message', (d) => heard.push(JSON.parse(d.toString()).token ?? ''));
    socket.send(JSON.stringify({ type: 'setup', sessionId: 'browser-1', callSid: 'browser', from: '', to: '', direction: 'inbound', customParameters: {} }));
    const started = Date.now();
    while (!heard.length && Date.now() - started < 5000) await new Promise((r) => setTimeout(r, 20));
    expect(heard[0]).to.equal('Hi');

    const rotatedAt = Date.now();
    await rotateTalkTokenSecret(t.db, org.orgId);
    expect((await asSession(ws.sessionToken, 'GET', `/chat/sessions/${ws.session.id}`)).status).to.equal(401);
    const refused = await new Promise<number>((resolve) => {
      const again = new WebSocket(relayUrl);
      again.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      again.on('open', () => resolve(101));
      again.on('error', () => undefined);
    });
    expect(refused).to.equal(401);
    const close = await closed;
    expect(close).to.deep.equal({ code: 1008, reason: 'credential revoked' });
    expect(Date.now() - rotatedAt).to.be.below(2500);
    // New tokens are signed with the new secret and work.
    const fresh = await widgetSession(pk.key);
    expect((await asSession(fresh.sessionToken, 'GET', `/chat/sessions/${fresh.session.id}`)).status).to.equal(200);
  });
});
