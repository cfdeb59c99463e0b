/** Mocha root hooks: one Postgres server and (when a suite asks for it) one Temporal dev server for the whole run (DESIGN.md "Tests that stay fast"). */
import { startTestPostgres, stopTestPostgres } from './helpers/postgres';
import { stopTestTemporal } from './helpers/temporal';
import { useEphemeralSecrets } from '../secrets';

// No secret has a default value (README "Security"): the run gets random ones; a suite may set its own.
useEphemeralSecrets();

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await startTestPostgres();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopTestTemporal();
    await stopTestPostgres();
  },
};
