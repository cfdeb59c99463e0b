/**
 * Campaign calls converse (README "Voice calls"): an answered dial of an informational campaign is
 * connected by the sandbox carrier to the relay with the campaign's agent, which greets first; the
 * sandbox callee answers and hangs up. The dial's record, the call and its conversation are linked, and
 * the call's minutes are charged once. The dial step runs as the activity the dialer workflow calls.
 */
import { expect } from 'chai';
import { phone, useDialerEnv } from './outbound-fixtures';
import { publishDraft } from './agents-fixtures';
import { createOutboundActivities } from '../../activities/outbound';
import { SANDBOX_CALLEE_SCRIPT } from '../../activities/voice';
import { insertAttempts, lockCampaign, setCampaignStatus } from '../../db/repositories/campaigns';
import { allMessages, getConversation } from '../../db/repositories/conversations';
import { createLogger } from '../../runtime';

describe('campaign calls converse over the relay (sandbox carrier)', function () {
  this.timeout(60_000);
  const { env, dialer } = useDialerEnv('voice_campaign');

  it('connects an answered dial to the agent, greeting first, and links the dial, the call and the transcript', async () => {
    const agent = await env.call(dialer.key, 'POST', '/agents', { name: 'Reminder agent', voiceId: 'voice_ava', greeting: 'Hi, this is Acme with a reminder about your visit tomorrow.' });
    expect(agent.status).to.equal(201);
    const agentId = agent.body.data.id as string;
    await publishDraft(env.db, { orgId: dialer.orgId, keyId: 'key_test' }, agentId, 'v1');
    const contact = phone('212', 1, '0001'); // sandbox: answered
    const list = await env.importList(dialer.key, `phone\n${contact}`);
    const created = await env.call(dialer.key, 'POST', '/campaigns', { name: 'Reminders', agentId, callerIdNumberId: dialer.numberId, contactListId: list.id, purpose: 'informational' });
    expect(created.status).to.equal(201);
    const campaignId = created.body.data.id as string;
    await env.db.transaction(async (trx) => {
      const row = await lockCampaign(trx, dialer.orgId, campaignId);
      await insertAttempts(trx, dialer.orgId, campaignId, row.list_id);
      await setCampaignStatus(trx, dialer.orgId, campaignId, 'running');
      await trx('call_attempts').where({ org_id: dialer.orgId, campaign_id: campaignId }).update({ not_before: new Date('2026-01-01T00:00:00Z') });
    });
    const acts = createOutboundActivities({ db: env.db, config: env.config, logger: createLogger('silent') }, { campaignRelay: { apiBaseUrl: env.api.baseUrl } });
    const now = '2026-06-02T17:00:00.000Z'; // 1pm in New York: inside the calling window
    const claim = await acts.outboundClaimAttempts({ orgId: dialer.orgId, campaignId, token: 'voice-1', now, limit: 5 });
    expect(claim.claimed).to.have.length(1);
    expect(await acts.outboundDial({ orgId: dialer.orgId, attemptId: claim.claimed[0].id, now })).to.deep.equal({ status: 'answered', outcome: 'answered' });

    const call = await env.db('voice_calls').where({ org_id: dialer.orgId, campaign_id: campaignId }).first();
    expect(call).to.include({ direction: 'outbound', status: 'completed', to_e164: contact, agent_id: agentId });
    const conversation = (await getConversation(env.db, dialer.orgId, call.conversation_id))!;
    expect(conversation).to.include({ channel: 'voice', status: 'ended', agentId });
    expect(conversation.metadata).to.include({ campaignId, callId: call.id, to: contact });
    const lines = (await allMessages(env.db, dialer.orgId, conversation.id)).filter((m) => m.content && !m.toolCalls).map((m) => `${m.role}: ${m.content}`);
    expect(lines[0]).to.equal('assistant: Hi, this is Acme with a reminder about your visit tomorrow.');
    expect(lines[1]).to.equal(`user: ${SANDBOX_CALLEE_SCRIPT[0]}`);
    expect(lines.filter((l) => l.startsWith('user:'))).to.deep.equal(SANDBOX_CALLEE_SCRIPT.map((l) => `user: ${l}`));
    const dialRecord = await env.db('conversations').where({ org_id: dialer.orgId, mode: 'none', campaign_id: campaignId }).first();
    expect(dialRecord.metadata).to.include({ conversationId: conversation.id, providerCallId: call.provider_call_id });
    const minutes = await env.db('usage_entries').where({ org_id: dialer.orgId, kind: 'voice_minutes' });
    expect(minutes).to.have.length(1);
    expect(Number(minutes[0].quantity)).to.equal(Math.ceil(dialRecord.duration_seconds / 60));
  });
});
