/**
 * Conversation starts batched per organization (db/repositories/conversationStarts.ts; docs/sms.md "Agents answer
 * texts"): starts asked together share one statement, each keeps the outcome it has alone, and their events are
 * built from the rows the statement stored.
 */
import { expect } from 'chai';
import { createOrganization } from '../../db/repositories/organizations';
import { createConversation, getConversation, startBatchStats, type NewConversation } from '../../db/repositories/conversations';
import { isUniqueViolation } from '../../db/repositories/agents';
import { checkedEvents, type EventOf } from '../../events/emit';
import { useMigratedDb } from '../helpers/postgres';

describe('conversation starts batched per organization', () => {
  const db = useMigratedDb('convstarts');
  const sms = (counterpart: string, over: Partial<NewConversation> = {}): NewConversation => ({
    agentId: 'agt_start0001', channel: 'sms', mode: 'published', versionId: 'ver_start0001', draftVersion: null, draftSnapshot: null,
    variables: { caller_phone: counterpart }, metadata: { from: counterpart }, keyId: null, greeting: null, seed: [], counterpart,
    trafficSplit: { splits: [{ versionId: 'ver_start0001', percent: 100 }], stickiness: 'counterpart' }, ...over,
  });
  const eventsOf = async (orgId: string) => db()('events').where({ org_id: orgId }).orderBy('created_at').orderBy('id').select('type', 'data');

  it('starts the conversations asked together in one statement, each as stored, with events built from the stored rows', async () => {
    const org = await createOrganization(db(), 'starts-batch');
    const before = startBatchStats(db()).batches;
    const senders = ['+14155550101', '+14155550102', '+14155550103', '+14155550104'];
    const started = await Promise.all([
      ...senders.map((s) => createConversation(db(), org.id, sms(s), { events: true })),
      createConversation(db(), org.id, { ...sms('+14155550105'), channel: 'chat', counterpart: null, greeting: 'Hi there!', seed: [{ role: 'user', content: 'Earlier question' }] }, { events: true }),
    ]);

    expect(startBatchStats(db()).batches - before).to.equal(1);
    for (const [i, { conversation: c }] of started.entries()) {
      // The record is the row as stored: the migration's defaults come from Postgres, not from code.
      expect(await getConversation(db(), org.id, c.id)).to.deep.equal(c);
      expect(c).to.include({ status: 'active', turnCount: 0, promptTokens: 0, completionTokens: 0, endReason: null, endedAt: null, versionId: 'ver_start0001' });
      if (i < senders.length) expect(c).to.include({ channel: 'sms', messageCount: 0 });
    }
    const chat = started[4];
    expect(chat.conversation.messageCount).to.equal(2);
    expect(chat.greeting).to.include({ role: 'assistant', content: 'Hi there!', turn: 0, createdAt: chat.conversation.startedAt });

    const events = await eventsOf(org.id);
    expect(checkedEvents(events as EventOf[])).to.have.length(7); // each event's data matches the catalog's schema
    const startedEvents = events.filter((e) => e.type === 'conversation.started').map((e) => e.data);
    expect(startedEvents.sort((a, b) => a.conversationId.localeCompare(b.conversationId))).to.deep.equal(
      started
        .map(({ conversation: c }) => ({ conversationId: c.id, agentId: c.agentId, channel: c.channel, mode: c.mode, versionId: c.versionId, simulation: false, startedAt: c.startedAt }))
        .sort((a, b) => a.conversationId.localeCompare(b.conversationId)),
    );
    // Both opening messages of the chat are user or agent lines: one `message.created` each.
    const chatEvents = events.filter((e) => e.data.conversationId === chat.conversation.id && e.type === 'message.created');
    const messageIds = await db()('conversation_messages').where({ org_id: org.id, conversation_id: chat.conversation.id }).pluck('id');
    expect(chatEvents.map((e) => e.data.messageId).sort()).to.deep.equal(messageIds.sort());
    expect(chatEvents.map((e) => [e.data.role, e.data.content]).sort()).to.deep.equal([['assistant', 'Hi there!'], ['user', 'Earlier question']]);
    expect(chatEvents.find((e) => e.data.role === 'assistant')!.data).to.deep.equal({
      conversationId: chat.conversation.id, messageId: chat.greeting!.id, agentId: 'agt_start0001', channel: 'chat', role: 'assistant', content: 'Hi there!', turn: 0, createdAt: chat.greeting!.createdAt,
    });
  });

  it('records no events unless asked', async () => {
    const org = await createOrganization(db(), 'starts-quiet');
    const { conversation } = await createConversation(db(), org.id, { ...sms('+14155550201'), greeting: 'Hello' });
    expect(conversation.messageCount).to.equal(1);
    expect(await eventsOf(org.id)).to.deep.equal([]);
  });

  it('fails only the start at fault when its batch fails: the others are stored with their events', async () => {
    const org = await createOrganization(db(), 'starts-isolate');
    // A published start without a version breaks the pin check (migration 20261123000100): the statement fails.
    const [a, bad, b] = await Promise.allSettled([
      createConversation(db(), org.id, sms('+14155550301'), { events: true }),
      createConversation(db(), org.id, { ...sms('+14155550302'), versionId: null }, { events: true }),
      createConversation(db(), org.id, sms('+14155550303'), { events: true }),
    ]);
    expect(a.status).to.equal('fulfilled');
    expect(b.status).to.equal('fulfilled');
    expect(bad.status).to.equal('rejected');
    expect((bad as PromiseRejectedResult).reason.code).to.equal('23514'); // check_violation
    const rows = await db()('conversations').where({ org_id: org.id }).orderBy('counterpart').select('counterpart');
    expect(rows.map((r) => r.counterpart)).to.deep.equal(['+14155550301', '+14155550303']);
    expect((await eventsOf(org.id)).map((e) => e.data.conversationId).sort()).to.deep.equal(
      [(a as PromiseFulfilledResult<{ conversation: { id: string } }>).value.conversation.id, (b as PromiseFulfilledResult<{ conversation: { id: string } }>).value.conversation.id].sort(),
    );
  });

  it('keeps one open SMS conversation per counterpart: of two starts in one batch, one is stored and the other fails with the unique violation alone', async () => {
    const org = await createOrganization(db(), 'starts-race');
    const [first, second, other] = await Promise.allSettled([
      createConversation(db(), org.id, sms('+14155550401'), { events: true }),
      createConversation(db(), org.id, sms('+14155550401'), { events: true }),
      createConversation(db(), org.id, sms('+14155550402'), { events: true }),
    ]);
    expect(first.status).to.equal('fulfilled');
    expect(other.status).to.equal('fulfilled');
    expect(second.status).to.equal('rejected');
    expect(isUniqueViolation((second as PromiseRejectedResult).reason)).to.equal(true);
    const rows = await db()('conversations').where({ org_id: org.id }).select('id', 'counterpart');
    expect(rows.map((r) => r.counterpart).sort()).to.deep.equal(['+14155550401', '+14155550402']);
    // Nothing of the refused start was stored: one `conversation.started` per stored conversation.
    expect((await eventsOf(org.id)).map((e) => e.data.conversationId).sort()).to.deep.equal(rows.map((r) => r.id).sort());
  });
});
