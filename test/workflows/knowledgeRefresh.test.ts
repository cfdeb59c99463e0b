/**
 * Knowledge sources that refresh and crawl themselves (docs/knowledge.md "Refresh and crawl") through the API and
 * the embedded Temporal dev server with the real SDK: `refresh: {everyHours}` creates the schedule
 * `knowledge-refresh/{sourceId}`, whose runs (time skipping, no sleeps) re-index a page that changed; `POST
 * …/refresh` checks now (304 → unchanged) and retries a failed source; PATCH changes or removes the schedule; a run
 * that finds its source deleted removes it; a crawling source is ingested page by page.
 */
import { expect } from 'chai';
import { ScheduleNotFoundError } from '@temporalio/client';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { serverNow, skipTime, testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { createAgent } from '../../db/repositories/agents';
import { createActivities } from '../../activities';
import type { KnowledgeRefreshResult } from '../../activities/knowledgeRefresh';
import { ALLOW_PRIVATE_ENV } from '../../providers/http';
import { workflowIds } from '../../temporal.config';
import type { KnowledgeIngestionResult } from '../../workflows/knowledgeIngestion';
import { htmlPage, startSite, type TestSite } from '../api/knowledge-site';

describe('knowledge refresh schedule and crawl (API, dev server, real SDK)', function () {
  this.timeout(120_000);
  let t: TestApi;
  let key: string;
  let orgId: string;
  let agentId: string;
  let site: TestSite;
  const allowBefore = process.env[ALLOW_PRIVATE_ENV];

  before(async () => {
    site = await startSite();
    // The worker's own activities (activities/index.ts, as worker.ts registers them) with the guarded HTTP client
    // configured from the environment, as in a deployment: loopback is allowed by HTTP_ALLOW_PRIVATE_HOSTS.
    process.env[ALLOW_PRIVATE_ENV] = '127.0.0.1';
    t = await startTestApi('knowledge_refresh_wf', QUICK_CLIENT, { worker: (deps) => createActivities(deps) });
    ({ orgId, key } = await t.org('Refresh Workflow Org'));
    agentId = (await createAgent(t.db, orgId, { name: 'Refreshing desk' })).id;
  });
  after(async () => {
    await t?.close();
    await site?.close();
    if (allowBefore === undefined) delete process.env[ALLOW_PRIVATE_ENV];
    else process.env[ALLOW_PRIVATE_ENV] = allowBefore;
  });

  const sources = `/agents/{agentId}/knowledge/sources`;
  const path = (p = '') => `${sources.replace('{agentId}', agentId)}${p}`;
  const post = (json: unknown) => t.call('POST', path(), { key, json });
  const ingested = async (id: string): Promise<KnowledgeIngestionResult> => (await testTemporal()).client.workflow.getHandle(workflowIds.knowledgeSource(id)).result();
  const source = async (id: string) => (await t.call('GET', path(), { key })).body.data.items.find((s: any) => s.id === id);
  const schedule = async (id: string) => (await testTemporal()).client.schedule.getHandle(workflowIds.knowledgeRefresh(id));
  const preview = async (query: string) => (await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key, json: { query } })).body.data.results.map((r: any) => r.content).join('\n');

  it('answers 400 naming refresh.everyHours, refresh, crawl fields that are not valid', async () => {
    const url = `${site.base}/x.html`;
    for (const [json, field] of [
      [{ kind: 'url', url, refresh: { everyHours: 0 } }, 'refresh.everyHours'],
      [{ kind: 'url', url, refresh: { everyHours: 1.5 } }, 'refresh.everyHours'],
      [{ kind: 'url', url, refresh: { everyHours: '2' } }, 'refresh.everyHours'],
      [{ kind: 'url', url, refresh: {} }, 'refresh.everyHours'],
      [{ kind: 'text', text: 'hi', refresh: { everyHours: 2 } }, 'refresh'],
      [{ kind: 'url', url, crawl: { maxPages: 0 } }, 'crawl.maxPages'],
      [{ kind: 'url', url, crawl: { maxPages: 5, sameOrigin: false } }, 'crawl.sameOrigin'],
      [{ kind: 'url', url, crawl: { maxPages: 5, includePaths: ['docs'] } }, 'crawl.includePaths[0]'],
    ] as const) {
      const res = await post(json);
      expect(res.status, JSON.stringify(json)).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.errors.map((e: any) => e.field), JSON.stringify(json)).to.include(field);
    }
    expect((await t.call('GET', path(), { key })).body.data.items).to.have.length(0);
  });

  it('creates schedule knowledge-refresh/{id}; a scheduled run re-indexes the page that changed', async () => {
    site.set('/hours.html', htmlPage('Hours', 'Reception opens at seven thirty.'));
    const res = await post({ kind: 'url', url: `${site.base}/hours.html`, refresh: { everyHours: 1 } });
    expect(res.status).to.equal(202);
    expect(res.body.data).to.include({ status: 'pending' });
    expect(res.body.data.refresh).to.deep.equal({ everyHours: 1 });
    const id = res.body.data.id;
    expect((await ingested(id)).status).to.equal('ready');
    const desc = await (await schedule(id)).describe();
    expect(desc.action).to.include({ workflowType: 'knowledgeRefreshWorkflow' });
    expect(desc.spec.intervals?.[0].every).to.equal(3_600_000);
    expect(desc.policies.overlap).to.equal('SKIP');

    site.set('/hours.html', htmlPage('Hours', 'Reception now opens at six forty five.'));
    // Skip to just past the first run (the interval is aligned to the hour): a run that fires early in a longer
    // skip has its activity's heartbeat timeout pass in skipped time (devserver/README.md "Time skipping").
    const firstRun = desc.info.nextActionTimes[0];
    expect(firstRun.getTime() - (await serverNow()).getTime()).to.be.within(0, 3_600_000);
    await skipTime(firstRun.getTime() - (await serverNow()).getTime() + 1_000);
    const checked = await until(async () => {
      const s = await source(id);
      return s.lastCheck?.outcome === 'updated' ? s : undefined;
    }, 60_000, 'the scheduled refresh');
    expect(checked).to.include({ status: 'ready' });
    expect(checked.lastCheck).to.include({ statusCode: 200 });
    const text = await preview('reception opens');
    expect(text).to.include('six forty five').and.not.include('seven thirty');
  });

  it('POST …/refresh checks now: a 304 is recorded as unchanged', async () => {
    site.set('/parking.html', htmlPage('Parking', 'Parking is free on Sundays.'));
    const id = (await post({ kind: 'url', url: `${site.base}/parking.html` })).body.data.id;
    expect((await ingested(id)).status).to.equal('ready');
    const res = await t.call('POST', path(`/${id}/refresh`), { key });
    expect(res.status).to.equal(202);
    expect(res.body.data).to.include({ id, status: 'ready' });
    const { client } = await testTemporal();
    const out: KnowledgeRefreshResult = await client.workflow.getHandle(workflowIds.knowledgeRefreshNow(id)).result();
    expect(out).to.include({ outcome: 'unchanged', statusCode: 304, status: 'ready' });
    expect((await source(id)).lastCheck).to.include({ outcome: 'unchanged', statusCode: 304 });
    expect(site.hitsOf('/parking.html').at(-1)).to.include({ status: 304 });
    // A later refresh reuses the id of the finished one.
    site.set('/parking.html', htmlPage('Parking', 'Parking costs two dollars on Sundays.'));
    expect((await t.call('POST', path(`/${id}/refresh`), { key })).status).to.equal(202);
    const again: KnowledgeRefreshResult = await client.workflow.getHandle(workflowIds.knowledgeRefreshNow(id)).result();
    expect(again).to.include({ outcome: 'updated', statusCode: 200, status: 'ready' });
    expect(await preview('parking sundays')).to.include('two dollars');
  });

  it('POST …/refresh retries a failed source, which becomes ready', async () => {
    const id = (await post({ kind: 'url', url: `${site.base}/soon.html` })).body.data.id;
    expect(await ingested(id)).to.include({ status: 'failed', failureCode: 'http_status' });
    site.set('/soon.html', htmlPage('Soon', 'Braces consultations are free.'));
    expect((await t.call('POST', path(`/${id}/refresh`), { key })).status).to.equal(202);
    const { client } = await testTemporal();
    expect(await client.workflow.getHandle(workflowIds.knowledgeRefreshNow(id)).result()).to.include({ outcome: 'updated', status: 'ready' });
    expect(await source(id)).to.include({ status: 'ready', failureCode: null });
  });

  it('POST …/refresh answers 409 for a text source and 404 for an unknown one', async () => {
    const text = await post({ kind: 'text', text: 'We speak Spanish.' });
    await ingested(text.body.data.id);
    const refused = await t.call('POST', path(`/${text.body.data.id}/refresh`), { key });
    expect(refused.status).to.equal(409);
    expect(refused.body.code).to.equal('source_not_refreshable');
    const missing = await t.call('POST', path('/ks_missing/refresh'), { key });
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('knowledge_source_not_found');
  });

  it('PATCH changes the schedule interval, and null removes it', async () => {
    site.set('/faq.html', htmlPage('FAQ', 'Bring your insurance card.'));
    const id = (await post({ kind: 'url', url: `${site.base}/faq.html`, refresh: { everyHours: 2 } })).body.data.id;
    await ingested(id);
    const bad = await t.call('PATCH', path(`/${id}`), { key, json: { refresh: { everyHours: 0 } } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors.map((e: any) => e.field)).to.include('refresh.everyHours');
    const six = await t.call('PATCH', path(`/${id}`), { key, json: { refresh: { everyHours: 6 } } });
    expect(six.status).to.equal(200);
    expect(six.body.data.refresh).to.deep.equal({ everyHours: 6 });
    expect((await (await schedule(id)).describe()).spec.intervals?.[0].every).to.equal(6 * 3_600_000);
    const off = await t.call('PATCH', path(`/${id}`), { key, json: { refresh: null } });
    expect(off.body.data.refresh).to.equal(null);
    const err = await (await schedule(id)).describe().catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ScheduleNotFoundError);
    // Setting it again creates it again.
    await t.call('PATCH', path(`/${id}`), { key, json: { refresh: { everyHours: 3 } } });
    expect((await (await schedule(id)).describe()).spec.intervals?.[0].every).to.equal(3 * 3_600_000);
  });

  it('DELETE removes the source and its schedule at once', async () => {
    site.set('/gone.html', htmlPage('Gone', 'This page is gone.'));
    const id = (await post({ kind: 'url', url: `${site.base}/gone.html`, refresh: { everyHours: 1 } })).body.data.id;
    await ingested(id);
    await (await schedule(id)).describe();
    expect((await t.call('DELETE', path(`/${id}`), { key })).status).to.equal(200);
    expect(await (await schedule(id)).describe().catch((e: unknown) => e)).to.be.instanceOf(ScheduleNotFoundError);
  });

  it('a scheduled run that finds its source deleted (the schedule outlived the DELETE) removes the schedule', async () => {
    site.set('/old.html', htmlPage('Old', 'This page is retired.'));
    const id = (await post({ kind: 'url', url: `${site.base}/old.html`, refresh: { everyHours: 1 } })).body.data.id;
    await ingested(id);
    // As when Temporal could not be reached at DELETE time: the source is gone, its schedule not yet.
    await t.db('knowledge_sources').where({ id }).update({ deleted_at: new Date() });
    await (await schedule(id)).trigger();
    await until(async () => ((await (await schedule(id)).describe().catch((e: unknown) => e)) instanceof ScheduleNotFoundError), 30_000, 'the schedule removal');
  });

  it('ingests a crawling source page by page; GET …/pages lists each page with its status', async () => {
    site.set('/robots.txt', { type: 'text/plain', body: 'User-agent: *\nDisallow: /guide/secret\n' });
    site.set('/guide/', htmlPage('Guide', 'Patient guide start.', ['/guide/first-visit.html', '/guide/secret.html', '/guide/map.png']));
    site.set('/guide/first-visit.html', htmlPage('First visit', 'Arrive fifteen minutes early for your first visit.'));
    site.set('/guide/secret.html', htmlPage('Secret', 'Not for crawlers.'));
    site.set('/guide/map.png', { type: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]) });
    const res = await post({ kind: 'url', url: `${site.base}/guide/`, crawl: { maxPages: 10, includePaths: ['/guide/'] } });
    expect(res.status).to.equal(202);
    expect(res.body.data.crawl).to.deep.equal({ maxPages: 10, includePaths: ['/guide/'], sameOrigin: true });
    const id = res.body.data.id;
    const result = await ingested(id);
    expect(result.status).to.equal('ready');
    const src = await source(id);
    expect(src.chunkCount).to.equal(result.chunkCount).and.be.greaterThan(0);
    expect(src.lastCheck.pages).to.deep.equal({ checked: 3, updated: 2, unchanged: 0, failed: 1 });
    const pages = await t.call('GET', path(`/${id}/pages`), { key });
    expect(pages.status).to.equal(200);
    const byUrl = Object.fromEntries(pages.body.data.items.map((p: any) => [p.url.replace(site.base, ''), p]));
    expect(Object.keys(byUrl).sort()).to.deep.equal(['/guide/', '/guide/first-visit.html', '/guide/map.png']);
    expect(byUrl['/guide/first-visit.html']).to.include({ status: 'ready', httpStatus: 200, format: 'html', title: 'First visit', lastOutcome: 'updated' });
    expect(byUrl['/guide/map.png']).to.include({ status: 'failed', failureCode: 'unsupported_content', chunkCount: 0 });
    expect(site.hitsOf('/guide/secret.html')).to.have.length(0);
    expect(await preview('first visit early')).to.include('fifteen minutes early');
  });
});
