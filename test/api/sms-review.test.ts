/**
 * The free compliance review (POST /sms/review, api/sms/review.ts): each rule, the generated text of a
 * complete brand passing, and the endpoint storing the verdict without contacting a carrier or charging.
 */
import { expect } from 'chai';
import { reviewDraft } from '../../domain/sms/review';
import { generateCampaignText } from '../../domain/sms/campaignText';
import type { SmsRegistration, UseCase, OptInMethod, EntityType } from '../../schemas/types/sms';
import { useTestApi } from '../helpers/api';
import { COMPLETE_BRAND, expectNoRegistration } from './sms-fixtures';

const USE_CASES: UseCase[] = ['2FA', 'ACCOUNT_NOTIFICATION', 'CUSTOMER_CARE', 'DELIVERY_NOTIFICATION', 'FRAUD_ALERT', 'HIGHER_EDUCATION', 'LOW_VOLUME', 'MARKETING', 'MIXED', 'POLLING_VOTING', 'PUBLIC_SERVICE_ANNOUNCEMENT', 'SECURITY_ALERT', 'SOLE_PROPRIETOR', 'AGENTS_FRANCHISES', 'CHARITY', 'EMERGENCY', 'K12_EDUCATION', 'POLITICAL', 'SOCIAL', 'SWEEPSTAKE'];
const OPT_INS: OptInMethod[] = ['WEB_FORM', 'TEXT_KEYWORD', 'VERBAL', 'PAPER_FORM', 'MOBILE_APP', 'POINT_OF_SALE', 'QR_CODE'];

/** A stored registration built like PUT /sms builds it: brand + generated text. */
function registration(over: Partial<SmsRegistration> = {}): SmsRegistration {
  const brand: Record<string, unknown> = { ...COMPLETE_BRAND, ...over };
  const text = generateCampaignText(brand as never);
  const stored: Record<string, unknown> = {
    brandId: null, campaignId: null, status: 'draft', providerStatus: null, lastError: null, quietHoursRepliesExempt: true,
    submittedAt: null, createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(),
  };
  return { ...stored, ...text, ...brand } as unknown as SmsRegistration;
}

const codes = (r: ReturnType<typeof reviewDraft>, field?: string) => r.findings.filter((f) => !field || f.field === field).map((f) => f.code);
const errorsOf = (r: ReturnType<typeof reviewDraft>) => r.findings.filter((f) => f.severity === 'error');

describe('SMS compliance review rules (reviewDraft)', () => {
  it('passes the generated text of a complete brand for every use case allowed to its entity type and every opt-in method', () => {
    const entityFor = (u: UseCase): EntityType =>
      u === 'SOLE_PROPRIETOR' ? 'SOLE_PROPRIETOR' : u === 'CHARITY' || u === 'POLITICAL' || u === 'EMERGENCY' || u === 'PUBLIC_SERVICE_ANNOUNCEMENT' ? 'NON_PROFIT' : 'PRIVATE_PROFIT';
    for (const useCase of USE_CASES) {
      for (const optInMethod of OPT_INS) {
        for (const sendsLinks of [true, false]) {
          const r = reviewDraft(registration({ useCase, optInMethod, sendsLinks, entityType: entityFor(useCase) }));
          expect(errorsOf(r), `${useCase}/${optInMethod}/links=${sendsLinks}`).to.deep.equal([]);
          expect(r.verdict).to.equal('pass');
        }
      }
    }
  });

  it('requires legal name, EIN, vertical and website unless the entity is a sole proprietor', () => {
    const r = reviewDraft(registration({ legalName: null, ein: null, vertical: null, website: null }));
    expect(r.verdict).to.equal('fail');
    for (const f of ['legalName', 'ein', 'vertical', 'website']) expect(codes(r, f)).to.include('required');
    const sole = reviewDraft(registration({ entityType: 'SOLE_PROPRIETOR', useCase: 'SOLE_PROPRIETOR', legalName: null, ein: null, vertical: null }));
    expect(codes(sole, 'ein')).to.deep.equal([]);
    expect(codes(sole, 'legalName')).to.deep.equal([]);
    expect(sole.verdict).to.equal('pass');
  });

  it('requires the address, contact and campaign fields', () => {
    const r = reviewDraft(registration({ street: '', city: null, supportEmail: null, phone: null, useCase: null, optInMethod: null, entityType: null }));
    for (const f of ['street', 'city', 'supportEmail', 'phone', 'useCase', 'optInMethod', 'entityType']) expect(codes(r, f), f).to.include('required');
  });

  it('warns that a PUBLIC_PROFIT brand gives its stock symbol and exchange at submission', () => {
    const r = reviewDraft(registration({ entityType: 'PUBLIC_PROFIT' }));
    expect(r.verdict).to.equal('pass');
    expect(r.findings).to.deep.include({ field: 'entityType', code: 'stock_details_at_submit', severity: 'warning', message: r.findings.find((f) => f.code === 'stock_details_at_submit')!.message });
  });

  it('refuses a brand registered outside the US', () => {
    expect(codes(reviewDraft(registration({ country: 'CA' })), 'country')).to.deep.equal(['us_only']);
  });

  it('checks the EIN format and that its prefix was ever assigned by the IRS', () => {
    expect(codes(reviewDraft(registration({ ein: '12-34567' })), 'ein')).to.deep.equal(['ein_format']);
    expect(codes(reviewDraft(registration({ ein: '07-1234567' })), 'ein')).to.deep.equal(['ein_prefix']);
    expect(codes(reviewDraft(registration({ ein: '123456789' })), 'ein')).to.deep.equal([]);
  });

  it('needs a description of 40 to 4096 characters', () => {
    expect(codes(reviewDraft(registration({ description: 'Too short a description.' })), 'description')).to.deep.equal(['too_short']);
    expect(codes(reviewDraft(registration({ description: 'x'.repeat(4097) })), 'description')).to.deep.equal(['too_long']);
  });

  it('needs a message flow naming the opt-in method, purpose, frequency, rates and privacy policy', () => {
    const flow = 'Customers opt in on our website form. Message frequency varies. Msg & data rates may apply. Account notifications. Privacy policy at https://acmedental.example.com/privacy.';
    expect(errorsOf(reviewDraft(registration({ messageFlow: flow })))).to.deep.equal([]);
    expect(codes(reviewDraft(registration({ messageFlow: flow.replace('Msg & data rates may apply. ', '') })), 'messageFlow')).to.deep.equal(['rates_disclosure']);
    expect(codes(reviewDraft(registration({ messageFlow: flow.replace(' Privacy policy at https://acmedental.example.com/privacy.', ' See https://acmedental.example.com.') })), 'messageFlow')).to.deep.equal(['privacy_policy']);
    expect(codes(reviewDraft(registration({ messageFlow: flow.replace('Message frequency varies. ', '') })), 'messageFlow')).to.deep.equal(['frequency']);
    expect(codes(reviewDraft(registration({ messageFlow: flow.replace(' Account notifications.', '') })), 'messageFlow')).to.deep.equal(['purpose']);
    // VERBAL opt-in, but the flow talks about a web form only
    expect(codes(reviewDraft(registration({ optInMethod: 'VERBAL', messageFlow: flow })), 'messageFlow')).to.deep.equal(['opt_in_method']);
    expect(codes(reviewDraft(registration({ messageFlow: 'Short flow.' })), 'messageFlow')).to.deep.equal(['too_short']);
  });

  it('needs two samples of 20 to 1024 characters', () => {
    const r = reviewDraft(registration({ sample2: 'Hi [first_name]!', sendsLinks: false }));
    expect(codes(r, 'sample2')).to.deep.equal(['too_short']);
    expect(codes(reviewDraft(registration({ sample1: null })), 'sample1')).to.include('required');
  });

  it('needs the brand name and opt-out language in at least one sample', () => {
    const noBrand = reviewDraft(registration({ sample1: 'Your appointment is on [date]. Reply STOP to opt out.', sample2: 'Your order [order_id] shipped. Reply STOP to end.' }));
    expect(codes(noBrand, 'sample1')).to.deep.equal(['sample_brand_name']);
    const noOptOut = reviewDraft(registration({ sample1: 'Acme Dental: your appointment is on [date].', sample2: 'Acme Dental: your order [order_id] shipped.', sendsLinks: false }));
    expect(codes(noOptOut, 'sample1')).to.deep.equal(['sample_opt_out']);
  });

  it('needs variable content in [square brackets]', () => {
    const r = reviewDraft(registration({ sample1: 'Acme Dental: Hi {{first_name}}, your visit is on {date}. Reply STOP to opt out.' }));
    expect(codes(r, 'sample1')).to.deep.equal(['template_field_format']);
    expect(codes(reviewDraft(registration({ sample1: 'Acme Dental: Hi [], your visit is confirmed. Reply STOP to opt out.' })), 'sample1')).to.deep.equal(['template_field_format']);
  });

  it('refuses links in samples unless sendsLinks is true, and public URL shorteners always', () => {
    const withLink = 'Acme Dental: your statement is at https://acmedental.example.com/s. Reply STOP to opt out.';
    expect(codes(reviewDraft(registration({ sendsLinks: false, sample1: withLink })), 'sample1')).to.deep.equal(['links_not_declared']);
    expect(codes(reviewDraft(registration({ sendsLinks: true, sample1: withLink })), 'sample1')).to.deep.equal([]);
    expect(codes(reviewDraft(registration({ sendsLinks: true, sample1: 'Acme Dental: see bit.ly/x1 now. Reply STOP to opt out.' })), 'sample1')).to.deep.equal(['public_url_shortener']);
  });

  it('warns when sendsLinks is true but no sample shows a link', () => {
    const r = reviewDraft(registration({ sendsLinks: true, sample2: 'Acme Dental: your order [order_id] shipped. Reply HELP for help.' }));
    expect(r.verdict).to.equal('pass');
    expect(r.findings.find((f) => f.code === 'link_sample_missing')?.severity).to.equal('warning');
  });

  it('needs a help message of 20 to 320 characters with a contact', () => {
    expect(codes(reviewDraft(registration({ helpMessage: 'Acme Dental: we are here to help you any time.' })), 'helpMessage')).to.deep.equal(['help_contact']);
    expect(codes(reviewDraft(registration({ helpMessage: 'Help: call us.' })), 'helpMessage')).to.deep.equal(['too_short']);
    expect(codes(reviewDraft(registration({ helpMessage: 'Acme Dental: for help call (217) 555-0123.' })), 'helpMessage')).to.deep.equal([]);
  });

  it('refuses a use case not allowed for the entity type', () => {
    expect(codes(reviewDraft(registration({ useCase: 'CHARITY' })), 'useCase')).to.deep.equal(['use_case_entity_type']);
    expect(codes(reviewDraft(registration({ useCase: 'SOLE_PROPRIETOR' })), 'useCase')).to.deep.equal(['use_case_entity_type']);
    expect(codes(reviewDraft(registration({ entityType: 'SOLE_PROPRIETOR', useCase: 'MARKETING' })), 'useCase')).to.deep.equal(['use_case_entity_type']);
    expect(codes(reviewDraft(registration({ entityType: 'NON_PROFIT', useCase: 'CHARITY' })), 'useCase')).to.deep.equal([]);
  });

  it('refuses prohibited content: SHAFT, cannabis and high-risk lending', () => {
    const cases: [string, string][] = [
      ['Acme Dental: 2-for-1 craft beer tonight with [promo_code]. Reply STOP to opt out.', 'alcohol'],
      ['Acme Dental: new CBD gummies in stock. Reply STOP to opt out.', 'cannabis'],
      ['Acme Dental: get payday loans in minutes, [first_name]. Reply STOP to opt out.', 'high-risk lending'],
      ['Acme Dental: ammo restock at [location]. Reply STOP to opt out.', 'firearms'],
      ['Acme Dental: vape sale at [location]. Reply STOP to opt out.', 'tobacco'],
    ];
    for (const [sample1, category] of cases) {
      const r = reviewDraft(registration({ sample1 }));
      const f = r.findings.find((x) => x.code === 'prohibited_content');
      expect(f, category).to.not.equal(undefined);
      expect(f!.field).to.equal('sample1');
      expect(f!.message).to.contain(category);
      expect(r.verdict).to.equal('fail');
    }
  });
});

describe('POST /sms/review (reviewSMSRegistration)', () => {
  const t = useTestApi('smsreview');

  it('answers 404 sms_registration_not_found before the first save', () => expectNoRegistration(t, 'POST', '/sms/review'));

  it('passes a complete brand with generated text, stores the verdict, and neither contacts a carrier nor charges', async () => {
    const { key, orgId } = await t.org();
    expect((await t.call('PUT', '/sms', { key, json: COMPLETE_BRAND })).status).to.equal(200);
    const res = await t.call('POST', '/sms/review', { key });
    expect(res.status).to.equal(200);
    expect(res.body.data.verdict).to.equal('pass');
    expect(res.body.data.findings.filter((f: { severity: string }) => f.severity === 'error')).to.deep.equal([]);
    expect(new Date(res.body.data.reviewedAt).toISOString()).to.equal(res.body.data.reviewedAt);
    const row = await t.db('sms_registrations').where({ org_id: orgId }).first();
    expect(row.last_review.verdict).to.equal('pass');
    expect(row.status).to.equal('draft');
    expect(await t.db('provider_requests').where({ org_id: orgId }).count('* as n').first()).to.deep.equal({ n: 0 });
    expect(await t.db('usage_entries').where({ org_id: orgId }).count('* as n').first()).to.deep.equal({ n: 0 });
  });

  it('fails an incomplete draft with findings naming each field, and stores that verdict', async () => {
    const { key, orgId } = await t.org();
    await t.call('PUT', '/sms', { key, json: { legalName: 'Bare Brand LLC', country: 'US' } });
    const res = await t.call('POST', '/sms/review', { key });
    expect(res.status).to.equal(200);
    expect(res.body.data.verdict).to.equal('fail');
    const fields = res.body.data.findings.map((f: { field: string }) => f.field);
    expect(fields).to.include.members(['ein', 'entityType', 'street', 'useCase']);
    for (const f of res.body.data.findings) expect(f).to.have.keys(['field', 'code', 'severity', 'message']);
    const row = await t.db('sms_registrations').where({ org_id: orgId }).first();
    expect(row.last_review.verdict).to.equal('fail');
  });

  it('refuses a key without sms:write with 403', async () => {
    const { key } = await t.org('Read only', ['sms:read']);
    const res = await t.call('POST', '/sms/review', { key });
    expect(res.status).to.equal(403);
    expect(res.body.code).to.equal('insufficient_scope');
  });
});
