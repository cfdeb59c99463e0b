/**
 * Billing (spec "Billing"; docs/api-notes.md "Billing"): the wallet derived from its append-only ledger, top-ups
 * through the sandbox payments provider (Idempotency-Key, magic amounts), usage charged once, the
 * usage listing and its day view, open invoices, the low-balance event, scopes billing:read /
 * billing:write, and another organization's data never visible.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { recordUsage } from '../../services/billing/usage';
import { ledgerSum, listLedger } from '../../db/repositories/billing';
import { FEES } from '../../db/repositories/usage';
import { CONVERSATION_FEES } from '../../services/conversations/service';
import { PRICES } from '../../domain/billing/prices';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { periodOf } from '../../domain/billing/periods';

describe('Billing: wallet, top-ups, usage and open invoices', () => {
  const t = useTestApi('billing');

  const topUp = (key: string, amountCents: unknown, idem: string | null = crypto.randomUUID()) =>
    t.call('POST', '/billing/wallet/topup', { key, json: { amountCents }, headers: idem ? { 'idempotency-key': idem } : {} });
  const charge = (orgId: string, amountCents: number, kind = 'conversation_message', extra: Record<string, unknown> = {}) =>
    recordUsage(t.db, orgId, { kind, amountCents, dedupeKey: `test:${crypto.randomUUID()}`, ...extra });
  const lowEvents = async (orgId: string) => (await t.db('events').where({ org_id: orgId, type: 'billing.wallet.low' }).orderBy('created_at')).map((e: any) => e.data);

  it('holds billing:read to the reads and billing:write to the top-up, with keys holding exactly those scopes', async () => {
    const { orgId } = await t.org('Scoped');
    const readKey = await keyFor(orgId, ['billing:read']);
    const writeKey = await keyFor(orgId, ['billing:write']);
    const noneKey = await keyFor(orgId, ['agents:read']);
    for (const path of ['/billing/wallet', '/billing/usage', '/billing/usage?groupBy=day', '/billing/invoices']) {
      expect((await t.call('GET', path, { key: readKey })).status, path).to.equal(200);
      const w = await t.call('GET', path, { key: writeKey });
      expect(w.status, path).to.equal(403);
      expect(w.body.code).to.equal('insufficient_scope');
      expect((await t.call('GET', path, { key: noneKey })).status, path).to.equal(403);
    }
    expect((await topUp(readKey, 1000)).status).to.equal(403);
    expect((await topUp(noneKey, 1000)).status).to.equal(403);
    const ok = await topUp(writeKey, 1000);
    expect(ok.status).to.equal(201);
    expect(ok.body.data.wallet.balanceCents).to.equal(1000);
  });

  async function keyFor(orgId: string, scopes: string[]): Promise<string> {
    return (await createSecretKey(t.db, orgId, { brand: t.config.keyBrandPrefix, scopes })).key;
  }

  it('starts at 0 USD with the default low-balance threshold', async () => {
    const { key } = await t.org();
    const res = await t.call('GET', '/billing/wallet', { key });
    expect(res.body.data).to.deep.equal({ balanceCents: 0, currency: 'USD', lowBalanceThresholdCents: 1000, low: true, updatedAt: null, autoRecharge: { enabled: false, thresholdCents: null, amountCents: null, disabledReason: null } });
  });

  it('refuses amounts outside 500..1,000,000 cents and a top-up without Idempotency-Key, naming the field', async () => {
    const { key } = await t.org();
    for (const bad of [499, 1_000_001, 10.5, '1000', -5]) {
      const res = await topUp(key, bad);
      expect(res.status, String(bad)).to.equal(400);
      expect(res.headers.get('content-type')).to.match(/problem\+json/);
      expect(res.body.errors.map((e: any) => e.field)).to.include('amountCents');
    }
    const noKey = await topUp(key, 1000, null);
    expect(noKey.status).to.equal(400);
    expect(noKey.body.code).to.equal('idempotency_key_required');
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(0);
  });

  it('credits nothing when the sandbox declines (amount ending in 02: 402) or is unavailable (09: 502)', async () => {
    const { key, orgId } = await t.org();
    const declined = await topUp(key, 1002);
    expect(declined.status).to.equal(402);
    expect(declined.body.code).to.equal('payment_declined');
    expect(declined.body.errors[0].field).to.equal('amountCents');
    expect((await topUp(key, 1003)).body.code).to.equal('payment_declined');
    const down = await topUp(key, 1009);
    expect(down.status).to.equal(502);
    expect(down.body.code).to.equal('payment_unavailable');
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(0);
    expect(await listLedger(t.db, orgId)).to.deep.equal([]);
  });

  it('credits a top-up once when its Idempotency-Key is replayed, even in parallel', async () => {
    const { key, orgId } = await t.org();
    const idem = crypto.randomUUID();
    const [a, b] = await Promise.all([topUp(key, 2500, idem), topUp(key, 2500, idem)]);
    const c = await topUp(key, 2500, idem);
    for (const r of [a, b, c]) expect(r.status).to.equal(201);
    expect(new Set([a, b, c].map((r) => r.body.data.entry.id)).size).to.equal(1);
    expect(c.headers.get('idempotent-replayed')).to.equal('true');
    expect((await topUp(key, 2600, idem)).status).to.equal(422);
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(2500);
    const ledger = await listLedger(t.db, orgId);
    expect(ledger).to.have.length(1);
    expect(ledger[0]).to.include({ kind: 'topup', amountCents: 2500, balanceAfterCents: 2500 });
    expect(ledger[0].paymentId).to.match(/^pay_sbx_/);
  });

  it('balances parallel top-ups and usage charges to the cent (append-only ledger, running balance)', async () => {
    // 20 top-ups at once and reads right after: past the default burst limit (docs/api-notes.md "Rate limits"), so this key has a higher one.
    const { key, orgId } = await t.org('Parallel top-ups', undefined, { rateLimitPoints: 100_000 });
    const bystander = await t.org('Bystander');
    const topUps = Array.from({ length: 20 }, (_, i) => 517 + i * 100); // ends in 17: no sandbox magic amount
    const charges = Array.from({ length: 60 }, (_, i) => 1 + ((i * 53) % 400));
    const results = await Promise.all([...topUps.map((a) => topUp(key, a)), ...charges.map((a) => charge(orgId, a).then(() => ({ status: 201 })))]);
    for (const r of results) expect(r.status).to.equal(201);
    const expected = topUps.reduce((s, a) => s + a, 0) - charges.reduce((s, a) => s + a, 0);
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(expected);
    expect(await ledgerSum(t.db, orgId)).to.equal(expected);
    expect((await t.call('GET', '/billing/wallet', { key: bystander.key })).body.data.balanceCents).to.equal(0);
    const ledger = await listLedger(t.db, orgId);
    expect(ledger).to.have.length(80);
    let running = 0;
    for (const e of ledger) {
      running += e.amountCents;
      expect(e.balanceAfterCents).to.equal(running);
    }
    const usageIds = ledger.filter((e) => e.kind === 'usage').map((e) => e.usageEntryId);
    expect(new Set(usageIds).size).to.equal(60);
    let refused = '';
    await t.db('wallet_ledger').where({ org_id: orgId }).update({ amount_cents: 0 }).catch((e: Error) => (refused = e.message));
    expect(refused).to.match(/append-only/);
  });

  it('charges a usage entry once however often it is recorded, and never charges 0-cent entries', async () => {
    const { orgId, key } = await t.org();
    await topUp(key, 5000);
    const entry = { kind: 'phone_number_purchase', amountCents: 115, dedupeKey: 'phone_number_purchase:num_x' };
    expect(await recordUsage(t.db, orgId, entry)).to.equal(true);
    expect(await recordUsage(t.db, orgId, entry)).to.equal(false);
    await charge(orgId, 0, 'llm_tokens', { quantity: 900 });
    expect((await t.call('GET', '/billing/wallet', { key })).body.data.balanceCents).to.equal(4885);
    expect((await listLedger(t.db, orgId)).filter((e) => e.kind === 'usage')).to.have.length(1);
  });

  it('emits billing.wallet.low once per crossing below the threshold, in the transaction of the charge', async () => {
    const { orgId, key } = await t.org();
    await topUp(key, 1500);
    await charge(orgId, 400); // 1100
    expect(await lowEvents(orgId)).to.have.length(0);
    await charge(orgId, 200); // 900: crossed
    await charge(orgId, 100); // 800: still below
    let events = await lowEvents(orgId);
    expect(events).to.have.length(1);
    expect(events[0]).to.include({ balanceCents: 900, previousBalanceCents: 1100, lowBalanceThresholdCents: 1000, currency: 'USD' });
    await topUp(key, 1000); // 1800
    await charge(orgId, 900); // 900: crossed again
    events = await lowEvents(orgId);
    expect(events).to.have.length(2);
    expect((await t.call('GET', '/billing/wallet', { key })).body.data).to.include({ balanceCents: 900, low: true });
  });

  it('lists usage newest first with kind, quantity, unit price, amount and resource, filtered and paginated', async () => {
    const { orgId, key } = await t.org();
    const other = await t.org('Other');
    await charge(other.orgId, 7);
    await recordUsage(t.db, orgId, { ...FEES.brandRegistration, dedupeKey: 'brand:r1', details: { registrationId: 'smsreg_1' } });
    await recordUsage(t.db, orgId, { ...FEES.numberPurchase, dedupeKey: 'num:1', details: { numberId: 'num_1' } });
    for (let i = 0; i < 5; i++) await recordUsage(t.db, orgId, { ...CONVERSATION_FEES.message, dedupeKey: `m:${i}`, details: { conversationId: 'conv_1' } });
    await recordUsage(t.db, orgId, { ...CONVERSATION_FEES.tokens, quantity: 1234, dedupeKey: 'tok:1', details: { conversationId: 'conv_1' } });
    const all = await t.call('GET', '/billing/usage', { key });
    expect(all.status).to.equal(200);
    expect(all.body.data.items).to.have.length(8);
    expect(all.body.data.items[0]).to.include({ kind: 'llm_tokens', quantity: 1234, unitPriceCents: 0, amountCents: 0, resourceId: 'conv_1' });
    expect(all.body.data.items[7]).to.include({ kind: '10dlc_brand_registration', quantity: 1, unitPriceCents: PRICES.brandRegistration.unitPriceCents, amountCents: 400, resourceId: 'smsreg_1' });
    const p1 = await t.call('GET', '/billing/usage?kind=conversation_message&limit=3', { key });
    expect(p1.body.data.items).to.have.length(3);
    expect(p1.body.data.hasMore).to.equal(true);
    const p2 = await t.call('GET', `/billing/usage?kind=conversation_message&limit=3&cursor=${p1.body.data.nextCursor}`, { key });
    expect(p2.body.data.items).to.have.length(2);
    expect(p2.body.data.hasMore).to.equal(false);
    expect(new Set([...p1.body.data.items, ...p2.body.data.items].map((u: any) => u.id)).size).to.equal(5);
    const future = await t.call('GET', `/billing/usage?from=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`, { key });
    expect(future.body.data.items).to.deep.equal([]);
    const days = await t.call('GET', '/billing/usage?groupBy=day', { key });
    const today = new Date().toISOString().slice(0, 10);
    expect(days.body.data.items).to.deep.include({ day: today, kind: 'conversation_message', quantity: 5, amountCents: 5, entries: 5 });
    expect(days.body.data.items.map((d: any) => d.kind)).to.not.include('other');
    for (const [q, field] of [['groupBy=week', 'groupBy'], ['kind=Bad Kind', 'kind'], ['from=yesterday', 'from'], ['from=2026-11-02&to=2026-11-01', 'to'], ['groupBy=day&from=2020-01-01&to=2026-01-01', 'from'], ['limit=0', 'limit']]) {
      const r = await t.call('GET', `/billing/usage?${q}`, { key });
      expect(r.status, q).to.equal(400);
      expect(r.body.errors[0].field, q).to.equal(field);
    }
    expect((await t.call('GET', '/billing/usage?cursor=garbage', { key })).body.code).to.equal('invalid_cursor');
    const theirs = await t.call('GET', '/billing/usage', { key: other.key });
    expect(theirs.body.data.items).to.have.length(1);
    expect(theirs.body.data.items[0].amountCents).to.equal(7);
  });

  it("shows the open current-month invoice with the running total per kind, never another organization's", async () => {
    const { orgId, key } = await t.org();
    const other = await t.org('Other');
    await charge(other.orgId, 999);
    await charge(orgId, 3);
    await charge(orgId, 4);
    await charge(orgId, 115, 'phone_number_purchase');
    const res = await t.call('GET', '/billing/invoices', { key });
    expect(res.status).to.equal(200);
    const [open] = res.body.data.items;
    expect(open).to.include({ id: null, status: 'open', period: periodOf(Date.now()), totalCents: 122, currency: 'USD', closedAt: null });
    expect(open.lines).to.deep.equal([
      { kind: 'conversation_message', quantity: 2, unitPriceCents: 1, amountCents: 7, entries: 2 },
      { kind: 'phone_number_purchase', quantity: 1, unitPriceCents: 115, amountCents: 115, entries: 1 },
    ]);
  });
});
