/**
 * The statements of an answered text that do not return their events (db/repositories/events.ts EVENTS_NOTIFY_SELECT:
 * smsMessages.ts storeInboundText, smsReplies.ts queueReplyWithIntent and markReplySent) still store each event with
 * a delivery per subscribed endpoint and its outbox row, and still wake the webhook dispatcher (NOTIFY on the outbox
 * channel) exactly when there is a delivery (docs/operations.md "Webhooks").
 */
import { expect } from 'chai';
import pg from 'pg';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createEndpoint } from '../../db/repositories/webhookEndpoints';
import { OUTBOX_CHANNEL } from '../../db/repositories/events';
import { storeInboundText } from '../../db/repositories/smsMessages';
import { markReplySent, queueReplyWithIntent } from '../../db/repositories/smsReplies';
import { receivedEventRows, updatedEventRows } from '../../events/sms';
import { newId } from '../../db/ids';
import type { UsageInput } from '../../db/repositories/usage';
import { createMigratedTestDatabase } from '../helpers/postgres';

describe('the statements of an answered text: events, deliveries and the dispatcher wake-up', function () {
  this.timeout(60_000);
  let db: Db;
  let url: string;
  let listener: pg.Client;
  let notified = 0;
  const settle = () => new Promise((r) => setTimeout(r, 300));

  before(async () => {
    url = await createMigratedTestDatabase('sms_statement_events');
    db = createDb(url);
    listener = new pg.Client({ connectionString: url });
    await listener.connect();
    listener.on('notification', (m) => m.channel === OUTBOX_CHANNEL && notified++);
    await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
  });
  after(async () => {
    await listener?.end();
    await db?.destroy();
  });

  /** An inbound text, its reply queued with its intent and sent: the three statements. @returns the events' ids */
  async function answeredText(orgId: string): Promise<string[]> {
    const at = new Date().toISOString();
    const inboundId = newId('msg');
    const from = '+12125550188';
    const to = '+13125550100';
    const received = receivedEventRows({ messageId: inboundId, direction: 'inbound', status: 'received', previousStatus: null, from, to, body: 'Hello?', attachmentIds: [], error: null, at });
    const text = await storeInboundText(db, orgId, { id: inboundId, provider: 'sandbox', externalId: `SM${inboundId}`, payload: {}, from, to, body: 'Hello?', answerState: 'pending', at }, received);
    expect(text?.id).to.equal(inboundId);
    const replyId = newId('msg');
    const queuedEvents = updatedEventRows([{ messageId: replyId, direction: 'outbound', status: 'queued', previousStatus: null, from: to, to: from, body: 'Hi!', attachmentIds: [], error: null, at }]);
    const usage: UsageInput = { kind: 'sms_segments', quantity: 1, unitPriceCents: 1, amountCents: 1, resourceId: replyId, dedupeKey: `sms-reply:${replyId}:segments`, details: {} };
    const { reply, intent } = await queueReplyWithIntent(db, orgId, { id: replyId, from: to, to: from, body: 'Hi!', inboundId, conversationId: 'cnv_none', agentReply: 'Hi!', at }, usage, { provider: 'sandbox', request: {} }, queuedEvents);
    expect(reply.id).to.equal(replyId);
    const sentEvents = updatedEventRows([{ messageId: replyId, direction: 'outbound', status: 'sent', previousStatus: 'queued', from: to, to: from, body: 'Hi!', attachmentIds: [], error: null, at }]);
    expect(await markReplySent(db, orgId, { replyId, inboundId, intentId: intent.id, providerMessageId: `SM${replyId}`, result: {}, at }, sentEvents)).to.equal(true);
    return (await db('events').where({ org_id: orgId }).orderBy('created_at')).map((e: { id: string }) => e.id);
  }

  it('stores every event with its delivery and outbox row, and notifies once per statement with a delivery', async () => {
    const org = await createOrganization(db, 'Subscribed');
    const endpoint = await createEndpoint(db, org.id, { url: 'http://127.0.0.1:9/hooks', description: null, eventTypes: [], enabled: true, secretSealed: 'sealed', secretPrefix: 'whsec_x' });
    await settle();
    notified = 0;
    const events = await answeredText(org.id);
    await settle();
    expect(events).to.have.length(3);
    const deliveries = await db('webhook_deliveries').where({ org_id: org.id, endpoint_id: endpoint.id });
    expect(deliveries.map((d: { event_id: string }) => d.event_id).sort()).to.deep.equal([...events].sort());
    expect(await db('webhook_outbox').where({ org_id: org.id })).to.have.length(3);
    expect(notified).to.equal(3);
  });

  it('stores the events and sends no NOTIFY when no endpoint is subscribed', async () => {
    const org = await createOrganization(db, 'Unsubscribed');
    await settle();
    notified = 0;
    expect(await answeredText(org.id)).to.have.length(3);
    await settle();
    expect(await db('webhook_deliveries').where({ org_id: org.id })).to.have.length(0);
    expect(notified).to.equal(0);
  });
});
