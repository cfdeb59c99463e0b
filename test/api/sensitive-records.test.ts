/**
 * Sensitive record fields (docs/security.md "Sensitive record fields"; OWASP ASVS V8.3): fields
 * declared `sensitive` in the organization's record schema, or named like pin, ssn, password, dob, or holding
 * a card number, are stored sealed, answered masked by every read, never shown to the model, and used only
 * server-side — caller verification compares the PIN, a skill declaring such an input gets it filled when it
 * runs — while a skill's output reaches the model only through the fields its output schema declares. The
 * pre-publish report says what the model can see. Real socket, Postgres, the sandbox LLM (recorded).
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';
import { SandboxLlm } from '../../providers/llm/sandbox';
import type { LlmProvider, LlmRequest } from '../../domain/conversations/llm';

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const TLS = { key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')), cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')) };
const SITE = 'https://clinic.example.com';
const PHONE = '+12065550142';
const PIN = '4321';
const CARD = '4111 1111 1111 1111';

/** The sandbox LLM, keeping every request it was sent (what the model saw). */
class RecordingLlm implements LlmProvider {
  readonly name = 'sandbox';
  readonly requests: LlmRequest[] = [];
  private readonly inner = new SandboxLlm();
  complete(req: LlmRequest) {
    this.requests.push(req);
    return this.inner.complete(req);
  }
  stream(req: LlmRequest) {
    this.requests.push(req);
    return this.inner.stream(req);
  }
  /** Everything sent to the model so far, as one string. */
  seen(): string {
    return JSON.stringify(this.requests.map((r) => ({ messages: r.messages, tools: r.tools })));
  }
}

describe('sensitive record fields (sealed, write-only, never shown to the model)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const llm = new RecordingLlm();
  let server: https.Server;
  let skillBase: string;
  const received: { url: string; body: any }[] = [];
  let recordId: string;

  const newAgent = async (json: Record<string, unknown>) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { voiceId: 'voice_ava', ...json } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id as string;
  };
  const addSkill = async (agentId: string, json: Record<string, unknown>) => {
    const res = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json });
    expect(res.status, res.text).to.equal(201);
  };
  const say = (id: string, content: string) => t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });

  before(async () => {
    server = https.createServer(TLS, (req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        received.push({ url: req.url ?? '', body: raw ? JSON.parse(raw) : null });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ status: 'active', balance: '12.50', echoed_pin: raw ? JSON.parse(raw).pin ?? null : null, internal_note: 'do not show' }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    skillBase = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApi('sensitive', QUICK_CLIENT, { providers: { llm, skillHttp: createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), ca: TLS.cert }) } });
    org = await t.org('Clinic');
    const c = await t.call('POST', '/records', {
      key: org.key,
      json: { name: 'Pat Quinn', phone: PHONE, email: 'pat@example.com', fields: { pin: PIN, plan: 'gold', notes: CARD, dob: '1970-04-01', account_password: 'hunter22' } },
    });
    expect(c.status, c.text).to.equal(201);
    recordId = c.body.data.id;
  });
  after(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('stores fields named like pin, dob or password and card numbers sealed, and every read answers them masked', async () => {
    const masked = { pin: '••21', plan: 'gold', notes: '••11', dob: '••01', account_password: '••22' };
    const one = await t.call('GET', `/records/${recordId}`, { key: org.key });
    expect(one.body.data.fields).to.deep.equal(masked);
    expect([...one.body.data.sensitiveFields].sort()).to.deep.equal(['account_password', 'dob', 'notes', 'pin']);
    const listed = await t.call('GET', `/records?phone=${encodeURIComponent(PHONE)}`, { key: org.key });
    expect(listed.body.data.items[0].fields).to.deep.equal(masked);
    const row = await t.db('records').where({ id: recordId }).first();
    const stored = JSON.stringify(row);
    for (const secret of [PIN, '4111111111111111', CARD, '1970-04-01', 'hunter22']) expect(stored, secret).to.not.include(secret);
    expect(stored).to.match(/v1:/);
  });

  it('keeps a sealed value when its mask is written back, and seals a new one', async () => {
    const back = await t.call('PATCH', `/records/${recordId}`, { key: org.key, json: { fields: { pin: '••21', plan: 'platinum', notes: '••11', dob: '••01', account_password: '••22' } } });
    expect(back.status, back.text).to.equal(200);
    expect(back.body.data.fields).to.include({ pin: '••21', plan: 'platinum' });
    const other = await t.call('POST', '/records', { key: org.key, json: { name: 'Sam Roe', phone: '+12065550143', fields: { pin: '9876' } } });
    const changed = await t.call('PATCH', `/records/${other.body.data.id}`, { key: org.key, json: { fields: { pin: '5555' } } });
    expect(changed.body.data.fields).to.deep.equal({ pin: '••55' });
  });

  it('declares fields sensitive per organization (record schema): existing plain values are sealed at once', async () => {
    const r = await t.call('POST', '/records', { key: org.key, json: { name: 'Lee Chan', phone: '+12065550144', fields: { member_code: 'MC-7788', plan: 'basic' } } });
    expect(r.body.data.fields).to.deep.equal({ member_code: 'MC-7788', plan: 'basic' });
    const bad = await t.call('PUT', '/record-schema', { key: org.key, json: { fields: [{ name: '', sensitive: 'yes' }] } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.include('fields.0.sensitive');
    const put = await t.call('PUT', '/record-schema', { key: org.key, json: { fields: [{ name: 'member_code', sensitive: true, description: 'Membership code' }, { name: 'plan', sensitive: false }] } });
    expect(put.status, put.text).to.equal(200);
    expect(put.body.data.fields).to.deep.include({ name: 'member_code', sensitive: true, description: 'Membership code' });
    expect((await t.call('GET', '/record-schema', { key: org.key })).body.data.fields.map((f: { name: string }) => f.name)).to.deep.equal(['member_code', 'plan']);
    const after = await t.call('GET', `/records/${r.body.data.id}`, { key: org.key });
    expect(after.body.data.fields).to.deep.equal({ member_code: '••88', plan: 'basic' });
    expect(JSON.stringify(await t.db('records').where({ id: r.body.data.id }).first())).to.not.include('MC-7788');
    const reader = await t.org('Schema reader', ['records:read']);
    await t.db('api_keys').where({ id: reader.keyId }).update({ org_id: org.orgId });
    expect((await t.call('PUT', '/record-schema', { key: reader.key, json: { fields: [] } })).status).to.equal(403);
  });

  it('lookup_record never hands the model (or an anonymous widget visitor) a sensitive field', async () => {
    const agentId = await newAgent({ name: 'Clinic desk', greeting: 'Hello, clinic desk.' });
    await addSkill(agentId, { name: 'find_patient', type: 'lookup_record', description: 'Finds a patient', config: { matchOn: ['phone'] } });
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { enabled: true, title: 'Clinic', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' } });
    await publishDraft(t.db, org, agentId, 'lookup1');
    const pk = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'site', agentId, allowedOrigins: [SITE] } })).body.data.key;
    const w = await fetch(`${t.api.baseUrl}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${pk}`, origin: SITE, 'content-type': 'application/json' }, body: '{}' });
    const ws = ((await w.json()) as any).data;
    llm.requests.length = 0;
    const turn = await fetch(`${t.api.baseUrl}/chat/sessions/${ws.session.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.sessionToken}`, origin: SITE, 'content-type': 'application/json' },
      body: JSON.stringify({ content: `find patient with phone ${PHONE}` }),
    });
    const text = await turn.text();
    expect(turn.status, text).to.equal(200);
    for (const secret of [PIN, '4111', 'hunter22', '1970-04-01', '••21']) expect(text, secret).to.not.include(secret);
    expect(llm.seen()).to.include('Pat Quinn');
    for (const secret of [PIN, '4111', 'hunter22', '1970-04-01']) expect(llm.seen(), secret).to.not.include(secret);
    // The receipt (calls:read) lists the match without its sensitive fields.
    const receipt = await t.call('GET', `/conversations/${ws.session.id}/receipt`, { key: org.key });
    const match = receipt.body.data.turns[0].toolCalls[0].output.matches[0];
    expect(match.name).to.equal('Pat Quinn');
    expect(match.fields).to.deep.equal({ plan: 'platinum' });
  });

  it('caller verification compares the sealed PIN server-side; the model never sees it', async () => {
    const agentId = await newAgent({ name: 'Verifier', greeting: 'Hi.' });
    expect((await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'pin', required: 'always', requiredForSkills: [], maxAttempts: 3 } })).status).to.equal(200);
    await publishDraft(t.db, org, agentId, 'pin1');
    llm.requests.length = 0;
    const s = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, variables: { phone: PHONE } } })).body.data.session;
    expect(s.variables).to.include({ caller_verification: 'pin_required' });
    const wrong = await say(s.id, '1111');
    expect(wrong.body.data.reply.content).to.match(/not correct/);
    const right = await say(s.id, PIN);
    expect(right.body.data.reply.content).to.match(/you are verified/);
    expect(right.body.data.session.variables).to.include({ caller_verified: 'true', caller_record_id: recordId });
    await say(s.id, 'What is my PIN?');
    expect(llm.seen()).to.not.include(PIN);
  });

  it('fills a sensitive input of a skill server-side for a verified caller; the model neither sets nor sees it, and sees only the declared output fields', async () => {
    const agentId = await newAgent({ name: 'Accounts', greeting: 'Hi.' });
    expect((await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'caller_id', required: 'always', requiredForSkills: [], maxAttempts: 3 } })).status).to.equal(200);
    await addSkill(agentId, {
      name: 'check_account',
      type: 'http_request',
      description: 'Checks the account',
      config: {
        url: `${skillBase}/accounts`,
        method: 'POST',
        inputs: [{ name: 'pin' }, { name: 'plan', required: false }],
        outputSchema: { type: 'object', properties: { status: { type: 'string' }, balance: { type: 'string' } } },
      },
    });
    await publishDraft(t.db, org, agentId, 'fill1');
    llm.requests.length = 0;
    received.length = 0;
    const s = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, variables: { phone: PHONE } } })).body.data.session;
    const res = await say(s.id, 'Please check account pin: 0000');
    expect(res.status, res.text).to.equal(200);
    expect(received.map((r) => r.body.pin)).to.deep.equal([PIN]);
    const call = res.body.data.receipt.toolCalls[0];
    expect(call.output).to.deep.equal({ status: 'active', balance: '12.50' });
    expect(JSON.stringify(res.body.data)).to.not.include(PIN);
    const tools = llm.requests.find((r) => r.tools?.length)!.tools!;
    expect(Object.keys((tools.find((x) => x.name === 'check_account')!.parameters as any).properties)).to.deep.equal(['plan']);
    expect(llm.seen()).to.not.include(PIN).and.to.not.include('do not show');
    // An unverified caller: the input cannot be filled, the call fails and nothing is sent.
    received.length = 0;
    const anon = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session;
    const refused = await say(anon.id, 'Please check account');
    expect(refused.body.data.receipt.toolCalls[0].error).to.match(/verified caller/);
    expect(received).to.deep.equal([]);
  });

  it('the pre-publish report lists, per skill and for the caller lookup, what the model can see and whether a verified caller is required', async () => {
    const agentId = await newAgent({ name: 'Reported', greeting: 'Hi.' });
    await addSkill(agentId, { name: 'find_patient', type: 'lookup_record', config: { matchOn: ['phone'] } });
    await addSkill(agentId, {
      name: 'check_account',
      type: 'http_request',
      config: { url: `${skillBase}/accounts`, method: 'POST', inputs: [{ name: 'pin' }], outputSchema: { type: 'object', properties: { status: { type: 'string' } } } },
    });
    await addSkill(agentId, { name: 'raw_call', type: 'http_request', config: { url: `${skillBase}/raw`, method: 'GET' } });
    expect((await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'pin', required: 'always', requiredForSkills: ['check_account'], maxAttempts: 3 } })).status).to.equal(200);
    const report = (await t.call('GET', `/agents/${agentId}/prepublish-report`, { key: org.key })).body.data;
    const bySkill = Object.fromEntries(report.modelVisibility.map((v: any) => [v.skill, v]));
    expect(bySkill.check_account).to.deep.include({ modelSees: ['status'], filledServerSide: ['pin'], requiresVerifiedCaller: true, outputSchema: true });
    expect(bySkill.raw_call).to.deep.include({ modelSees: ['(entire output)'], requiresVerifiedCaller: false, outputSchema: false });
    expect(bySkill.find_patient.modelSees).to.include('matches[].name').and.include('matches[].fields.plan');
    expect(bySkill.find_patient.hidden).to.include('matches[].fields.pin').and.include('matches[].fields.member_code');
    expect(bySkill.find_patient.modelSees).to.not.include('matches[].fields.pin').and.not.include('matches[].fields.member_code');
    const lookup = report.modelVisibility.find((v: any) => v.type === 'caller_verification');
    expect(lookup).to.deep.include({ requiresVerifiedCaller: true });
    expect(lookup.modelSees).to.include('caller_name');
    expect(lookup.hidden).to.include('pin');
  });
});
