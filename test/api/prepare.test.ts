/**
 * An API process does the libraries' lazy one-time work before it listens (api/prepare.ts, api/server.ts `startApi`): its
 * first burst of requests after a start finds the validators compiled (docs/benchmarks.md "sms-replies").
 */
import { expect } from 'chai';
import { loadConfig } from '../../config';
import { startApi } from '../../api/server';
import { prepareFirstRequests } from '../../api/prepare';
import { ROUTE_SCHEMAS } from '../../api/routes';
import { EVENT_CATALOG } from '../../domain/webhooks/catalog';
import { compileSchemas, schemaErrors } from '../../domain/validation';
import { createLogger, openDatabase } from '../../runtime';
import { createTestDatabase } from '../helpers/postgres';

describe('the first requests prepared where the API starts', function () {
  this.timeout(60_000);

  it('has every request body\'s and every event\'s validator compiled when startApi resolves, and prepares once per process', async () => {
    const requestSchemas = Object.values(ROUTE_SCHEMAS).flatMap((r) => (r?.requestSchema ? [r.requestSchema] : []));
    const eventSchemas = EVENT_CATALOG.map((e) => e.schema);
    expect(requestSchemas.length).to.be.above(10);
    expect(eventSchemas.length).to.be.above(10);
    const databaseUrl = await createTestDatabase('prepare');
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', databaseUrl });
    const logger = createLogger('silent');
    const database = await openDatabase(config, logger);
    try {
      const api = await startApi({ db: database.db, databaseUrl: database.url, config, logger });
      try {
        // Nothing is left to compile: startApi compiled them all before it listened.
        expect(compileSchemas([...requestSchemas, ...eventSchemas])).to.equal(0);
        const first = await prepareFirstRequests();
        expect(await prepareFirstRequests()).to.equal(first);
        // The validators compiled ahead are the ones requests use: a bad body is still refused, field by field.
        expect(schemaErrors(eventSchemas[0], {})).to.not.be.empty;
      } finally {
        await api.close();
      }
    } finally {
      await database.close();
    }
  });

  it('refuses a schema that does not exist, naming it', () => {
    expect(() => compileSchemas(['NoSuchSchemaAnywhere'])).to.throw(/NoSuchSchemaAnywhere/);
  });
});
