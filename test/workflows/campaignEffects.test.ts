/**
 * The dialer `campaign/{campaignId}` with the real SDK against the dev server, its worker killed three
 * times at random while dials are in flight (docs/operations.md "Provider calls happen once"): every in-flight dial
 * dies at whatever step it is in — before the request, after the sandbox accepted the call, after the
 * outcome was recorded — and the worker is restarted; Temporal retries the dials. The sandbox telephony
 * places every dial it receives, so its ledger proves each contact was called exactly once.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { createOutboundActivities } from '../../activities/outbound';
import { SimulatedCrash, type FaultHook } from '../../services/effects';
import { listIntents } from '../../db/repositories/providerIntents';
import { sandboxDials } from '../../db/repositories/sandboxProviders';
import { createLogger } from '../../runtime';
import { serverNow, startWorkerAt, testTemporal } from '../helpers/temporal';
import { startOutboundEnv, until, type OutboundEnv } from '../api/outbound-fixtures';

const CONTACTS = 1000;

describe('campaign dialer with its worker killed at random mid-dial', function () {
  this.timeout(90_000);
  let env: OutboundEnv;

  before(async function () {
    this.timeout(120_000);
    env = await startOutboundEnv('effects_campaign');
  });
  after(async () => {
    await env?.close();
  });

  it(`completes a campaign of ${CONTACTS} contacts with exactly ${CONTACTS} first dials across three kills`, async () => {
    const { key, orgId } = await env.org('Kill Co');
    const agentId = await env.publishedAgent(orgId);
    const numberId = await env.ownNumber(key);
    // Real time here (no time skipping): an explicit zone where it is about noon now by the dev server's
    // clock, which the workflow reads and which earlier suites of the run have skipped ahead (the billing
    // month's close): by the host's clock, the zone's quiet hours would hold every dial ten hours a day.
    const offset = 12 - (await serverNow()).getUTCHours();
    const noonZone = offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
    const numbers = Array.from({ length: CONTACTS }, (_, i) => `+1${['212', '312', '415', '617'][i % 4]}${320 + Math.floor(i / 100)}${String(2000 + (i % 100) * 7).padStart(4, '0')}`);
    const list = await env.importList(key, ['phone,time_zone', ...numbers.map((n) => `${n},${noonZone}`)].join('\n'));
    expect(list.import).to.include({ accepted: CONTACTS });

    // From here on the test's worker dials: it can be killed.
    await env.stopWorker();
    const { address } = await testTemporal();
    let dying = false;
    const crashes: string[] = [];
    const faults: FaultHook = (step, kind) => {
      if (!dying) return;
      crashes.push(step);
      throw new SimulatedCrash(step, kind);
    };
    const start = () => startWorkerAt(address, env.taskQueue, createOutboundActivities({ db: env.db, config: env.config, logger: createLogger('silent') }, { faults, telephonyOptions: { dialLatencyMs: 15 } }));
    let worker = await start();
    let campaignId: string | undefined;
    try {
      const c = (await env.call(key, 'POST', '/campaigns', { name: 'Kill', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational', maxConcurrentCalls: 40 })).body.data;
      campaignId = c.id;
      expect((await env.call(key, 'POST', `/campaigns/${c.id}/launch`)).status).to.equal(200);

      const dialed = async () => Number((await env.db('sandbox_dials').where({ org_id: orgId }).count<{ count: string }[]>('* as count'))[0].count);
      const killAt = Array.from({ length: 3 }, () => 100 + crypto.randomInt(800)).sort((a, b) => a - b);
      for (const at of killAt) {
        await until(async () => ((await dialed()) >= at ? true : undefined), 40_000, `${at} dials`);
        // The kill: every dial in flight dies at the step it has reached, then the process is gone.
        dying = true;
        await worker.stop();
        dying = false;
        worker = await start();
      }
      const done = await until(
        async () => ((d) => (d.status === 'completed' ? d : undefined))((await env.call(key, 'GET', `/campaigns/${c.id}`)).body.data),
        60_000,
        'the campaign to complete',
      );
      expect(crashes.length, 'dials were in flight at the kills').to.be.greaterThan(0);
      expect(done.counters).to.include({ total: CONTACTS, answered: CONTACTS, dials: CONTACTS });
      const dials = await sandboxDials(env.db, orgId);
      expect(dials.length, `dials placed (crashes at ${crashes.join(', ')})`).to.equal(CONTACTS);
      expect(new Set(dials.map((d) => d.to)).size).to.equal(CONTACTS);
      expect(dials.every((d) => d.reference.endsWith(':1'))).to.equal(true);
      const intents = await listIntents(env.db, orgId, { kind: 'dial' });
      expect(intents.filter((i) => i.status === 'done')).to.have.length(CONTACTS);
      expect(await env.db('events').where({ org_id: orgId, type: 'call.completed' })).to.have.length(CONTACTS);
    } finally {
      await worker.stop();
      // A failure must not leave the dialer waiting on a queue nobody polls: its pending dials would keep
      // the shared dev server from skipping time for the suites after this one.
      if (campaignId) {
        const { client } = await testTemporal();
        await client.workflow.getHandle(`campaign/${campaignId}`).terminate('test over').catch(() => undefined);
      }
    }
  });
});
