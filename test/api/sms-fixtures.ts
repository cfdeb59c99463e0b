/**
 * Shared fixtures of the SMS hub tests: a complete brand draft, a test API, and signed provider callbacks.
 */
import { expect } from 'chai';
import { callbackSecret, SIGNATURE_HEADER, signCallback } from '../../domain/sms/callbackSignature';
import { startTestApi, type TestApi } from '../helpers/api';
import type { AppConfig } from '../../config';

/** A complete PRIVATE_PROFIT brand; the campaign text is generated on save. */
export const COMPLETE_BRAND = {
  legalName: 'Acme Dental LLC',
  displayName: 'Acme Dental',
  ein: '12-3456789',
  entityType: 'PRIVATE_PROFIT',
  vertical: 'HEALTHCARE',
  country: 'US',
  street: '1 Main St',
  city: 'Springfield',
  state: 'IL',
  postalCode: '62701',
  website: 'https://acmedental.example.com',
  supportEmail: 'help@acmedental.example.com',
  phone: '+12175550123',
  usePolicyPage: true,
  useCase: 'ACCOUNT_NOTIFICATION',
  optInMethod: 'WEB_FORM',
  sendsLinks: true,
} as const;

/** Starts a test API for the SMS hub suites. */
export async function startSmsTestApi(label: string, overrides: Partial<AppConfig> = {}, opts: Parameters<typeof startTestApi>[2] = {}): Promise<TestApi> {
  return startTestApi(label, overrides, opts);
}

/** POSTs a provider callback signed with the dev secret (or `opts.signature` as given). */
export async function postCallback(t: TestApi, payload: unknown, opts: { signature?: string | null; provider?: string; secret?: string; raw?: string } = {}) {
  const body = opts.raw ?? JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.signature !== null) headers[SIGNATURE_HEADER] = opts.signature ?? signCallback(opts.secret ?? callbackSecret('sandbox'), body);
  return t.call('POST', `/sms/provider-callbacks/${opts.provider ?? 'sandbox'}`, { raw: body, headers });
}

/**
 * Asserts that `method path` answers a new organization (no registration saved yet) with
 * 404 `sms_registration_not_found` (spec "Save the SMS registration draft", "Errors").
 */
export async function expectNoRegistration(t: TestApi, method: string, path: string): Promise<void> {
  const { key } = await t.org();
  const res = await t.call(method, path, { key });
  expect(res.status).to.equal(404);
  expect(res.body.code).to.equal('sms_registration_not_found');
}

/**
 * Makes `e164` (a sandbox inventory number) the agent's texting number: bought, assigned to `agentId`, SMS-enabled,
 * with the organization's registration saved ({@link COMPLETE_BRAND}) and marked `active` (docs/sms.md: a number
 * answers texts once its registration is active). @returns the number's id
 */
export async function textingNumber(t: Pick<TestApi, 'call' | 'db'>, org: { orgId: string; key: string }, agentId: string, e164: string): Promise<string> {
  expect((await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND })).status).to.equal(200);
  const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
  expect(bought.status, bought.text).to.be.oneOf([200, 201]);
  const numberId = bought.body.data.id as string;
  expect((await t.call('POST', `/numbers/${numberId}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
  expect((await t.call('PUT', `/numbers/${numberId}/sms`, { key: org.key, json: { enabled: true } })).status).to.equal(200);
  await t.db('sms_registrations').where({ org_id: org.orgId }).update({ status: 'active' });
  return numberId;
}
