/**
 * Calls on demand (docs/api-notes.md "Calls on demand"): `POST /calls` places one outbound call answered
 * by an agent through the relay, under the campaign rules that apply to a single call; `GET /calls` and
 * `GET /calls/{id}` read every call. The worker is the service's own composition (activities/index.ts
 * createActivities) with PUBLIC_BASE_URL this API's origin, so the sandbox callee reaches the relay as a
 * carrier would. The calling window is decided by the clock of the API and the worker (this process's):
 * calls that must be dialed name a recipient zone where it is midday now. The same call over Telnyx
 * (loopback stub) is handed to the agent by the Call Control command `conversation_relay_start`.
 */
import { expect } from 'chai';
import { createActivities } from '../../activities';
import { SANDBOX_CALLEE_SCRIPT } from '../../activities/voice';
import { createVoiceCall } from '../../db/repositories/voiceCalls';
import { getConversation } from '../../db/repositories/conversations';
import { publishDraft } from './agents-fixtures';
import { phone } from './outbound-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi, type TestResponse } from '../helpers/api';
import { until } from '../helpers/wait';
import { TelnyxStub } from '../providers/telnyxStub';
import { createCallActivities } from '../../activities/calls';
import { insertPlacedCall } from '../../db/repositories/calls';
import { SimulatedCrash, type FaultHook } from '../../services/effects';
import { createLogger } from '../../runtime';
import { RelayClient } from '../../providers/telephony/sandboxCaller';
import { twilioSignature } from '../../domain/voice/signatures';
import { callbackSecret } from '../../domain/sms/callbackSignature';

/** An `Etc/GMT…` zone where the local hour is `hour` now (IANA's Etc zones have inverted signs). */
function zoneAtHour(hour: number, now = new Date()): string {
  let offset = hour - now.getUTCHours();
  if (offset > 12) offset -= 24;
  if (offset < -11) offset += 24;
  return offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

describe('calls on demand (POST /calls, GET /calls) on the sandbox carrier', function () {
  this.timeout(120_000);
  let t: TestApi;
  let key: string;
  let orgId: string;
  let keyId: string;
  let agentId: string;
  let draftOnlyId: string;
  let from: string;
  let other: { orgId: string; key: string; agentId: string; from: string };
  let n = 0;
  const GREETING = 'Hi Ada, this is Acme calling about your visit tomorrow.';

  /** POST /calls with a fresh Idempotency-Key unless one is given. */
  const place = (body: Record<string, unknown>, idempotencyKey: string | null = `key-${++n}`, as = key): Promise<TestResponse> =>
    t.call('POST', '/calls', { key: as, json: body, headers: idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey } });
  const noon = () => zoneAtHour(12);
  /** The call once its workflow finished it. */
  const ended = (id: string): Promise<any> =>
    until(async () => {
      const c = (await t.call('GET', `/calls/${id}`, { key })).body.data;
      return c.status === 'completed' || c.status === 'failed' ? c : undefined;
    }, 60_000, `call ${id} to end`);
  const dials = async (org = orgId): Promise<number> => Number((await t.db('sandbox_dials').where({ org_id: org }).count<{ count: string }[]>('* as count'))[0].count);
  const storedCalls = async (org = orgId): Promise<number> => Number((await t.db('voice_calls').where({ org_id: org }).count<{ count: string }[]>('* as count'))[0].count);
  const events = (type: string, callId: string) => t.db('events').where({ org_id: orgId, type }).whereRaw(`data->>'callId' = ?`, [callId]);
  const ownNumber = async (k: string): Promise<string> => {
    const offered = (await t.call('GET', '/numbers/search?areaCode=415&limit=200', { key: k })).body.data.items as { e164: string }[];
    for (const o of offered) {
      const r = await t.call('POST', '/numbers/purchase', { key: k, json: { e164: o.e164 } });
      if (r.status === 200) return r.body.data.e164 as string;
    }
    throw new Error('no sandbox number could be bought');
  };
  const publishedAgent = async (k: string, org: { orgId: string; keyId: string }, name: string): Promise<string> => {
    const created = await t.call('POST', '/agents', {
      key: k,
      json: { name, voiceId: 'voice_ava', greeting: 'Hi {{first_name}}, this is Acme calling about your visit tomorrow.', variables: [{ name: 'first_name', defaultValue: 'there' }] },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await publishDraft(t.db, org, created.body.data.id, `publish-${name}`);
    return created.body.data.id;
  };

  before(async function () {
    this.timeout(120_000);
    // The production composition of the worker, PUBLIC_BASE_URL being this API (the sandbox callee dials into its relay).
    t = await startTestApi('calls_on_demand', QUICK_CLIENT, { worker: (d) => createActivities({ db: d.db, config: { ...d.config, publicBaseUrl: new URL(d.baseUrl).origin }, logger: d.logger }) });
    ({ key, orgId, keyId } = await t.org('Caller Co'));
    agentId = await publishedAgent(key, { orgId, keyId }, 'Reminder agent');
    draftOnlyId = (await t.call('POST', '/agents', { key, json: { name: 'Unpublished agent', voiceId: 'voice_ava', greeting: 'Hello from the draft.' } })).body.data.id;
    from = await ownNumber(key);
    const o = await t.org('Other Co');
    other = { ...o, agentId: await publishedAgent(o.key, o, 'Their agent'), from: await ownNumber(o.key) };
  });
  after(async () => t?.close());

  it('places one call that the agent answers over the relay: greeting first, the callee’s turns, duration, minutes charged once, call.started and call.completed', async () => {
    const to = phone('212', 1, '0001'); // sandbox: answered
    const res = await place({ agentId, from, to, timeZone: noon(), variables: { first_name: 'Ada' }, metadata: { ticket: 'T-1', priority: 2 } });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const placed = res.body.data;
    expect(placed).to.include({ direction: 'outbound', source: 'api', status: 'queued', from, to, agentId, mode: 'published', campaignId: null, conversationId: null, providerCallId: null });
    expect(placed.id).to.match(/^call_/);
    expect(placed.metadata).to.deep.equal({ ticket: 'T-1', priority: 2 });

    const call = await ended(placed.id);
    expect(call).to.include({ status: 'completed', outcome: 'answered', failureReason: null, provider: 'sandbox' });
    expect(call.durationSeconds).to.be.within(30, 119);
    expect(call.providerCallId).to.match(/^CA/);
    expect(call.versionId).to.match(/^ver_/);
    expect(call.endedAt).to.be.a('string');

    const transcript = (await t.call('GET', `/conversations/${call.conversationId}/transcript`, { key })).body.data;
    const lines = transcript.messages.map((m: any) => `${m.speaker}: ${m.text}`);
    expect(lines[0]).to.equal(`agent: ${GREETING}`);
    expect(lines[1]).to.equal(`user: ${SANDBOX_CALLEE_SCRIPT[0]}`);
    expect(lines.filter((l: string) => l.startsWith('user:'))).to.deep.equal(SANDBOX_CALLEE_SCRIPT.map((l) => `user: ${l}`));
    expect(transcript.conversation).to.include({ channel: 'voice', agentId });
    const conversation = (await getConversation(t.db, orgId, call.conversationId))!;
    expect(conversation.status).to.equal('ended');
    expect(conversation.metadata).to.include({ callId: call.id, ticket: 'T-1', to });

    const minutes = await t.db('usage_entries').where({ org_id: orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [call.id]);
    expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([Math.ceil(call.durationSeconds / 60)]);
    const started = await events('call.started', call.id);
    expect(started).to.have.length(1);
    expect(started[0].data).to.include({ direction: 'outbound', from, to, agentId, startedAt: placed.createdAt });
    const completed = await events('call.completed', call.id);
    expect(completed).to.have.length(1);
    expect(completed[0].data).to.include({ outcome: 'answered', durationSeconds: call.durationSeconds, from, to, agentId });
    expect(await t.db('sandbox_dials').where({ org_id: orgId, idempotency_key: call.id })).to.have.length(1);
  });

  it("opens with the agent's outboundGreeting (not its inbound greeting), versioned and in the report; wait_for_callee lets the callee speak first", async () => {
    const created = await t.call('POST', '/agents', {
      key,
      json: {
        name: 'Outbound opener',
        voiceId: 'voice_ava',
        greeting: 'Thanks for calling Acme, how can I help you today?',
        outboundGreeting: 'Hi {{first_name}}, this is Acme calling back about your order.',
        variables: [{ name: 'first_name', defaultValue: 'there' }],
      },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.data).to.include({ outboundGreeting: 'Hi {{first_name}}, this is Acme calling back about your order.', outboundFirstMessageMode: 'agent_speaks_first' });
    const opener = created.body.data.id as string;
    const report = (await t.call('GET', `/agents/${opener}/prepublish-report`, { key })).body.data;
    expect(report.willSay).to.include('Opens outbound calls (campaigns, POST /calls) with: "Hi {{first_name}}, this is Acme calling back about your order."');
    await publishDraft(t.db, { orgId, keyId }, opener, 'opener-v1');
    const version = await t.db('agent_versions').where({ org_id: orgId, agent_id: opener }).first();
    expect(version.snapshot).to.include({ outboundGreeting: 'Hi {{first_name}}, this is Acme calling back about your order.', outboundFirstMessageMode: 'agent_speaks_first' });

    const first = await ended((await place({ agentId: opener, from, to: phone('212', 7, '0001'), timeZone: noon(), variables: { first_name: 'Ada' } })).body.data.id);
    const lines = (await t.call('GET', `/conversations/${first.conversationId}/transcript`, { key })).body.data.messages.map((m: any) => `${m.speaker}: ${m.text}`);
    expect(lines[0]).to.equal('agent: Hi Ada, this is Acme calling back about your order.');
    expect(lines.join('\n')).to.not.contain('How can I help you today');

    const draft = (await t.call('GET', `/agents/${opener}`, { key })).body.data.version;
    const patched = await t.call('PATCH', `/agents/${opener}`, { key, json: { outboundFirstMessageMode: 'wait_for_callee' }, headers: { 'if-match': `"${draft}"` } });
    expect(patched.status, patched.text).to.equal(200);
    const bad = await t.call('PATCH', `/agents/${opener}`, { key, json: { outboundFirstMessageMode: 'model_decides' }, headers: { 'if-match': `"${patched.body.data.version}"` } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).to.include('outboundFirstMessageMode');
    expect((await t.call('GET', `/agents/${opener}/prepublish-report`, { key })).body.data.willSay).to.include('Opens outbound calls (campaigns, POST /calls) by waiting for the callee to speak first');
    await publishDraft(t.db, { orgId, keyId }, opener, 'opener-v2');
    const second = await ended((await place({ agentId: opener, from, to: phone('212', 8, '0001'), timeZone: noon() })).body.data.id);
    const waited = (await t.call('GET', `/conversations/${second.conversationId}/transcript`, { key })).body.data.messages.map((m: any) => `${m.speaker}: ${m.text}`);
    expect(waited[0]).to.equal(`user: ${SANDBOX_CALLEE_SCRIPT[0]}`);
  });

  it('lets the callee speak first when the agent has neither an outbound first line nor a greeting', async () => {
    const created = await t.call('POST', '/agents', { key, json: { name: 'Silent opener', voiceId: 'voice_ava' } });
    expect(created.status, created.text).to.equal(201);
    const silent = created.body.data.id as string;
    await publishDraft(t.db, { orgId, keyId }, silent, 'silent-v1');
    const call = await ended((await place({ agentId: silent, from, to: phone('212', 9, '0001'), timeZone: noon() })).body.data.id);
    const lines = (await t.call('GET', `/conversations/${call.conversationId}/transcript`, { key })).body.data.messages.map((m: any) => `${m.speaker}: ${m.text}`);
    expect(lines[0]).to.equal(`user: ${SANDBOX_CALLEE_SCRIPT[0]}`);
    expect(lines.filter((l: string) => l.startsWith('user:'))).to.deep.equal(SANDBOX_CALLEE_SCRIPT.map((l) => `user: ${l}`));
    expect(lines.filter((l: string) => l.startsWith('agent:'))).to.have.length(SANDBOX_CALLEE_SCRIPT.length);
  });

  it('answers a replay with the same Idempotency-Key with the first response, and places one call', async () => {
    const to = phone('212', 2, '0001');
    const body = { agentId, from, to, timeZone: noon() };
    const first = await place(body, 'replayed-key');
    const again = await place(body, 'replayed-key');
    expect(first.status).to.equal(202);
    expect(again.status).to.equal(202);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    await ended(first.body.data.id);
    const afterwards = await place(body, 'replayed-key');
    expect(afterwards.body.data.id).to.equal(first.body.data.id);
    expect(await t.db('voice_calls').where({ org_id: orgId, to_e164: to })).to.have.length(1);
    expect(await t.db('sandbox_dials').where({ org_id: orgId, to })).to.have.length(1);
    const reused = await place({ ...body, mode: 'draft' }, 'replayed-key');
    expect(reused.status).to.equal(422);
    expect(reused.body.code).to.equal('idempotency_key_reused');
  });

  it('ends busy, unanswered and failed dials failed with their outcome and no minutes; a machine completes as voicemail', async () => {
    const cases = [
      { last4: '0003', status: 'failed', outcome: 'busy' },
      { last4: '0004', status: 'failed', outcome: 'no_answer' },
      { last4: '0005', status: 'failed', outcome: 'failed' },
      { last4: '0002', status: 'completed', outcome: 'voicemail' },
    ];
    const placed = await Promise.all(cases.map(async (c, i) => (await place({ agentId, from, to: phone('646', 10 + i, c.last4), timeZone: noon() })).body.data));
    for (const [i, c] of cases.entries()) {
      const call = await ended(placed[i].id);
      expect(call, c.outcome).to.include({ status: c.status, outcome: c.outcome, failureReason: c.status === 'failed' ? c.outcome : null, conversationId: null });
      const charged = async () => (await t.db('usage_entries').where({ org_id: orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [call.id])).map((m) => Number(m.quantity));
      // The minutes commit with the call's completion (services/voice/calls.ts `completeCall`): read the moment it ends.
      const minutes = await charged();
      expect(minutes, c.outcome).to.deep.equal(c.outcome === 'voicemail' ? [1] : []);
      const completed = await events('call.completed', call.id);
      expect(completed.map((e) => e.data.outcome), c.outcome).to.deep.equal([c.outcome]);
      expect(await t.db('sandbox_dials').where({ org_id: orgId, idempotency_key: call.id }), c.outcome).to.have.length(1);
    }
  });

  it('calls with the agent’s draft in draft mode, even when it was never published', async () => {
    const res = await place({ agentId: draftOnlyId, from, to: phone('212', 3, '0001'), timeZone: noon(), mode: 'draft' });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const call = await ended(res.body.data.id);
    expect(call).to.include({ status: 'completed', mode: 'draft', versionId: null });
    const transcript = (await t.call('GET', `/conversations/${call.conversationId}/transcript`, { key })).body.data;
    expect(transcript.messages[0]).to.include({ speaker: 'agent', text: 'Hello from the draft.' });
    expect((await getConversation(t.db, orgId, call.conversationId))!.mode).to.equal('draft');
  });

  describe('the dial activity (as Temporal retries it)', () => {
    /** A call as POST /calls stores it, with no workflow: the test runs its dial step itself. */
    const stored = (to: string) => insertPlacedCall(t.db, orgId, { agentId, versionId: null, mode: 'draft', provider: 'sandbox', from, to, timeZone: noon(), variables: {}, metadata: {} });
    const activities = (faults?: FaultHook) => createCallActivities({ db: t.db, config: t.config, logger: createLogger('silent') }, { faults, relay: { apiBaseUrl: t.api.baseUrl } });

    it('dials once across a crash after the carrier took the call: the retry looks it up, converses, completes and charges once', async () => {
      const call = await stored(phone('212', 70, '0001'));
      let crashed = 0;
      const faults: FaultHook = (step, kind) => {
        if (step === 'after_accept' && kind === 'dial' && !crashed++) throw new SimulatedCrash(step, kind);
      };
      const acts = activities(faults);
      let failure: unknown;
      await acts.dialPlacedCall({ orgId, callId: call.id }).catch((err) => (failure = err));
      expect(failure).to.be.instanceOf(SimulatedCrash);
      const out = await acts.dialPlacedCall({ orgId, callId: call.id });
      expect(out).to.include({ status: 'completed', outcome: 'answered' });
      expect(await acts.dialPlacedCall({ orgId, callId: call.id })).to.include({ status: 'completed' });
      expect(await t.db('sandbox_dials').where({ org_id: orgId, idempotency_key: call.id })).to.have.length(1);
      const row = (await t.call('GET', `/calls/${call.id}`, { key })).body.data;
      expect(row).to.include({ status: 'completed', outcome: 'answered' });
      expect(row.conversationId).to.be.a('string');
      expect(await events('call.completed', call.id)).to.have.length(1);
      expect(await t.db('usage_entries').where({ org_id: orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [call.id])).to.have.length(1);
    });

    it('checks the rules again when the dial is due: a number put on the do-not-call list meanwhile is not dialed', async () => {
      const to = phone('212', 71, '0001');
      const call = await stored(to);
      expect((await t.call('POST', '/do-not-call', { key, json: { numbers: [to] } })).status).to.equal(200);
      expect(await activities().dialPlacedCall({ orgId, callId: call.id })).to.deep.equal({ status: 'failed', outcome: 'recipient_do_not_call', minutes: 0 });
      expect(await t.db('sandbox_dials').where({ org_id: orgId, to })).to.have.length(0);
      expect((await t.call('GET', `/calls/${call.id}`, { key })).body.data).to.include({ status: 'failed', failureReason: 'recipient_do_not_call', outcome: null });
      expect((await events('call.completed', call.id)).map((e) => e.data.outcome)).to.deep.equal(['recipient_do_not_call']);
    });
  });

  describe('the voice webhook of a carrier that asks for the answered call’s instructions (Twilio’s scheme, signed URL)', () => {
    const form = (p: Record<string, string>) => new URLSearchParams(p).toString();
    const post = (url: string, p: Record<string, string>) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(callbackSecret('sandbox'), url, p) }, body: form(p) });

    it('connects the placed call named in the URL to its agent, greeting first with the call’s variables; a call of another agent is hung up', async () => {
      const to = phone('212', 80, '0001');
      const call = await insertPlacedCall(t.db, orgId, { agentId, versionId: null, mode: 'published', provider: 'sandbox', from, to, timeZone: null, variables: { first_name: 'Linus' }, metadata: { ticket: 'T-9' } });
      await t.db('voice_calls').where({ id: call.id }).update({ version_id: (await t.db('agents').where({ id: agentId }).first()).published_version_id });
      const url = `${t.api.baseUrl}/voice/sandbox/inbound?org=${orgId}&agt=${agentId}&call=${call.id}`;
      const p = { CallSid: 'CAplacedwebhook1', From: from, To: to, Direction: 'outbound-api', CallStatus: 'in-progress' };
      const res = await post(url, p);
      expect(res.status).to.equal(200);
      const markup = await res.text();
      expect(markup).to.match(/<ConversationRelay url="ws:\/\/[^"]+\/api\/v1\/voice\/relay\?ref=vrf_/);
      expect(markup).not.to.contain('welcomeGreeting');
      expect((await t.call('GET', `/calls/${call.id}`, { key })).body.data).to.include({ status: 'answered', providerCallId: 'CAplacedwebhook1' });
      const client = await RelayClient.open(/ConversationRelay url="([^"]+)"/.exec(markup)![1].replace(/&amp;/g, '&'));
      client.send({ type: 'setup', sessionId: 'VXplaced', callSid: p.CallSid, from, to, direction: 'outbound-api', callStatus: 'in-progress', customParameters: { callId: call.id } });
      expect((await client.reply()).text).to.equal('Hi Linus, this is Acme calling about your visit tomorrow.');
      client.hangUp();
      await client.closedWith();
      const conversationId = await until(async () => (await t.call('GET', `/calls/${call.id}`, { key })).body.data.conversationId, 10_000, 'the conversation');
      expect((await getConversation(t.db, orgId, conversationId))!.metadata).to.include({ ticket: 'T-9', callId: call.id });

      // The URL names a call of another agent (or organization): hung up, the call untouched.
      const otherCall = await insertPlacedCall(t.db, orgId, { agentId, versionId: null, mode: 'draft', provider: 'sandbox', from, to: phone('212', 81, '0001'), timeZone: null, variables: {}, metadata: {} });
      const forged = `${t.api.baseUrl}/voice/sandbox/inbound?org=${orgId}&agt=${draftOnlyId}&call=${otherCall.id}`;
      const refused = await post(forged, { ...p, CallSid: 'CAplacedwebhook2' });
      expect(await refused.text()).to.contain('<Hangup/>');
      expect((await t.call('GET', `/calls/${otherCall.id}`, { key })).body.data).to.include({ status: 'queued', providerCallId: null });
      const malformed = `${t.api.baseUrl}/voice/sandbox/inbound?org=${orgId}&agt=${agentId}&call=nope`;
      const bad = await post(malformed, { ...p, CallSid: 'CAplacedwebhook3' });
      expect(bad.status).to.equal(400);
      expect(((await bad.json()) as { errors: { field: string }[] }).errors[0].field).to.equal('call');
      // Test rows with no workflow: ended here so that no later listing sees them in flight.
      await t.db('voice_calls').whereIn('id', [call.id, otherCall.id]).update({ status: 'completed', ended_at: t.db.fn.now() });
    });
  });

  describe('refusals name the field and dial nobody', () => {
    it('answers each bad request with its 4xx problem naming the field, storing no call and dialing nobody', async () => {
      const dnc = phone('212', 40, '0001');
      expect((await t.call('POST', '/do-not-call', { key, json: { numbers: [dnc] } })).status).to.equal(200);
      const optedOut = phone('212', 41, '0001');
      expect((await t.call('PUT', `/sms/contacts/${encodeURIComponent(optedOut)}/consent`, { key, json: { source: 'web_form', proofText: 'Yes' } })).status).to.equal(200);
      expect((await t.call('DELETE', `/sms/contacts/${encodeURIComponent(optedOut)}/consent`, { key })).status).to.equal(200);
      const ok = { agentId, from, to: phone('212', 42, '0001'), timeZone: noon() };
      const cases: { name: string; body: Record<string, unknown>; idem?: null; status: number; code: string; field: string }[] = [
        { name: 'no Idempotency-Key', body: ok, idem: null, status: 400, code: 'idempotency_key_required', field: 'Idempotency-Key' },
        { name: 'no agentId', body: { from: ok.from, to: ok.to }, status: 400, code: 'validation_error', field: 'agentId' },
        { name: 'another organization’s agent', body: { ...ok, agentId: other.agentId }, status: 404, code: 'agent_not_found', field: 'agentId' },
        { name: 'an agent never published', body: { ...ok, agentId: draftOnlyId }, status: 409, code: 'no_published_version', field: 'agentId' },
        { name: 'a caller id that is not E.164', body: { ...ok, from: '415-555-0100' }, status: 400, code: 'validation_error', field: 'from' },
        { name: 'another organization’s number', body: { ...ok, from: other.from }, status: 404, code: 'number_not_found', field: 'from' },
        { name: 'a number nobody owns', body: { ...ok, from: '+14155550123' }, status: 404, code: 'number_not_found', field: 'from' },
        { name: 'a recipient that is no phone number', body: { ...ok, to: '+11234567890' }, status: 400, code: 'validation_error', field: 'to' },
        { name: 'a recipient outside the US', body: { ...ok, to: '+442071838750' }, status: 422, code: 'recipient_not_us', field: 'to' },
        { name: 'a recipient on the do-not-call list', body: { ...ok, to: dnc }, status: 409, code: 'recipient_do_not_call', field: 'to' },
        { name: 'a recipient who opted out', body: { ...ok, to: optedOut }, status: 409, code: 'recipient_opted_out', field: 'to' },
        { name: 'an unknown time zone', body: { ...ok, timeZone: 'Mars/Olympus_Mons' }, status: 400, code: 'validation_error', field: 'timeZone' },
        { name: 'an unknown mode', body: { ...ok, mode: 'live' }, status: 400, code: 'validation_error', field: 'mode' },
        { name: 'a variable name that is none', body: { ...ok, variables: { 'First Name': 'Ada' } }, status: 400, code: 'validation_error', field: 'variables.First Name' },
        { name: 'a recipient at 3 am', body: { ...ok, timeZone: zoneAtHour(3) }, status: 409, code: 'outside_calling_window', field: 'to' },
      ];
      const dialsBefore = await dials();
      const callsBefore = await storedCalls();
      for (const c of cases) {
        const res = await place(c.body, c.idem === null ? null : `refused-${++n}`);
        expect(res.status, `${c.name}: ${JSON.stringify(res.body)}`).to.equal(c.status);
        expect(res.headers.get('content-type'), c.name).to.match(/^application\/problem\+json/);
        expect(res.body.code, c.name).to.equal(c.code);
        expect(res.body.errors?.[0]?.field, c.name).to.equal(c.field);
        if (c.code === 'outside_calling_window') {
          expect(Date.parse(res.body.nextAllowedAt), c.name).to.be.greaterThan(Date.now());
          expect(new Date(res.body.nextAllowedAt).toISOString()).to.equal(res.body.nextAllowedAt);
        }
      }
      // Workflows would dial at once: give them the time to, had any started.
      await new Promise((r) => setTimeout(r, 500));
      expect(await dials()).to.equal(dialsBefore);
      expect(await storedCalls()).to.equal(callsBefore);
      expect(await t.db('events').where({ org_id: orgId, type: 'call.started' }).whereRaw(`data->>'to' in (?, ?, ?)`, [dnc, optedOut, ok.to])).to.have.length(0);
    });

    it('answers 403 without outbound:write, and reads calls only with calls:read', async () => {
      const reader = await t.org('Caller Co reader', ['calls:read']);
      const writerOnly = await t.org('Caller Co writer', ['outbound:write']);
      expect((await place({ agentId, from, to: phone('212', 43, '0001'), timeZone: noon() }, 'x', reader.key)).status).to.equal(403);
      expect((await t.call('GET', '/calls', { key: writerOnly.key })).status).to.equal(403);
    });
  });

  describe('GET /calls and GET /calls/{id}', () => {
    let inboundId: string;
    let campaignCallId: string;
    before(async () => {
      // An inbound call and a campaign's call, as the voice webhook and the campaign dialer store them.
      inboundId = (await createVoiceCall(t.db, orgId, { provider: 'sandbox', providerCallId: 'CAinbound1', direction: 'inbound', from: '+12065550142', to: from, agentId, versionId: null, status: 'ringing' })).id;
      campaignCallId = (await createVoiceCall(t.db, orgId, { provider: 'sandbox', providerCallId: 'CAcampaign1', direction: 'outbound', from, to: phone('212', 50, '0001'), agentId, versionId: null, status: 'answered', campaignId: 'cmp_listed1' })).id;
    });

    it('lists every call — inbound, campaign and on demand — newest first, and walks the pages with the cursor', async () => {
      const all = (await t.call('GET', '/calls?limit=200', { key })).body.data;
      expect(all.hasMore).to.equal(false);
      const sources = new Set(all.items.map((c: any) => c.source));
      expect([...sources].sort()).to.deep.equal(['api', 'campaign', 'inbound']);
      expect(all.items[0].id).to.equal(campaignCallId);
      expect(all.items[1].id).to.equal(inboundId);
      expect(all.items.find((c: any) => c.id === inboundId)).to.include({ direction: 'inbound', source: 'inbound', status: 'ringing', outcome: null, mode: 'published', routing: null, recording: null, transfer: null });
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = (await t.call('GET', `/calls?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key })).body.data;
        expect(page.items.length).to.be.at.most(2);
        seen.push(...page.items.map((c: any) => c.id));
        cursor = page.nextCursor;
        expect(page.hasMore).to.equal(cursor !== null);
      } while (cursor);
      expect(seen).to.deep.equal(all.items.map((c: any) => c.id));
    });

    it('filters by direction, agent, status and creation time', async () => {
      const ids = async (query: string) => ((await t.call('GET', `/calls?limit=200&${query}`, { key })).body.data.items as any[]).map((c) => c.id);
      const all = ((await t.call('GET', '/calls?limit=200', { key })).body.data.items as any[]);
      expect(await ids('direction=inbound')).to.deep.equal([inboundId]);
      expect(await ids('direction=outbound')).to.deep.equal(all.filter((c) => c.direction === 'outbound').map((c) => c.id));
      expect(await ids(`agentId=${draftOnlyId}`)).to.deep.equal(all.filter((c) => c.agentId === draftOnlyId).map((c) => c.id));
      expect((await ids(`agentId=${draftOnlyId}`)).length).to.equal(1);
      const failed = await ids('status=failed');
      expect(failed.length).to.equal(4); // busy, no answer, failed, and the dial refused when due
      expect(failed).to.deep.equal(all.filter((c) => c.status === 'failed').map((c) => c.id));
      const pivot = all[Math.floor(all.length / 2)];
      const later = all.filter((c) => c.createdAt >= pivot.createdAt).map((c) => c.id);
      expect(await ids(`from=${encodeURIComponent(pivot.createdAt)}`)).to.deep.equal(later);
      expect(await ids(`to=${encodeURIComponent(pivot.createdAt)}`)).to.deep.equal(all.filter((c) => c.createdAt < pivot.createdAt).map((c) => c.id));
      expect(await ids('from=2000-01-01T00:00:00Z&to=2000-01-02T00:00:00Z')).to.deep.equal([]);
      for (const [query, field] of [['direction=sideways', 'direction'], ['status=ringing-ish', 'status'], ['from=yesterday', 'from'], ['to=2026-13-01T00:00:00Z', 'to'], ['agentId=nope', 'agentId'], ['limit=500', 'limit']]) {
        const res = await t.call('GET', `/calls?${query}`, { key });
        expect(res.status, query).to.equal(400);
        expect(res.body.errors[0].field, query).to.equal(field);
      }
      expect((await t.call('GET', '/calls?cursor=garbage', { key })).body.code).to.equal('invalid_cursor');
    });

    it('answers 404 for another organization’s call, and lists only the caller’s calls', async () => {
      const theirs = await createVoiceCall(t.db, other.orgId, { provider: 'sandbox', providerCallId: 'CAtheirs1', direction: 'inbound', from: '+12065550143', to: other.from, agentId: other.agentId, versionId: null, status: 'ringing' });
      const res = await t.call('GET', `/calls/${theirs.id}`, { key });
      expect(res.status).to.equal(404);
      expect(res.body.code).to.equal('call_not_found');
      expect((await t.call('GET', '/calls/call_doesnotexist', { key })).status).to.equal(404);
      const mine = ((await t.call('GET', '/calls?limit=200', { key })).body.data.items as any[]).map((c) => c.id);
      expect(mine).to.not.include(theirs.id);
      expect(((await t.call('GET', '/calls', { key: other.key })).body.data.items as any[]).map((c) => c.id)).to.deep.equal([theirs.id]);
      expect((await t.call('GET', `/calls/${inboundId}`, { key })).body.data).to.include({ id: inboundId, direction: 'inbound' });
    });
  });
});

describe('calls on demand over Telnyx Call Control (loopback stub)', function () {
  this.timeout(120_000);
  const apiKey = 'KEYtelnyxondemand';
  let stub: TelnyxStub;
  let t: TestApi;
  const saved: Record<string, string | undefined> = {};
  before(async function () {
    this.timeout(120_000);
    stub = await new TelnyxStub(apiKey).start();
    stub.relayCalls = true;
    const vars = { TELNYX_API_KEY: apiKey, TELNYX_BASE_URL: stub.apiBase, TELNYX_PUBLIC_KEY: stub.keys.publicKey, TELNYX_CONNECTION_ID: '1494404757140276705', TELEPHONY_PROVIDER: 'telnyx' };
    for (const [k, v] of Object.entries(vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    // Telnyx calls back PUBLIC_BASE_URL and connects its relay there: this API's own origin.
    t = await startTestApi('calls_on_demand_telnyx', QUICK_CLIENT, { worker: (d) => createActivities({ db: d.db, config: { ...d.config, publicBaseUrl: new URL(d.baseUrl).origin }, logger: d.logger }) });
  });
  after(async () => {
    await t?.close();
    await stub?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('connects the answered call to the agent with conversation_relay_start (greeting first, variables filled), then completes and charges it once', async () => {
    const { orgId, key, keyId } = await t.org('Telnyx Caller Co');
    const created = await t.call('POST', '/agents', { key, json: { name: 'Telnyx agent', voiceId: 'voice_ava', greeting: 'Hi {{first_name}}, this is Acme calling.', variables: [{ name: 'first_name', defaultValue: 'there' }] } });
    const agentId = created.body.data.id as string;
    await publishDraft(t.db, { orgId, keyId }, agentId, 'telnyx-v1');
    const offered = (await t.call('GET', '/numbers/search?areaCode=415&limit=5', { key })).body.data.items as { e164: string }[];
    const bought = await t.call('POST', '/numbers/purchase', { key, json: { e164: offered[0].e164 } });
    expect(bought.status, JSON.stringify(bought.body)).to.equal(200);
    const to = phone('212', 60, '0001');
    const res = await t.call('POST', '/calls', { key, json: { agentId, from: bought.body.data.e164, to, timeZone: zoneAtHour(12), variables: { first_name: 'Grace' } }, headers: { 'idempotency-key': 'telnyx-call-1' } });
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    expect(res.body.data).to.include({ provider: 'telnyx', status: 'queued' });
    const callId = res.body.data.id as string;
    const call = await until(async () => {
      const c = (await t.call('GET', `/calls/${callId}`, { key })).body.data;
      return c.status === 'completed' || c.status === 'failed' ? c : undefined;
    }, 60_000, 'the Telnyx call to end');
    await stub.settled();

    expect(stub.calls).to.have.length(1);
    expect(stub.calls[0]).to.include({ answering_machine_detection: 'detect', to });
    expect(stub.relays).to.have.length(1);
    const [relay] = stub.relays;
    expect(relay.error).to.equal(undefined);
    expect(relay.command).to.include({ command_id: `relay:${callId}` });
    expect(relay.heard[0]).to.equal('Hi Grace, this is Acme calling.');
    expect(call).to.include({ provider: 'telnyx', providerCallId: relay.callControlId, status: 'completed', outcome: 'answered', durationSeconds: 42 });
    const transcript = (await t.call('GET', `/conversations/${call.conversationId}/transcript`, { key })).body.data;
    expect(transcript.messages.slice(0, 2).map((m: any) => `${m.speaker}: ${m.text}`)).to.deep.equal(['agent: Hi Grace, this is Acme calling.', `user: ${stub.relayCallee[0]}`]);
    // The call reads completed once its end is stored; its minutes are charged right after (services/voice/calls.ts completeCall).
    const minutes = await until(async () => ((rows) => (rows.length ? rows : undefined))(await t.db('usage_entries').where({ org_id: orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [callId])), 10_000, 'the minutes');
    expect(minutes.map((m) => Number(m.quantity))).to.deep.equal([1]);
    const completed = await t.db('events').where({ org_id: orgId, type: 'call.completed' }).whereRaw(`data->>'callId' = ?`, [callId]);
    expect(completed.map((e) => e.data.outcome)).to.deep.equal(['answered']);
    expect(await t.db('voice_calls').where({ org_id: orgId })).to.have.length(1);
    expect(stub.problems).to.deep.equal([]);
    expect(stub.deliveries.filter((d) => d.status !== 200)).to.deep.equal([]);
  });
});
