/**
 * Deferred usage charges (docs/api-notes.md "Billing": deferred charges; services/billing/settle.ts,
 * db/repositories/walletSettle.ts): an agent's SMS reply records its segments' charge pending, without the wallet
 * row's lock; the balance shown subtracts the pending charges, so it is exact before the settle; the settle folds
 * each charge into the ledger exactly once (parallel settles and top-ups included) with its running balance, emits
 * `billing.wallet.low` and owes the auto-recharge on a crossing; charges a stopped process left are folded by the sweep.
 */
import { expect } from 'chai';
import { useMigratedDb } from '../helpers/postgres';
import { createOrganization } from '../../db/repositories/organizations';
import { storeInboundText } from '../../db/repositories/smsMessages';
import { queueReplyWithIntent } from '../../db/repositories/smsReplies';
import { creditPayment, getWallet, ledgerSum, listLedger, setAutoRecharge } from '../../db/repositories/billing';
import { settlePendingCharges } from '../../db/repositories/walletSettle';
import { settleOrganization, settleSoon, startWalletSettleSweep } from '../../services/billing/settle';
import { receivedEventRows, updatedEventRows } from '../../events/sms';
import { newId } from '../../db/ids';
import { createLogger } from '../../runtime';
import type { Db } from '../../db';

describe('deferred usage charges and their settle', function () {
  this.timeout(60_000);
  const db = useMigratedDb('wallet_settle');
  const from = '+12125550177';
  const to = '+13125550177';

  /** An inbound text and its reply queued with a pending charge of `cents`. @returns the reply's usage entry id */
  async function reply(d: Db, orgId: string, cents: number): Promise<string> {
    const at = new Date().toISOString();
    const inboundId = newId('msg');
    const received = receivedEventRows({ messageId: inboundId, direction: 'inbound', status: 'received', previousStatus: null, from, to, body: 'Hi?', attachmentIds: [], error: null, at });
    await storeInboundText(d, orgId, { id: inboundId, provider: 'sandbox', externalId: `SM${inboundId}`, payload: {}, from, to, body: 'Hi?', answerState: 'pending', at }, received);
    const replyId = newId('msg');
    const events = updatedEventRows([{ messageId: replyId, direction: 'outbound', status: 'queued', previousStatus: null, from: to, to: from, body: 'Hello', attachmentIds: [], error: null, at }]);
    await queueReplyWithIntent(
      d, orgId,
      { id: replyId, from: to, to: from, body: 'Hello', inboundId, conversationId: 'cnv_none', agentReply: 'Hello', at },
      { kind: 'sms_segments', quantity: cents, unitPriceCents: 1, amountCents: cents, resourceId: replyId, dedupeKey: `sms-reply:${replyId}:segments`, details: {} },
      { provider: 'sandbox', request: {} },
      events,
    );
    return (await d('usage_entries').where({ org_id: orgId, dedupe_key: `sms-reply:${replyId}:segments` }).first()).id;
  }
  const topUp = (orgId: string, cents: number) => db().transaction((trx) => creditPayment(trx, orgId, { kind: 'topup', amountCents: cents, paymentId: newId('pay') }));
  const lowEvents = async (orgId: string) => (await db()('events').where({ org_id: orgId, type: 'billing.wallet.low' })).map((e: { data: Record<string, unknown> }) => e.data);
  const pending = async (orgId: string) => Number((await db()('wallet_pending_charges').where({ org_id: orgId }).count('* as n').first())!.n);

  /** The ledger's running balance follows every entry, and each usage entry with an amount has exactly one charge. */
  async function expectConsistentLedger(orgId: string) {
    const ledger = await listLedger(db(), orgId);
    let running = 0;
    for (const e of ledger) {
      running += e.amountCents;
      expect(e.balanceAfterCents).to.equal(running);
    }
    const charged = ledger.filter((e) => e.kind === 'usage').map((e) => e.usageEntryId);
    expect(new Set(charged).size).to.equal(charged.length);
    const usage = await db()('usage_entries').where({ org_id: orgId }).andWhere('amount_cents', '>', 0);
    expect([...charged].sort()).to.deep.equal(usage.map((u: { id: string }) => u.id).sort());
  }

  it('shows the exact balance before the settle; the settle folds each charge once with its running balance and one billing.wallet.low', async () => {
    const orgId = (await createOrganization(db(), 'Deferred Co')).id;
    await topUp(orgId, 1100);
    await reply(db(), orgId, 60);
    const crossing = await reply(db(), orgId, 60);
    expect(await pending(orgId)).to.equal(2);
    expect((await getWallet(db(), orgId)).balanceCents).to.equal(980);
    expect(await ledgerSum(db(), orgId)).to.equal(1100);
    expect(await lowEvents(orgId)).to.have.length(0);

    expect(await settleOrganization(db(), orgId)).to.equal(2);
    expect(await pending(orgId)).to.equal(0);
    expect((await getWallet(db(), orgId)).balanceCents).to.equal(980);
    expect(await ledgerSum(db(), orgId)).to.equal(980);
    expect((await listLedger(db(), orgId)).map((e) => e.balanceAfterCents)).to.deep.equal([1100, 1040, 980]);
    await expectConsistentLedger(orgId);
    const events = await lowEvents(orgId);
    expect(events).to.have.length(1);
    expect(events[0]).to.include({ balanceCents: 980, previousBalanceCents: 1100, lowBalanceThresholdCents: 1000, usageEntryId: crossing });
    // Nothing left: a second settle folds nothing and emits nothing.
    expect(await settlePendingCharges(db(), orgId)).to.deep.equal({ settled: 0, charge: null });
    expect(await lowEvents(orgId)).to.have.length(1);
  });

  it('folds every charge exactly once under parallel settles, replies and top-ups, balance exact throughout', async () => {
    const orgId = (await createOrganization(db(), 'Busy Co')).id;
    await topUp(orgId, 5000);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      work.push(reply(db(), orgId, 1 + (i % 7)));
      if (i % 5 === 0) work.push(settlePendingCharges(db(), orgId, 3));
      if (i % 10 === 0) work.push(topUp(orgId, 500));
    }
    await Promise.all(work);
    const expected = 5000 + 4 * 500 - Array.from({ length: 40 }, (_, i) => 1 + (i % 7)).reduce((a, b) => a + b, 0);
    expect((await getWallet(db(), orgId)).balanceCents).to.equal(expected);
    await Promise.all([settleOrganization(db(), orgId), settleOrganization(db(), orgId), settleOrganization(db(), orgId)]);
    expect(await pending(orgId)).to.equal(0);
    expect((await getWallet(db(), orgId)).balanceCents).to.equal(expected);
    expect(await ledgerSum(db(), orgId)).to.equal(expected);
    await expectConsistentLedger(orgId);
  });

  it('owes one auto-recharge when the settled batch crosses its threshold', async () => {
    const orgId = (await createOrganization(db(), 'Recharge Co')).id;
    await topUp(orgId, 2000);
    await db().transaction((trx) => setAutoRecharge(trx, orgId, { enabled: true, thresholdCents: 1500, amountCents: 1000 }));
    await reply(db(), orgId, 300);
    await reply(db(), orgId, 300);
    expect(await db()('workflow_starts').where({ org_id: orgId })).to.have.length(0);
    await settleOrganization(db(), orgId);
    const owed = await db()('workflow_starts').where({ org_id: orgId, workflow_type: 'walletAutoRecharge' });
    expect(owed).to.have.length(1);
    expect((await getWallet(db(), orgId)).balanceCents).to.equal(1400);
  });

  it('settleSoon folds the charges recorded before it, called once or many times; the sweep folds what a stopped process left', async () => {
    const previous = process.env.WALLET_SETTLE_DELAY_MS;
    process.env.WALLET_SETTLE_DELAY_MS = '0';
    try {
      const orgId = (await createOrganization(db(), 'Soon Co')).id;
      await Promise.all([reply(db(), orgId, 5), reply(db(), orgId, 5), reply(db(), orgId, 5)]);
      await Promise.all([settleSoon(db(), orgId), settleSoon(db(), orgId), settleSoon(db(), orgId)]);
      expect(await pending(orgId)).to.equal(0);
      expect(await ledgerSum(db(), orgId)).to.equal(-15);
      await expectConsistentLedger(orgId);

      // A process that stopped after recording its charges and before settling them.
      const left = (await createOrganization(db(), 'Left Co')).id;
      await reply(db(), left, 7);
      await reply(db(), left, 8);
      const sweep = startWalletSettleSweep({ db: db(), logger: createLogger('silent'), intervalMs: 0, minAgeMs: 0 });
      try {
        expect(await sweep.sweep()).to.be.at.least(2);
      } finally {
        await sweep.stop();
      }
      expect(await pending(left)).to.equal(0);
      expect(await ledgerSum(db(), left)).to.equal(-15);
      expect((await getWallet(db(), left)).balanceCents).to.equal(-15);
      await expectConsistentLedger(left);
    } finally {
      if (previous === undefined) delete process.env.WALLET_SETTLE_DELAY_MS;
      else process.env.WALLET_SETTLE_DELAY_MS = previous;
    }
  });
});
