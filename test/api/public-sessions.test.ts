/**
 * What public sessions see (docs/api-notes.md "Widget", "Conversations"; spec "Scope rules" 1): a widget session token
 * gets the conversation only — message deltas, the agent's messages and the end of the stream, never a
 * receipt, tool call, tool message, tool output, guardrail decision or session state — and receipts stay
 * behind `calls:read` for secret keys too, in JSON answers and in Server-Sent Events. Real socket, Postgres
 * and the sandbox LLM.
 */
import { expect } from 'chai';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';

const SITE = 'https://shop.example.com';

/** Keys a public answer must never carry, at any depth (the session's `variables` and `metadata` are empty). */
export const INTERNAL_KEYS = ['receipt', 'toolCalls', 'toolCallId', 'inputs', 'output', 'guardrails', 'knowledge', 'latency', 'caller_verified', 'origin'];

/** Every object key of a JSON value, at any depth. */
export function keysOf(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => keysOf(v, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.add(k);
      keysOf(v, out);
    }
  }
  return out;
}

/** Reads a Server-Sent Events body to the end. */
export async function readEvents(res: Response): Promise<EventSourceMessage[]> {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  return events;
}

describe('public sessions see only the conversation; receipts need calls:read', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let pk: string;

  const widgetSession = async () => {
    const res = await fetch(`${t.api.baseUrl}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${pk}`, origin: SITE, 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).to.equal(201);
    return ((await res.json()) as any).data as { session: { id: string }; sessionToken: string };
  };
  const asSession = (token: string, method: string, path: string, body?: unknown, accept?: string) =>
    fetch(`${t.api.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, origin: SITE, ...(body ? { 'content-type': 'application/json' } : {}), ...(accept ? { accept } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });

  before(async () => {
    t = await startTestApi('publicsessions');
    org = await t.org('Shop');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Shop helper', voiceId: 'voice_ava', greeting: 'Hello from the shop' } })).body.data.id;
    await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org.key, json: { redactPii: true, blockedTopics: [], forbiddenPhrases: ['competitor'], escalateOn: [], profanityFilter: false, maxConversationMinutes: null } });
    await t.call('POST', '/records', { key: org.key, json: { name: 'Ann Buyer', phone: '+14155550177', fields: { tier: 'gold' } } });
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'find_customer', type: 'lookup_record', config: { matchOn: ['phone'] } } });
    expect(skill.status, skill.text).to.equal(201);
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { enabled: true, title: 'Shop', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' } });
    await publishDraft(t.db, org, agentId, 'p1');
    pk = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'shop', agentId, allowedOrigins: [SITE] } })).body.data.key;
  });
  after(async () => t?.close());

  it('a widget turn answers the session and the agent messages only: no receipt, tool message or tool output', async () => {
    const ws = await widgetSession();
    const res = await asSession(ws.sessionToken, 'POST', `/chat/sessions/${ws.session.id}/messages`, { content: 'find customer with phone +14155550177 and say competitor' });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).to.equal(200);
    const keys = keysOf(body.data);
    for (const k of INTERNAL_KEYS) expect(keys.has(k), k).to.equal(false);
    expect(body.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant']);
    expect(JSON.stringify(body)).to.not.include('"tool"');
    expect(body.data.session).to.deep.include({ variables: {}, metadata: {}, playbook: null });
    expect(body.data.reply.role).to.equal('assistant');
    const read = await asSession(ws.sessionToken, 'GET', `/chat/sessions/${ws.session.id}`);
    const detail = (await read.json()) as any;
    expect(detail.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['assistant', 'user', 'assistant']);
    for (const k of INTERNAL_KEYS) expect(keysOf(detail.data).has(k), k).to.equal(false);
    // The organization with calls:read still sees everything.
    const full = await t.call('GET', `/chat/sessions/${ws.session.id}`, { key: org.key });
    expect(full.body.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['assistant', 'user', 'assistant', 'tool', 'assistant']);
  });

  it('a widget stream carries deltas, the completed message and done only', async () => {
    const ws = await widgetSession();
    const res = await asSession(ws.sessionToken, 'POST', `/chat/sessions/${ws.session.id}/messages`, { content: 'find customer with phone +14155550177 please, card 4111 1111 1111 1111' }, 'text/event-stream');
    expect(res.status).to.equal(200);
    const events = await readEvents(res);
    expect([...new Set(events.map((e) => e.event))]).to.deep.equal(['message.delta', 'message.completed', 'done']);
    const completed = JSON.parse(events.find((e) => e.event === 'message.completed')!.data);
    for (const k of INTERNAL_KEYS) expect(keysOf(completed).has(k), k).to.equal(false);
    expect(completed.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant']);
  });

  it('a secret key without calls:read gets no receipt, tool events or tool messages; with calls:read it does', async () => {
    const noCalls = await t.org('No calls', NON_RESERVED_SCOPES.filter((s) => s !== 'calls:read'));
    await t.db('api_keys').where({ id: noCalls.keyId }).update({ org_id: org.orgId });
    const s = (await t.call('POST', '/chat/sessions', { key: noCalls.key, json: { agentId } })).body.data.session;
    const turn = await t.call('POST', `/chat/sessions/${s.id}/messages`, { key: noCalls.key, json: { content: 'find customer with phone +14155550177' } });
    expect(turn.status, turn.text).to.equal(200);
    expect(turn.body.data.receipt).to.equal(undefined);
    expect(turn.body.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant']);
    expect(keysOf(turn.body.data).has('toolCalls')).to.equal(false);
    const read = await t.call('GET', `/chat/sessions/${s.id}`, { key: noCalls.key });
    expect(read.body.data.messages.some((m: { role: string }) => m.role === 'tool')).to.equal(false);
    const sse = await fetch(`${t.api.baseUrl}/chat/sessions/${s.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${noCalls.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'find customer with phone +14155550177' }),
    });
    const events = await readEvents(sse);
    expect(events.some((e) => e.event === 'tool.call' || e.event === 'tool.result' || e.event === 'guardrail')).to.equal(false);
    expect(JSON.parse(events.find((e) => e.event === 'message.completed')!.data).receipt).to.equal(undefined);
    const withCalls = await fetch(`${t.api.baseUrl}/chat/sessions/${s.id}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ content: 'find customer with phone +14155550177' }),
    });
    const all = await readEvents(withCalls);
    expect(all.map((e) => e.event)).to.include('tool.call').and.include('tool.result');
    expect(JSON.parse(all.find((e) => e.event === 'message.completed')!.data).receipt.toolCalls).to.have.length(1);
  });
});
