/**
 * What reaches a person (docs/api-notes.md "Conversations": outbound text): one script walked on every channel
 * that has a test helper — chat (secret key), the widget (publishable key and session token), texts to the
 * agent's number (signed sandbox callbacks) and a phone call over the voice relay (the sandbox caller) — through a greeting with an unfilled placeholder, knowledge with
 * headings, a skill that fails on the model's path, a playbook whose skill fails, and leaving a playbook; then
 * a misbehaving upstream model on the OpenAI-compatible adapter. No outbound line may carry `{{`, `(source:`, a
 * JSON object, a stack frame or an internal name or code; the receipts keep the sources and the errors.
 */
import { expect } from 'chai';
import { chain, publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { answerWith, startOpenAiStub, type OpenAiStub } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createSource } from '../../db/repositories/knowledge';
import { createLogger } from '../../runtime';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall } from '../../providers/telephony/sandboxCaller';
import { COMPLETE_BRAND, postCallback } from './sms-fixtures';
import { until } from '../helpers/wait';
import { ingestInline } from '../helpers/knowledge';

const SITE = 'https://clinic.example.com';

/** Everything that must not reach a person. */
const INTERNAL = [
  /\{\{|\}\}/,
  /\((source|sources):/i,
  /\{\s*"/,
  /\n\s*at .+:\d+:\d+/,
  /\b(book_visit|check_order|book_appointment|start_playbook_\w+)\b/,
  /\b(caller_not_verified|invalid_input|ssrf_refused|http_status|skill_failed|unknown_skill)\b/,
  /\b[a-z]+(?:_[a-z]+)+\b/,
];
const assertSpeakable = (lines: string[], where: string) => {
  expect(lines.length, where).to.be.greaterThan(3);
  for (const line of lines) for (const re of INTERNAL) expect(line, `${where}: ${re}`).to.not.match(re);
};

/** The script each channel walks. */
const SCRIPT = [
  'When are you open on Monday?',
  'Is there parking?',
  'please check order order_id: 7',
  "I'd like to book an appointment",
  'Ada',
  'sometime next week',
  'book appointment',
  'never mind',
];

describe('outbound text on chat, widget, SMS and voice (sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let pk: string;
  let number: string;

  before(async () => {
    t = await startTestApi('outboundtext');
    org = await t.org('Hygiene');
    const a = await t.call('POST', '/agents', {
      key: org.key,
      json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Welcome to Acme Clinic, {{first_name}}! How can I help?', variables: [{ name: 'phone', defaultValue: '+12065550100' }] },
    });
    agentId = a.body.data.id;
    const skills = [
      { name: 'book_visit', type: 'book_appointment', description: 'Books a visit', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } },
      // A private address the SSRF guard refuses: the model's call fails with an internal error text.
      { name: 'check_order', type: 'http_request', description: 'Looks up an order', config: { url: 'https://10.1.2.3/orders', method: 'POST', inputs: [{ name: 'order_id' }] } },
    ];
    for (const json of skills) expect((await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json })).status).to.equal(201);
    const graph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
        { id: 'ask_date', type: 'ask', prompt: 'When would you like to come, {{name}}?', gathers: 'start_time' },
        { id: 'book', type: 'skill', skill: 'book_visit' },
        { id: 'confirm', type: 'say', prompt: "You're all set: your confirmation code is {{book_visit_confirmation}}." },
        { id: 'end', type: 'end' },
      ],
      edges: chain('start', 'ask_name', 'ask_date', 'book', 'confirm', 'end'),
    };
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, { key: org.key, json: { name: 'book_appointment', whenToUse: 'The caller wants to book an appointment', graph } });
    expect(pb.status, pb.text).to.equal(201);
    const source = await createSource(
      t.db,
      org.orgId,
      { agentId, kind: 'text', name: 'Clinic FAQ', text: '# Clinic FAQ\n\nOPENING HOURS\nWe are open Monday to Friday from 8am to 6pm.\n\nParking\nParking is free behind the building.' },
      async () => undefined,
    );
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: source.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    expect((await publishDraft(t.db, org, agentId, 'h1')).kind).to.equal('published');
    pk = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'site', agentId, allowedOrigins: [SITE] } })).body.data.key;
    number = sandboxInventory('206')[0].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: number } });
    expect(bought.status, bought.text).to.equal(200);
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
  });
  after(async () => t?.close());

  /** The stored assistant lines of a conversation and its receipts. */
  const stored = async (conversationId: string) => {
    const rows = await t.db('conversation_messages').where({ org_id: org.orgId, conversation_id: conversationId, role: 'assistant' }).whereNotNull('content').orderBy('seq');
    return rows.map((r) => r.content as string);
  };

  it('chat: every line said is plain; the receipts keep the sources and the errors', async () => {
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    const id = s.body.data.session.id as string;
    const said: string[] = [s.body.data.greeting.content];
    const receipts: any[] = [];
    for (const content of SCRIPT) {
      const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
      expect(res.status, res.text).to.equal(200);
      said.push(res.body.data.reply.content);
      receipts.push(res.body.data.receipt);
    }
    expect(said[0]).to.equal('Welcome to Acme Clinic! How can I help?');
    expect(said[1]).to.equal('We are open Monday to Friday from 8am to 6pm.');
    expect(said[2]).to.equal('Parking is free behind the building.');
    expect(said[6]).to.match(/^I'm sorry, I couldn't complete that/);
    assertSpeakable(said, 'chat replies');
    assertSpeakable(await stored(id), 'chat transcript');
    expect(receipts[0].knowledge[0].results[0].source).to.equal('Clinic FAQ');
    expect(receipts[2].toolCalls[0].error).to.be.a('string').and.not.equal('');
    expect(receipts[5].toolCalls[0]).to.include({ skill: 'book_visit' });
    expect(receipts[5].toolCalls[0].error).to.match(/start_time/);
  });

  it('widget: the same script over a publishable-key session', async () => {
    const raw = (path: string, headers: Record<string, string>, body: unknown) =>
      fetch(`${t.api.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: SITE, ...headers }, body: JSON.stringify(body) });
    const started = ((await (await raw('/chat/widget/sessions', { authorization: `Bearer ${pk}` }, {})).json()) as { data: any }).data;
    const said: string[] = [started.greeting.content];
    for (const content of SCRIPT) {
      const res = await raw(`/chat/sessions/${started.session.id}/messages`, { authorization: `Bearer ${started.sessionToken}` }, { content });
      expect(res.status).to.equal(200);
      said.push(((await res.json()) as { data: any }).data.reply.content);
    }
    assertSpeakable(said, 'widget replies');
    assertSpeakable(await stored(started.session.id), 'widget transcript');
  });

  it("sms: the same script texted to the agent's number, each reply as it goes out to the carrier", async () => {
    expect((await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND })).status).to.equal(200);
    const numberId = (await t.db('phone_numbers').where({ org_id: org.orgId, e164: number }).first()).id as string;
    expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: org.key, json: { enabled: true } })).status).to.equal(200);
    await t.db('sms_registrations').where({ org_id: org.orgId }).update({ status: 'active' });
    const texter = '+12065550188';
    const said: string[] = [];
    for (const [i, text] of SCRIPT.entries()) {
      const id = `SMwalk${i}${Date.now()}`;
      expect((await postCallback(t, { type: 'message.inbound', id, from: texter, to: number, text })).status).to.equal(200);
      const inbound = await t.db('sms_messages').where({ provider_message_id: id }).first();
      const reply = await until(async () => t.db('sms_messages').where({ org_id: org.orgId, reply_to: inbound.id }).first(), 20_000, `the reply to "${text}"`);
      said.push(reply.body);
    }
    assertSpeakable(said, 'sms replies');
    const conversationId = (await t.db('sms_messages').where({ org_id: org.orgId, to_e164: texter, direction: 'outbound' }).first()).conversation_id as string;
    assertSpeakable(await stored(conversationId), 'sms transcript');
  });

  it('voice: the same script spoken over the ConversationRelay socket', async () => {
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: '+12065550177', to: number, script: SCRIPT.map((say) => ({ say })) });
    expect(rec.webhookStatus).to.equal(200);
    const heard = rec.lines.filter((l) => l.who === 'agent').map((l) => l.text);
    expect(heard).to.have.length(SCRIPT.length + 1);
    assertSpeakable(heard, 'voice');
  });
});

describe('outbound text from a misbehaving upstream model (OpenAI-compatible adapter)', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };

  before(async () => {
    stub = await startOpenAiStub(
      answerWith({ content: 'Booked via book_visit! {"ok":true,"output":{"confirmation":"A-1"}} Your code is {{book_visit_confirmation}} (source: Clinic FAQ).\n    at run (/srv/skills.ts:10:3)' }),
    );
    t = await startTestApi('outboundupstream', {}, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Upstream hygiene');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it('says only the plain part, streamed and stored alike', async () => {
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava' } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'book_visit', type: 'end_call', config: {} } });
    await publishDraft(t.db, org, agentId, 'u1');
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id;
    const res = await fetch(`${t.api.baseUrl}/chat/sessions/${id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'Book me in' }),
    });
    const text = await res.text();
    const deltas = [...text.matchAll(/event: ?message\.delta\ndata: ?(.*)\n/g)].map((m) => JSON.parse(m[1]).content).join('');
    const stored = await t.call('GET', `/chat/sessions/${id}`, { key: org.key });
    const reply = stored.body.data.messages[stored.body.data.messages.length - 1].content as string;
    expect(reply).to.equal('Booked via book visit! Your code is.');
    expect(deltas).to.equal(reply);
  });
});
