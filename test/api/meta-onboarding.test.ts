/**
 * `GET /meta` and `GET /onboarding` (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"): the
 * scope catalogue and limits as the calling key sees them, never a secret; the checklist computed from
 * the organization's real state. Real HTTP on a real Postgres.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { ALL_SCOPES, RESERVED_SCOPES } from '../../domain/scopes';
import { publishDraft } from './agents-fixtures';
import { sandboxInventory } from '../../providers/telephony/sandbox';

describe('meta and onboarding', () => {
  const t = useTestApi('meta_onboarding');

  describe('GET /meta', () => {
    it('answers the versions, every scope with a description, the limits with the key\'s own rate limit, and the caller without secrets', async () => {
      const org = await t.org('Meta Org', ['agents:read', 'reports:read'], { rateLimitPoints: 42, rateLimitWindowSeconds: 30 });
      const r = await t.call('GET', '/meta', { key: org.key });
      expect(r.status).to.equal(200);
      const m = r.body.data;
      expect(m.service.version).to.equal('1.0.0');
      expect(m.api).to.include({ version: '1.0.0', basePath: '/api/v1' });
      expect(m.scopes.map((s: { name: string }) => s.name)).to.deep.equal([...ALL_SCOPES]);
      for (const s of m.scopes) {
        expect(s.description, s.name).to.be.a('string').and.have.length.greaterThan(5);
        expect(s.reserved, s.name).to.equal(RESERVED_SCOPES.has(s.name));
        expect(s.granted, s.name).to.equal(['agents:read', 'reports:read'].includes(s.name));
      }
      expect(m.scopes.find((s: { name: string }) => s.name === 'integrations:read').description).to.equal('Integration status only, never tokens');
      expect(m.limits).to.deep.include({ uploadMaxBytes: 25 * 1024 * 1024, pageSize: { default: 50, max: 200 }, rateLimit: { points: 42, windowSeconds: 30, burst: { points: 10, windowSeconds: 1 } } });
      // The same two policies the response's RateLimit-Policy header states (docs/api-notes.md "Rate limits").
      expect(r.headers.get('ratelimit-policy')).to.equal('"default";q=42;w=30, "burst";q=10;w=1');
      expect(m.limits.bodyMaxBytes).to.equal(t.config.bodyLimitBytes);
      expect(m.caller.organization).to.deep.equal({ id: org.orgId, name: 'Meta Org' });
      expect(m.caller.key).to.include({ id: org.keyId, kind: 'secret', expiresAt: null });
      expect(m.caller.key.scopes).to.deep.equal(['agents:read', 'reports:read']);
      expect(org.key.startsWith(m.caller.key.prefix)).to.equal(true);
      expect(r.text).to.not.include(org.key);
      expect(Math.abs(Date.parse(m.serverTime) - Date.now())).to.be.below(60_000);
    });

    it('falls back to the service rate limit and needs a key, but no scope', async () => {
      const org = await t.org('No scopes', []);
      const r = await t.call('GET', '/meta', { key: org.key });
      expect(r.status).to.equal(200);
      const { points, windowSeconds, burst } = r.body.data.limits.rateLimit;
      expect({ points, windowSeconds }).to.deep.equal({ points: t.config.rateLimitPoints, windowSeconds: t.config.rateLimitWindowSeconds });
      const policy = `"default";q=${points};w=${windowSeconds}${burst ? `, "burst";q=${burst.points};w=${burst.windowSeconds}` : ''}`;
      expect(r.headers.get('ratelimit-policy')).to.equal(policy);
      expect((await t.call('GET', '/meta')).status).to.equal(401);
    });
  });

  describe('GET /onboarding', () => {
    it('computes each step from real state, with the operation that completes it', async () => {
      const org = await t.org('Onboarding Org');
      const steps = async () => (await t.call('GET', '/onboarding', { key: org.key })).body.data;
      const fresh = await steps();
      expect(fresh).to.include({ completed: 0, total: 7, next: 'first_agent' });
      expect(fresh.steps.map((s: { key: string }) => s.key)).to.deep.equal([
        'first_agent', 'knowledge_ready', 'first_publish', 'number_purchased', 'sms_registration_active', 'webhook_verified', 'first_conversation',
      ]);
      expect(fresh.steps[0].link).to.include({ method: 'POST', href: '/api/v1/agents', operationId: 'createAgent' });
      expect(fresh.steps.every((s: { done: boolean; completedAt: null }) => !s.done && s.completedAt === null)).to.equal(true);

      const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Setup', voiceId: 'voice_ava', greeting: 'Hi' } })).body.data.id;
      expect((await publishDraft(t.db, org, agentId, 'onb-1')).kind).to.equal('published');
      expect((await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: sandboxInventory('646')[2].e164 } })).status).to.equal(200);
      expect((await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).status).to.equal(201);
      const after = await steps();
      const done = Object.fromEntries(after.steps.map((s: { key: string; done: boolean }) => [s.key, s.done]));
      expect(done).to.deep.equal({
        first_agent: true, knowledge_ready: false, first_publish: true, number_purchased: true, sms_registration_active: false, webhook_verified: false, first_conversation: true,
      });
      expect(after).to.include({ completed: 4, next: 'knowledge_ready' });
      expect(Date.parse(after.steps[0].completedAt)).to.be.a('number').and.not.NaN;
      // Another organization's state never counts.
      expect((await t.call('GET', '/onboarding', { key: (await t.org('Empty')).key })).body.data.completed).to.equal(0);
    });
  });
});
