/**
 * Texts that start a conversation (docs/sms.md "Agents answer texts"): the sender read carries the agent's published
 * version and split, and the start is a group commit per organization (db/repositories/conversationStarts.ts). Texts
 * of one new sender answered at once in two processes (here: two answers running side by side, as the callback's
 * process and the `sms-reply` workflow would) start one conversation: the start that loses the unique index of one
 * open conversation per counterpart joins the one that won.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { publishDraft } from './agents-fixtures';
import { until } from '../helpers/wait';
import { answerInboundText } from '../../services/sms/answer';
import { createLlm } from '../../providers/llm';
import { createSkillHttpClient } from '../../providers/http/request';
import { testTemporal } from '../helpers/temporal';

describe('texts that start a conversation', function () {
  this.timeout(60_000);
  let t: TestApi;
  let numberIndex = 2;

  before(async () => {
    t = await startSmsTestApi('sms_conversation_start', {}, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
  });

  /** An organization with an active registration and a published agent answering an SMS-enabled number. */
  async function textingOrg() {
    const o = await t.org('Starting Co');
    expect((await t.call('PUT', '/sms', { key: o.key, json: COMPLETE_BRAND })).status).to.equal(200);
    const agentId = (await t.call('POST', '/agents', { key: o.key, json: { name: 'Front desk', voiceId: 'voice_ava', instructions: 'You answer questions about Acme Dental.' } })).body.data.id as string;
    await publishDraft(t.db, { orgId: o.orgId, keyId: o.keyId }, agentId, 'v1');
    const ours = sandboxInventory('312')[numberIndex++].e164;
    const numberId = (await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164: ours } })).body.data.id as string;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: o.key, json: { agentId } })).status).to.equal(200);
    expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: o.key, json: { enabled: true } })).status).to.equal(200);
    await t.db('sms_registrations').where({ org_id: o.orgId }).update({ status: 'active' });
    const { published_version_id: versionId } = await t.db('agents').where({ org_id: o.orgId, id: agentId }).first('published_version_id');
    return { ...o, agentId, ours, versionId: versionId as string };
  }

  const started = (orgId: string) => t.db('events').where({ org_id: orgId, type: 'conversation.started' }).pluck('data');

  it('starts each new sender\'s conversation pinned to the published version with its split, and one conversation.started each', async () => {
    const o = await textingOrg();
    const senders = ['+12125550301', '+12125550302', '+12125550303', '+12125550304'];
    const answers = await Promise.all(senders.map((from) => postCallback(t, { type: 'message.inbound', id: `SMin${crypto.randomBytes(6).toString('hex')}`, from, to: o.ours, text: 'Do you take new patients?' })));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).to.equal(200);
    const texts = await until(async () => {
      const rows = await t.db('sms_messages').where({ org_id: o.orgId, direction: 'inbound' });
      return rows.length === senders.length && rows.every((r) => r.answer_state === 'answered') ? rows : undefined;
    }, 30_000, 'every text answered');

    const conversations = await t.db('conversations').where({ org_id: o.orgId, channel: 'sms' });
    expect(conversations.map((c) => c.counterpart).sort()).to.deep.equal(senders);
    for (const c of conversations) {
      expect(c).to.include({ agent_id: o.agentId, version_id: o.versionId, mode: 'published', status: 'active' });
      expect(c.traffic_split).to.deep.equal({ splits: [{ versionId: o.versionId, percent: 100 }], stickiness: 'counterpart' });
      expect(texts.find((m) => m.from_e164 === c.counterpart)!.conversation_id).to.equal(c.id);
    }
    expect((await started(o.orgId)).map((d) => d.conversationId).sort()).to.deep.equal(conversations.map((c) => c.id).sort());
  });

  it('starts one conversation for texts of one new sender answered at once: the start that loses joins the one that won', async () => {
    const o = await textingOrg();
    const sender = '+12125550310';
    const texts = await t.db('sms_messages')
      .insert(['Do you take new patients?', 'Is there parking?', 'Are you open Saturday?'].map((body) => ({
        id: `msg_race${crypto.randomBytes(4).toString('hex')}`, org_id: o.orgId, direction: 'inbound', from_e164: sender, to_e164: o.ours, body, status: 'received', media_ids: [], answer_state: 'pending',
      })))
      .returning('*');
    const { client } = await testTemporal();
    const deps = { db: t.db, llm: createLlm(), http: createSkillHttpClient(), temporal: { client, taskQueue: 'unused-no-worker' } };

    // Side by side, as two processes answer them (no process-local order): their sender reads and starts share batches.
    const answers = await Promise.all(texts.map((m) => answerInboundText(deps, o.orgId, m.id)));

    for (const a of answers) expect(a, JSON.stringify(a)).to.have.property('answered', true);
    const conversations = await t.db('conversations').where({ org_id: o.orgId, channel: 'sms' });
    expect(conversations).to.have.length(1);
    expect(conversations[0]).to.include({ counterpart: sender, version_id: o.versionId, status: 'active' });
    expect(answers.map((a) => (a as { conversationId: string }).conversationId)).to.deep.equal(texts.map(() => conversations[0].id));
    const stored = await t.db('sms_messages').where({ org_id: o.orgId, direction: 'inbound' }).pluck('conversation_id');
    expect(stored).to.deep.equal(texts.map(() => conversations[0].id));
    expect((await started(o.orgId)).map((d) => d.conversationId)).to.deep.equal([conversations[0].id]);
    // Each text was answered by its own turn of the one conversation.
    expect(conversations[0].turn_count).to.equal(texts.length);
  });
});
