/**
 * Pure parts of integrations (docs/api-notes.md "Integrations and records"): PKCE S256 (RFC 7636 Appendix B's
 * example), state hashing, credential field checks, spreadsheet links, settings.
 */
import { expect } from 'chai';
import { pkceChallenge, newPkcePair, newOAuthState, hashOAuthState } from '../../domain/integrations/oauth';
import { credentialErrors, integrationKind, spreadsheetIdOf } from '../../domain/integrations/catalog';
import { loadIntegrationSettings } from '../../domain/integrations/settings';

describe('integrations (domain)', () => {
  it('computes the S256 challenge of RFC 7636 Appendix B', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).to.equal('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    const p = newPkcePair();
    expect(p.verifier).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(pkceChallenge(p.verifier)).to.equal(p.challenge);
  });

  it('makes unguessable states and stores only their hash', () => {
    const a = newOAuthState();
    const b = newOAuthState();
    expect(a.state).to.not.equal(b.state);
    expect(a.hash).to.equal(hashOAuthState(a.state)).and.to.match(/^[0-9a-f]{64}$/);
    expect(a.hash).to.not.include(a.state);
  });

  it('names every offending credential field', () => {
    const http = integrationKind('http')!;
    expect(credentialErrors(http, { baseUrl: 'http://plain.example.com', extra: 'x' }).map((e) => e.field).sort()).to.deep.equal(['credentials.baseUrl', 'credentials.extra']);
    expect(credentialErrors(http, { baseUrl: 'https://api.example.com' })).to.deep.equal([]);
    expect(credentialErrors(integrationKind('hubspot')!, { accessToken: 42 }).map((e) => e.field)).to.deep.equal(['credentials.accessToken']);
    expect(credentialErrors(http, 'nope')).to.deep.equal([{ field: 'credentials', message: 'must be an object' }]);
  });

  it('reads the id of a Google Sheets link and nothing else', () => {
    expect(spreadsheetIdOf('https://docs.google.com/spreadsheets/d/1AbCdEfGhIjKlMn/edit#gid=0')).to.equal('1AbCdEfGhIjKlMn');
    expect(spreadsheetIdOf('https://docs.google.com.evil.example/spreadsheets/d/1AbCdEfGhIjKlMn')).to.equal(null);
    expect(spreadsheetIdOf('http://docs.google.com/spreadsheets/d/1AbCdEfGhIjKlMn')).to.equal(null);
  });

  it('refuses an unknown kind in INTEGRATIONS_UNAVAILABLE and an unknown provider', () => {
    expect([...loadIntegrationSettings({ INTEGRATIONS_UNAVAILABLE: 'google_sheets, google_calendar' }).unavailable]).to.deep.equal(['google_sheets', 'google_calendar']);
    expect(() => loadIntegrationSettings({ INTEGRATIONS_UNAVAILABLE: 'dropbox' })).to.throw(/dropbox/);
    expect(() => loadIntegrationSettings({ INTEGRATIONS_PROVIDER: 'real' })).to.throw(/INTEGRATIONS_PROVIDER/);
  });

  it('reads one INTEGRATIONS_LIVE for every live kind, with HubSpot OAuth endpoints on the API origin', () => {
    const google = { GOOGLE_OAUTH_CLIENT_ID: 'g', GOOGLE_OAUTH_CLIENT_SECRET: 's' };
    expect([...loadIntegrationSettings({ ...google, INTEGRATIONS_LIVE: 'google_calendar,calcom hubspot' }).live]).to.deep.equal(['google_calendar', 'calcom', 'hubspot']);
    expect(() => loadIntegrationSettings({ INTEGRATIONS_LIVE: 'google_sheets' })).to.throw(/INTEGRATIONS_LIVE names "google_sheets"/);
    expect(loadIntegrationSettings({}).hubspot).to.deep.equal({ apiBase: null, timeoutMs: 10_000, oauth: null });
    const hs = loadIntegrationSettings({ HUBSPOT_API_BASE: 'http://127.0.0.1:9/', HUBSPOT_OAUTH_CLIENT_ID: 'id', HUBSPOT_OAUTH_CLIENT_SECRET: 'secret' }).hubspot;
    expect(hs.oauth).to.deep.equal({ clientId: 'id', clientSecret: 'secret', authorizationEndpoint: 'https://app.hubspot.com/oauth/authorize', tokenEndpoint: 'http://127.0.0.1:9/oauth/v1/token' });
    expect(() => loadIntegrationSettings({ HUBSPOT_OAUTH_CLIENT_ID: 'id' })).to.throw(/HUBSPOT_OAUTH_CLIENT_SECRET/);
    expect(() => loadIntegrationSettings({ HUBSPOT_API_BASE: 'api.hubapi.com/x' })).to.throw(/HUBSPOT_API_BASE/);
  });
});
