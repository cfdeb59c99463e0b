/**
 * HubSpot connected through OAuth (docs/going-live.md "HubSpot") against the loopback HubSpot's OAuth side
 * (test/providers/hubspotOAuth.ts: HubSpot's install page and `POST /oauth/v1/token` form posts): the generic OAuth
 * client (providers/integrations/oauthClient.ts) runs the authorization-code grant with PKCE against HubSpot's
 * endpoints; the tokens are stored sealed; `hubspotAccessToken` refreshes the access token before it expires; a
 * refresh token HubSpot refuses (`BAD_REFRESH_TOKEN`) marks the connection `needs_reauth` with one
 * `integration.needs_reauth` event, and the CRM lookup then fails in the conversation, never answering a match.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { ApplicationFailure } from '@temporalio/common';
import { useEnvVars, useResource } from '../helpers/mocha';
import { useTestApi } from '../helpers/api';
import { getConnection } from '../../db/repositories/integrations';
import { openCredentials } from '../../services/integrations/connections';
import { hubspotAccessToken } from '../../services/integrations/crm';
import { createIntegrationActivities } from '../../activities/integrations';
import { TOOL_FAILURE_SENTENCE } from '../../providers/llm/sandboxReplies';
import { HubSpotStub } from './hubspotStub';

const PRIVATE_TOKEN = `pat-na1-${crypto.randomUUID()}`;
const APP = { clientId: `client-${crypto.randomUUID()}`, clientSecret: `secret-${crypto.randomUUID()}` };

describe('HubSpot on OAuth (loopback HubSpot)', function () {
  this.timeout(60_000);
  const stub = useResource('HubSpot stub', () => new HubSpotStub(PRIVATE_TOKEN, APP).start(), (s) => s.stop());
  useEnvVars(() => ({
    INTEGRATIONS_LIVE: 'hubspot',
    HUBSPOT_API_BASE: stub.baseUrl,
    HUBSPOT_OAUTH_CLIENT_ID: APP.clientId,
    HUBSPOT_OAUTH_CLIENT_SECRET: APP.clientSecret,
    HUBSPOT_OAUTH_AUTHORIZE_URL: `${stub.baseUrl}/oauth/authorize`,
    HUBSPOT_TIMEOUT_MS: '2000',
  }));
  const t = useTestApi('crm_hubspot_oauth');
  let org: { orgId: string; key: string };

  before(async () => {
    org = await t.org();
    stub.addContact({ firstname: 'Dorothy', lastname: 'Vaughan', phone: '+17575550111', email: 'dv@example.com' });
  });
  afterEach(() => {
    expect(stub.problems).to.deep.equal([]);
  });

  /** Connects through HubSpot's install page; returns the authorization URL the API answered. */
  const connect = async (): Promise<URL> => {
    const begun = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: {} });
    expect(begun.status, begun.text).to.equal(200);
    expect(begun.body.data.status).to.equal('authorization_required');
    const url = new URL(begun.body.data.authorizationUrl);
    const back = new URL(stub.oauth.consent(url.toString()));
    const done = await t.call('GET', `/integrations/hubspot/oauth/callback${back.search}`);
    expect(done.status, done.text).to.equal(200);
    expect(done.body.data).to.include({ kind: 'hubspot', provider: 'hubspot', status: 'connected' });
    return url;
  };

  it('connects through OAuth with PKCE at HubSpot and stores the tokens sealed', async () => {
    const catalogue = (await t.call('GET', '/integrations/catalog', { key: org.key })).body.data.items;
    expect(catalogue.find((k: { kind: string }) => k.kind === 'hubspot')).to.include({ connectMethod: 'oauth', pkce: true, available: true });
    const url = await connect();
    expect(`${url.origin}${url.pathname}`).to.equal(`${stub.baseUrl}/oauth/authorize`);
    expect(url.searchParams.get('scope')).to.equal('crm.objects.contacts.read crm.objects.contacts.write');
    expect(url.searchParams.get('redirect_uri')).to.match(/\/api\/v1\/integrations\/hubspot\/oauth\/callback$/);
    const exchange = stub.oauth.tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
    expect(exchange).to.include({ client_id: APP.clientId, client_secret: APP.clientSecret, redirect_uri: url.searchParams.get('redirect_uri') });
    expect(crypto.createHash('sha256').update(exchange.code_verifier).digest('base64url')).to.equal(url.searchParams.get('code_challenge'));
    const c = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    expect(c.credentialsSealed).not.to.contain(openCredentials(c.credentialsSealed).refreshToken);
    const secrets = openCredentials(c.credentialsSealed);
    expect(secrets.refreshToken).to.be.a('string');
    expect(Number(secrets.expiresAt)).to.be.closeTo(Date.now() + 1800_000, 60_000);
    // The callback cannot be replayed (its state is single use; HubSpot's code too).
    const replay = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: {} });
    const back = new URL(stub.oauth.consent(replay.body.data.authorizationUrl));
    const code = back.searchParams.get('code')!;
    expect((await t.call('GET', `/integrations/hubspot/oauth/callback${back.search}`)).status).to.equal(200);
    back.searchParams.set('code', code);
    const again = await t.call('GET', `/integrations/hubspot/oauth/callback${back.search}`);
    expect(again.status).to.equal(400);
    expect(again.body.code).to.equal('invalid_oauth_state');
  });

  it('still takes a private app token in credentials when the OAuth app is configured', async () => {
    const other = await t.org('Private app');
    const r = await t.call('POST', '/integrations/hubspot/connect', { key: other.key, json: { credentials: { accessToken: PRIVATE_TOKEN } } });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.data.integration).to.include({ provider: 'hubspot', status: 'connected' });
  });

  it('refreshes the access token before it expires and keeps the new tokens sealed', async () => {
    stub.oauth.expiresIn = 30; // inside the minute before expiry: the next call refreshes first
    await connect();
    const before = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    const old = openCredentials(before.credentialsSealed);
    const refreshes = stub.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;
    stub.oauth.expiresIn = 1800;
    const token = await hubspotAccessToken(t.db, before);
    expect(token).not.to.equal(old.accessToken);
    const sent = stub.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token');
    expect(sent).to.have.length(refreshes + 1);
    expect(sent[sent.length - 1]).to.include({ refresh_token: old.refreshToken, client_id: APP.clientId, client_secret: APP.clientSecret });
    const after = openCredentials((await getConnection(t.db, org.orgId, 'hubspot'))!.credentialsSealed);
    expect(after.accessToken).to.equal(token);
    expect(after.refreshToken).not.to.equal(old.refreshToken);
    // A token far from expiry is used as it is.
    expect(await hubspotAccessToken(t.db, (await getConnection(t.db, org.orgId, 'hubspot'))!)).to.equal(token);
    expect(stub.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token')).to.have.length(refreshes + 1);
  });

  it('a refresh token HubSpot refuses marks the connection needs_reauth with one event; the lookup then fails in the conversation', async () => {
    stub.oauth.expiresIn = 30;
    await connect();
    const agent = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', variables: [{ name: 'phone', description: "caller's phone" }] } })).body.data;
    expect((await t.call('POST', `/agents/${agent.id}/integrations/hubspot/provision`, { key: org.key, json: { skillName: 'find_caller' } })).status).to.equal(201);
    const say = async () => {
      const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id, draftMode: true, variables: { phone: '+17575550111' } } });
      const r = await t.call('POST', `/chat/sessions/${s.body.data.session.id}/messages`, { key: org.key, json: { content: 'Please find_caller for my account' } });
      expect(r.status, r.text).to.equal(200);
      return { reply: r.body.data.reply.content as string, call: r.body.data.receipt.toolCalls.find((c: { skill: string }) => c.skill === 'find_caller') };
    };
    expect((await say()).call.output.matches.map((m: { name: string }) => m.name)).to.deep.equal(['Dorothy Vaughan']);
    stub.oauth.revokeGrants();
    for (let i = 0; i < 2; i++) {
      const failed = await say();
      expect(failed.call.output).to.equal(undefined);
      expect(failed.reply).to.equal(TOOL_FAILURE_SENTENCE);
      expect(failed.reply).not.to.match(/Dorothy|Vaughan|matched|found|All done/i);
    }
    const status = (await t.call('GET', '/integrations', { key: org.key })).body.data.items.find((i: { kind: string }) => i.kind === 'hubspot');
    expect(status).to.include({ status: 'needs_reauth', provider: 'hubspot' });
    expect(status.lastError).to.match(/BAD_REFRESH_TOKEN/);
    const events = await t.db('events').where({ org_id: org.orgId, type: 'integration.needs_reauth' });
    expect(events).to.have.length(1);
    expect(events[0].data).to.include({ kind: 'hubspot', provider: 'hubspot' });
    // The records sync stops without retrying: the grant will not come back by asking again.
    const c = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    let failure: unknown;
    await createIntegrationActivities({ db: t.db }).recordsSyncPage(org.orgId, c.id, null, 0).catch((err) => (failure = err));
    expect(failure).to.be.instanceOf(ApplicationFailure);
    expect(failure).to.include({ nonRetryable: true, type: 'needs_reauth' });
    // Connecting again clears it.
    stub.oauth.expiresIn = 1800;
    await connect();
    expect((await getConnection(t.db, org.orgId, 'hubspot'))!.status).to.equal('connected');
  });
});
