/** Mocha root hooks: one Postgres server and (when a suite asks for it) one Temporal dev server for the whole run (DESIGN.md "Tests that stay fast"). */
import { startTestPostgres, stopTestPostgres } from './helpers/postgres';
import { cleanUpAfterSuite, cleanUpAfterTest, noteTemporalBeforeTest, stopTestTemporal } from './helpers/temporal';
import { useEphemeralSecrets } from '../secrets';
import { writeRecordedHistories } from './helpers/histories';

// No secret has a default value (docs/security.md): the run gets random ones; a suite may set its own.
useEphemeralSecrets();

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await startTestPostgres();
    // One failing test fails only itself: what a top-level suite (a file's describe) leaves running on the
    // shared dev server ends with it, in an afterAll hook added after the suite's own (which stop its workers).
    for (const suite of this.test?.parent?.suites ?? []) {
      suite.afterAll('end what the suite left on the Temporal dev server', async function (this: Mocha.Context) {
        this.timeout(60_000);
        await cleanUpAfterSuite();
      });
    }
  },
  async beforeEach() {
    await noteTemporalBeforeTest();
  },
  async afterEach(this: Mocha.Context) {
    this.timeout(60_000);
    await cleanUpAfterTest(this.currentTest?.state === 'failed');
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopTestTemporal();
    if (process.env.RECORD_HISTORIES) {
      const manifest = writeRecordedHistories(process.env.RECORD_HISTORIES);
      console.log(`    recorded ${manifest.length} histories of ${new Set(manifest.map((m) => m.workflowType)).size} workflow types into ${process.env.RECORD_HISTORIES}`);
    }
    await stopTestPostgres();
  },
};
