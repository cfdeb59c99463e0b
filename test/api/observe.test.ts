/**
 * Observe (docs/api-notes.md "Observe"; spec "Scope rules" 1 and 4): conversations of every channel in one list —
 * chat, simulations, SMS threads and campaign calls — transcripts and receipts under calls:read, empty
 * transcripts with only analytics:read, tenancy, and analytics computed in SQL.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { startTestApi, type TestApi } from '../helpers/api';
import { insertMessage } from '../../db/repositories/smsMessages';
import { recordCallConversation } from '../../db/repositories/conversations';
import { smsThreadId } from '../../db/repositories/observe';
import { startConversation } from '../../services/conversations/service';

describe('Observe: conversations, transcripts, receipts and analytics', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let analyst: string;
  let auditor: string;
  let chatOnly: string;
  let agentId: string;
  let chatId: string;
  let simId: string;
  const ours = '+12065550111';
  const theirs = '+12065550199';

  const scoped = async (scopes: string[]) => {
    const k = await t.org('scoped', scopes);
    await t.db('api_keys').where({ id: k.keyId }).update({ org_id: org.orgId });
    return k.key;
  };

  before(async () => {
    t = await startTestApi('observe');
    org = await t.org('Observe');
    analyst = await scoped(['analytics:read']);
    auditor = await scoped(['calls:read']);
    chatOnly = await scoped(['chat:read']);
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', greeting: 'Hello!' } })).body.data.id;
    await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org.key, json: { blockedTopics: ['politics'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: ['lawyer'], maxConversationMinutes: null } });
    await publishDraft(t.db, org, agentId, 'o1');
    // A chat session with two turns, the second escalated (not contained).
    chatId = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id;
    await t.call('POST', `/chat/sessions/${chatId}/messages`, { key: org.key, json: { content: 'What about politics?' } });
    await t.call('POST', `/chat/sessions/${chatId}/messages`, { key: org.key, json: { content: 'I want a lawyer' } });
    // A simulation's conversation.
    simId = (await startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, simulation: true })).conversation.id;
    // An SMS thread: one text in, one out.
    await insertMessage(t.db, org.orgId, { id: 'msg_obs00000001', direction: 'inbound', trigger: null, from: theirs, to: ours, body: 'Are you open today?', mediaIds: ['med_abc12345'], status: 'received' });
    await insertMessage(t.db, org.orgId, { id: 'msg_obs00000002', direction: 'outbound', trigger: 'reply', from: ours, to: theirs, body: 'Yes, until 6pm.', status: 'sent' });
    // A campaign call, recorded as the dial activity records it (twice: stored once).
    for (let i = 0; i < 2; i++) {
      await t.db.transaction((trx) =>
        recordCallConversation(trx, org.orgId, { dialKey: 'att_x:1', agentId, campaignId: 'cmp_obs1', counterpart: theirs, outcome: 'completed', durationSeconds: 42, startedAt: new Date(Date.now() - 60_000), providerCallId: 'call_1' }),
      );
    }
  });
  after(async () => t?.close());

  it('lists every channel newest first with analytics:read, with filters and a cursor', async () => {
    const res = await t.call('GET', '/conversations', { key: analyst });
    expect(res.status, res.text).to.equal(200);
    const byId = new Map(res.body.data.items.map((c: { id: string }) => [c.id, c]));
    expect(res.body.data.items).to.have.length(4);
    expect(byId.get(chatId)).to.include({ channel: 'chat', agentId, status: 'ended', endReason: 'escalated', simulation: false, messageCount: 5 });
    expect(byId.get(simId)).to.include({ channel: 'chat', simulation: true });
    expect(byId.get(smsThreadId(ours, theirs))).to.include({ channel: 'sms', counterpart: theirs, messageCount: 2 });
    const call = res.body.data.items.find((c: { channel: string }) => c.channel === 'voice');
    expect(call).to.include({ campaignId: 'cmp_obs1', outcome: 'completed', durationSeconds: 42, counterpart: theirs });
    const starts = res.body.data.items.map((c: { startedAt: string }) => c.startedAt);
    expect([...starts].sort().reverse()).to.deep.equal(starts);

    expect((await t.call('GET', '/conversations?channel=sms', { key: analyst })).body.data.items.map((c: { id: string }) => c.id)).to.deep.equal([smsThreadId(ours, theirs)]);
    expect((await t.call('GET', '/conversations?simulation=true', { key: analyst })).body.data.items.map((c: { id: string }) => c.id)).to.deep.equal([simId]);
    expect((await t.call('GET', '/conversations?campaignId=cmp_obs1', { key: analyst })).body.data.items).to.have.length(1);
    expect((await t.call('GET', '/conversations?channel=fax', { key: analyst })).body.errors[0].field).to.equal('channel');

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { items: { id: string }[]; nextCursor: string | null } } } = await t.call('GET', `/conversations?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { key: analyst });
      seen.push(...page.body.data.items.map((c) => c.id));
      cursor = page.body.data.nextCursor;
    } while (cursor);
    expect(seen).to.deep.equal(res.body.data.items.map((c: { id: string }) => c.id));
    const other = await t.org('Other');
    expect((await t.call('GET', '/conversations', { key: other.key })).body.data.items).to.deep.equal([]);
  });

  it('serves the verbatim transcript with calls:read on every channel, and an empty one with only analytics:read', async () => {
    const full = await t.call('GET', `/conversations/${chatId}/transcript`, { key: auditor });
    expect(full.status, full.text).to.equal(200);
    expect(full.body.data.redacted).to.equal(false);
    expect(full.body.data.messages.map((m: { speaker: string; text: string }) => `${m.speaker}:${m.text}`)).to.deep.equal([
      'agent:Hello!',
      'user:What about politics?',
      "agent:I'm sorry, I can't help with politics. Is there anything else I can do for you?",
      'user:I want a lawyer',
      "agent:I'll connect you with a member of our team who can help with that.",
    ]);
    const sms = await t.call('GET', `/conversations/${smsThreadId(ours, theirs)}/transcript`, { key: auditor });
    expect(sms.body.data.messages.map((m: { speaker: string; text: string; attachmentIds: string[] }) => [m.speaker, m.text, m.attachmentIds])).to.deep.equal([
      ['contact', 'Are you open today?', ['med_abc12345']],
      ['agent', 'Yes, until 6pm.', []],
    ]);
    const listedOnly = await t.call('GET', `/conversations/${chatId}/transcript`, { key: analyst });
    expect(listedOnly.status).to.equal(200);
    expect(listedOnly.body.data).to.include({ redacted: true });
    expect(listedOnly.body.data.messages).to.deep.equal([]);
    expect((await t.call('GET', `/conversations/${chatId}/transcript`, { key: chatOnly })).status).to.equal(403);
    const other = await t.org('Stranger');
    expect((await t.call('GET', `/conversations/${chatId}/transcript`, { key: other.key })).status).to.equal(404);
    expect((await t.call('GET', `/conversations/${smsThreadId(ours, theirs)}/transcript`, { key: other.key })).status).to.equal(404);
  });

  it('serves receipts with calls:read only', async () => {
    const r = await t.call('GET', `/conversations/${chatId}/receipt`, { key: auditor });
    expect(r.status).to.equal(200);
    expect(r.body.data.turns.map((x: { guardrails: { rule: string }[] }) => x.guardrails[0].rule)).to.deep.equal(['blockedTopics', 'escalateOn']);
    expect((await t.call('GET', `/conversations/${chatId}/receipt`, { key: analyst })).status).to.equal(403);
  });

  it('computes analytics in SQL: counts, containment, guardrail triggers, tokens and cost, per day and per agent', async () => {
    const res = await t.call('GET', '/analytics/overview', { key: analyst });
    expect(res.status, res.text).to.equal(200);
    const a = res.body.data;
    expect(a).to.include({ timeZone: 'UTC', bucket: 'day' });
    // The chat session and the call (simulations are left out; SMS threads are not runtime conversations).
    expect(a.totals).to.include({ conversations: 2, guardrailTriggers: 2, containmentRate: 0.5, llmTokens: 0 });
    expect(a.totals.messages).to.equal(5);
    expect(a.totals.costCents).to.equal(2);
    expect(a.series).to.have.length(1);
    expect(a.series[0].start).to.equal(new Date().toISOString().slice(0, 10));
    const byAgent = await t.call('GET', `/agents/${agentId}/analytics?timeZone=America/Chicago&from=${new Date(Date.now() - 3600_000).toISOString()}`, { key: analyst });
    expect(byAgent.body.data).to.include({ agentId, bucket: 'hour', timeZone: 'America/Chicago' });
    expect(byAgent.body.data.totals.conversations).to.equal(2);
    expect((await t.call('GET', '/analytics/overview?timeZone=Mars/Base', { key: analyst })).body.errors[0].field).to.equal('timeZone');
    const other = await t.org('Elsewhere');
    expect((await t.call('GET', '/analytics/overview', { key: other.key })).body.data.totals.conversations).to.equal(0);
    expect((await t.call('GET', `/agents/${agentId}/analytics`, { key: other.key })).status).to.equal(404);
  });
});
