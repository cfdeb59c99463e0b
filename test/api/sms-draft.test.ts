/**
 * PUT /sms and GET /sms exactly per spec "Save the SMS registration draft" (spec "Save the SMS registration draft").
 */
import { expect } from 'chai';
import { startApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { useTestApi } from '../helpers/api';
import { COMPLETE_BRAND, expectNoRegistration } from './sms-fixtures';

const FULL = COMPLETE_BRAND;

const RESPONSE_FIELDS = [
  'legalName', 'displayName', 'ein', 'entityType', 'vertical', 'country', 'street', 'city', 'state', 'postalCode',
  'website', 'supportEmail', 'phone', 'usePolicyPage', 'useCase', 'optInMethod', 'description', 'sample1', 'sample2',
  'messageFlow', 'helpMessage', 'sendsLinks', 'brandId', 'campaignId', 'status', 'providerStatus', 'lastError',
  'quietHoursRepliesExempt', 'submittedAt', 'createdAt', 'updatedAt',
];

describe('PUT /sms and GET /sms (saveSMSRegistration)', () => {
  const t = useTestApi('smsdraft');

  it('answers GET /sms before any save with 404 sms_registration_not_found', () => expectNoRegistration(t, 'GET', '/sms'));

  it('saves a full draft and answers 200 with every response field, status draft, ISO timestamps and nulls when unset', async () => {
    const { key } = await t.org();
    const res = await t.call('PUT', '/sms', { key, json: FULL });
    expect(res.status).to.equal(200);
    expect(res.body.success).to.equal(true);
    const d = res.body.data;
    expect(Object.keys(d).sort()).to.deep.equal([...RESPONSE_FIELDS].sort());
    expect(d).to.not.have.property('regenerate');
    expect(d).to.include({ ...FULL, status: 'draft', brandId: null, campaignId: null, providerStatus: null, lastError: null, submittedAt: null, quietHoursRepliesExempt: true });
    expect(new Date(d.createdAt).toISOString()).to.equal(d.createdAt);
    expect(new Date(d.updatedAt).toISOString()).to.equal(d.updatedAt);
    const got = await t.call('GET', '/sms', { key });
    expect(got.body.data).to.deep.equal(d);
  });

  it('accepts an empty object (a draft may be incomplete) and a partial update keeps earlier fields', async () => {
    const { key } = await t.org();
    expect((await t.call('PUT', '/sms', { key, json: {} })).status).to.equal(200);
    await t.call('PUT', '/sms', { key, json: { legalName: 'Keep Me Inc' } });
    const res = await t.call('PUT', '/sms', { key, json: { city: 'Austin' } });
    expect(res.body.data).to.include({ legalName: 'Keep Me Inc', city: 'Austin', status: 'draft' });
  });

  it('clears a stored value with null', async () => {
    const { key } = await t.org();
    await t.call('PUT', '/sms', { key, json: { street: '9 Elm St' } });
    const res = await t.call('PUT', '/sms', { key, json: { street: null } });
    expect(res.body.data.street).to.equal(null);
  });

  describe('validation (400 validation_error naming each field)', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['an unknown field', { brandColour: 'red' }, 'brandColour'],
      ['a wrong type', { usePolicyPage: 'yes' }, 'usePolicyPage'],
      ['a string where a boolean belongs', { regenerate: 'true' }, 'regenerate'],
      ['an entityType outside the TCR list', { entityType: 'LLC' }, 'entityType'],
      ['a vertical outside the TCR list', { vertical: 'SPACE' }, 'vertical'],
      ['a useCase outside the TCR list', { useCase: 'SPAM' }, 'useCase'],
      ['an optInMethod outside the documented list', { optInMethod: 'PIGEON' }, 'optInMethod'],
      ['an EIN that is not nine digits', { ein: '12-34567' }, 'ein'],
      ['a country that is not ISO 3166 alpha-2', { country: 'USA' }, 'country'],
      ['an unassigned country code', { country: 'QQ' }, 'country'],
      ['a state that is not a USPS code', { state: 'XX' }, 'state'],
      ['a postal code that is not a ZIP', { postalCode: '1234' }, 'postalCode'],
      ['a website that is not http(s)', { website: 'ftp://example.com' }, 'website'],
      ['a support email that is not an email', { supportEmail: 'not-an-email' }, 'supportEmail'],
      ['a phone that is not E.164', { phone: '(415) 555-0100' }, 'phone'],
      ['an invalid E.164 number', { phone: '+10005550100' }, 'phone'],
      ['a legal name over 255 characters', { legalName: 'x'.repeat(256) }, 'legalName'],
      ['a help message over 320 characters', { helpMessage: 'x'.repeat(321) }, 'helpMessage'],
      ['a description over 4096 characters', { description: 'x'.repeat(4097) }, 'description'],
      ['quietHoursRepliesExempt set to null', { quietHoursRepliesExempt: null }, 'quietHoursRepliesExempt'],
    ];
    for (const [what, body, field] of cases) {
      it(`refuses ${what}`, async () => {
        const { key } = await t.org();
        const res = await t.call('PUT', '/sms', { key, json: body });
        expect(res.status, res.text).to.equal(400);
        expect(res.headers.get('content-type')).to.match(/problem\+json/);
        expect(res.body.code).to.equal('validation_error');
        expect(res.body.errors).to.be.an('array');
        expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal([field]);
        expect(res.body.errors[0].message).to.be.a('string').and.not.empty;
      });
    }

    it('names every offending field at once', async () => {
      const { key } = await t.org();
      const res = await t.call('PUT', '/sms', { key, json: { ein: 'x', phone: 'y', nope: 1, entityType: 'Z' } });
      expect(res.status).to.equal(400);
      expect(res.body.errors.map((e: { field: string }) => e.field).sort()).to.deep.equal(['ein', 'entityType', 'nope', 'phone']);
    });

    it('refuses a body that is not a JSON object, and an empty body', async () => {
      const { key } = await t.org();
      for (const raw of ['[1,2]', '']) {
        const res = await t.call('PUT', '/sms', { key, raw, headers: { 'content-type': 'application/json' } });
        expect(res.status, raw).to.equal(400);
        expect(['validation_error', 'malformed_json']).to.include(res.body.code);
      }
    });

    it('accepts both EIN forms, ZIP+4 and a non-US postal code when the country is another', async () => {
      const { key } = await t.org();
      expect((await t.call('PUT', '/sms', { key, json: { ein: '123456789', postalCode: '62701-1234' } })).status).to.equal(200);
      expect((await t.call('PUT', '/sms', { key, json: { country: 'CA', state: 'ON', postalCode: 'K1A 0B6' } })).status).to.equal(200);
    });

    it('loses nothing stored when a save is refused', async () => {
      const { key } = await t.org();
      const saved = await t.call('PUT', '/sms', { key, json: FULL });
      const refused = await t.call('PUT', '/sms', { key, json: { displayName: 'Changed', ein: 'bad' } });
      expect(refused.status).to.equal(400);
      const got = await t.call('GET', '/sms', { key });
      expect(got.body.data).to.deep.equal(saved.body.data);
    });

    it('creates no registration when the first save is refused', async () => {
      const { key, orgId } = await t.org();
      expect((await t.call('PUT', '/sms', { key, json: { phone: 'nope' } })).status).to.equal(400);
      expect(await t.db('sms_registrations').where({ org_id: orgId }).first()).to.equal(undefined);
    });
  });

  describe('generated campaign text', () => {
    it('generates compliant text naming the brand, purpose, frequency, rates, STOP and HELP, with template fields and the link', async () => {
      const { key } = await t.org();
      const d = (await t.call('PUT', '/sms', { key, json: FULL })).body.data;
      for (const f of ['description', 'sample1', 'sample2', 'messageFlow', 'helpMessage']) {
        expect(d[f], f).to.be.a('string').and.include('Acme Dental');
      }
      expect(d.description).to.include('Msg & data rates may apply').and.match(/frequency/i).and.include('account notification');
      expect(d.sample1).to.include('Reply STOP to opt out').and.match(/\[[a-z_]+\]/);
      expect(d.sample2).to.include('HELP').and.include(FULL.website);
      expect(d.messageFlow).to.include('Msg & data rates may apply').and.include('privacy').and.include(FULL.website);
      expect(d.helpMessage).to.include(FULL.supportEmail).and.include('STOP');
      expect(d.helpMessage.length).to.be.within(20, 320);
      expect(d.description.length).to.be.within(40, 4096);
      expect(d.messageFlow.length).to.be.within(40, 2048);
    });

    it('leaves links out of the samples when sendsLinks is false', async () => {
      const { key } = await t.org();
      const d = (await t.call('PUT', '/sms', { key, json: { ...FULL, sendsLinks: false } })).body.data;
      expect(d.sample1 + d.sample2).to.not.include('https://');
    });

    it('keeps text the user wrote and fills only what is missing', async () => {
      const { key } = await t.org();
      const mine = 'Acme Dental: your cleaning is booked for [date]. Reply STOP to opt out.';
      const d = (await t.call('PUT', '/sms', { key, json: { ...FULL, sample1: mine } })).body.data;
      expect(d.sample1).to.equal(mine);
      expect(d.sample2).to.include('Acme Dental');
      const later = (await t.call('PUT', '/sms', { key, json: { displayName: 'Renamed Dental' } })).body.data;
      expect(later.sample1).to.equal(mine);
      expect(later.description).to.equal(d.description);
    });

    it('regenerates from brand details plus use case when regenerate is true, explicit values winning', async () => {
      const { key } = await t.org();
      const first = (await t.call('PUT', '/sms', { key, json: FULL })).body.data;
      const mine = 'Renamed Dental: help at help@x.example.com. Msg & data rates may apply. Reply STOP to opt out.';
      const res = await t.call('PUT', '/sms', { key, json: { displayName: 'Renamed Dental', useCase: 'DELIVERY_NOTIFICATION', regenerate: true, helpMessage: mine } });
      const d = res.body.data;
      expect(d.description).to.not.equal(first.description);
      expect(d.description).to.include('Renamed Dental').and.include('delivery notification');
      expect(d.sample1).to.include('Renamed Dental').and.include('order');
      expect(d.messageFlow).to.include('Renamed Dental');
      expect(d.helpMessage).to.equal(mine);
    });
  });

  describe('quietHoursRepliesExempt', () => {
    it('starts at true, keeps the stored posture when omitted, and shows the effective value', async () => {
      const { key } = await t.org();
      expect((await t.call('PUT', '/sms', { key, json: {} })).body.data.quietHoursRepliesExempt).to.equal(true);
      expect((await t.call('PUT', '/sms', { key, json: { quietHoursRepliesExempt: false } })).body.data.quietHoursRepliesExempt).to.equal(false);
      expect((await t.call('PUT', '/sms', { key, json: { city: 'Dallas' } })).body.data.quietHoursRepliesExempt).to.equal(false);
      expect((await t.call('GET', '/sms', { key })).body.data.quietHoursRepliesExempt).to.equal(false);
      expect((await t.call('PUT', '/sms', { key, json: { quietHoursRepliesExempt: true } })).body.data.quietHoursRepliesExempt).to.equal(true);
    });

    it('starts at false when the first save says false', async () => {
      const { key } = await t.org();
      expect((await t.call('PUT', '/sms', { key, json: { quietHoursRepliesExempt: false } })).body.data.quietHoursRepliesExempt).to.equal(false);
    });
  });

  it('returns a stored registration to status draft on save (spec state table) and keeps carrier ids', async () => {
    const { key, orgId } = await t.org();
    await t.call('PUT', '/sms', { key, json: FULL });
    await t.db('sms_registrations').where({ org_id: orgId }).update({ status: 'failed', brand_id: 'BRAND1', last_error: 'rejected' });
    const d = (await t.call('PUT', '/sms', { key, json: { city: 'Chicago' } })).body.data;
    expect(d.status).to.equal('draft');
    expect(d.brandId).to.equal('BRAND1');
  });

  it('leaves exactly one row and no error after 50 parallel saves', async () => {
    // 50 requests at once: past the default burst limit (docs/api-notes.md "Rate limits"), so this key has a higher one.
    const { key, orgId } = await t.org('Parallel saves', undefined, { rateLimitPoints: 100_000 });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => t.call('PUT', '/sms', { key, json: { displayName: `Parallel ${i}` } })),
    );
    expect(results.map((r) => r.status)).to.deep.equal(Array(50).fill(200));
    const rows = await t.db('sms_registrations').where({ org_id: orgId });
    expect(rows).to.have.length(1);
    expect(rows[0].display_name).to.match(/^Parallel \d+$/);
  });

  it('never contacts a carrier and never charges', async () => {
    const { key, orgId } = await t.org();
    await t.call('PUT', '/sms', { key, json: FULL });
    await t.call('PUT', '/sms', { key, json: { regenerate: true } });
    const carrierCalls = await t.db('provider_requests').where({ org_id: orgId }).count<{ count: number }[]>('* as count');
    const charges = await t.db('usage_entries').where({ org_id: orgId }).count<{ count: number }[]>('* as count');
    expect(Number(carrierCalls[0].count)).to.equal(0);
    expect(Number(charges[0].count)).to.equal(0);
  });
});

describe('SMS registration read cache across API processes', () => {
  const t = useTestApi('smscache');

  it('never loses a write made through another process, and shows it there promptly', async () => {
    const other = await startApi({ db: t.db, databaseUrl: t.databaseUrl, config: { ...t.config, port: 0 }, logger: createLogger('silent') });
    try {
      // About 60 requests in quick succession: past the default burst limit, so this key has a higher one.
      const { key } = await t.org('Across processes', undefined, { rateLimitPoints: 100_000 });
      const viaOther = async (method: string, json?: unknown) => {
        const r = await fetch(`${other.baseUrl}/sms`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: json === undefined ? undefined : JSON.stringify(json),
        });
        return (await r.json()) as { data: Record<string, unknown> };
      };
      await t.call('PUT', '/sms', { key, json: { displayName: 'First' } });
      expect((await viaOther('GET')).data.displayName).to.equal('First'); // the other process caches it
      for (let i = 0; i < 20; i++) {
        await t.call('PUT', '/sms', { key, json: { displayName: `Name ${i}` } });
        const merged = await viaOther('PUT', { city: `City ${i}` });
        expect(merged.data).to.include({ displayName: `Name ${i}`, city: `City ${i}` });
      }
      await t.call('PUT', '/sms', { key, json: { street: '5 Last St' } });
      let seen: unknown;
      for (let i = 0; i < 100 && seen !== '5 Last St'; i++) {
        seen = (await viaOther('GET')).data.street;
        if (seen !== '5 Last St') await new Promise((r) => setTimeout(r, 10));
      }
      expect(seen).to.equal('5 Last St');
    } finally {
      await other.close();
    }
  });
});
