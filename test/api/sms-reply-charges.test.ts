/**
 * The charge of an agent's SMS reply through the API process that takes the carrier's callback (docs/api-notes.md
 * "Billing": deferred charges; docs/sms.md "Agents answer texts"): the reply's segments are recorded pending, the
 * balance `GET /billing/wallet` shows is exact before and after the settle, and the settle the process owes folds
 * the charge into the ledger once and emits `billing.wallet.low` when it crosses the threshold.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { postCallback, startSmsTestApi, textingNumber } from './sms-fixtures';
import type { TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { publishDraft } from './agents-fixtures';
import { until } from '../helpers/wait';
import { ledgerSum, listLedger } from '../../db/repositories/billing';

describe('the charge of an SMS reply: pending, exact, settled once', function () {
  this.timeout(60_000);
  let t: TestApi;

  before(async () => {
    t = await startSmsTestApi('sms_reply_charges', {}, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
    process.env.SANDBOX_CALLBACK_URL = `${t.api.baseUrl}/sms/provider-callbacks/sandbox`;
  });
  after(async () => {
    stopSandboxDispatchers();
    delete process.env.SANDBOX_CALLBACK_URL;
    await t?.close();
  });

  it('shows the exact balance while the charge is pending and settles it once, with billing.wallet.low on the crossing', async () => {
    const o = await t.org('Charged Texts Co');
    const agentId = (await t.call('POST', '/agents', { key: o.key, json: { name: 'Desk', voiceId: 'voice_ava' } })).body.data.id as string;
    await publishDraft(t.db, { orgId: o.orgId, keyId: o.keyId }, agentId, 'v1');
    const ours = sandboxInventory('415')[7].e164;
    await textingNumber(t, o, agentId, ours);
    const wallet = async () => (await t.call('GET', '/billing/wallet', { key: o.key })).body.data;
    // 1,001¢: the turn's 1¢ leaves the threshold (1,000¢) reached, the reply's segments take the balance below it.
    const need = 1001 - (await wallet()).balanceCents;
    const topUp = await t.call('POST', '/billing/wallet/topup', { key: o.key, json: { amountCents: need }, headers: { 'idempotency-key': crypto.randomUUID() } });
    expect(topUp.status, JSON.stringify(topUp.body)).to.equal(201);
    const topUps = (await listLedger(t.db, o.orgId)).filter((e) => e.kind === 'topup').reduce((s, e) => s + e.amountCents, 0);
    const spent = async () => Number((await t.db('usage_entries').where({ org_id: o.orgId }).sum({ s: 'amount_cents' }).first())!.s);

    const id = `SMin${crypto.randomBytes(6).toString('hex')}`;
    expect((await postCallback(t, { type: 'message.inbound', id, from: '+12125550163', to: ours, text: 'Are you open today?' })).status).to.equal(200);
    const inbound = await t.db('sms_messages').where({ provider_message_id: id }).first();
    const reply = await until(async () => t.db('sms_messages').where({ org_id: o.orgId, reply_to: inbound.id }).first(), 30_000, 'the reply');
    const segments = await until(async () => t.db('usage_entries').where({ org_id: o.orgId, kind: 'sms_segments', dedupe_key: `sms-reply:${reply.id}:segments` }).first(), 30_000, 'the charge');
    expect(Number(segments.amount_cents)).to.be.greaterThan(0);
    // Settled or not, the balance shown is what was topped up less every charge.
    expect((await wallet()).balanceCents).to.equal(topUps - (await spent()));

    await until(async () => (await t.db('wallet_pending_charges').where({ org_id: o.orgId }).first()) === undefined || undefined, 20_000, 'the settle');
    const balance = topUps - (await spent());
    expect((await wallet()).balanceCents).to.equal(balance);
    expect(await ledgerSum(t.db, o.orgId)).to.equal(balance);
    expect((await listLedger(t.db, o.orgId)).filter((e) => e.usageEntryId === segments.id).map((e) => e.amountCents)).to.deep.equal([-Number(segments.amount_cents)]);
    const low = (await t.db('events').where({ org_id: o.orgId, type: 'billing.wallet.low' })).map((e: { data: Record<string, unknown> }) => e.data);
    expect(low).to.have.length(1);
    expect(low[0]).to.include({ usageEntryId: segments.id, previousBalanceCents: 1000, balanceCents: balance });
  });
});
