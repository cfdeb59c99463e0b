/**
 * Texts of one sender arriving together (docs/sms.md "Agents answer texts"): the API process that took their callbacks
 * answers them one after another, so each runs one turn of the agent — none is run again because another turn of the
 * conversation was stored meanwhile — and each gets one reply.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { COMPLETE_BRAND, postCallback, startSmsTestApi } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { SandboxLlm } from '../../providers/llm/sandbox';
import type { LlmProvider, LlmRequest } from '../../domain/conversations/llm';
import { publishDraft } from './agents-fixtures';
import { until } from '../helpers/wait';
import { allMessages, turnReceipts } from '../../db/repositories/conversations';

describe('agents answer texts of one sender arriving together', function () {
  this.timeout(60_000);
  let t: TestApi;
  // What the model was asked, by the person's last line: a turn run twice for one text asks twice.
  const asked = new Map<string, number>();
  const sandbox = new SandboxLlm();
  const count = (req: LlmRequest) => {
    const last = [...req.messages].reverse().find((m) => m.role === 'user');
    if (typeof last?.content === 'string' && !req.hints?.classification) asked.set(last.content, (asked.get(last.content) ?? 0) + 1);
  };
  const llm: LlmProvider = {
    name: 'sandbox',
    complete: (req) => (count(req), sandbox.complete(req)),
    stream: (req) => (count(req), sandbox.stream(req)),
  };

  before(async () => {
    t = await startSmsTestApi('sms_answer_order', {}, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }), providers: { llm } });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
  });

  it('answers them one after another: one turn and one reply each', async () => {
    const o = await t.org('Texting Co');
    expect((await t.call('PUT', '/sms', { key: o.key, json: COMPLETE_BRAND })).status).to.equal(200);
    const agentId = (await t.call('POST', '/agents', { key: o.key, json: { name: 'Front desk', voiceId: 'voice_ava', instructions: 'You answer questions about Acme Dental.' } })).body.data.id as string;
    await publishDraft(t.db, { orgId: o.orgId, keyId: o.keyId }, agentId, 'v1');
    const ours = sandboxInventory('312')[0].e164;
    const numberId = (await t.call('POST', '/numbers/purchase', { key: o.key, json: { e164: ours } })).body.data.id as string;
    expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: o.key, json: { agentId } })).status).to.equal(200);
    expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: o.key, json: { enabled: true } })).status).to.equal(200);
    await t.db('sms_registrations').where({ org_id: o.orgId }).update({ status: 'active' });

    const sender = '+12125550177';
    const texts = ['Do you take new patients?', 'What time do you open on Saturday?', 'Is there parking?', 'Can I bring my son too?', 'Thanks!'];
    const answers = await Promise.all(
      texts.map((text) => postCallback(t, { type: 'message.inbound', id: `SMin${crypto.randomBytes(6).toString('hex')}`, from: sender, to: ours, text })),
    );
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).to.equal(200);

    const stored = await until(async () => {
      const rows = await t.db('sms_messages').where({ org_id: o.orgId, direction: 'inbound', from_e164: sender });
      return rows.length === texts.length && rows.every((r) => r.answer_state === 'answered') ? rows : undefined;
    }, 30_000, 'every text answered');
    const replies = await t.db('sms_messages').where({ org_id: o.orgId, direction: 'outbound', trigger: 'reply' });
    expect(replies.map((r) => r.reply_to).sort()).to.deep.equal(stored.map((r) => r.id).sort());

    const conversationId = stored[0].conversation_id as string;
    expect(stored.every((r) => r.conversation_id === conversationId)).to.equal(true);
    // One turn each: the model was asked once per text, and the conversation holds each text once, answered.
    for (const text of texts) expect(asked.get(text), text).to.equal(1);
    const lines = (await allMessages(t.db, o.orgId, conversationId)).filter((m) => m.content && !m.toolCalls);
    expect(lines.filter((m) => m.role === 'user').map((m) => m.content).sort()).to.deep.equal([...texts].sort());
    expect(lines.map((m) => m.role)).to.deep.equal(texts.flatMap(() => ['user', 'assistant']));
    expect(await turnReceipts(t.db, o.orgId, conversationId)).to.have.length(texts.length);
  });
});
