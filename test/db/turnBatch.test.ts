/**
 * Turns of one organization stored together (db/repositories/conversations.ts `saveTurns`): each write is
 * guarded on its own, and the charges of a batch keep the ledger's running balance exact.
 */
import { expect } from 'chai';
import { planCacheMode } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { allMessages, createConversation, getConversation, rollUpEnded, saveTurns, turnReceipts, type ConversationRecord, type StoredTurn } from '../../db/repositories/conversations';
import { getWallet, ledgerSum, listLedger } from '../../db/repositories/billing';
import { useMigratedDb } from '../helpers/postgres';
import { analytics } from '../../db/repositories/observe';
import { startHousekeeping } from '../../services/housekeeping';
import { createLogger } from '../../runtime';

describe('saveTurns (turns of one organization in one statement)', () => {
  const db = useMigratedDb('turnbatch');

  const start = async (orgId: string) =>
    (
      await createConversation(db(), orgId, {
        agentId: 'agt_batch0001', channel: 'chat', mode: 'published', versionId: 'ver_batch0001', draftVersion: null, draftSnapshot: null,
        variables: {}, metadata: {}, keyId: null, greeting: 'Hello',
      })
    ).conversation;

  const turn = (text: string, end: string | null = null): StoredTurn => ({
    messages: [
      { role: 'user', content: text },
      { role: 'assistant', content: `You said: ${text}` },
    ],
    receipt: { turn: 1, toolCalls: [], knowledge: [], guardrails: [], latency: [] } as never,
    promptTokens: 10,
    completionTokens: 5,
    model: 'sandbox',
    variables: { last: text },
    playbook: null,
    end,
    stats: { toolCalls: 0, toolCallsOk: 0, guardrailTriggers: 0, knowledgeLookups: 0, knowledgeHits: 0, costCents: 3 },
  });

  const effects = (c: ConversationRecord, cents: number) => ({
    usage: [{ kind: 'conversation_message', amountCents: cents, dedupeKey: `conversation:${c.id}:turn:${c.turnCount + 1}:message`, details: { conversationId: c.id } }],
    events: (change: { conversation: ConversationRecord }) => [{ type: 'conversation.test', data: { id: change.conversation.id } }],
  });

  it('stores each fresh write with its messages, receipt, charge and event, and nothing of a stale one', async () => {
    const org = await createOrganization(db(), 'Batch turns');
    const [a, b, stale] = [await start(org.id), await start(org.id), await start(org.id)];
    // Another turn of `stale` was stored after it was read: its write must lose the race.
    await saveTurns(db(), org.id, [{ c: stale, turn: turn('first') }]);

    const out = await saveTurns(db(), org.id, [
      { c: a, turn: turn('alpha'), effects: effects(a, 7) },
      { c: stale, turn: turn('late'), effects: effects(stale, 11) },
      { c: b, turn: turn('bravo', 'ended_by_agent'), effects: effects(b, 13) },
    ]);

    expect(out[1]).to.equal('conflict');
    const [sa, sb] = [out[0], out[2]];
    if (sa === 'conflict' || sb === 'conflict') throw new Error('a fresh write was refused');
    expect(sa.conversation).to.include({ id: a.id, turnCount: 1, messageCount: 3, promptTokens: 10, completionTokens: 5, status: 'active' });
    expect(sa.conversation.variables).to.deep.equal({ last: 'alpha' });
    expect(sa.messages.map((m) => [m.role, m.content, m.turn])).to.deep.equal([
      ['user', 'alpha', 1],
      ['assistant', 'You said: alpha', 1],
    ]);
    expect(sb.conversation).to.include({ id: b.id, status: 'ended', endReason: 'ended_by_agent' });
    expect((await allMessages(db(), org.id, b.id)).map((m) => m.content)).to.deep.equal(['Hello', 'bravo', 'You said: bravo']);
    expect(await turnReceipts(db(), org.id, a.id)).to.have.length(1);

    // The stale conversation kept only its first turn: no message, receipt, charge or event of the lost write.
    expect((await getConversation(db(), org.id, stale.id))!.turnCount).to.equal(1);
    expect((await allMessages(db(), org.id, stale.id)).map((m) => m.content)).to.deep.equal(['Hello', 'first', 'You said: first']);
    expect(await turnReceipts(db(), org.id, stale.id)).to.have.length(1);
    const ledger = await listLedger(db(), org.id);
    expect(ledger.map((l) => l.amountCents)).to.deep.equal([-7, -13]);
    // Running balances in order, ending at the wallet's balance.
    expect(ledger.map((l) => l.balanceAfterCents)).to.deep.equal([-7, -20]);
    expect((await getWallet(db(), org.id)).balanceCents).to.equal(-20);
    expect(await ledgerSum(db(), org.id)).to.equal(-20);
    const events = await db()('events').where({ org_id: org.id, type: 'conversation.test' }).select('data');
    expect(events.map((e) => e.data.id).sort()).to.deep.equal([a.id, b.id].sort());
    // The end did not touch the hourly rollup: the sweep adds the ended conversation, once; the active ones wait.
    const rollup = () => db()('conversation_stats_hourly').where({ org_id: org.id }).select('conversations', 'messages');
    expect(await rollup()).to.deep.equal([]);
    const range = { from: new Date(Date.now() - 86_400_000).toISOString(), to: new Date(Date.now() + 3_600_000).toISOString(), timeZone: 'UTC' };
    const before = await analytics(db(), org.id, range);
    expect(before.totals).to.include({ conversations: 3, containmentRate: 1 });
    expect(before.totals.averageDurationSeconds).to.be.a('number');
    const sweeper = startHousekeeping({ db: db(), logger: createLogger('silent'), rollupIntervalMs: 0, purgeIntervalMs: 0 });
    expect(await sweeper.sweepRollup()).to.be.at.least(1);
    await sweeper.stop();
    // Analytics read the same figures whether the sweep has reached a conversation or not.
    expect(await analytics(db(), org.id, range)).to.deep.equal(before);
    expect(await rollup()).to.deep.equal([{ conversations: 1, messages: 3 }]);
    expect(await rollUpEnded(db())).to.equal(0);
    expect(await rollup()).to.deep.equal([{ conversations: 1, messages: 3 }]);
    expect((await getConversation(db(), org.id, a.id))!.status).to.equal('active');
    expect((await db()('conversations').where({ id: a.id }).first('rolled_up')).rolled_up).to.equal(false);
  });

  it('stores at most one of two writes of the same conversation in one batch', async () => {
    const org = await createOrganization(db(), 'Batch twins');
    const c = await start(org.id);
    const out = await saveTurns(db(), org.id, [
      { c, turn: turn('one'), effects: effects(c, 5) },
      { c, turn: turn('two'), effects: effects(c, 5) },
    ]);
    expect(out.filter((o) => o === 'conflict')).to.have.length(1);
    expect((await getConversation(db(), org.id, c.id))!.messageCount).to.equal(3);
    expect(await ledgerSum(db(), org.id)).to.equal(-5);
  });

  it('refuses a write of another organization before touching anything', async () => {
    const [org, other] = [await createOrganization(db(), 'Batch mine'), await createOrganization(db(), 'Batch theirs')];
    const theirs = await start(other.id);
    let error: Error | undefined;
    await saveTurns(db(), org.id, [{ c: theirs, turn: turn('sneaky') }]).catch((e: Error) => (error = e));
    expect(error?.message).to.match(/not of organization/);
    expect((await getConversation(db(), other.id, theirs.id))!.turnCount).to.equal(0);
  });

  it('reads the plan cache mode from PG_PLAN_CACHE_MODE (default force_generic_plan; empty: the server setting)', () => {
    expect(planCacheMode({})).to.equal('force_generic_plan');
    expect(planCacheMode({ PG_PLAN_CACHE_MODE: '' })).to.equal(undefined);
    expect(planCacheMode({ PG_PLAN_CACHE_MODE: 'auto' })).to.equal('auto');
    expect(() => planCacheMode({ PG_PLAN_CACHE_MODE: 'sometimes' })).to.throw(/PG_PLAN_CACHE_MODE/);
  });

  it('runs its sessions with that mode', async () => {
    expect((await db().raw('SHOW plan_cache_mode')).rows[0].plan_cache_mode).to.equal('force_generic_plan');
  });
});
