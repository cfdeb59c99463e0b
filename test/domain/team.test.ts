/**
 * Team and OAuth rules (domain/team.ts, domain/oauth.ts; docs/team-and-oauth.md "Team", "Connect an app with OAuth"): what
 * each role may approve and change, redirect URI shapes, and scopes in plain words.
 */
import { expect } from 'chai';
import { approvableScopes, humanUtcDate, normalizeEmail, passwordProblem, roleChangeRefusal } from '../../domain/team';
import { describeScope, grantableScopes, redirectUriErrors } from '../../domain/oauth';
import { NON_RESERVED_SCOPES, RESERVED_SCOPES } from '../../domain/scopes';

describe('team and OAuth rules', () => {
  it('writes an email date as people read it, in UTC with the zone named', () => {
    expect(humanUtcDate(new Date('2026-11-26T14:05:59Z'))).to.equal('Thursday, November 26, 2026, 14:05 UTC');
    expect(humanUtcDate(new Date('2027-01-03T00:00:00Z'))).to.equal('Sunday, January 3, 2027, 00:00 UTC');
  });

  it('lets owners and admins approve every non-reserved scope, developers less, viewers only reads', () => {
    expect([...approvableScopes('owner')]).to.deep.equal(NON_RESERVED_SCOPES);
    expect([...approvableScopes('admin')]).to.deep.equal(NON_RESERVED_SCOPES);
    const dev = approvableScopes('developer');
    expect(dev.has('agents:write')).to.equal(true);
    for (const s of ['team:write', 'keys:write', 'billing:read', 'integrations:connect'] as const) expect(dev.has(s), s).to.equal(false);
    const viewer = [...approvableScopes('viewer')];
    expect(viewer.every((s) => s.endsWith(':read'))).to.equal(true);
    expect(viewer).to.include('agents:read').and.not.include('billing:read').and.not.include('audit:read');
    for (const role of ['owner', 'admin', 'developer', 'viewer'] as const) for (const r of RESERVED_SCOPES) expect(approvableScopes(role).has(r)).to.equal(false);
  });

  it('grants only what was asked, the client allows and the role may approve', () => {
    expect(grantableScopes(['agents:write', 'agents:read', 'agents:read', 'team:write'], ['agents:read', 'agents:write', 'team:write'], approvableScopes('developer'))).to.deep.equal(['agents:write', 'agents:read']);
    expect(grantableScopes(['agents:write'], ['agents:read'], approvableScopes('owner'))).to.deep.equal([]);
  });

  it('reserves owner changes to owners and team changes to owners and admins', () => {
    expect(roleChangeRefusal('owner', 'owner', 'viewer')).to.equal(undefined);
    expect(roleChangeRefusal('admin', 'developer', 'admin')).to.equal(undefined);
    expect(roleChangeRefusal('admin', 'owner', 'admin')).to.match(/only an owner/);
    expect(roleChangeRefusal('admin', 'viewer', 'owner')).to.match(/only an owner/);
    expect(roleChangeRefusal('developer', 'viewer', 'viewer')).to.match(/owner or an admin/);
    expect(roleChangeRefusal('viewer', 'viewer')).to.match(/owner or an admin/);
  });

  it('accepts https and loopback http redirect URIs only, without fragments', () => {
    expect(redirectUriErrors(['https://app.example/cb', 'http://127.0.0.1:8000/cb', 'http://localhost/cb', 'http://[::1]:9/cb'])).to.deep.equal([]);
    expect(redirectUriErrors(['http://app.example/cb', 'https://app.example/cb#x', 'not a uri', 'javascript:alert(1)']).map((e) => e.field)).to.deep.equal([
      'redirectUris.0',
      'redirectUris.1',
      'redirectUris.2',
      'redirectUris.3',
    ]);
  });

  it('describes scopes in plain words and checks emails and passwords', () => {
    expect(describeScope('agents:read')).to.equal('See your agents');
    expect(describeScope('agents:write')).to.equal('Create, change and delete your agents');
    expect(describeScope('sms:send')).to.equal('Send text messages from your numbers');
    for (const s of NON_RESERVED_SCOPES) expect(describeScope(s), s).to.not.include(':');
    expect(normalizeEmail(' Ann@Example.COM ')).to.equal('ann@example.com');
    expect(normalizeEmail('ann@example')).to.equal(undefined);
    expect(passwordProblem('short')).to.match(/at least 12/);
    expect(passwordProblem('x'.repeat(257))).to.match(/at most 256/);
    expect(passwordProblem('twelve chars!')).to.equal(undefined);
  });
});
