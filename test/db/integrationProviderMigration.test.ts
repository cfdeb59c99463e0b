/**
 * db/migrations/20261129000800_integration_adapter_to_provider.ts: HubSpot connections that recorded their adapter
 * in `config.adapter` get `provider = 'hubspot'` and lose the member; other connections are left as they are.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { up } from '../../db/migrations/20261129000800_integration_adapter_to_provider';
import { getConnection, upsertConnection, mergeConnectionConfig } from '../../db/repositories/integrations';
import { sealCredentials } from '../../services/integrations/connections';

describe('migration: config.adapter becomes the provider column', function () {
  this.timeout(30_000);
  const t = useTestApi('integration_provider_migration');

  it('moves a HubSpot connection made on the API to provider hubspot and keeps the rest', async () => {
    const org = await t.org();
    const sealed = sealCredentials({ accessToken: `pat-na1-${crypto.randomUUID()}` });
    const live = await upsertConnection(t.db, org.orgId, { kind: 'hubspot', accountLabel: 'portal', scopes: [], credentialsSealed: sealed });
    await mergeConnectionConfig(t.db, org.orgId, live.id, { adapter: 'hubspot', keep: 'me' });
    const sheet = await upsertConnection(t.db, org.orgId, { kind: 'google_sheets', accountLabel: 'a', scopes: [], credentialsSealed: sealed });
    await mergeConnectionConfig(t.db, org.orgId, sheet.id, { spreadsheetId: 'abc' });
    await up(t.db);
    const hubspot = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    expect(hubspot.provider).to.equal('hubspot');
    expect(hubspot.config).to.deep.equal({ keep: 'me' });
    const sheets = (await getConnection(t.db, org.orgId, 'google_sheets'))!;
    expect(sheets.provider).to.equal('sandbox');
    expect(sheets.config).to.deep.equal({ spreadsheetId: 'abc' });
  });
});
