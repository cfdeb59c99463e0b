/**
 * Numbers (spec "Numbers"): the sandbox inventory by US area code, reservations held against other
 * organizations, purchases recorded once as usage, assignment, and the per-number SMS toggle listed
 * with the registration status (sms:read).
 */
import { expect } from 'chai';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { useTestApi } from '../helpers/api';

describe('Numbers: search, reserve, purchase, assign and SMS enablement', () => {
  const t = useTestApi('numbers');

  it('offers the same valid US numbers of the requested area code on every search', () => {
    const a = sandboxInventory('415');
    expect(a.length).to.be.at.least(30);
    expect(sandboxInventory('415')).to.deep.equal(a);
    for (const n of a) {
      expect(n.e164.startsWith('+1415')).to.equal(true);
      const p = parsePhoneNumberFromString(n.e164)!;
      expect(p.isValid() && p.country).to.equal('US');
      expect(n.region).to.equal('CA');
    }
    expect(sandboxInventory('212')[0].e164).to.not.equal(a[0].e164);
    expect(sandboxInventory('999')).to.deep.equal([]);
  });

  it('answers 400 naming areaCode when it is missing or not a US area code', async () => {
    const { key } = await t.org();
    for (const q of ['', '?areaCode=41', '?areaCode=999', '?areaCode=604']) {
      const res = await t.call('GET', `/numbers/search${q}`, { key });
      expect(res.status, q).to.equal(400);
      expect(res.body.errors[0].field).to.equal('areaCode');
    }
  });

  it('pages through the inventory with a cursor and the list shape', async () => {
    const { key } = await t.org();
    const p1 = await t.call('GET', '/numbers/search?areaCode=303&limit=10', { key });
    expect(p1.status).to.equal(200);
    expect(p1.body.data.items).to.have.length(10);
    expect(p1.body.data.hasMore).to.equal(true);
    const p2 = await t.call('GET', `/numbers/search?areaCode=303&limit=10&cursor=${p1.body.data.nextCursor}`, { key });
    expect(p2.body.data.items[0].e164 > p1.body.data.items[9].e164).to.equal(true);
    expect((await t.call('GET', '/numbers/search?areaCode=303&cursor=garbage', { key })).status).to.equal(400);
  });

  it('reserves a number for one organization: another gets 409 and no longer sees it in the search', async () => {
    const a = await t.org('A');
    const b = await t.org('B');
    const e164 = sandboxInventory('617')[0].e164;
    const res = await t.call('POST', '/numbers/reserve', { key: a.key, json: { e164 } });
    expect(res.status).to.equal(200);
    expect(res.body.data).to.include({ e164, status: 'reserved', smsEnabled: false, agentId: null });
    expect(res.body.data.id).to.match(/^num_/);
    expect(new Date(res.body.data.reservedUntil).getTime()).to.be.greaterThan(Date.now() + 14 * 60_000);
    const other = await t.call('POST', '/numbers/reserve', { key: b.key, json: { e164 } });
    expect(other.status).to.equal(409);
    expect(other.body.code).to.equal('number_unavailable');
    const search = await t.call('GET', '/numbers/search?areaCode=617&limit=200', { key: b.key });
    expect(search.body.data.items.map((n: { e164: string }) => n.e164)).to.not.include(e164);
  });

  it('answers 422 number_not_offered for a number outside the inventory', async () => {
    const { key } = await t.org();
    const res = await t.call('POST', '/numbers/reserve', { key, json: { e164: '+14155550100' } });
    expect(res.status).to.equal(422);
    expect(res.body.code).to.equal('number_not_offered');
  });

  it('purchases a reservation, records one usage entry, and a repeated purchase changes nothing', async () => {
    const { key, orgId } = await t.org();
    const e164 = sandboxInventory('312')[0].e164;
    const r = await t.call('POST', '/numbers/reserve', { key, json: { e164 } });
    const p = await t.call('POST', '/numbers/purchase', { key, json: { id: r.body.data.id } });
    expect(p.status).to.equal(200);
    expect(p.body.data).to.include({ id: r.body.data.id, status: 'purchased', reservedUntil: null });
    const again = await t.call('POST', '/numbers/purchase', { key, json: { id: r.body.data.id } });
    expect(again.body.data.purchasedAt).to.equal(p.body.data.purchasedAt);
    const usage = await t.db('usage_entries').where({ org_id: orgId });
    expect(usage).to.have.length(1);
    expect(usage[0]).to.include({ kind: 'phone_number_purchase', amount_cents: 115, dedupe_key: `phone_number_purchase:${r.body.data.id}` });
    expect((await t.db('provider_requests').where({ org_id: orgId, operation: 'purchaseNumber' }))).to.have.length(1);
  });

  it('purchases straight from the search by e164, and refuses a body with both or neither of id and e164', async () => {
    const { key } = await t.org();
    const e164 = sandboxInventory('512')[1].e164;
    const p = await t.call('POST', '/numbers/purchase', { key, json: { e164 } });
    expect(p.status).to.equal(200);
    expect(p.body.data).to.include({ e164, status: 'purchased' });
    expect((await t.call('POST', '/numbers/purchase', { key, json: {} })).status).to.equal(400);
    expect((await t.call('POST', '/numbers/purchase', { key, json: { id: p.body.data.id, e164 } })).status).to.equal(400);
    const list = await t.call('GET', '/numbers', { key });
    expect(list.body.data.items.map((n: { e164: string }) => n.e164)).to.deep.equal([e164]);
  });

  it("assigns a number to an agent, and answers 404 for another organization's number", async () => {
    const a = await t.org();
    const b = await t.org();
    const p = await t.call('POST', '/numbers/purchase', { key: a.key, json: { e164: sandboxInventory('206')[0].e164 } });
    const agent = await t.call('POST', '/agents', { key: a.key, json: { name: 'Front desk' } });
    expect(agent.status).to.equal(201);
    const agentId: string = agent.body.data.id;
    const res = await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: a.key, json: { agentId } });
    expect(res.status).to.equal(200);
    expect(res.body.data.agentId).to.equal(agentId);
    expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: b.key, json: { agentId } })).status).to.equal(404);
    const unknown = await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: a.key, json: { agentId: 'agt_0123456789abcdef' } });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.errors[0].field).to.equal('agentId');
    expect((await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: a.key, json: { agentId: 'bogus' } })).status).to.equal(400);
    const un = await t.call('POST', `/numbers/${p.body.data.id}/assign`, { key: a.key, json: { agentId: null } });
    expect(un.body.data.agentId).to.equal(null);
  });

  it('toggles SMS on a purchased number (sms:write) and lists it with the registration status (sms:read)', async () => {
    const { key, orgId } = await t.org();
    const p = await t.call('POST', '/numbers/purchase', { key, json: { e164: sandboxInventory('213')[0].e164 } });
    const on = await t.call('PUT', `/numbers/${p.body.data.id}/sms`, { key, json: { enabled: true } });
    expect(on.status).to.equal(200);
    expect(on.body.data).to.deep.equal({ id: p.body.data.id, e164: p.body.data.e164, smsEnabled: true, registrationStatus: 'none', canSend: false });
    const reader = await t.org('reader', ['sms:read']);
    await t.db('api_keys').where({ id: reader.keyId }).update({ org_id: orgId });
    const list = await t.call('GET', '/sms/numbers', { key: reader.key });
    expect(list.status).to.equal(200);
    expect(list.body.data.items).to.deep.equal([on.body.data]);
    expect((await t.call('PUT', `/numbers/${p.body.data.id}/sms`, { key: reader.key, json: { enabled: false } })).status).to.equal(403);
  });

  it('answers 404 when toggling SMS on a number that is only reserved', async () => {
    const { key } = await t.org();
    const r = await t.call('POST', '/numbers/reserve', { key, json: { e164: sandboxInventory('213')[3].e164 } });
    const res = await t.call('PUT', `/numbers/${r.body.data.id}/sms`, { key, json: { enabled: true } });
    expect(res.status).to.equal(404);
  });
});
