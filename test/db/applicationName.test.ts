/**
 * The service's Postgres sessions carry the process's name as `application_name` (db/index.ts `createDb`, as libpq's
 * `fallback_application_name`: PostgreSQL "Connection Strings"), and a name the operator gives in the URL wins.
 */
import { expect } from 'chai';
import { createDb } from '../../db';
import { createTestDatabase } from '../helpers/postgres';

describe('Postgres session names', function () {
  this.timeout(30_000);

  it('names each session of a pool after its process, unless the URL names it', async () => {
    const databaseUrl = await createTestDatabase('appname');
    const named = createDb(databaseUrl, { applicationName: 'agent-control-plane-api' });
    const url = new URL(databaseUrl);
    url.searchParams.set('application_name', 'ops-console');
    const overridden = createDb(url.toString(), { applicationName: 'agent-control-plane-api' });
    const unnamed = createDb(databaseUrl);
    try {
      const name = async (db: typeof named) => (await db.raw(`select current_setting('application_name') as n`)).rows[0].n as string;
      expect(await name(named)).to.equal('agent-control-plane-api');
      expect(await name(overridden)).to.equal('ops-console');
      expect(await name(unnamed)).to.equal(process.env.PGAPPNAME ?? '');
    } finally {
      await Promise.all([named.destroy(), overridden.destroy(), unnamed.destroy()]);
    }
  });
});
