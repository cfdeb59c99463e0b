/**
 * Agents answer texts (docs/sms.md "Agents answer texts"): an inbound text to a number assigned to an
 * agent runs a turn of the agent's published version in its `sms` conversation with the sender (resumed
 * while open, ended `idle` after the idle timeout), and the reply goes out through `sms-message/{id}` with
 * every SMS rule: STOP/HELP are never answered by the model, nothing goes to a number that is not
 * SMS-enabled, the reply's segments are charged. The worker runs the service's own activities
 * (createActivities), as npm start composes them; callbacks are signed as the sandbox provider signs them.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import knex from 'knex';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { publishDraft } from './agents-fixtures';
import { until } from '../helpers/wait';
import { allMessages, findOpenSmsConversation, getConversation } from '../../db/repositories/conversations';
import { sendMessage } from '../../services/conversations/service';
import { answerAndDeliver, answerInboundText, recoverPendingAnswers } from '../../services/sms/answer';
import { getMessageRecord } from '../../db/repositories/smsMessages';
import { createTelephony } from '../../providers/telephony';
import { createLlm } from '../../providers/llm';
import { createSkillHttpClient } from '../../providers/http/request';
import { testTemporal } from '../helpers/temporal';
import { countSegments, fitToSegments } from '../../domain/sms/segments';
import { runCli } from '../../cli';

describe('SMS segments (3GPP TS 23.038 / 23.040)', () => {
  it('counts GSM-7 septets (extension characters twice) and UCS-2 code units, 160/153 and 70/67 per segment', () => {
    expect(countSegments('a'.repeat(160))).to.deep.equal({ encoding: 'GSM-7', units: 160, segments: 1 });
    expect(countSegments('a'.repeat(161))).to.deep.equal({ encoding: 'GSM-7', units: 161, segments: 2 });
    expect(countSegments('a'.repeat(306)).segments).to.equal(2);
    expect(countSegments('a'.repeat(307)).segments).to.equal(3);
    expect(countSegments('€'.repeat(80))).to.deep.equal({ encoding: 'GSM-7', units: 160, segments: 1 });
    expect(countSegments('é'.repeat(10)).encoding).to.equal('GSM-7');
    expect(countSegments('ł' + 'a'.repeat(69))).to.deep.equal({ encoding: 'UCS-2', units: 70, segments: 1 });
    expect(countSegments('ł' + 'a'.repeat(70)).segments).to.equal(2);
    expect(countSegments('😀'.repeat(34)).units).to.equal(68);
  });

  it('cuts a reply at the last sentence that fits, else at a word with "..."', () => {
    const sentence = 'We open at nine on Saturday and close at one in the afternoon. ';
    const long = sentence.repeat(10).trim();
    const cut = fitToSegments(long, 3);
    expect(countSegments(cut).segments).to.be.at.most(3);
    expect(cut.endsWith('afternoon.')).to.equal(true);
    expect(cut.length).to.be.greaterThan(300);
    expect(fitToSegments('short', 1)).to.equal('short');
    const oneSentence = `${'word '.repeat(100)}end.`;
    const cutWords = fitToSegments(oneSentence, 1);
    expect(cutWords.endsWith('...')).to.equal(true);
    expect(countSegments(cutWords).segments).to.equal(1);
  });
});

describe('agents answer texts (inbound SMS → turn → reply)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let numberIndex = 10;

  before(async () => {
    t = await startSmsTestApi('sms_agent_replies', {}, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
  });

  /** An organization with an active registration and an agent answering an SMS-enabled number. */
  async function textingOrg(opts: { smsEnabled?: boolean } = {}) {
    const o = await t.org('Texting Co');
    expect((await t.call('PUT', '/sms', { key: o.key, json: COMPLETE_BRAND })).status).to.equal(200);
    const agent = await t.call('POST', '/agents', { key: o.key, json: { name: 'Front desk', voiceId: 'voice_ava', instructions: 'You answer questions about Acme Dental.' } });
    const agentId = agent.body.data.id as string;
    await publishDraft(t.db, { orgId: o.orgId, keyId: o.keyId }, agentId, 'v1');
    const ours = sandboxInventory('312')[numberIndex++].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164: ours } });
    expect(bought.status, JSON.stringify(bought.body)).to.be.oneOf([200, 201]);
    const numberId = bought.body.data.id as string;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: o.key, json: { agentId } })).status).to.equal(200);
    if (opts.smsEnabled !== false) expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: o.key, json: { enabled: true } })).status).to.equal(200);
    await t.db('sms_registrations').where({ org_id: o.orgId }).update({ status: 'active' });
    return { ...o, agentId, ours };
  }

  /** A signed inbound-text callback. @returns the stored inbound message */
  async function inbound(to: string, from: string, text: string) {
    const id = `SMin${crypto.randomBytes(6).toString('hex')}`;
    const res = await postCallback(t, { type: 'message.inbound', id, from, to, text });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return t.db('sms_messages').where({ provider_message_id: id }).first();
  }

  const replyTo = (orgId: string, inboundId: string) => t.db('sms_messages').where({ org_id: orgId, reply_to: inboundId }).first();

  it('answers a text with a turn of the agent in an sms conversation, and resumes it for the next text', async () => {
    const o = await textingOrg();
    const sender = '+12125550141';
    const first = await inbound(o.ours, sender, 'What time do you open on Saturday?');
    const reply = await until(async () => ((r) => (r && r.status !== 'queued' ? r : undefined))(await replyTo(o.orgId, first.id)), 30_000, 'the reply');
    expect(reply).to.include({ direction: 'outbound', trigger: 'reply', from_e164: o.ours, to_e164: sender });
    expect(reply.status).to.be.oneOf(['sent', 'delivered']);
    const stored = await until(async () => ((r) => (r.answer_state === 'answered' ? r : undefined))(await t.db('sms_messages').where({ id: first.id }).first()), 20_000, 'the answer settled');
    expect(stored.conversation_id).to.equal(reply.conversation_id);
    // Answered in the API process that took the callback: no workflow was needed.
    const { client } = await testTemporal();
    expect(await client.workflow.getHandle(`sms-reply/${first.id}`).describe().then(() => 'started', () => 'none')).to.equal('none');

    const conversation = (await getConversation(t.db, o.orgId, reply.conversation_id))!;
    expect(conversation).to.include({ channel: 'sms', agentId: o.agentId, status: 'active', mode: 'published' });
    const lines = (await allMessages(t.db, o.orgId, conversation.id)).filter((m) => m.content && !m.toolCalls).map((m) => [m.role, m.content]);
    expect(lines[0]).to.deep.equal(['user', 'What time do you open on Saturday?']);
    expect(lines[1][0]).to.equal('assistant');
    expect(reply.body).to.equal(fitToSegments(lines[1][1]!, 3));
    const listed = await t.call('GET', '/conversations?channel=sms', { key: o.key });
    expect(listed.status).to.equal(200);
    expect(listed.body.data.items.find((c: { id: string }) => c.id === conversation.id)).to.include({ counterpart: sender, channel: 'sms' });

    const segments = await t.db('usage_entries').where({ org_id: o.orgId, kind: 'sms_segments' });
    expect(segments).to.have.length(1);
    expect(Number(segments[0].quantity)).to.equal(countSegments(reply.body).segments);
    expect(await t.db('usage_entries').where({ org_id: o.orgId, kind: 'conversation_message' })).to.have.length(1);

    const second = await inbound(o.ours, sender, 'And on Sunday?');
    const reply2 = await until(async () => replyTo(o.orgId, second.id), 30_000, 'the second reply');
    expect(reply2.conversation_id).to.equal(conversation.id);
    expect((await allMessages(t.db, o.orgId, conversation.id)).filter((m) => m.role === 'user').map((m) => m.content)).to.deep.equal(['What time do you open on Saturday?', 'And on Sunday?']);
  });

  it('texts the agent from the CLI (`texts send`), signed as the sandbox carrier, and prints its reply', async () => {
    const o = await textingOrg();
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = t.databaseUrl;
    const out: string[] = [];
    try {
      const code = await runCli(['texts', 'send', '--to', o.ours, '--from', '+12125550149', '--url', t.api.baseUrl, 'What time do you open on Saturday?'], (l) => out.push(l), (l) => out.push(l));
      expect(code, out.join('\n')).to.equal(0);
    } finally {
      if (saved === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = saved;
    }
    const stored = await t.db('sms_messages').where({ org_id: o.orgId, direction: 'inbound', from_e164: '+12125550149' }).first();
    expect(stored).to.include({ body: 'What time do you open on Saturday?', to_e164: o.ours });
    const reply = await replyTo(o.orgId, stored.id);
    expect(out[0]).to.equal('texter: What time do you open on Saturday?');
    expect(out[1]).to.equal(`agent : ${reply.body}`);
    expect(out[2]).to.match(new RegExp(`^text ${stored.id} answered by ${reply.id}`));
    // A number of no organization is refused as the callback endpoint refuses it.
    const refused: string[] = [];
    expect(await runCli(['texts', 'send', '--to', '+19995550003', '--url', t.api.baseUrl, '--wait', '0', 'hi'], (l) => refused.push(l), (l) => refused.push(l))).to.equal(1);
    expect(refused[0]).to.match(/^refused \(404\).*unknown_external_id/);
  });

  it('leaves a text unanswered while a member holds the conversation, texts the member\'s line, and answers again once handed back (docs/api-notes.md "Live control")', async () => {
    const o = await textingOrg();
    const sender = '+12125550149';
    const first = await inbound(o.ours, sender, 'Do you take new patients?');
    const reply = await until(async () => replyTo(o.orgId, first.id), 30_000, 'the reply');
    const conversationId = reply.conversation_id as string;
    const control = (json: Record<string, unknown>) => t.call('POST', `/conversations/${conversationId}/control`, { key: o.key, json });
    expect((await control({ action: 'take_over' })).status).to.equal(200);
    const held = await inbound(o.ours, sender, 'Can a person call me about my bill?');
    const settled = await until(async () => ((r) => (r.answer_state !== 'pending' ? r : undefined))(await t.db('sms_messages').where({ id: held.id }).first()), 20_000, 'the held text settled');
    expect(settled.answer_state).to.not.equal('answered');
    expect(await replyTo(o.orgId, held.id)).to.equal(undefined);
    const said = await control({ action: 'say', content: 'Hi, this is Sam from the front desk. I will call you in five minutes.' });
    expect(said.status, said.text).to.equal(200);
    const texted = await until(async () => t.db('sms_messages').where({ org_id: o.orgId, direction: 'outbound', to_e164: sender, body: 'Hi, this is Sam from the front desk. I will call you in five minutes.' }).first(), 20_000, "the member's text");
    expect(texted).to.include({ from_e164: o.ours });
    const lines = (await allMessages(t.db, o.orgId, conversationId)).filter((m) => m.content && !m.toolCalls).map((m) => [m.role, m.name ?? null, m.content]);
    expect(lines.slice(-2)).to.deep.equal([
      ['user', null, 'Can a person call me about my bill?'],
      ['assistant', `operator:${o.keyId}`, 'Hi, this is Sam from the front desk. I will call you in five minutes.'],
    ]);
    expect((await control({ action: 'hand_back' })).status).to.equal(200);
    const after = await inbound(o.ours, sender, 'Thanks! What are your hours?');
    expect((await until(async () => replyTo(o.orgId, after.id), 30_000, 'the agent answering again')).conversation_id).to.equal(conversationId);
  });

  it('leaves STOP and HELP to the keyword handler: the model answers neither, and nothing follows an opt-out', async () => {
    const o = await textingOrg();
    const sender = '+12125550142';
    const stop = await inbound(o.ours, sender, 'STOP');
    const confirmation = await until(async () => t.db('sms_messages').where({ org_id: o.orgId, direction: 'outbound', trigger: 'keyword', to_e164: sender }).first(), 20_000, 'the STOP confirmation');
    expect(confirmation.body).to.match(/unsubscribed/);
    const after = await inbound(o.ours, sender, 'Are you open today?');
    // The agent's answer declines: no turn, no reply; the text is owed nothing more.
    const settled = await until(async () => ((r) => (r.answer_state !== 'pending' ? r : undefined))(await t.db('sms_messages').where({ id: after.id }).first()), 20_000, 'the answer settled');
    expect(settled).to.include({ answer_state: 'declined', answer_note: 'recipient_opted_out' });
    expect((await t.db('sms_messages').where({ id: stop.id }).first()).answer_state).to.equal(null);
    expect(await replyTo(o.orgId, stop.id)).to.equal(undefined);
    expect(await replyTo(o.orgId, after.id)).to.equal(undefined);
    expect(await t.db('conversations').where({ org_id: o.orgId, channel: 'sms' })).to.have.length(0);
  });

  it('does not answer on a number that is not SMS-enabled (no turn, nothing sent)', async () => {
    const o = await textingOrg({ smsEnabled: false });
    const text = await inbound(o.ours, '+12125550143', 'Hello?');
    const settled = await until(async () => ((r) => (r.answer_state !== 'pending' ? r : undefined))(await t.db('sms_messages').where({ id: text.id }).first()), 20_000, 'the answer settled');
    expect(settled).to.include({ answer_state: 'declined', answer_note: 'number_not_sms_enabled' });
    expect(await t.db('conversations').where({ org_id: o.orgId, channel: 'sms' })).to.have.length(0);
    expect(await t.db('sms_messages').where({ org_id: o.orgId, direction: 'outbound' })).to.have.length(0);
  });

  it('ends a conversation idle for longer than the timeout and starts a new one; a repeated answer sends nothing twice', async () => {
    const o = await textingOrg();
    const sender = '+12125550144';
    const first = await inbound(o.ours, sender, 'Do you take new patients?');
    const reply = await until(async () => replyTo(o.orgId, first.id), 30_000, 'the reply');
    const { client } = await testTemporal();
    const deps = { db: t.db, llm: createLlm(), http: createSkillHttpClient(), temporal: { client, taskQueue: 'unused-no-worker' } };
    // The same text answered again (a retried activity): the same reply, nothing new.
    expect(await answerInboundText(deps, o.orgId, first.id)).to.include({ answered: true, replyMessageId: reply.id, conversationId: reply.conversation_id });
    expect(await t.db('sms_messages').where({ org_id: o.orgId, reply_to: first.id })).to.have.length(1);

    // A day and a minute later: the conversation ends `idle`, the text starts a new one.
    const later = await t.db('sms_messages').insert({ id: `msg_idle${crypto.randomBytes(4).toString('hex')}`, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body: 'Are you there?', status: 'received', media_ids: [] }).returning('*');
    const answer = await answerInboundText(deps, o.orgId, later[0].id, Date.now() + 86_460_000);
    expect(answer).to.have.property('answered', true);
    const old = (await getConversation(t.db, o.orgId, reply.conversation_id))!;
    expect(old).to.include({ status: 'ended', endReason: 'idle' });
    expect((answer as { conversationId: string }).conversationId).to.not.equal(old.id);
  });

  it('hands a text still owed an answer after its process died to the sms-reply workflow, which answers it once', async () => {
    const o = await textingOrg();
    const sender = '+12125550145';
    // As a process that stored the text and died before answering leaves it.
    const id = `msg_orphan${crypto.randomBytes(4).toString('hex')}`;
    await t.db('sms_messages').insert({ id, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body: 'Is anyone there?', status: 'received', media_ids: [], answer_state: 'pending', created_at: new Date(Date.now() - 60_000) });
    const { client } = await testTemporal();
    const recovered = await recoverPendingAnswers(t.db, { client, taskQueue: t.taskQueue! }, new Date(), 1000);
    expect(recovered).to.be.at.least(1);
    const result = await client.workflow.getHandle(`sms-reply/${id}`).result();
    expect(result).to.include({ answered: true });
    expect(result.delivery).to.deep.equal({ status: 'sent', error: null });
    expect(await t.db('sms_messages').where({ org_id: o.orgId, reply_to: id })).to.have.length(1);
    expect((await t.db('sms_messages').where({ id }).first()).answer_state).to.equal('answered');
    // Answered: the next sweep hands over nothing of it.
    await recoverPendingAnswers(t.db, { client, taskQueue: t.taskQueue! }, new Date(), 1000);
    expect(await t.db('sms_messages').where({ org_id: o.orgId, reply_to: id })).to.have.length(1);
  });

  it('sends once a reply whose process died after storing it with its send intent and before the carrier was asked', async () => {
    const o = await textingOrg();
    const sender = '+12125550146';
    const id = `msg_halfway${crypto.randomBytes(4).toString('hex')}`;
    await t.db('sms_messages').insert({ id, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body: 'Do you open on Sundays?', status: 'received', media_ids: [], answer_state: 'pending' });
    const { client } = await testTemporal();
    // The callback's own attempt, whose carrier call never happens (the process dies at the send).
    const real = createTelephony({ db: t.db, config: t.config });
    const dying = Object.assign(Object.create(real), { sendMessage: async () => Promise.reject(new Error('process died')) });
    const deps = { db: t.db, llm: createLlm(), http: createSkillHttpClient(), temporal: { client, taskQueue: t.taskQueue! }, telephony: dying };
    const known = { message: (await getMessageRecord(t.db, o.orgId, id))! };
    let died: unknown;
    await answerAndDeliver(deps, o.orgId, id, known).catch((err: unknown) => (died = err));
    expect(String(died)).to.contain('process died');
    const queued = await replyTo(o.orgId, id);
    expect(queued).to.include({ status: 'queued', agent_reply: null });
    expect((await t.db('sms_messages').where({ id }).first())).to.include({ answer_state: 'pending', conversation_id: queued.conversation_id });
    expect(await t.db('provider_intents').where({ org_id: o.orgId, reference: queued.id })).to.have.length(1);

    // The sweep (past the grace period) hands it to sms-reply: the same reply, asked of the carrier once, no second turn.
    expect(await recoverPendingAnswers(t.db, { client, taskQueue: t.taskQueue! }, new Date(Date.now() + 60_000), 1000)).to.be.at.least(1);
    const result = await client.workflow.getHandle(`sms-reply/${id}`).result();
    expect(result).to.include({ answered: true, replyMessageId: queued.id });
    expect(result.delivery).to.deep.equal({ status: 'sent', error: null });
    expect((await replyTo(o.orgId, id)).status).to.equal('sent');
    expect((await t.db('sms_messages').where({ id }).first()).answer_state).to.equal('answered');
    const sends = await t.db('provider_requests').where({ org_id: o.orgId, operation: 'sendMessage' });
    expect(sends.filter((r: { request: { reference?: string } }) => r.request.reference === queued.id)).to.have.length(1);
    expect(await t.db('conversation_turns').where({ org_id: o.orgId, conversation_id: queued.conversation_id })).to.have.length(1);
  });

  it('sends the turn a process that died before recording it already ran, without a second turn', async () => {
    const o = await textingOrg();
    const sender = '+12125550147';
    const first = await inbound(o.ours, sender, 'Do you take new patients?');
    const reply = await until(async () => replyTo(o.orgId, first.id), 30_000, 'the first reply');
    // A second text whose callback ran its turn and died before recording anything on the text.
    const id = `msg_turned${crypto.randomBytes(4).toString('hex')}`;
    await t.db('sms_messages').insert({ id, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body: 'And on Saturdays?', status: 'received', media_ids: [], answer_state: 'pending' });
    const open = (await findOpenSmsConversation(t.db, o.orgId, o.agentId, sender))!;
    const turned = await sendMessage({ db: t.db, llm: createLlm(), http: createSkillHttpClient() }, open, 'And on Saturdays?');
    const { client } = await testTemporal();
    expect(await recoverPendingAnswers(t.db, { client, taskQueue: t.taskQueue! }, new Date(Date.now() + 60_000), 1000)).to.be.at.least(1);
    const result = await client.workflow.getHandle(`sms-reply/${id}`).result();
    expect(result).to.include({ answered: true, conversationId: reply.conversation_id });
    expect((await replyTo(o.orgId, id)).body).to.equal(fitToSegments(turned.reply!.content!, 3));
    expect(await t.db('conversation_turns').where({ org_id: o.orgId, conversation_id: reply.conversation_id })).to.have.length(2);
  });

  it('sweeps texts owed an answer with one read: the too old declined in one write, the others handed to sms-reply', async () => {
    const o = await textingOrg();
    const orphan = (sender: string, ageMs: number) => {
      const id = `msg_sweep${crypto.randomBytes(4).toString('hex')}`;
      return { id, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body: 'Still open?', status: 'received', media_ids: [], answer_state: 'pending', created_at: new Date(Date.now() - ageMs) };
    };
    const tooOld = [orphan('+12125550151', 2 * 86_400_000), orphan('+12125550152', 2 * 86_400_000), orphan('+12125550153', 3 * 86_400_000)];
    const due = [orphan('+12125550154', 60_000), orphan('+12125550155', 90_000)];
    await t.db('sms_messages').insert([...tooOld, ...due]);
    const { client } = await testTemporal();
    // The sweep on a connection of its own, so only its statements are counted.
    const sweepDb = knex(t.db.client.config);
    const statements: string[] = [];
    sweepDb.on('query', (q: { sql: string }) => statements.push(q.sql));
    try {
      const started = await recoverPendingAnswers(sweepDb, { client, taskQueue: t.taskQueue! }, new Date(), 1000);
      expect(started).to.be.at.least(due.length);
    } finally {
      await sweepDb.destroy();
    }
    expect(statements.filter((q) => /^select/i.test(q)), statements.join('\n')).to.have.length(1);
    expect(statements.filter((q) => /^update/i.test(q)), statements.join('\n')).to.have.length(1);
    const old = await t.db('sms_messages').whereIn('id', tooOld.map((m) => m.id)).select('answer_state', 'answer_note');
    expect(old).to.deep.equal(tooOld.map(() => ({ answer_state: 'declined', answer_note: 'too_old' })));
    for (const m of due) expect(await client.workflow.getHandle(`sms-reply/${m.id}`).result()).to.include({ answered: true });
    expect(await t.db('sms_messages').where({ org_id: o.orgId }).whereIn('reply_to', tooOld.map((m) => m.id))).to.have.length(0);
    expect(await t.db('sms_messages').where({ org_id: o.orgId }).whereIn('reply_to', due.map((m) => m.id))).to.have.length(due.length);
  });
});
