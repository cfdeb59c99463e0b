/**
 * Integrations over a real socket and Postgres with the sandbox adapter (docs/api-notes.md
 * "Integrations and records"): catalogue and status, connect by credentials (sealed at rest) and by OAuth with state and
 * PKCE (tampering refused), `integration_unavailable`, disconnect, provisioning into draft skills with
 * `integration_not_connected` and `sheet_not_accessible`, the records sync workflow, tenancy and scopes.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';
import { chain } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { createIntegrationActivities } from '../../activities/integrations';
import { sandboxConsent } from '../../providers/integrations/sandbox';
import { until } from '../helpers/wait';

const TLS_DIR = path.join(__dirname, '..', 'fixtures', 'tls');
const TLS = { key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')), cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')) };

describe('integrations', () => {
  let t: TestApi;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };
  let server: https.Server;
  let apiBase: string;
  const received: { url: string; authorization: string | undefined }[] = [];

  const newAgent = async (key = org.key) => {
    const res = await t.call('POST', '/agents', { key, json: { name: `Agent ${Math.random().toString(36).slice(2, 8)}`, voiceId: 'voice_ava' } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id as string;
  };
  /** Connects an OAuth kind through the sandbox consent screen. */
  const connectOAuth = async (kind: string, key = org.key) => {
    const begun = await t.call('POST', `/integrations/${kind}/connect`, { key, json: {} });
    expect(begun.status, begun.text).to.equal(200);
    const back = new URL(sandboxConsent(begun.body.data.authorizationUrl));
    return t.call('GET', `${back.pathname.replace(/^\/api\/v1/, '')}${back.search}`);
  };

  before(async () => {
    // A loopback HTTPS API for the generic HTTP kind: records what it receives.
    server = https.createServer(TLS, (req, res) => {
      received.push({ url: req.url ?? '', authorization: req.headers.authorization });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ orders: 2 }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    apiBase = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    t = await startTestApi('integrations', QUICK_CLIENT, {
      worker: ({ db }) => createIntegrationActivities({ db }) as any,
      providers: { skillHttp: createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), ca: TLS.cert }) },
    });
    org = await t.org('Integrations');
    other = await t.org('Other');
  });
  after(async () => t?.close());

  it('lists a catalogue with a calendar, a spreadsheet, a CRM and an HTTP kind, each with how it connects and what it provisions', async () => {
    const r = await t.call('GET', '/integrations/catalog', { key: org.key });
    expect(r.status, r.text).to.equal(200);
    const byCategory = Object.fromEntries(r.body.data.items.map((i: any) => [i.category, i]));
    expect(Object.keys(byCategory).sort()).to.deep.equal(['calendar', 'crm', 'http', 'spreadsheet']);
    const calendars = r.body.data.items.filter((i: any) => i.category === 'calendar');
    expect(calendars.map((c: any) => c.kind)).to.deep.equal(['google_calendar', 'calcom']);
    expect(calendars[0]).to.include({ kind: 'google_calendar', connectMethod: 'oauth', pkce: true, available: true });
    expect(calendars[1]).to.include({ kind: 'calcom', connectMethod: 'credentials', available: true });
    for (const c of calendars) expect(c.provisions).to.deep.equal([{ skillName: 'book_appointment', skillType: 'book_appointment' }]);
    expect(byCategory.crm).to.include({ connectMethod: 'credentials', syncsRecords: true });
  });

  it('connects a CRM with credentials validated at the provider, stores them sealed, and never shows them', async () => {
    const bad = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: 'pat-invalid-123' } } });
    expect(bad.status).to.equal(422);
    expect(bad.body.code).to.equal('integration_credentials_rejected');
    const missing = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { token: 'x' } } });
    expect(missing.status).to.equal(400);
    expect(missing.body.errors.map((e: any) => e.field).sort()).to.deep.equal(['credentials.accessToken', 'credentials.token']);

    const ok = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: 'pat-rows-7-secretvalue' } } });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body.data).to.include({ status: 'connected', authorizationUrl: null });
    expect(ok.body.data.integration).to.include({ kind: 'hubspot', connected: true, accountLabel: 'Sandbox HubSpot portal 12345' });
    expect(ok.text).to.not.include('secretvalue');

    const row = await t.db('integration_connections').where({ org_id: org.orgId, kind: 'hubspot' }).first();
    expect(row.credentials_sealed).to.match(/^v1:/);
    expect(row.credentials_sealed).to.not.include('pat-rows');
    expect(JSON.stringify(row)).to.not.include('secretvalue');

    const list = await t.call('GET', '/integrations', { key: org.key });
    const hub = list.body.data.items.find((i: any) => i.kind === 'hubspot');
    expect(hub).to.include({ connected: true, connectionId: row.id });
    expect(list.text).to.not.include('secretvalue');
    expect(list.body.data.items.find((i: any) => i.kind === 'google_calendar')).to.include({ connected: false, connectionId: null });
    // Another organization sees nothing of it.
    const theirs = await t.call('GET', '/integrations', { key: other.key });
    expect(theirs.body.data.items.every((i: any) => !i.connected)).to.equal(true);
  });

  it('syncs the CRM records as records-sync/{connectionId} with progress, and a re-sync updates instead of duplicating', async () => {
    const sync = async () => {
      const r = await t.call('POST', '/integrations/hubspot/sync', { key: org.key });
      expect(r.status, r.text).to.equal(202);
      return until(async () => {
        const s = (await t.call('GET', '/integrations', { key: org.key })).body.data.items.find((i: any) => i.kind === 'hubspot').sync;
        return s?.status === 'succeeded' && s.processed === 7 ? s : undefined;
      });
    };
    const s = await sync();
    expect(s).to.include({ processed: 7, total: 7, error: null });
    await sync();
    expect((await t.db('records').where({ org_id: org.orgId, source: 'hubspot' }).count('* as n'))[0].n).to.equal(7);
    const found = await t.call('GET', '/records?phone=%2B14155550003', { key: org.key });
    expect(found.body.data.items.map((r: any) => r.name)).to.deep.equal(['Customer 3']);
    const notSyncable = await t.call('POST', '/integrations/http/sync', { key: org.key });
    expect(notSyncable.status).to.equal(400);
    expect(notSyncable.body.errors[0].field).to.equal('kind');
    const notConnected = await t.call('POST', '/integrations/google_sheets/sync', { key: other.key });
    expect(notConnected.status).to.equal(409);
    expect(notConnected.body.code).to.equal('integration_not_connected');
  });

  it('connects an OAuth kind: authorization URL with state and PKCE, the callback completes it once', async () => {
    const begun = await t.call('POST', '/integrations/google_calendar/connect', { key: org.key });
    expect(begun.status, begun.text).to.equal(200);
    expect(begun.body.data.status).to.equal('authorization_required');
    const url = new URL(begun.body.data.authorizationUrl);
    expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(url.searchParams.get('redirect_uri')).to.match(/\/api\/v1\/integrations\/google_calendar\/oauth\/callback$/);
    const state = url.searchParams.get('state')!;
    expect(state).to.have.length.at.least(40);
    // Only the state's hash is stored.
    expect(await t.db('integration_oauth_states').where({ state_hash: state }).first()).to.equal(undefined);

    const back = new URL(sandboxConsent(url.toString()));
    const path = `${back.pathname.replace(/^\/api\/v1/, '')}${back.search}`;
    const done = await t.call('GET', path);
    expect(done.status, done.text).to.equal(200);
    expect(done.body.data).to.include({ kind: 'google_calendar', connected: true, accountLabel: 'owner@sandbox.example.com' });
    const row = await t.db('integration_connections').where({ org_id: org.orgId, kind: 'google_calendar' }).first();
    expect(row.credentials_sealed).to.match(/^v1:/);
    expect(row.credentials_sealed).to.not.include('ya29');
    // The state named the organization that began it: the other one stays unconnected.
    expect((await t.call('GET', '/integrations', { key: other.key })).body.data.items.find((i: any) => i.kind === 'google_calendar').connected).to.equal(false);
    // The state is single use.
    const again = await t.call('GET', path);
    expect(again.status).to.equal(400);
    expect(again.body.code).to.equal('invalid_oauth_state');
  });

  it('refuses a tampered state, a state of another kind, a wrong PKCE code, and a denied consent', async () => {
    const begin = async (kind: string) => new URL((await t.call('POST', `/integrations/${kind}/connect`, { key: other.key })).body.data.authorizationUrl);
    const url = await begin('google_sheets');
    const back = new URL(sandboxConsent(url.toString()));
    const cb = (u: URL, kind = 'google_sheets') => t.call('GET', `/integrations/${kind}/oauth/callback${u.search}`);

    const tampered = new URL(back);
    tampered.searchParams.set('state', `${back.searchParams.get('state')!.slice(0, -2)}xx`);
    const r1 = await cb(tampered);
    expect(r1.status).to.equal(400);
    expect(r1.body.code).to.equal('invalid_oauth_state');
    expect(r1.body.errors[0].field).to.equal('state');
    // A state begun for the sheet cannot complete the calendar.
    const r2 = await cb(back, 'google_calendar');
    expect(r2.body.code).to.equal('invalid_oauth_state');
    // A code whose challenge does not match the stored verifier is refused by the provider.
    const forged = new URL(back);
    forged.searchParams.set('code', 'sbx.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    const r3 = await cb(forged);
    expect(r3.status).to.equal(422);
    expect(r3.body.code).to.equal('integration_credentials_rejected');
    const denied = new URL(sandboxConsent((await begin('google_sheets')).toString(), { deny: true }));
    const r4 = await cb(denied);
    expect(r4.status).to.equal(400);
    expect(r4.body.code).to.equal('oauth_denied');
    expect((await t.call('GET', '/integrations', { key: other.key })).body.data.items.find((i: any) => i.kind === 'google_sheets').connected).to.equal(false);
  });

  it('answers 400 integration_unavailable when the kind has no OAuth app in this deployment', async () => {
    process.env.INTEGRATIONS_UNAVAILABLE = 'google_sheets';
    try {
      const r = await t.call('POST', '/integrations/google_sheets/connect', { key: org.key });
      expect(r.status).to.equal(400);
      expect(r.body.code).to.equal('integration_unavailable');
      const cat = await t.call('GET', '/integrations/catalog', { key: org.key });
      expect(cat.body.data.items.find((i: any) => i.kind === 'google_sheets').available).to.equal(false);
    } finally {
      delete process.env.INTEGRATIONS_UNAVAILABLE;
    }
    const unknown = await t.call('POST', '/integrations/dropbox/connect', { key: org.key });
    expect(unknown.status).to.equal(404);
    expect(unknown.body.code).to.equal('integration_kind_not_found');
  });

  it('provisions a calendar booking skill into the draft, and updates it on a second provision', async () => {
    const agentId = await newAgent();
    const first = await t.call('POST', `/agents/${agentId}/integrations/google_calendar/provision`, { key: org.key, json: { timeZone: 'America/Chicago', durationMinutes: 45 } });
    expect(first.status, first.text).to.equal(201);
    expect(first.body.data.skills[0]).to.deep.include({ name: 'book_appointment', type: 'book_appointment', created: true });
    expect(first.body.data.skills[0].config).to.deep.equal({ integration: 'google_calendar', calendarId: 'primary', durationMinutes: 45, timeZone: 'America/Chicago' });
    const second = await t.call('POST', `/agents/${agentId}/integrations/google_calendar/provision`, { key: org.key, json: { timeZone: 'UTC' } });
    expect(second.status).to.equal(200);
    expect(second.body.data.skills[0]).to.include({ id: first.body.data.skills[0].id, created: false });
    expect(second.body.data.draftVersion).to.be.greaterThan(first.body.data.draftVersion);
    const skills = (await t.call('GET', `/agents/${agentId}/skills`, { key: org.key })).body.data.items;
    expect(skills.map((s: any) => s.name)).to.deep.equal(['book_appointment']);
    const badTz = await t.call('POST', `/agents/${agentId}/integrations/google_calendar/provision`, { key: org.key, json: { timeZone: 'Mars/Olympus' } });
    expect(badTz.status).to.equal(400);
    expect(badTz.body.errors[0].field).to.equal('timeZone');
  });

  it('answers 409 integration_not_connected, 404 sheet_not_accessible, and 404 for another organization\'s agent', async () => {
    const agentId = await newAgent();
    const notConnected = await t.call('POST', `/agents/${agentId}/integrations/google_sheets/provision`, { key: org.key, json: { spreadsheetUrl: 'https://docs.google.com/spreadsheets/d/abcdefghijkl/edit' } });
    expect(notConnected.status).to.equal(409);
    expect(notConnected.body.code).to.equal('integration_not_connected');
    expect((await connectOAuth('google_sheets')).status).to.equal(200);
    for (const link of ['https://docs.google.com/spreadsheets/d/private-sheet-1234/edit', 'https://example.com/not-a-sheet']) {
      const r = await t.call('POST', `/agents/${agentId}/integrations/google_sheets/provision`, { key: org.key, json: { spreadsheetUrl: link } });
      expect(r.status, link).to.equal(404);
      expect(r.body.code).to.equal('sheet_not_accessible');
      expect(r.body.errors[0].field).to.equal('spreadsheetUrl');
    }
    const ok = await t.call('POST', `/agents/${agentId}/integrations/google_sheets/provision`, { key: org.key, json: { spreadsheetUrl: 'https://docs.google.com/spreadsheets/d/shared-rows-3-sheet/edit#gid=0' } });
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.body.data.skills[0]).to.include({ name: 'lookup_record', type: 'lookup_record' });
    const status = (await t.call('GET', '/integrations', { key: org.key })).body.data.items.find((i: any) => i.kind === 'google_sheets');
    expect(status.config).to.include({ spreadsheetId: 'shared-rows-3-sheet' });
    const cross = await t.call('POST', `/agents/${agentId}/integrations/google_calendar/provision`, { key: other.key, json: {} });
    expect(cross.status).to.equal(404);
    expect(cross.body.code).to.equal('agent_not_found');
  });

  it('syncs the provisioned sheet into Records, and fails the sync with the reason when there is no sheet to read', async () => {
    const syncDone = async (key: string) => {
      const r = await t.call('POST', '/integrations/google_sheets/sync', { key });
      expect(r.status, r.text).to.equal(202);
      return until(async () => {
        const s = (await t.call('GET', '/integrations', { key })).body.data.items.find((i: any) => i.kind === 'google_sheets').sync;
        return s && s.status !== 'running' && s.startedAt >= new Date(Date.now() - 60_000).toISOString() ? s : undefined;
      });
    };
    // org provisioned `shared-rows-3-sheet` in the test above.
    const s = await syncDone(org.key);
    expect(s).to.include({ status: 'succeeded', processed: 3, total: 3 });
    const rows = await t.call('GET', '/records?source=google_sheets', { key: org.key });
    expect(rows.body.data.items.map((r: any) => r.externalId)).to.deep.equal(['row-1', 'row-2', 'row-3']);
    // A connection with no sheet provisioned has nothing to read: the run fails and says why.
    expect((await connectOAuth('google_sheets', other.key)).status).to.equal(200);
    const failed = await syncDone(other.key);
    expect(failed.status).to.equal('failed');
    expect(failed.error).to.match(/^not_found: No spreadsheet/);
    const status = (await t.call('GET', '/integrations', { key: other.key })).body.data.items.find((i: any) => i.kind === 'google_sheets');
    expect(status.lastError).to.equal(failed.error);
    await t.call('DELETE', '/integrations/google_sheets', { key: other.key });
  });

  it('provisions an http_request skill on the HTTP kind that sends the sealed Authorization header when it runs', async () => {
    const c = await t.call('POST', '/integrations/http/connect', { key: org.key, json: { credentials: { baseUrl: `${apiBase}/v1/`, authorization: 'Bearer s3cret-token' } } });
    expect(c.status, c.text).to.equal(200);
    expect(c.text).to.not.include('s3cret');
    const agentId = await newAgent();
    const p = await t.call('POST', `/agents/${agentId}/integrations/http/provision`, { key: org.key, json: { path: '/orders', method: 'POST' } });
    expect(p.status, p.text).to.equal(201);
    expect(p.body.data.skills[0]).to.deep.include({ name: 'call_api', type: 'http_request', config: { integration: 'http', url: `${apiBase}/v1/orders`, method: 'POST' } });
    expect(JSON.stringify(await t.db('agent_skills').where({ agent_id: agentId }))).to.not.include('s3cret');
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, {
      key: org.key,
      json: { name: 'orders', graph: { nodes: [{ id: 'start', type: 'start' }, { id: 'call', type: 'skill', skill: 'call_api' }, { id: 'done', type: 'say', prompt: 'Done.' }, { id: 'end', type: 'end' }], edges: chain('start', 'call', 'done', 'end') } },
    });
    expect(pb.status, pb.text).to.equal(201);
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, draftMode: true } });
    const m = await t.call('POST', `/chat/sessions/${s.body.data.session.id}/messages`, { key: org.key, json: { content: 'How are my orders?' } });
    expect(m.status, m.text).to.equal(200);
    expect(m.body.data.receipt.toolCalls[0].output).to.deep.equal({ orders: 2 });
    expect(received.at(-1)).to.deep.equal({ url: '/v1/orders', authorization: 'Bearer s3cret-token' });
  });

  it('disconnects: the connection and its sealed credentials are gone; a second disconnect is 404', async () => {
    await t.call('POST', '/integrations/http/connect', { key: other.key, json: { credentials: { baseUrl: 'https://api.example.com/v1', authorization: 'Bearer s3cret' } } });
    const r = await t.call('DELETE', '/integrations/http', { key: other.key });
    expect(r.status, r.text).to.equal(200);
    expect(await t.db('integration_connections').where({ org_id: other.orgId, kind: 'http' }).first()).to.equal(undefined);
    const again = await t.call('DELETE', '/integrations/http', { key: other.key });
    expect(again.status).to.equal(404);
  });

  it('enforces the scopes: integrations:read sees status only; connect needs integrations:connect; provision needs integrations:write and skills:write', async () => {
    const reader = await t.org('Reader', ['integrations:read']);
    expect((await t.call('GET', '/integrations', { key: reader.key })).status).to.equal(200);
    const c = await t.call('POST', '/integrations/hubspot/connect', { key: reader.key, json: { credentials: { accessToken: 'pat-x' } } });
    expect(c.status).to.equal(403);
    expect(c.body.code).to.equal('insufficient_scope');
    const writer = await t.org('Writer', ['integrations:write', 'agents:write']);
    const p = await t.call('POST', '/agents/agt_x/integrations/google_calendar/provision', { key: writer.key, json: {} });
    expect(p.status).to.equal(403);
    const d = await t.call('DELETE', '/integrations/hubspot', { key: writer.key });
    expect(d.status).to.equal(403);
  });
});
