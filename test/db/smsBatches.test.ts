/**
 * The SMS hot path's statements batched per organization (db/groupCommit.ts `PerOrgGroupCommit`; docs/sms.md
 * "Agents answer texts"): texts that arrive together share one statement, and each keeps the outcome and the
 * guarantees it has alone.
 */
import { expect } from 'chai';
import { createOrganization } from '../../db/repositories/organizations';
import { inboundStoreStats, storeInboundText } from '../../db/repositories/smsMessages';
import { markReplySent, queueReplyWithIntent } from '../../db/repositories/smsReplies';
import { logExchangeWithCallback } from '../../db/repositories/sandboxProviders';
import { newId } from '../../db/ids';
import { isUniqueViolation } from '../../db/repositories/agents';
import { useMigratedDb } from '../helpers/postgres';

describe('SMS statements batched per organization', () => {
  const db = useMigratedDb('smsbatches');
  const at = () => new Date().toISOString();
  const received = (id: string) => [{ type: 'sms.message.received', data: { messageId: id } }];

  async function inbound(orgId: string, n: number): Promise<string[]> {
    const ids = Array.from({ length: n }, () => newId('msg'));
    const out = await Promise.all(ids.map((id, i) => storeInboundText(db(), orgId, { id, provider: 'sandbox', externalId: `SM${id}`, payload: { i }, from: `+1415555${String(1000 + i)}`, to: '+13125550100', body: `text ${i}`, answerState: 'pending', at: at() }, received(id))));
    expect(out.every((m) => m !== null)).to.equal(true);
    return ids;
  }

  it('stores texts that arrive together in one statement, each with its provider event and event, and a repeated provider id once', async () => {
    const org = await createOrganization(db(), 'batch-in');
    const before = inboundStoreStats(db()).batches;
    const ids = Array.from({ length: 5 }, () => newId('msg'));
    const texts = ids.map((id, i) => ({ id, provider: 'sandbox', externalId: i === 4 ? `SM-${ids[0]}` : `SM-${id}`, payload: { i }, from: '+14155551000', to: '+13125550100', body: `text ${i}`, answerState: 'pending' as const, at: at() }));
    const out = await Promise.all(texts.map((t) => storeInboundText(db(), org.id, t, received(t.id))));

    expect(inboundStoreStats(db()).batches - before).to.equal(1);
    expect(out.slice(0, 4).map((m) => m?.id)).to.deep.equal(ids.slice(0, 4));
    expect(out[4]).to.equal(null); // the same carrier id as the first: a duplicate, nothing written
    const stored = await db()('sms_messages').where({ org_id: org.id }).orderBy('body').select('id', 'body', 'answer_state', 'provider_message_id');
    expect(stored.map((r) => r.id)).to.deep.equal(ids.slice(0, 4));
    expect(stored.every((r) => r.answer_state === 'pending' && r.provider_message_id === `SM-${r.id}`)).to.equal(true);
    expect(await db()('sms_provider_events').where({ org_id: org.id }).count({ n: '*' })).to.deep.equal([{ n: 4 }]);
    const events = await db()('events').where({ org_id: org.id, type: 'sms.message.received' }).select('data');
    expect(events.map((e) => e.data.messageId).sort()).to.deep.equal(ids.slice(0, 4).sort());
  });

  it('queues replies together, failing only the reply whose text is missing or already answered', async () => {
    const org = await createOrganization(db(), 'batch-queue');
    const [a, b] = await inbound(org.id, 2);
    const reply = (inboundId: string) => {
      const id = newId('msg');
      return queueReplyWithIntent(
        db(),
        org.id,
        { id, from: '+13125550100', to: '+14155551000', body: 'We open at nine.', inboundId, conversationId: 'cnv_x', agentReply: 'We open at nine.', at: at() },
        { kind: 'sms_segments', amountCents: 1, quantity: 1, dedupeKey: `sms-reply:${id}:segments`, details: { messageId: id } },
        { provider: 'sandbox', request: { length: 16 } },
        [],
      );
    };
    const [ra, missing, rb] = await Promise.allSettled([reply(a), reply('msg_missing'), reply(b)]);
    expect(ra.status).to.equal('fulfilled');
    expect(rb.status).to.equal('fulfilled');
    expect(missing.status === 'rejected' && String(missing.reason)).to.match(/msg_missing .* not found/);
    const second = await reply(a).then(() => null, (err: unknown) => err);
    expect(isUniqueViolation(second)).to.equal(true);

    const replies = await db()('sms_messages').where({ org_id: org.id, direction: 'outbound' }).select('reply_to', 'status');
    expect(replies.map((r) => r.reply_to).sort()).to.deep.equal([a, b].sort());
    expect(await db()('wallet_pending_charges').where({ org_id: org.id }).count({ n: '*' })).to.deep.equal([{ n: 2 }]);
    const intents = await db()('provider_intents').where({ org_id: org.id, kind: 'sms_send', status: 'pending' }).select('reference');
    const stored = [ra, rb].map((r) => (r.status === 'fulfilled' ? r.value : undefined)!);
    expect(intents.map((i) => i.reference).sort()).to.deep.equal(stored.map((s) => s.reply.id).sort());
    expect(stored.map((s) => s.intent.reference)).to.deep.equal(stored.map((s) => s.reply.id));

    // Sent together: each reply moves queued → sent once and its text is answered; a repeat moves nothing.
    const sent = (s: (typeof stored)[number], inboundId: string) =>
      markReplySent(db(), org.id, { replyId: s.reply.id, inboundId, intentId: s.intent.id, providerMessageId: `SM-out-${s.reply.id}`, result: { status: 'SENT' }, at: at() }, []);
    expect(await Promise.all([sent(stored[0], a), sent(stored[1], b)])).to.deep.equal([true, true]);
    expect(await sent(stored[0], a)).to.equal(false);
    const texts = await db()('sms_messages').where({ org_id: org.id }).select('direction', 'status', 'answer_state');
    expect(texts.filter((t) => t.direction === 'outbound').map((t) => t.status)).to.deep.equal(['sent', 'sent']);
    expect(texts.filter((t) => t.direction === 'inbound').map((t) => t.answer_state)).to.deep.equal(['answered', 'answered']);
    expect(await db()('provider_intents').where({ org_id: org.id, status: 'done' }).count({ n: '*' })).to.deep.equal([{ n: 2 }]);
  });

  it("logs the carrier sandbox's exchanges together, each with its own callback", async () => {
    const org = await createOrganization(db(), 'batch-carrier');
    const ids = await Promise.all([1, 2, 3].map((i) => logExchangeWithCallback(db(), org.id, 'sandbox', { operation: 'sendMessage', request: { reference: `r${i}` }, response: { id: `SM${i}` } }, { payload: { n: i }, delayMs: 1000 * i })));
    const callbacks = await db()('sandbox_callbacks').whereIn('id', ids).select('id', 'payload');
    expect(ids.map((id) => callbacks.find((c) => Number(c.id) === id)?.payload.n)).to.deep.equal([1, 2, 3]);
    const log = await db()('provider_requests').where({ org_id: org.id }).orderBy('id').select('request');
    expect(log.map((r) => r.request.reference)).to.deep.equal(['r1', 'r2', 'r3']);
  });
});
