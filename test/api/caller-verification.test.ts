/**
 * Caller verification against Records (docs/api-notes.md "Caller verification"), end
 * to end on a real socket, Postgres and the sandbox LLM: phone calls by the sandbox caller over the
 * ConversationRelay socket (caller ID, PIN by keypad — matched, and failed until the attempts are used
 * up), a chat session identified by its `phone` variable, skills reserved to verified callers, records
 * of another organization never matching, and every lookup audited.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { getConversation } from '../../db/repositories/conversations';
import { getVoiceCall } from '../../db/repositories/voiceCalls';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall, type CallStep } from '../../providers/telephony/sandboxCaller';
import { until } from '../helpers/wait';

describe('caller verification against Records', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let other: { orgId: string; key: string; keyId: string };
  let numbers = 0;

  const known = '+12065550170';
  const stranger = '+12065550171';
  const otherOrgsCaller = '+12065550172';

  /** An agent with the given caller verification, published, answering a fresh sandbox number. */
  const verifyingAgent = async (callerVerification: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const a = await t.call('POST', '/agents', { key: org.key, json: { name: `Desk ${numbers}`, voiceId: 'voice_ava', greeting: 'Thanks for calling Acme.', dtmf: { enabled: true, terminator: '#' }, ...extra } });
    expect(a.status, a.text).to.equal(201);
    const agentId = a.body.data.id as string;
    const cv = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { requiredForSkills: [], maxAttempts: 3, ...callerVerification } });
    expect(cv.status, cv.text).to.equal(200);
    await publishDraft(t.db, org, agentId, `v${numbers}`);
    const e164 = sandboxInventory(['206', '415', '312'][Math.floor(numbers / 5)])[numbers++ % 5].e164;
    const p = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
    expect(p.status, p.text).to.equal(200);
    expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
    return { agentId, number: e164 };
  };

  /** Places a call and returns what the caller heard and the stored conversation once it ended. */
  const call = async (from: string, to: string, script: CallStep[]) => {
    const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from, to, script });
    expect(rec.webhookStatus).to.equal(200);
    const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
    const conversationId = await until(async () => {
      const c = await getVoiceCall(t.db, org.orgId, callId);
      if (!c?.conversationId) return null;
      return (await getConversation(t.db, org.orgId, c.conversationId))?.status === 'ended' ? c.conversationId : null;
    }, 10_000, `call ${callId} ended`);
    return { heard: rec.lines.map((l) => l.text), rec, conversation: (await getConversation(t.db, org.orgId, conversationId))! };
  };

  before(async () => {
    t = await startTestApi('callerver', QUICK_CLIENT);
    org = await t.org('Verifying');
    other = await t.org('Elsewhere');
    const mk = async (key: string, json: Record<string, unknown>) => expect((await t.call('POST', '/records', { key, json })).status).to.equal(201);
    await mk(org.key, { name: 'Grace Hopper', phone: known, email: 'grace@example.com', fields: { pin: '4321', account: 'G-7' } });
    // Another organization's customer: must never match a call or session of this one.
    await mk(other.key, { name: 'Not Yours', phone: otherOrgsCaller, email: 'not-yours@example.com', fields: { pin: '1111' } });
  });
  after(async () => t?.close());

  it('method caller_id: a call from a number in Records starts verified with the caller in the variables; the lookup is audited', async () => {
    const { number } = await verifyingAgent({ enabled: true, method: 'caller_id' });
    const { heard, conversation } = await call(known, number, [{ say: 'Hello there' }]);
    expect(heard[0]).to.equal('Thanks for calling Acme.');
    const rec = (await t.call('GET', `/records?phone=${encodeURIComponent(known)}`, { key: org.key })).body.data.items[0];
    expect(conversation.variables).to.include({ caller_phone: known, caller_verified: 'true', caller_verification: 'verified', caller_name: 'Grace Hopper', caller_record_id: rec.id, caller_email: 'grace@example.com' });
    const audit = await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'callerVerification', actor_id: conversation.id });
    expect(audit.map((a) => [a.actor_kind, a.resource_type, a.resource_id, a.status_code])).to.deep.equal([['agent', 'record', rec.id, 200]]);
  });

  it('an unknown number, and a number only another organization has in its Records, are not verified', async () => {
    const { number } = await verifyingAgent({ enabled: true, method: 'caller_id' });
    for (const from of [stranger, otherOrgsCaller]) {
      const { conversation } = await call(from, number, [{ say: 'Hi' }]);
      expect(conversation.variables, from).to.include({ caller_phone: from, caller_verified: 'false', caller_verification: 'not_found' });
      expect(conversation.variables).to.not.have.any.keys('caller_name', 'caller_record_id');
      const audit = await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'callerVerification', actor_id: conversation.id });
      expect(audit.map((a) => a.status_code)).to.deep.equal([404]);
    }
    // Nothing was read from, or written to the audit log of, the other organization.
    expect(await t.db('audit_logs').where({ org_id: other.orgId, operation_id: 'callerVerification' })).to.have.length(0);
  });

  it('method pin, required always: the agent asks for the PIN after the greeting and a matching keypad PIN verifies the caller', async () => {
    const { number } = await verifyingAgent({ enabled: true, method: 'pin', required: 'always' });
    const { heard, conversation } = await call(known, number, [{ listen: true }, { digits: '4321#' }, { say: 'What is my balance?' }]);
    expect(heard.slice(0, 4)).to.deep.equal([
      'Thanks for calling Acme.',
      'For your security, please enter your PIN on the keypad, then press pound.',
      '[keys 4321#]',
      'Thank you, Grace Hopper, you are verified. How can I help?',
    ]);
    expect(conversation.variables).to.include({ caller_verified: 'true', caller_verification: 'verified', caller_name: 'Grace Hopper' });
    expect(conversation.endReason).to.equal('ended_by_user');
    // The PIN itself is not kept in the transcript.
    const users = await t.db('conversation_messages').where({ org_id: org.orgId, conversation_id: conversation.id, role: 'user' }).orderBy('seq');
    expect(users.map((m) => m.content)).to.deep.equal(['[PIN entered]', 'What is my balance?']);
  });

  it('method pin: wrong PINs are refused until maxAttempts, then the call is handed off unverified; the name is never revealed', async () => {
    const { number } = await verifyingAgent({ enabled: true, method: 'pin', maxAttempts: 2, required: 'always' });
    const { heard, conversation, rec } = await call(known, number, [{ listen: true }, { digits: '1111#' }, { digits: '2222#' }, { say: 'never heard' }]);
    expect(heard.slice(2)).to.deep.equal([
      '[keys 1111#]',
      'Sorry, that PIN is not correct. You have 1 attempt left. For your security, please enter your PIN on the keypad, then press pound.',
      '[keys 2222#]',
      'Sorry, that PIN is not correct and I could not verify you. Let me hand you over to a member of our team.',
    ]);
    expect(rec.endedByAgent).to.equal(true);
    expect(rec.handoff).to.include({ reason: 'escalated' });
    expect(conversation.endReason).to.equal('escalated');
    expect(conversation.variables).to.include({ caller_verified: 'false', caller_verification: 'failed', caller_pin_attempts: '2' });
    expect(conversation.variables).to.not.have.any.keys('caller_name', 'caller_record_id');
  });

  it('chat: the session’s phone variable identifies the caller, a client cannot claim verification, and a skill reserved to verified callers is refused otherwise', async () => {
    const { agentId } = await verifyingAgent({ enabled: true, method: 'caller_id' });
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'transfer_to_human', type: 'transfer_call', description: 'Transfers to a person', config: { phoneNumber: '+12065550199' } } });
    expect(skill.status, skill.text).to.equal(201);
    const cv = await t.call('PUT', `/agents/${agentId}/caller-verification`, { key: org.key, json: { enabled: true, method: 'caller_id', requiredForSkills: ['transfer_to_human'], maxAttempts: 3 } });
    expect(cv.status, cv.text).to.equal(200);
    await publishDraft(t.db, org, agentId, 'chat-v2');

    const verified = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, variables: { phone: known } } });
    expect(verified.status, verified.text).to.equal(201);
    const v = (await getConversation(t.db, org.orgId, verified.body.data.session.id))!;
    expect(v.variables).to.include({ caller_verified: 'true', caller_name: 'Grace Hopper' });

    const claimed = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, variables: { email: 'not-yours@example.com', caller_verified: 'true', caller_name: 'Mallory' } } });
    expect(claimed.status, claimed.text).to.equal(201);
    const c = (await getConversation(t.db, org.orgId, claimed.body.data.session.id))!;
    expect(c.variables).to.include({ caller_email: 'not-yours@example.com', caller_verified: 'false', caller_verification: 'not_found' });
    expect(c.variables).to.not.have.any.keys('caller_name');

    const refused = await t.call('POST', `/chat/sessions/${c.id}/messages`, { key: org.key, json: { content: 'Please transfer to human now' } });
    expect(refused.status, refused.text).to.equal(200);
    const calls = refused.body.data.receipt.toolCalls;
    expect(calls.map((x: any) => [x.skill, x.error])).to.deep.equal([['transfer_to_human', 'Skill "transfer_to_human" runs only for a verified caller; the caller is not verified']]);
    expect((await getConversation(t.db, org.orgId, c.id))!.status).to.equal('active');

    const allowed = await t.call('POST', `/chat/sessions/${v.id}/messages`, { key: org.key, json: { content: 'Please transfer to human now' } });
    expect(allowed.body.data.receipt.toolCalls.map((x: any) => [x.skill, x.error ?? null])).to.deep.equal([['transfer_to_human', null]]);
    expect((await getConversation(t.db, org.orgId, v.id))!.endReason).to.equal('transferred');
  });

  it('verification off: nothing is looked up and a call only carries the caller’s number', async () => {
    const { number } = await verifyingAgent({ enabled: false, method: null });
    const { conversation } = await call(known, number, [{ say: 'Hello' }]);
    expect(conversation.variables).to.deep.equal({ caller_phone: known });
    expect(await t.db('audit_logs').where({ org_id: org.orgId, operation_id: 'callerVerification', actor_id: conversation.id })).to.have.length(0);
  });
});
