/**
 * The dialer `campaign/{campaignId}` (docs/voice.md "Outbound voice campaigns") with the real SDK against the dev server: recipient-local
 * calling windows under time skipping, pause/resume, cancel, retries of busy/no-answer, continue-as-new,
 * and a restart of the worker and a durable dev server mid-campaign (every contact dialed exactly once).
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { Client, Connection } from '@temporalio/client';
import { startRecordingDevServer } from '../helpers/histories';
import { loadConfig } from '../../config';
import { createDb } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { createAgent } from '../../db/repositories/agents';
import { newId } from '../../db/ids';
import { startApi } from '../../api/server';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createLogger } from '../../runtime';
import { createOutboundActivities } from '../../activities/outbound';
import { insertAttempts, lockCampaign, setCampaignStatus } from '../../db/repositories/campaigns';
import { localParts } from '../../domain/sms/quietHours';
import { workflowIds } from '../../temporal.config';
import { callWithKey } from '../helpers/api';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { serverNow, skipTime, startTestWorker, startWorkerAt, withTimeSkipping } from '../helpers/temporal';
import { campaignProgressQuery } from '../../workflows/definitions';
import { phone, until, untilLocal, useDialerEnv } from '../api/outbound-fixtures';

describe('campaign dialer workflow (dev server, real SDK)', function () {
  this.timeout(60_000);
  const { env, dialer } = useDialerEnv('outbound_wf');

  const campaign = async (csv: string, extra: Record<string, unknown> = {}) => {
    const list = await env.importList(dialer.key, csv);
    const r = await env.call(dialer.key, 'POST', '/campaigns', { name: 'Reminders', agentId: dialer.agentId, callerIdNumberId: dialer.numberId, contactListId: list.id, purpose: 'informational', ...extra });
    expect(r.status).to.equal(201);
    return r.body.data.id as string;
  };
  const get = async (id: string) => (await env.call(dialer.key, 'GET', `/campaigns/${id}`)).body.data;
  const attempts = async (id: string) => (await env.call(dialer.key, 'GET', `/campaigns/${id}/attempts?limit=200`)).body.data.items as any[];
  const dialsTo = async (numbers: string[]) => env.db('sandbox_dials').where({ org_id: dialer.orgId }).whereIn('to', numbers).select('to', 'idempotency_key');
  const finished = (id: string, timeoutMs = 30_000) => until(async () => ((c) => (c.status === 'completed' || c.status === 'cancelled' ? c : undefined))(await get(id)), timeoutMs, `campaign ${id} to finish`);
  /** Moves the shared server's clock to the next hh:mm in `zone`. */
  const moveClockTo = async (zone: string, hour: number, minute: number) => skipTime(untilLocal(zone, hour, minute, await serverNow()));

  it('launched at 7:30am Eastern, calls nobody before 8am in their own zone (explicit zone, else area code)', async () => {
    const et = [phone('212', 1), phone('305', 2)];
    const ct = [phone('312', 3), phone('214', 4)];
    const pt = [phone('415', 5), phone('206', 6)];
    const explicitPt = phone('646', 7); // New York area code, but the file says Los Angeles
    const csv = ['phone,timezone', ...[...et, ...ct, ...pt].map((p) => `${p},`), `${explicitPt},America/Los_Angeles`].join('\n');
    const id = await campaign(csv);
    await moveClockTo('America/New_York', 7, 30);
    const launchedAt = await serverNow();
    expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`)).status).to.equal(200);
    const done = await withTimeSkipping(() => finished(id));
    expect(done.status).to.equal('completed');
    expect(done.counters).to.include({ total: 7, answered: 7, dials: 7 });
    const zoneOf = (e164: string) => (et.includes(e164) ? 'America/New_York' : ct.includes(e164) ? 'America/Chicago' : 'America/Los_Angeles');
    for (const a of await attempts(id)) {
      const at = new Date(a.lastDialedAt);
      expect(at.getTime(), a.e164).to.be.greaterThan(launchedAt.getTime());
      const local = localParts(zoneOf(a.e164), at);
      expect(local.hour, `${a.e164} dialed at ${local.hour}:${local.minute} local`).to.be.within(8, 20);
      expect(at.getTime() - launchedAt.getTime(), a.e164).to.be.below(12 * 3600_000); // the same morning
    }
    const byNumber = new Map((await attempts(id)).map((a) => [a.e164, new Date(a.lastDialedAt).getTime()]));
    expect(byNumber.get(et[0])!).to.be.below(byNumber.get(ct[0])!);
    expect(byNumber.get(ct[0])!).to.be.below(byNumber.get(pt[0])!);
    expect(byNumber.get(explicitPt)).to.equal(byNumber.get(pt[0]));
    expect((await dialsTo([...et, ...ct, ...pt, explicitPt])).length).to.equal(7);
  });

  it('stops new dials while paused and continues on resume', async () => {
    await moveClockTo('America/New_York', 12, 0); // open in every US zone
    await env.startWorker(150);
    try {
      const numbers = Array.from({ length: 10 }, (_, i) => phone('212', 100 + i));
      const id = await campaign(['phone', ...numbers].join('\n'), { maxConcurrentCalls: 1 });
      await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`);
      await until(async () => (await get(id)).counters.dials >= 2, 20_000, 'two dials');
      const paused = await env.call(dialer.key, 'POST', `/campaigns/${id}/pause`);
      expect(paused.body.data.status).to.equal('paused');
      await new Promise((r) => setTimeout(r, 400)); // the dial in flight ends
      const atPause = (await get(id)).counters.dials;
      await new Promise((r) => setTimeout(r, 1000));
      const still = await get(id);
      expect(still.counters.dials).to.equal(atPause);
      expect(still.counters.pending).to.equal(10 - atPause);
      expect(atPause).to.be.below(10);
      expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/resume`)).body.data.status).to.equal('running');
      const done = await finished(id);
      expect(done.status).to.equal('completed');
      expect(done.counters).to.include({ answered: 10, dials: 10 });
      expect((await dialsTo(numbers)).length).to.equal(10);
    } finally {
      await env.startWorker(0);
    }
  });

  it('cancel ends the campaign and leaves undialed attempts cancelled', async () => {
    await moveClockTo('America/New_York', 12, 0);
    await env.startWorker(150);
    try {
      const numbers = Array.from({ length: 10 }, (_, i) => phone('312', 200 + i));
      const id = await campaign(['phone', ...numbers].join('\n'), { maxConcurrentCalls: 1 });
      await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`);
      await until(async () => (await get(id)).counters.dials >= 2, 20_000, 'two dials');
      expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/cancel`)).body.data.status).to.equal('cancelled');
      const result = await env.client.workflow.getHandle(workflowIds.campaign(id)).result();
      expect(result).to.equal('cancelled');
      const c = await get(id);
      expect(c.status).to.equal('cancelled');
      expect(c.counters.pending).to.equal(0);
      expect(c.counters.dialing).to.equal(0);
      expect(c.counters.answered + c.counters.cancelled).to.equal(10);
      expect(c.counters.cancelled).to.be.at.least(6);
      expect((await dialsTo(numbers)).length).to.equal(c.counters.answered);
      expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/resume`)).body.code).to.equal('invalid_transition');
    } finally {
      await env.startWorker(0);
    }
  });

  it('retries busy and no-answer after the retry delay up to maxAttempts; voicemail and failed are final', async () => {
    await moveClockTo('America/New_York', 12, 0);
    const busy = phone('212', 300, '0003');
    const noAnswer = phone('212', 301, '0004');
    const voicemail = phone('212', 302, '0002');
    const failed = phone('212', 303, '0005');
    const id = await campaign(['phone', busy, noAnswer, voicemail, failed].join('\n'), { maxAttempts: 3, retryDelayMinutes: 30 });
    const start = await serverNow();
    await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`);
    const done = await withTimeSkipping(() => finished(id));
    expect(done.counters).to.include({ busy: 1, noAnswer: 1, voicemail: 1, failed: 1, dials: 8 });
    const dials = await dialsTo([busy, noAnswer, voicemail, failed]);
    const count = (n: string) => dials.filter((d) => d.to === n).length;
    expect([count(busy), count(noAnswer), count(voicemail), count(failed)]).to.deep.equal([3, 3, 1, 1]);
    const busyAttempt = (await attempts(id)).find((a) => a.e164 === busy);
    expect(new Date(busyAttempt.lastDialedAt).getTime() - start.getTime()).to.be.at.least(60 * 60_000); // two 30-minute delays
  });

  it('ends a run whose campaign was never launched (still a draft) at once, dialing nobody', async () => {
    const number = phone('415', 900);
    const id = await campaign(['phone', number].join('\n'));
    const handle = await env.client.workflow.start('campaignDialer', { taskQueue: env.taskQueue, workflowId: workflowIds.campaign(id), args: [{ orgId: dialer.orgId, campaignId: id }] });
    expect(await withTimeSkipping(() => handle.result())).to.equal('not_launched');
    // Launches start the dialer after their transaction commits (services/workflowStarts.ts): a draft is not a
    // commit still on its way, so the run neither waits for one on a timer (patched 'campaign-started-after-commit').
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.filter((e) => e.timerStartedEventAttributes), 'timers').to.have.length(0);
    expect(events.filter((e) => e.markerRecordedEventAttributes), 'the patch marker').to.have.length(1);
    expect((await get(id)).status).to.equal('draft');
    expect(await dialsTo([number])).to.have.length(0);
  });

  it('completes when the last dial ends while a claim is reading the attempts', async () => {
    await moveClockTo('America/New_York', 12, 0);
    const [held, other] = [phone('212', 700), phone('212', 701)];
    const id = await campaign(['phone', held, other].join('\n'), { maxConcurrentCalls: 2 });
    const progress = () => env.client.workflow.getHandle(workflowIds.campaign(id)).query(campaignProgressQuery);
    // The held contact's dial waits until a claim has read its attempt still dialing; that claim returns only once the
    // dial has ended and the workflow has seen it end, so the claim's answer is older than the dial's settling.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let raced = false;
    const real = createOutboundActivities({ db: env.db, config: env.config, logger: createLogger('silent') });
    const activities = {
      ...real,
      async outboundDial(input: Parameters<typeof real.outboundDial>[0]) {
        const [row] = await env.db('call_attempts').where({ org_id: dialer.orgId, id: input.attemptId }).select('e164');
        if (row?.e164 === held) await released;
        return real.outboundDial(input);
      },
      async outboundClaimAttempts(input: Parameters<typeof real.outboundClaimAttempts>[0]) {
        const got = await real.outboundClaimAttempts(input);
        if (!raced && got.claimed.length === 0 && got.pending === 0 && got.dialing === 1) {
          raced = true;
          release();
          await until(async () => ((await progress()).inFlight === 0 ? true : undefined), 20_000, 'the held dial to settle in the workflow');
        }
        return got;
      },
    };
    await env.stopWorker();
    const worker = await startTestWorker(env.taskQueue, activities);
    try {
      expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`)).status).to.equal(200);
      const done = await finished(id, 20_000);
      expect(raced, 'a claim read the held dial still dialing').to.equal(true);
      expect(done.counters).to.include({ total: 2, answered: 2, dials: 2 });
      // The run claimed again at once (patched 'campaign-claim-sees-dials-that-ended') rather than sleeping until the
      // next calling window or six hours.
      const events = (await env.client.workflow.getHandle(workflowIds.campaign(id)).fetchHistory()).events ?? [];
      expect(events.filter((e) => e.markerRecordedEventAttributes), 'the patch marker').to.have.length(1);
    } finally {
      await worker.stop();
      await env.startWorker();
    }
  });

  it('continues as new every N dials and still dials every contact once', async () => {
    await moveClockTo('America/New_York', 12, 0);
    const numbers = Array.from({ length: 9 }, (_, i) => phone('415', 400 + i));
    const id = await campaign(['phone', ...numbers].join('\n'), { maxConcurrentCalls: 2 });
    // Launch by hand to choose a small run length (the API starts with the default of 500).
    await env.db.transaction(async (trx) => {
      const row = await lockCampaign(trx, dialer.orgId, id);
      await insertAttempts(trx, dialer.orgId, id, row.list_id);
      await setCampaignStatus(trx, dialer.orgId, id, 'running');
    });
    const handle = await env.client.workflow.start('campaignDialer', { taskQueue: env.taskQueue, workflowId: workflowIds.campaign(id), args: [{ orgId: dialer.orgId, campaignId: id, dialsPerRun: 3 }] });
    expect(await env.client.workflow.getHandle(workflowIds.campaign(id)).result()).to.equal('completed');
    const first = await env.client.workflow.getHandle(workflowIds.campaign(id), handle.firstExecutionRunId).describe();
    expect(first.status.name).to.equal('CONTINUED_AS_NEW');
    expect((await get(id)).counters).to.include({ answered: 9, dials: 9 });
    const dials = await dialsTo(numbers);
    expect(dials.length).to.equal(9);
    expect(new Set(dials.map((d) => d.to)).size).to.equal(9);
  });
});

describe('campaign dialer across a restart of the worker and a durable dev server', function () {
  this.timeout(120_000);

  it('dials every valid contact exactly once when the worker and the dev server are killed mid-campaign', async () => {
    const databaseUrl = await createMigratedTestDatabase('outbound_restart');
    const db = createDb(databaseUrl);
    let server = await startRecordingDevServer({ databaseUrl, log: () => undefined });
    const port = server.port;
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection });
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 1_000_000 });
    const logger = createLogger('silent');
    const taskQueue = `outbound-restart-${crypto.randomBytes(4).toString('hex')}`;
    const api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
    const startWorker = (address: string) => startWorkerAt(address, taskQueue, createOutboundActivities({ db, config, logger }, { telephonyOptions: { dialLatencyMs: 60 } }));
    const org = await createOrganization(db, 'Restart Org');
    const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    const call = async (method: string, p: string, json?: unknown) => (await callWithKey(api.baseUrl, key, method, p, json)).body;
    let worker = await startWorker(server.address);
    try {
      const agentId = (await createAgent(db, org.id, { name: 'Restart agent' })).id;
      const versionId = newId('ver');
      await db('agent_versions').insert({ id: versionId, org_id: org.id, agent_id: agentId, number: 1, snapshot: '{}', checksum: 'x', draft_version: 1, published_by: 'test', idempotency_key: 'k', request_hash: 'h' });
      await db('agents').where({ id: agentId }).update({ published_version_id: versionId });
      const offered = (await call('GET', '/numbers/search?areaCode=415')).data.items;
      const numberId = (await call('POST', '/numbers/purchase', { e164: offered[0].e164 })).data.id;
      // This dev server does not skip time: give every contact an explicit zone where it is about noon now.
      const offset = 12 - new Date().getUTCHours();
      const noonZone = offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
      const numbers = Array.from({ length: 30 }, (_, i) => phone(['212', '312', '415'][i % 3], 500 + i));
      const fd = new FormData();
      fd.append('file', new Blob([['phone,time_zone', ...numbers.map((n) => `${n},${noonZone}`), 'garbage,'].join('\n')], { type: 'text/csv' }), 'c.csv');
      const fileId = ((await (await fetch(`${api.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd })).json()) as any).data.id;
      const list = (await call('POST', '/contact-lists', { name: 'Restart list' })).data;
      await call('POST', `/contact-lists/${list.id}/imports`, { fileId });
      await until(async () => (await call('GET', `/contact-lists/${list.id}`)).data.import.status === 'ready', 20_000, 'import');
      const c = (await call('POST', '/campaigns', { name: 'Restart', agentId, callerIdNumberId: numberId, contactListId: list.id, purpose: 'informational', maxConcurrentCalls: 3 })).data;
      await call('POST', `/campaigns/${c.id}/launch`);
      await until(async () => (await call('GET', `/campaigns/${c.id}`)).data.counters.dials >= 6, 20_000, 'six dials');

      await worker.stop();
      await server.stop();
      server = await startRecordingDevServer({ databaseUrl, port, log: () => undefined });
      worker = await startWorker(server.address);

      let last: any;
      const done = await until(async () => ((d) => ((last = d), d.status === 'completed' ? d : undefined))((await call('GET', `/campaigns/${c.id}`)).data), 60_000, 'completion after the restart').catch(async (err) => {
        const h = await client.workflow.getHandle(workflowIds.campaign(c.id)).fetchHistory().catch((e) => ({ events: [String(e)] as any[] }));
        const evs = (h.events ?? []).slice(-15).map((e: any) => (typeof e === 'string' ? e : `${e.eventId}:${Object.keys(e).find((k) => k.endsWith('Attributes'))}`));
        const d = await client.workflow.getHandle(workflowIds.campaign(c.id)).describe().catch((e) => String(e));
        throw new Error(`${err.message}: ${JSON.stringify(last?.counters)} ${evs.join(' ')} ${JSON.stringify((d as any).raw?.pendingActivities ?? d)}`);
      });
      expect(done.counters).to.include({ total: 30, answered: 30, dials: 30 });
      const dials = await db('sandbox_dials').where({ org_id: org.id }).select('to', 'idempotency_key');
      expect(dials.length).to.equal(30);
      expect(new Set(dials.map((d) => d.to)).size).to.equal(30);
      expect(dials.every((d) => d.idempotency_key.endsWith(':1'))).to.equal(true);
    } finally {
      await worker.stop();
      await api.close();
      await connection.close();
      await server.stop();
      await db.destroy();
    }
  });
});
