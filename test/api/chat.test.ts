/**
 * Chat sessions over a real socket and Postgres with the sandbox LLM (docs/api-notes.md "Conversations"): published
 * vs draft and the 409, pinning and rollback, knowledge answers with their source, guardrail refusals,
 * an `http_request` skill against a local HTTPS server (and the SSRF refusal), a playbook that gathers
 * two inputs then books, receipts, usage and events, SSE read with eventsource-parser, tenancy and scopes.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { chain, publishDraft } from './agents-fixtures';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';
import { topicRefusal } from '../../domain/conversations/guardrails';
import { createLogger } from '../../runtime';
import { listUsage } from '../../db/repositories/usage';
import { ledgerSum, listLedger } from '../../db/repositories/billing';
import { createSource } from '../../db/repositories/knowledge';
import { ingestInline } from '../helpers/knowledge';

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const TLS = { key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')), cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')) };

describe('chat sessions (sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let server: https.Server;
  let skillBase: string;
  const received: { method: string; url: string; body: unknown }[] = [];
  const savedAllow = process.env.HTTP_ALLOW_PRIVATE_HOSTS;

  const publish = (agentId: string, k: string) =>
    publishDraft(t.db, org, agentId, k);
  const newAgent = async (json: Record<string, unknown>) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { voiceId: 'voice_ava', ...json } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id as string;
  };
  const start = (json: Record<string, unknown>, key = org.key) => t.call('POST', '/chat/sessions', { key, json });
  const say = (id: string, content: string, key = org.key) => t.call('POST', `/chat/sessions/${id}/messages`, { key, json: { content } });

  before(async () => {
    server = https.createServer(TLS, (req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        received.push({ method: req.method ?? '', url: req.url ?? '', body: raw ? JSON.parse(raw) : null });
        res.setHeader('content-type', 'application/json');
        // The booking contract (docs/api-notes.md "Booking skills") at /book; an order status elsewhere.
        res.end(JSON.stringify(req.url === '/book' ? { bookingId: 'bk_chat_1', status: 'confirmed' } : { status: 'shipped', carrier: 'UPS' }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    skillBase = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApi('chat', QUICK_CLIENT, { providers: { skillHttp: createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), ca: TLS.cert }) } });
    org = await t.org('Chat');
    process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
  });
  after(async () => {
    if (savedAllow === undefined) delete process.env.HTTP_ALLOW_PRIVATE_HOSTS;
    else process.env.HTTP_ALLOW_PRIVATE_HOSTS = savedAllow;
    await t?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('refuses a never-published agent with 409 no_published_version, and talks to its draft with draftMode', async () => {
    const agentId = await newAgent({ name: 'Drafty', greeting: 'Hi from the draft, {{first_name}}!', variables: [{ name: 'first_name', defaultValue: 'friend' }] });
    const refused = await start({ agentId });
    expect(refused.status).to.equal(409);
    expect(refused.headers.get('content-type')).to.match(/application\/problem\+json/);
    expect(refused.body.code).to.equal('no_published_version');
    const draft = await start({ agentId, draftMode: true, variables: { first_name: 'Ada' } });
    expect(draft.status, draft.text).to.equal(201);
    expect(draft.body.data.session).to.include({ agentId, mode: 'draft', versionId: null, status: 'active', channel: 'chat' });
    expect(draft.body.data.greeting.content).to.equal('Hi from the draft, Ada!');
    const bad = await start({ agentId, draftMode: true, variables: { 'Bad-Name': 'x' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].field).to.equal('variables.Bad-Name');
  });

  it('pins a session to the version published when it started; publish and rollback reach the next session at once', async () => {
    const agentId = await newAgent({ name: 'Pinned', greeting: 'Version one here.' });
    const v1 = await publish(agentId, 'p1');
    expect(v1.kind).to.equal('published');
    const s1 = (await start({ agentId })).body.data;
    expect(s1.greeting.content).to.equal('Version one here.');
    // Version 2 blocks a topic and changes the greeting.
    const current = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data.version;
    expect((await t.call('PATCH', `/agents/${agentId}`, { key: org.key, json: { greeting: 'Version two here.' }, headers: { 'if-match': `"${current}"` } })).status).to.equal(200);
    expect((await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org.key, json: { blockedTopics: ['pricing'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null } })).status).to.equal(200);
    await publish(agentId, 'p2');
    const s2 = (await start({ agentId })).body.data;
    expect(s2.greeting.content).to.equal('Version two here.');
    expect(s2.session.versionId).to.not.equal(s1.session.versionId);

    const onV2 = await say(s2.session.id, 'What about pricing?');
    expect(onV2.body.data.reply.content).to.equal(topicRefusal('pricing'));
    expect(onV2.body.data.receipt.guardrails).to.deep.equal([
      { rule: 'blockedTopics', action: 'refused', excerpt: 'pricing', stage: 'input', match: 'phrase', reason: 'the message contains the words "pricing"' },
    ]);
    const onV1 = await say(s1.session.id, 'What about pricing?');
    expect(onV1.body.data.reply.content).to.not.equal(topicRefusal('pricing'));
    expect(onV1.body.data.receipt.guardrails).to.deep.equal([]);

    const rb = await t.call('POST', `/agents/${agentId}/rollback`, { key: org.key, json: { versionId: s1.session.versionId } });
    expect(rb.status, rb.text).to.equal(200);
    const s3 = (await start({ agentId })).body.data;
    expect(s3.session.versionId).to.equal(s1.session.versionId);
    expect(s3.greeting.content).to.equal('Version one here.');
    expect((await say(s2.session.id, 'pricing again')).body.data.reply.content, 'a running session keeps its version').to.equal(topicRefusal('pricing'));
  });

  it('answers from knowledge without citing it to the person; the receipt lists the lookup and its source', async () => {
    const agentId = await newAgent({ name: 'Knows' });
    // Created through the repository: with no Temporal client, the ingestion steps run inline below (a
    // workflow left without a worker on the shared dev server would hold its time skipping).
    const source = await createSource(t.db, org.orgId, { agentId, kind: 'text', name: 'Opening hours', text: 'We are open Monday to Friday from 8am to 6pm. Parking is free behind the building.' }, async () => undefined);
    const src = { body: { data: source } };
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: src.body.data.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    await publish(agentId, 'k1');
    const s = (await start({ agentId })).body.data.session;
    const res = await say(s.id, 'When are you open on Monday?');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.contain('8am to 6pm').and.not.contain('(source:');
    const lookup = res.body.data.receipt.knowledge[0];
    expect(lookup.query).to.equal('When are you open on Monday?');
    expect(lookup.results[0]).to.include({ sourceId: src.body.data.id, source: 'Opening hours' });
    expect(lookup.results[0].score).to.be.greaterThan(0);
    expect(res.body.data.receipt.latency.map((l: { stage: string }) => l.stage)).to.include.members(['retrieval', 'llm_total', 'turn']);
    expect(res.body.data.session.usage.totalTokens).to.be.greaterThan(0);
  });

  it('runs an http_request skill against a local HTTPS server as a tool call, and refuses a private address not on the allowlist', async () => {
    const agentId = await newAgent({ name: 'Orders' });
    const skill = await t.call('POST', `/agents/${agentId}/skills`, {
      key: org.key,
      json: { name: 'check_order', type: 'http_request', description: 'Looks up an order', config: { url: `${skillBase}/orders`, method: 'POST', inputs: [{ name: 'order_id' }], timeoutMs: 2000 } },
    });
    expect(skill.status, skill.text).to.equal(201);
    const blocked = await t.call('POST', `/agents/${agentId}/skills`, {
      key: org.key,
      json: { name: 'internal_lookup', type: 'http_request', description: 'Internal', config: { url: 'https://10.1.2.3/lookup', method: 'GET', inputs: [{ name: 'q' }] } },
    });
    expect(blocked.status, blocked.text).to.equal(201);
    await publish(agentId, 'o1');
    const s = (await start({ agentId })).body.data.session;
    received.length = 0;
    const res = await say(s.id, 'Please check order order_id: 42');
    expect(res.status, res.text).to.equal(200);
    expect(received).to.deep.equal([{ method: 'POST', url: '/orders', body: { order_id: '42' } }]);
    const call = res.body.data.receipt.toolCalls[0];
    expect(call).to.include({ skill: 'check_order', type: 'http_request', source: 'model' });
    expect(call.inputs).to.deep.equal({ order_id: '42' });
    expect(call.output).to.deep.equal({ status: 'shipped', carrier: 'UPS' });
    expect(res.body.data.reply.content).to.contain('shipped');
    expect(res.body.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);

    const refused = await say(s.id, 'Do an internal lookup q=x');
    const rcall = refused.body.data.receipt.toolCalls[0];
    expect(rcall.skill).to.equal('internal_lookup');
    expect(rcall.error).to.match(/10\.1\.2\.3|not allowed|refused|private/i);
    const strict = createSkillHttpClient({ allow: parseAllowList('') });
    try {
      const err = await strict.send({ method: 'POST', url: `${skillBase}/orders`, json: {}, timeoutMs: 2000 }).then(
        () => null,
        (e: { code?: string }) => e,
      );
      expect(err?.code, 'loopback without the allowlist').to.equal('ssrf_refused');
    } finally {
      await strict.close();
    }
  });

  it('runs a playbook that gathers two inputs, then books through the skill, and records every node', async () => {
    const agentId = await newAgent({ name: 'Booker', variables: [{ name: 'phone', description: "caller's phone" }] });
    // A booking endpoint on a loopback address is saved and published only while HTTP_ALLOW_PRIVATE_HOSTS lists it (before()).
    const skill = await t.call('POST', `/agents/${agentId}/skills`, {
      key: org.key,
      json: { name: 'book', type: 'book_appointment', description: 'Books a visit', config: { url: `${skillBase}/book`, durationMinutes: 30, timeZone: 'America/Chicago' } },
    });
    expect(skill.status, skill.text).to.equal(201);
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, {
      key: org.key,
      json: {
        name: 'booking',
        graph: {
          nodes: [
            { id: 'start', type: 'start' },
            { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
            { id: 'ask_time', type: 'ask', prompt: 'When would you like to come, {{name}}?', gathers: 'start_time' },
            { id: 'do_book', type: 'skill', skill: 'book' },
            { id: 'done', type: 'say', prompt: "You're booked, {{name}}." },
            { id: 'end', type: 'end' },
          ],
          edges: chain('start', 'ask_name', 'ask_time', 'do_book', 'done', 'end'),
        },
      },
    });
    expect(pb.status, pb.text).to.equal(201);
    const v = await publish(agentId, 'b1');
    expect(v.kind, JSON.stringify(v)).to.equal('published');
    const s = (await start({ agentId, variables: { phone: '+12065550100' } })).body.data.session;
    const a = await say(s.id, 'I would like a booking please');
    expect(a.body.data.reply.content).to.equal('May I have your name?');
    expect(a.body.data.session.playbook).to.deep.equal({ name: 'booking', node: 'ask_name' });
    const b = await say(s.id, 'Ada Lovelace');
    expect(b.body.data.reply.content).to.equal('When would you like to come, Ada Lovelace?');
    const c = await say(s.id, '2026-12-01T15:00:00Z');
    expect(c.body.data.reply.content).to.equal("You're booked, Ada Lovelace.");
    expect(c.body.data.session.playbook).to.equal(null);
    const call = c.body.data.receipt.toolCalls[0];
    expect(call).to.include({ skill: 'book', type: 'book_appointment', source: 'playbook' });
    expect(call.inputs).to.deep.equal({ name: 'Ada Lovelace', phone: '+12065550100', start_time: '2026-12-01T15:00:00Z' });
    expect(call.output).to.include({ bookingId: 'bk_chat_1', status: 'confirmed', startTime: '2026-12-01T09:00:00-06:00' });
    expect(received.filter((r) => r.url === '/book').map((r) => r.body)).to.deep.equal([
      { startTime: '2026-12-01T15:00:00.000Z', durationMinutes: 30, timeZone: 'America/Chicago', name: 'Ada Lovelace', phone: '+12065550100', conversationId: s.id },
    ]);
    expect(c.body.data.receipt.playbook).to.deep.equal({ name: 'booking', nodes: ['ask_time', 'do_book', 'done', 'end'] });
    expect(c.body.data.session.variables).to.include({ name: 'Ada Lovelace', start_time: '2026-12-01T15:00:00Z' });
  });

  it('streams a turn as Server-Sent Events that end with event: done, and stores what it streamed', async () => {
    const agentId = await newAgent({ name: 'Streamer', greeting: 'Hello!' });
    await publish(agentId, 's1');
    const s = (await start({ agentId })).body.data.session;
    const res = await fetch(`${t.api.baseUrl}/chat/sessions/${s.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Tell me something nice about your service' }),
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e) });
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    const types = events.map((e) => e.event);
    expect(types[types.length - 1]).to.equal('done');
    expect(types.filter((x) => x === 'message.delta').length).to.be.greaterThan(1);
    const completed = events.find((e) => e.event === 'message.completed');
    expect(completed, types.join(',')).to.not.equal(undefined);
    const turn = JSON.parse(completed!.data);
    const streamed = events.filter((e) => e.event === 'message.delta').map((e) => JSON.parse(e.data).content).join('');
    expect(streamed).to.equal(turn.reply.content);
    const stored = await t.call('GET', `/chat/sessions/${s.id}`, { key: org.key });
    expect(stored.body.data.messages.map((m: { content: string }) => m.content)).to.deep.equal(['Hello!', 'Tell me something nice about your service', turn.reply.content]);
  });

  it('redacts card numbers before storing, charges usage per turn, and emits conversation and message events', async () => {
    const agentId = await newAgent({ name: 'Billing' });
    await publish(agentId, 'u1');
    const s = (await start({ agentId })).body.data.session;
    const res = await say(s.id, 'My card is 4111 1111 1111 1111, thanks');
    expect(res.body.data.messages[0].content).to.equal('My card is [card ending 1111], thanks');
    expect(res.body.data.receipt.guardrails[0]).to.include({ rule: 'redactPii', action: 'redacted', excerpt: 'card_number' });
    const ended = await t.call('POST', `/chat/sessions/${s.id}/end`, { key: org.key });
    expect(ended.body.data).to.include({ status: 'ended', endReason: 'ended_by_user' });
    const again = await say(s.id, 'hello?');
    expect(again.status).to.equal(409);
    expect(again.body.code).to.equal('conversation_ended');
    const usage = (await listUsage(t.db, org.orgId)).filter((u) => (u.details as { conversationId?: string }).conversationId === s.id);
    // The turn's reply and tokens, and the tokens of the conversation's analysis once it ended.
    const ofTurns = usage.filter((u) => (u.details as { purpose?: string }).purpose !== 'analysis');
    expect(ofTurns.map((u) => u.kind).sort()).to.deep.equal(['conversation_message', 'llm_tokens']);
    expect(ofTurns.find((u) => u.kind === 'llm_tokens')!.quantity).to.equal(res.body.data.session.usage.totalTokens);
    expect(usage.filter((u) => (u.details as { purpose?: string }).purpose === 'analysis').map((u) => u.kind)).to.deep.equal(['llm_tokens']);
    const events = await t.db('events').where({ org_id: org.orgId }).whereRaw(`data->>'conversationId' = ?`, [s.id]).orderBy('created_at').select('type');
    expect(events.map((e) => e.type)).to.deep.equal(['conversation.started', 'message.created', 'message.created', 'conversation.ended', 'conversation.analyzed']);
  });

  it('charges each turn to the wallet with the turn (a ledger row per usage entry, running balance) and emits billing.wallet.low once on a crossing', async () => {
    const payer = await t.org('Payer');
    const agent = (await t.call('POST', '/agents', { key: payer.key, json: { name: 'Payer', voiceId: 'voice_ava', greeting: 'Hi' } })).body.data;
    await publishDraft(t.db, payer, agent.id, 'p1');
    expect((await t.call('POST', '/billing/wallet/topup', { key: payer.key, json: { amountCents: 1000 }, headers: { 'idempotency-key': 'top1' } })).status).to.equal(201);
    const s = (await start({ agentId: agent.id }, payer.key)).body.data.session;
    for (const text of ['first question', 'second question']) expect((await say(s.id, text, payer.key)).status).to.equal(200);
    const usage = (await listUsage(t.db, payer.orgId)).filter((u) => (u.details as { conversationId?: string }).conversationId === s.id);
    const charged = usage.filter((u) => u.amountCents > 0);
    expect(charged.length).to.be.greaterThan(1);
    const ledger = await listLedger(t.db, payer.orgId);
    expect(ledger.filter((l) => l.kind === 'usage').map((l) => l.usageEntryId).sort()).to.deep.equal(charged.map((u) => u.id).sort());
    let running = 0;
    for (const l of ledger) {
      running += l.amountCents;
      expect(l.balanceAfterCents, l.id).to.equal(running);
    }
    const wallet = (await t.call('GET', '/billing/wallet', { key: payer.key })).body.data;
    expect(wallet.balanceCents).to.equal(1000 - charged.reduce((sum, u) => sum + u.amountCents, 0));
    expect(await ledgerSum(t.db, payer.orgId)).to.equal(wallet.balanceCents);
    const low = await t.db('events').where({ org_id: payer.orgId, type: 'billing.wallet.low' }).select('data');
    expect(low).to.have.length(1);
    expect(low[0].data).to.include({ previousBalanceCents: 1000, lowBalanceThresholdCents: 1000, currency: 'USD' });
    expect(low[0].data.balanceCents).to.be.lessThan(1000);
    expect(ledger.map((l) => l.id)).to.include(low[0].data.ledgerEntryId);
  });

  it("answers 404 for another organization's session and agent, and checks chat scopes", async () => {
    const agentId = await newAgent({ name: 'Private' });
    await publish(agentId, 'x1');
    const s = (await start({ agentId })).body.data.session;
    const other = await t.org('Other');
    expect((await t.call('GET', `/chat/sessions/${s.id}`, { key: other.key })).status).to.equal(404);
    expect((await say(s.id, 'hi', other.key)).status).to.equal(404);
    const foreign = await start({ agentId }, other.key);
    expect(foreign.status).to.equal(404);
    expect(foreign.body.errors[0].field).to.equal('agentId');
    const reader = await t.org('Reader', ['chat:read']);
    await t.db('api_keys').where({ id: reader.keyId }).update({ org_id: org.orgId });
    expect((await t.call('GET', `/chat/sessions/${s.id}`, { key: reader.key })).status).to.equal(200);
    const denied = await say(s.id, 'hi', reader.key);
    expect(denied.status).to.equal(403);
    expect(denied.body.code).to.equal('insufficient_scope');
  });
});
