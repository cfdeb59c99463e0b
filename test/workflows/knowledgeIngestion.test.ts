/**
 * Knowledge ingestion end to end on the embedded Temporal dev server with the real SDK: the API starts
 * `knowledge-source/{sourceId}`, a worker runs workflows/knowledgeIngestion.ts with the real activities,
 * and the source becomes ready (HTML page, PDF upload) or failed with the reason (SSRF refusal, 404).
 */
import { expect } from 'chai';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { loadConfig } from '../../config';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { createAgent } from '../../db/repositories/agents';
import { createUpload } from '../../db/repositories/uploads';
import { startApi, type RunningApi } from '../../api/server';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createLogger } from '../../runtime';
import { startWorkflowStartSweep } from '../../services/workflowStarts';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createHttpClient, parseAllowList } from '../../providers/http';
import { workflowIds } from '../../temporal.config';
import type { KnowledgeIngestionResult } from '../../workflows/knowledgeIngestion';
import { ingestionStageQuery } from '../../workflows/definitions';
import { callWithKey } from '../helpers/api';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { startTestWorker, testTemporal, uniqueTaskQueue } from '../helpers/temporal';
import { makePdf, SAMPLE_HTML, serveDocuments } from '../api/knowledge-fixtures';

describe('knowledge ingestion workflow (dev server, real SDK)', function () {
  this.timeout(120_000);
  let client: Client;
  let stopWorker: () => Promise<void>;
  let db: Db;
  let databaseUrl: string;
  let api: RunningApi;
  let key: string;
  let orgId: string;
  let agentId: string;
  let pages: Awaited<ReturnType<typeof serveDocuments>> | undefined;
  let flakyHits = 0;
  let base: string;
  const taskQueue = uniqueTaskQueue('knowledge');

  const call = (method: string, p: string, json?: unknown) => callWithKey(api.baseUrl, key, method, p, json);

  before(async () => {
    ({ client } = await testTemporal());
    databaseUrl = await createMigratedTestDatabase('knowledge_wf');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
    const logger = createLogger('silent');
    api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue } });
    orgId = (await createOrganization(db, 'Workflow Org')).id;
    key = (await createSecretKey(db, orgId, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES })).key;
    agentId = (await createAgent(db, orgId, { name: 'Ingesting desk' })).id;

    const pdf = await makePdf(['Refund policy. Refunds are issued within 30 days of purchase when the receipt is shown.']);
    pages = await serveDocuments({
      '/hours.html': { type: 'text/html; charset=utf-8', body: SAMPLE_HTML },
      // Busy once, then answers: the activity's retry fetches it again.
      '/flaky.txt': () => (++flakyHits === 1 ? { status: 503, body: 'busy' } : { body: 'The front desk answers calls from 7am.' }),
      '/handbook.pdf': { type: 'application/pdf', body: pdf },
    });
    base = pages.base;

    ({ stop: stopWorker } = await startTestWorker(
      taskQueue,
      createKnowledgeActivities({ db, config, logger }, { http: createHttpClient({ allow: parseAllowList('127.0.0.1') }) }),
    ));
  });

  after(async () => {
    await stopWorker?.();
    await api?.close();
    await db?.destroy();
    await pages?.close();
  });

  async function resultOf(sourceId: string): Promise<KnowledgeIngestionResult> {
    return client.workflow.getHandle(workflowIds.knowledgeSource(sourceId)).result();
  }

  /** The attempt numbers of the `extractKnowledgeSource` activity in the history of knowledge-source/{sourceId}, in order. */
  async function extractAttempts(sourceId: string): Promise<number[]> {
    const history = await client.workflow.getHandle(workflowIds.knowledgeSource(sourceId)).fetchHistory();
    const events = history.events ?? [];
    const typeOf = new Map(events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => [String(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name]));
    return events
      .filter((e) => e.activityTaskStartedEventAttributes && typeOf.get(String(e.activityTaskStartedEventAttributes.scheduledEventId)) === 'extractKnowledgeSource')
      .map((e) => e.activityTaskStartedEventAttributes!.attempt!);
  }

  /** The source as GET /agents/{agentId}/knowledge/sources lists it (undefined when not listed). */
  async function listedSource(sourceId: string): Promise<any> {
    const list = await call('GET', `/agents/${agentId}/knowledge/sources`);
    return list.body.data.items.find((s: any) => s.id === sourceId);
  }

  it('answers 202 pending for a URL source and workflow knowledge-source/{id} makes it ready with searchable chunks', async () => {
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: `${base}/hours.html` });
    expect(res.status).to.equal(202);
    expect(res.body.data).to.include({ status: 'pending', kind: 'url', url: `${base}/hours.html` });
    const result = await resultOf(res.body.data.id);
    expect(result.status).to.equal('ready');
    expect(result.chunkCount).to.be.greaterThan(0);
    const handle = client.workflow.getHandle(workflowIds.knowledgeSource(res.body.data.id));
    expect(await handle.query(ingestionStageQuery)).to.equal('ready');
    const described = await handle.describe();
    expect(described.searchAttributes).to.deep.include({ OrganizationId: [orgId], ResourceId: [res.body.data.id] });
    const src = await listedSource(res.body.data.id);
    // Created without a name, the source takes the page's title once extracted.
    expect(src).to.include({ status: 'ready', format: 'html', chunkCount: result.chunkCount, title: 'Sunrise Dental & Care — Opening hours', name: 'Sunrise Dental & Care — Opening hours' });
    const one = await call('GET', `/agents/${agentId}/knowledge/sources/${res.body.data.id}`);
    expect(one.status).to.equal(200);
    expect(one.body.data).to.deep.equal(src);
    const preview = await call('POST', `/agents/${agentId}/knowledge/preview`, { query: 'Saturday opening hours' });
    expect(preview.body.data.results[0].source.id).to.equal(res.body.data.id);
  });

  it("keeps a URL source's own name, and answers 404 for another agent's or organization's source", async () => {
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: `${base}/hours.html`, name: 'Hours page' });
    expect((await resultOf(res.body.data.id)).status).to.equal('ready');
    expect((await call('GET', `/agents/${agentId}/knowledge/sources/${res.body.data.id}`)).body.data).to.include({ name: 'Hours page', title: 'Sunrise Dental & Care — Opening hours' });
    const otherAgent = (await createAgent(db, orgId, { name: 'Other desk' })).id;
    const wrongAgent = await call('GET', `/agents/${otherAgent}/knowledge/sources/${res.body.data.id}`);
    expect([wrongAgent.status, wrongAgent.body.code]).to.deep.equal([404, 'knowledge_source_not_found']);
    const otherOrg = (await createOrganization(db, 'Other org')).id;
    const otherKey = (await createSecretKey(db, otherOrg, { brand: loadConfig({}).keyBrandPrefix, scopes: NON_RESERVED_SCOPES })).key;
    const foreign = await callWithKey(api.baseUrl, otherKey, 'GET', `/agents/${agentId}/knowledge/sources/${res.body.data.id}`);
    expect(foreign.status).to.equal(404);
    expect((await call('GET', `/agents/${agentId}/knowledge/sources/ks_doesnotexist1`)).status).to.equal(404);
  });

  it('indexes a Spanish text on a Spanish agent as spanish (not dutch) within its one start activity, and a Spanish question finds it', async () => {
    const spanishAgent = (await createAgent(db, orgId, { name: 'Mesa', language: 'es-ES' })).id;
    const text = 'Reservamos mesas para grupos grandes. Aceptamos pagos con tarjeta de crédito. Abrimos de martes a domingo desde las nueve de la mañana.';
    const res = await call('POST', `/agents/${spanishAgent}/knowledge/sources`, { kind: 'text', text });
    expect(await resultOf(res.body.data.id)).to.deep.equal({ status: 'ready', chunkCount: 1 });
    // A text source is stored, chunked and indexed by the start activity: one activity, two workflow tasks.
    const events = (await client.workflow.getHandle(workflowIds.knowledgeSource(res.body.data.id)).fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name)).to.deep.equal(['startKnowledgeIngestion']);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).to.have.length(2);
    const stored = await db('knowledge_sources').where({ org_id: orgId, id: res.body.data.id }).first('text_search_config');
    expect(stored.text_search_config).to.equal('spanish');
    const chunks = await db('knowledge_chunks').where({ org_id: orgId, source_id: res.body.data.id }).distinct('text_search_config');
    expect(chunks.map((c: any) => c.text_search_config)).to.deep.equal(['spanish']);
    const preview = await call('POST', `/agents/${spanishAgent}/knowledge/preview`, { query: '¿Me reservan y aceptan?' });
    expect(preview.body.data.results.map((r: any) => r.source.id)).to.include(res.body.data.id);
  });

  it('ingests an uploaded PDF through a file source', async () => {
    const pdf = await makePdf(['Parking. Free parking is available behind the building on Elm Street.']);
    const upload = await createUpload(db, orgId, { filename: 'parking.pdf', contentType: 'application/pdf', data: pdf });
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'file', fileId: upload.id });
    expect(res.status).to.equal(202);
    expect((await resultOf(res.body.data.id)).status).to.equal('ready');
    const preview = await call('POST', `/agents/${agentId}/knowledge/preview`, { query: 'where can I park?' });
    expect(preview.body.data.results[0].content).to.contain('Free parking');
  });

  it('marks a source failed with the reason when the URL is refused by the SSRF guard, without retrying', async () => {
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: 'http://169.254.169.254/latest/meta-data/' });
    expect(res.status).to.equal(202);
    const result = await resultOf(res.body.data.id);
    expect(result).to.include({ status: 'failed', failureCode: 'ssrf_refused' });
    // The extract activity ran once: an SSRF refusal is not retried.
    expect(await extractAttempts(res.body.data.id)).to.deep.equal([1]);
    const src = await listedSource(res.body.data.id);
    expect(src).to.include({ status: 'failed', failureCode: 'ssrf_refused' });
    expect(src.failureReason).to.match(/metadata/);
  });

  it('fails a source whose host name does not resolve within a couple of seconds, with the reason stored, without retrying', async () => {
    const started = Date.now();
    // RFC 6761: names under .invalid never resolve.
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: 'https://no-such-host.invalid/handbook' });
    expect(res.status).to.equal(202);
    const result = await resultOf(res.body.data.id);
    expect(Date.now() - started).to.be.below(3000);
    expect(result).to.include({ status: 'failed', failureCode: 'dns_unresolvable' });
    expect(await extractAttempts(res.body.data.id)).to.deep.equal([1]);
    const src = await listedSource(res.body.data.id);
    expect(src).to.include({ status: 'failed', failureCode: 'dns_unresolvable' });
    expect(src.failureReason).to.match(/no-such-host\.invalid does not resolve/);
  });

  it('retries a transient 503 and then makes the source ready', async () => {
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: `${base}/flaky.txt` });
    // Real time: one 2 s retry backoff.
    const result = await resultOf(res.body.data.id);
    expect(result.status).to.equal('ready');
    expect(flakyHits).to.equal(2);
  });

  it('marks a source failed for good when the page answers 404', async () => {
    const res = await call('POST', `/agents/${agentId}/knowledge/sources`, { kind: 'url', url: `${base}/nope` });
    const result = await resultOf(res.body.data.id);
    expect(result).to.include({ status: 'failed', failureCode: 'http_status' });
    expect(result.failureReason).to.match(/404/);
  });

  it('keeps the source and its owed start when Temporal refuses the start, and the start sweep ingests it once Temporal takes it', async () => {
    const broken = await startApi({
      db,
      databaseUrl,
      config: loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' }),
      logger: createLogger('silent'),
      temporal: { client: new Client({ connection: client.connection, namespace: 'no-such-namespace' }), taskQueue },
    });
    let sourceId: string;
    try {
      const res = await fetch(`${broken.baseUrl}/agents/${agentId}/knowledge/sources`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'text', text: 'Owed start check text.' }),
      });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).to.equal(202);
      sourceId = body.data.id;
    } finally {
      await broken.close();
    }
    const owed = await db('workflow_starts').where({ org_id: orgId, workflow_id: workflowIds.knowledgeSource(sourceId) }).first();
    expect(owed).to.include({ workflow_type: 'knowledgeIngestionWorkflow', attempts: 1 });
    await db('workflow_starts').where({ org_id: orgId, id: owed.id }).update({ next_attempt_at: db.raw("now() - interval '1 second'") });
    const sweep = startWorkflowStartSweep({ db, logger: createLogger('silent'), temporal: { client, taskQueue }, intervalMs: 0, minAgeMs: 0 });
    expect(await sweep.sweep()).to.equal(1);
    await sweep.stop();
    expect((await resultOf(sourceId)).status).to.equal('ready');
  });

  it('has no workflow for a source that was never created', async () => {
    try {
      await client.workflow.getHandle(workflowIds.knowledgeSource('ks_missing')).describe();
      expect.fail('expected WorkflowNotFoundError');
    } catch (err) {
      expect(err).to.be.instanceOf(WorkflowNotFoundError);
    }
  });
});
