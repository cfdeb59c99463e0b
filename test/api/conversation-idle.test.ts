/**
 * Conversations end when nobody writes (docs/api-notes.md "Conversations": idle timeouts): the agent fields
 * `idleTimeoutSeconds`, `smsIdleTimeoutSeconds` and `smsMaxSegments` (validated, compiled into versions, in the
 * diff and the pre-publish report), and the idle sweep over chat, widget and SMS conversations — ended `idle`
 * with `conversation.ended` and the analysis, a message afterwards answered 409 — measured to a `now` the test
 * chooses (no real waiting). Real HTTP on a real Postgres with the sandbox LLM.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createLlm } from '../../providers/llm';
import { createSkillHttpClient } from '../../providers/http/request';
import { getConversation } from '../../db/repositories/conversations';
import { sendMessage, startConversation, sweepIdleConversations } from '../../services/conversations/service';
import { smsSettingsOf } from '../../services/sms/answer';
import { startHousekeeping } from '../../services/housekeeping';
import { createLogger } from '../../runtime';
import { conversationLimits, durationWords } from '../../domain/conversations/limits';

const MINUTE = 60_000;

describe('idle conversations', () => {
  const t = useTestApi('conversation_idle', QUICK_CLIENT);
  let org: { orgId: string; key: string; keyId: string };
  const llm = createLlm({});
  const deps = () => ({ db: t.db, llm, http: createSkillHttpClient() });
  const analysis = () => ({ db: t.db, llm });

  before(async () => {
    org = await t.org('Idle Co');
  });

  const newAgent = async (json: Record<string, unknown> = {}) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { name: `Idle ${Math.random().toString(36).slice(2, 8)}`, voiceId: 'voice_ava', greeting: 'Hello!', ...json } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { id: string; version: number; idleTimeoutSeconds: number; smsIdleTimeoutSeconds: number; smsMaxSegments: number };
  };
  const chat = async (agentId: string) => {
    const res = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.session.id as string;
  };
  const say = (id: string, content: string) => t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
  const endedEvents = (id: string) => t.db('events').where({ org_id: org.orgId, type: 'conversation.ended' }).whereRaw(`data->>'conversationId' = ?`, [id]);
  const lastActivity = async (id: string) => (await t.db('conversations').where({ id }).first()).last_activity_at.getTime() as number;

  it('has the idle timeouts and the SMS reply length on the agent, refusing bad values with 400 naming the field', async () => {
    const agent = await newAgent();
    expect(agent).to.include({ idleTimeoutSeconds: 1800, smsIdleTimeoutSeconds: 86_400, smsMaxSegments: 3 });
    const patched = await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, json: { idleTimeoutSeconds: 600, smsIdleTimeoutSeconds: 7200, smsMaxSegments: 5 }, headers: { 'if-match': String(agent.version) } });
    expect(patched.status, patched.text).to.equal(200);
    expect(patched.body.data).to.include({ idleTimeoutSeconds: 600, smsIdleTimeoutSeconds: 7200, smsMaxSegments: 5 });
    const cases: [Record<string, unknown>, string][] = [
      [{ idleTimeoutSeconds: 30 }, 'idleTimeoutSeconds'],
      [{ idleTimeoutSeconds: 90_000 }, 'idleTimeoutSeconds'],
      [{ idleTimeoutSeconds: 60.5 }, 'idleTimeoutSeconds'],
      [{ idleTimeoutSeconds: null }, 'idleTimeoutSeconds'],
      [{ smsIdleTimeoutSeconds: 'a day' }, 'smsIdleTimeoutSeconds'],
      [{ smsIdleTimeoutSeconds: 100 }, 'smsIdleTimeoutSeconds'],
      [{ smsMaxSegments: 0 }, 'smsMaxSegments'],
      [{ smsMaxSegments: 11 }, 'smsMaxSegments'],
    ];
    for (const [json, field] of cases) {
      const res = await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, json, headers: { 'if-match': '*' } });
      expect(res.status, JSON.stringify(json)).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/problem\+json/);
      expect(res.body.errors.map((e: { field: string }) => e.field), JSON.stringify(json)).to.include(field);
      const created = await t.call('POST', '/agents', { key: org.key, json: { name: `Bad ${field} ${Math.random()}`, ...json } });
      expect(created.status, JSON.stringify(json)).to.equal(400);
      expect(created.body.errors.map((e: { field: string }) => e.field)).to.include(field);
    }
  });

  it('compiles the limits into the version; the diff shows a change and the pre-publish report states them', async () => {
    const agent = await newAgent({ idleTimeoutSeconds: 900 });
    const v1 = await publishDraft(t.db, org, agent.id, 'limits-1');
    expect(v1.kind).to.equal('published');
    const snapshot = (await t.db('agent_versions').where({ agent_id: agent.id }).first()).snapshot;
    expect(snapshot).to.include({ idleTimeoutSeconds: 900, smsIdleTimeoutSeconds: 86_400, smsMaxSegments: 3 });
    const versionId = (v1 as { version: { id: string } }).version.id;
    expect((await t.call('GET', `/agents/${agent.id}/versions/${versionId}/diff`, { key: org.key })).body.data.items).to.deep.equal([]);
    await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, json: { smsMaxSegments: 2 }, headers: { 'if-match': '*' } });
    const diff = await t.call('GET', `/agents/${agent.id}/versions/${versionId}/diff`, { key: org.key });
    expect(diff.body.data.items).to.deep.equal([{ field: 'smsMaxSegments', before: 3, after: 2, kind: 'changed' }]);
    const report = (await t.call('GET', `/agents/${agent.id}/prepublish-report`, { key: org.key })).body.data;
    expect(report.conversationLimits).to.deep.equal({ idleTimeoutSeconds: 900, smsIdleTimeoutSeconds: 86_400, smsMaxSegments: 2 });
    expect(report.willSay).to.include('Ends a chat or widget conversation after 15 minutes without a message, and an SMS conversation after 1 day (ended idle, then analysed)');
    expect(report.willSay).to.include('Keeps each SMS reply to 2 segments, cut at a sentence');
  });

  it('ends a chat session idle past its timeout with conversation.ended and the analysis; the next message answers 409', async () => {
    const agent = await newAgent();
    await publishDraft(t.db, org, agent.id, 'chat-1');
    const id = await chat(agent.id);
    expect((await say(id, 'What are your hours?')).status).to.equal(200);
    const last = await lastActivity(id);

    // 29 minutes of silence: nothing ends.
    expect((await sweepIdleConversations(analysis(), { now: last + 29 * MINUTE })).map((c) => c.id)).to.not.include(id);
    expect((await getConversation(t.db, org.orgId, id))!.status).to.equal('active');

    const ended = await sweepIdleConversations(analysis(), { now: last + 31 * MINUTE });
    expect(ended.map((c) => c.id)).to.include(id);
    const session = (await t.call('GET', `/chat/sessions/${id}`, { key: org.key })).body.data.session;
    expect(session).to.include({ status: 'ended', endReason: 'idle' });
    expect(session.endedAt).to.be.a('string');
    const events = await endedEvents(id);
    expect(events).to.have.length(1);
    expect(events[0].data).to.include({ conversationId: id, endReason: 'idle', channel: 'chat', agentId: agent.id });
    const analysed = await t.db('conversation_analyses').where({ conversation_id: id }).first();
    expect(analysed).to.include({ status: 'completed' });
    // Its length is up to the last message, not the silence after it.
    expect((await t.db('conversations').where({ id }).first()).duration_seconds).to.be.below(60);

    const late = await say(id, 'Hello again?');
    expect(late.status).to.equal(409);
    expect(late.body.code).to.equal('conversation_ended');
    // A second sweep ends nothing twice.
    expect((await sweepIdleConversations(analysis(), { now: last + 31 * MINUTE })).map((c) => c.id)).to.not.include(id);
    expect(await endedEvents(id)).to.have.length(1);
  });

  it("follows the agent's own timeout, and the draft's in a draft-mode session", async () => {
    const agent = await newAgent({ idleTimeoutSeconds: 120 });
    await publishDraft(t.db, org, agent.id, 'short-1');
    const published = await chat(agent.id);
    const draft = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id, draftMode: true } })).body.data.session.id as string;
    const last = Math.max(await lastActivity(published), await lastActivity(draft));
    const early = (await sweepIdleConversations(analysis(), { now: last + 90_000 })).map((c) => c.id);
    expect(early).to.not.include(published);
    expect(early).to.not.include(draft);
    const ended = (await sweepIdleConversations(analysis(), { now: last + 3 * MINUTE })).map((c) => c.id);
    expect(ended).to.include.members([published, draft]);
  });

  it('ends widget sessions after the chat timeout and SMS conversations after 24 hours', async () => {
    const agent = await newAgent();
    await publishDraft(t.db, org, agent.id, 'channels-1');
    const web = await startConversation(t.db, org.orgId, { agentId: agent.id, channel: 'web', keyId: null });
    const sms = await startConversation(t.db, org.orgId, { agentId: agent.id, channel: 'sms', keyId: null, counterpart: '+12125550188', seed: [] });
    await sendMessage(deps(), sms.conversation, 'Are you open on Sunday?');
    const voice = await startConversation(t.db, org.orgId, { agentId: agent.id, channel: 'voice', keyId: null, counterpart: '+12125550189' });
    const last = Math.max(await lastActivity(web.conversation.id), await lastActivity(sms.conversation.id));

    const afterHour = (await sweepIdleConversations(analysis(), { now: last + 60 * MINUTE })).map((c) => c.id);
    expect(afterHour).to.include(web.conversation.id);
    expect(afterHour).to.not.include(sms.conversation.id);
    expect((await sweepIdleConversations(analysis(), { now: last + 23 * 60 * MINUTE })).map((c) => c.id)).to.not.include(sms.conversation.id);
    const afterDay = (await sweepIdleConversations(analysis(), { now: last + 24 * 60 * MINUTE + MINUTE })).map((c) => c.id);
    expect(afterDay).to.include(sms.conversation.id);
    expect(afterDay).to.not.include(voice.conversation.id);
    for (const id of [web.conversation.id, sms.conversation.id]) {
      expect((await getConversation(t.db, org.orgId, id))!).to.include({ status: 'ended', endReason: 'idle' });
      expect(await endedEvents(id)).to.have.length(1);
      expect(await t.db('conversation_analyses').where({ conversation_id: id })).to.have.length(1);
    }
    // Voice conversations end with their call, never by the sweep.
    expect((await getConversation(t.db, org.orgId, voice.conversation.id))!.status).to.equal('active');
    // The SMS answer path reads the same compiled limits.
    expect(smsSettingsOf(sms.agent)).to.deep.equal({ maxSegments: 3, idleTimeoutSeconds: 86_400 });
    expect(smsSettingsOf({})).to.deep.equal({ maxSegments: 3, idleTimeoutSeconds: 86_400 });
  });

  it('lets several sweepers run at once: each conversation is ended and announced once, batch by batch', async () => {
    const agent = await newAgent();
    await publishDraft(t.db, org, agent.id, 'race-1');
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await startConversation(t.db, org.orgId, { agentId: agent.id, channel: 'chat', keyId: null })).conversation.id);
    const now = Date.now() + 40 * MINUTE;
    const runs = await Promise.all([0, 1, 2].map(() => sweepIdleConversations(analysis(), { now, limit: 3 })));
    const more = await Promise.all([0, 1].map(() => sweepIdleConversations(analysis(), { now, limit: 3 })));
    const ended = [...runs, ...more].flat().map((c) => c.id).filter((id) => ids.includes(id));
    expect(ended).to.have.members(ids);
    expect(new Set(ended).size).to.equal(ended.length);
    for (const id of ids) expect(await endedEvents(id)).to.have.length(1);
  });

  it('runs as housekeeping beside the worker (sweepIdle takes the time it measures to)', async () => {
    const agent = await newAgent();
    await publishDraft(t.db, org, agent.id, 'hk-1');
    const id = await chat(agent.id);
    const housekeeping = startHousekeeping({ db: t.db, logger: createLogger('silent'), rollupIntervalMs: 0, purgeIntervalMs: 0, idleIntervalMs: 0, llm });
    try {
      expect(await housekeeping.sweepIdle((await lastActivity(id)) + 31 * MINUTE)).to.be.at.least(1);
      expect((await getConversation(t.db, org.orgId, id))!).to.include({ status: 'ended', endReason: 'idle' });
    } finally {
      await housekeeping.stop();
    }
  });

  it('reads the limits of a version published before they existed as the defaults', () => {
    expect(conversationLimits({})).to.deep.equal({ idleTimeoutSeconds: 1800, smsIdleTimeoutSeconds: 86_400, smsMaxSegments: 3 });
    expect([durationWords(1800), durationWords(86_400), durationWords(90), durationWords(3600)]).to.deep.equal(['30 minutes', '1 day', '90 seconds', '1 hour']);
  });
});
