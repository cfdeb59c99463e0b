/**
 * Knowledge sources and preview over a real socket and Postgres, without Temporal: ingestion runs by
 * calling the activities directly in the order the workflow calls them (workflows/knowledgeIngestion.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { ApplicationFailure } from '@temporalio/common';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { createAgent } from '../../db/repositories/agents';
import { createSource, getSource } from '../../db/repositories/knowledge';
import { createUpload } from '../../db/repositories/uploads';
import { createKnowledgeActivities } from '../../activities/knowledge';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import { createHttpClient, parseAllowList } from '../../providers/http';
import { createLogger } from '../../runtime';
import { makePdf, SAMPLE_HTML } from './knowledge-fixtures';
import { ingestInline } from '../helpers/knowledge';

type Activities = ReturnType<typeof createKnowledgeActivities>;

/** Runs the workflow's steps inline (test/helpers/knowledge.ts). */
const ingest = (acts: Activities, orgId: string, sourceId: string) => ingestInline(acts, { orgId, sourceId });

describe('knowledge sources and preview', () => {
  let t: TestApi;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };
  let agentId: string;
  let otherAgentId: string;
  let siblingAgentId: string;
  let server: http.Server;
  let base: string;
  let pdf: Buffer;
  let acts: Activities;
  let guardedActs: Activities;
  const pageHits: Record<string, number> = {};

  before(async () => {
    t = await startTestApi('knowledge', QUICK_CLIENT);
    org = await t.org('Knowledge Org');
    other = await t.org('Other Org');
    agentId = (await createAgent(t.db, org.orgId, { name: 'Front desk' })).id;
    siblingAgentId = (await createAgent(t.db, org.orgId, { name: 'Billing desk' })).id;
    otherAgentId = (await createAgent(t.db, other.orgId, { name: 'Front desk' })).id;
    pdf = await makePdf([
      'Refund policy. Refunds are issued within 30 days of purchase when the receipt is shown.',
      'Parking. Free parking is available behind the building on Elm Street.',
    ]);
    server = http.createServer((req, res) => {
      pageHits[req.url ?? ''] = (pageHits[req.url ?? ''] ?? 0) + 1;
      if (req.url === '/hours.html') {
        res.setHeader('content-type', 'text/html; charset=utf-8');
        res.end(SAMPLE_HTML);
      } else if (req.url === '/missing') {
        res.statusCode = 404;
        res.end();
      } else if (req.url === '/busy') {
        res.statusCode = 503;
        res.end();
      } else if (req.url === '/logo.png') {
        res.setHeader('content-type', 'image/png');
        res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const deps = { db: t.db, config: t.config, logger: createLogger('silent') };
    acts = createKnowledgeActivities(deps, { http: createHttpClient({ allow: parseAllowList('127.0.0.1'), headersTimeoutMs: 2000 }) });
    guardedActs = createKnowledgeActivities(deps, { http: createHttpClient({ allow: parseAllowList('') }) });
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await t.close();
  });

  const noWorkflow = async () => undefined;

  describe('POST /agents/{agentId}/knowledge/sources', () => {
    it('answers 503 temporal_unavailable when the API runs without Temporal, and saves no source', async () => {
      const res = await t.call('POST', `/agents/${agentId}/knowledge/sources`, { key: org.key, json: { kind: 'text', text: 'We open at nine.' } });
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('temporal_unavailable');
      expect(res.headers.get('content-type')).to.match(/application\/problem\+json/);
      const list = await t.call('GET', `/agents/${agentId}/knowledge/sources`, { key: org.key });
      expect(list.body.data.items.filter((s: any) => s.name === 'We open at nine.')).to.have.length(0);
    });

    it('names the field a kind requires, the fields it forbids and a URL that is not http(s)', async () => {
      const path = `/agents/${agentId}/knowledge/sources`;
      const missing = await t.call('POST', path, { key: org.key, json: { kind: 'url' } });
      expect(missing.status).to.equal(400);
      expect(missing.body.code).to.equal('validation_error');
      expect(missing.body.errors).to.deep.include({ field: 'url', message: 'is required when kind is url' });

      const mixed = await t.call('POST', path, { key: org.key, json: { kind: 'text', text: 'x', url: 'https://a.example' } });
      expect(mixed.body.errors).to.deep.include({ field: 'url', message: 'is not allowed when kind is text' });

      const ftp = await t.call('POST', path, { key: org.key, json: { kind: 'url', url: 'ftp://files.example/a.pdf' } });
      expect(ftp.body.errors.map((e: any) => e.field)).to.deep.equal(['url']);

      const badKind = await t.call('POST', path, { key: org.key, json: { kind: 'video', url: 'https://a.example' } });
      expect(badKind.status).to.equal(400);
      expect(badKind.body.errors.map((e: any) => e.field)).to.include('kind');

      const extra = await t.call('POST', path, { key: org.key, json: { kind: 'text', text: 'x', color: 'red' } });
      expect(extra.body.errors).to.deep.include({ field: 'color', message: 'is not a known field' });
    });

    it("answers 404 for another organization's agent exactly like a missing one", async () => {
      const theirs = await t.call('POST', `/agents/${otherAgentId}/knowledge/sources`, { key: org.key, json: { kind: 'text', text: 'hello' } });
      const missing = await t.call('POST', `/agents/agt_doesnotexist/knowledge/sources`, { key: org.key, json: { kind: 'text', text: 'hello' } });
      expect(theirs.status).to.equal(404);
      expect(missing.status).to.equal(404);
      expect(theirs.body.code).to.equal(missing.body.code);
    });

    it('answers 404 file_expired for an upload that expired, was collected, or belongs to another organization', async () => {
      const expired = await createUpload(t.db, org.orgId, { filename: 'old.txt', contentType: 'text/plain', data: Buffer.from('old'), ttlSeconds: 0 });
      const theirs = await createUpload(t.db, other.orgId, { filename: 'theirs.txt', contentType: 'text/plain', data: Buffer.from('theirs') });
      for (const fileId of [expired.id, 'file_neverexisted', theirs.id]) {
        const res = await t.call('POST', `/agents/${agentId}/knowledge/sources`, { key: org.key, json: { kind: 'file', fileId } });
        expect(res.status, fileId).to.equal(404);
        expect(res.body.code, fileId).to.equal('file_expired');
      }
    });
  });

  describe('ingestion (activities run inline)', () => {
    it('ingests a text source within its start activity: pending → processing → ready, with chunks and a character count', async () => {
      const src = await createSource(t.db, org.orgId, { agentId, kind: 'text', text: 'Our phone line is open from 7am. Call 555-0100 for bookings.' }, noWorkflow);
      expect(src.status).to.equal('pending');
      expect(src.name).to.equal('Our phone line is open from 7am. Call 555-0100 for bookings.');
      const started = await acts.startKnowledgeIngestion({ orgId: org.orgId, sourceId: src.id });
      expect(started).to.deep.equal({ status: 'processing', kind: 'text', extracted: true, indexed: true, chunkCount: 1 });
      const ready = (await getSource(t.db, org.orgId, src.id))!;
      expect(ready).to.include({ status: 'ready', chunkCount: 1, format: 'text', charCount: 60, failureReason: null });
      expect(ready.readyAt).to.be.a('string');
    });

    it('leaves a text source whose embeddings are slower than the inline bound processing and extracted, for the index activity', async () => {
      let aborted = 0;
      const slow: EmbeddingsProvider = {
        name: 'slow',
        model: 'slow-model@8',
        embed: (texts, o) =>
          new Promise((resolve, reject) => {
            const timer = setTimeout(() => resolve(texts.map(() => [1, 0, 0, 0, 0, 0, 0, 0])), 2_000);
            o?.signal?.addEventListener('abort', () => (aborted++, clearTimeout(timer), reject(o.signal!.reason)));
          }),
      };
      const slowActs = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') }, { embeddings: slow, inlineIndexMs: 50 });
      const slowAgentId = (await createAgent(t.db, org.orgId, { name: 'Slow desk' })).id;
      const src = await createSource(t.db, org.orgId, { agentId: slowAgentId, kind: 'text', text: 'Slow vectors still arrive through the index step.' }, noWorkflow);
      const started = await slowActs.startKnowledgeIngestion({ orgId: org.orgId, sourceId: src.id });
      expect(started).to.deep.equal({ status: 'processing', kind: 'text', extracted: true });
      expect(aborted).to.equal(1);
      expect((await getSource(t.db, org.orgId, src.id))!).to.include({ status: 'processing', charCount: 49 });
      // The index activity has no such bound: it waits for the vectors and stores them.
      expect(await slowActs.indexKnowledgeSource({ orgId: org.orgId, sourceId: src.id })).to.deep.equal({ chunkCount: 1 });
      expect((await getSource(t.db, org.orgId, src.id))!.status).to.equal('ready');
      const [{ n }] = await t.db('knowledge_chunk_embeddings').where({ org_id: org.orgId, source_id: src.id }).count({ n: '*' });
      expect(Number(n)).to.equal(1);
    });

    it('emits knowledge.source.updated once per transition: processing, then ready or failed', async () => {
      const eventsOf = async (sourceId: string) =>
        (await t.db('events').where({ org_id: org.orgId, type: 'knowledge.source.updated' }).orderBy('created_at').select('data'))
          .map((r: any) => r.data)
          .filter((d: any) => d.sourceId === sourceId);
      const ok = await createSource(t.db, org.orgId, { agentId, kind: 'text', text: 'Events follow every status change.' }, noWorkflow);
      await ingest(acts, org.orgId, ok.id);
      await acts.startKnowledgeIngestion({ orgId: org.orgId, sourceId: ok.id }); // a replayed start changes nothing
      await acts.indexKnowledgeSource({ orgId: org.orgId, sourceId: ok.id });
      expect(await eventsOf(ok.id)).to.deep.equal([
        { agentId, sourceId: ok.id, status: 'processing' },
        { agentId, sourceId: ok.id, status: 'ready', chunkCount: 1 },
      ]);
      const bad = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/missing` }, noWorkflow);
      await ingest(acts, org.orgId, bad.id);
      await acts.failKnowledgeSource({ orgId: org.orgId, sourceId: bad.id, code: 'http_status', reason: 'again' });
      const failed = await eventsOf(bad.id);
      expect(failed.map((e: any) => e.status)).to.deep.equal(['processing', 'failed']);
      expect(failed[1].error).to.match(/^http_status: .*404/);
    });

    it('re-running the index step replaces chunks instead of duplicating them', async () => {
      const src = await createSource(t.db, org.orgId, { agentId: siblingAgentId, kind: 'text', text: 'Idempotent indexing keeps one copy.' }, noWorkflow);
      await ingest(acts, org.orgId, src.id);
      const again = await acts.indexKnowledgeSource({ orgId: org.orgId, sourceId: src.id });
      expect(again.chunkCount).to.equal(1);
      const hits = await t.call('POST', `/agents/${siblingAgentId}/knowledge/preview`, { key: org.key, json: { query: 'idempotent indexing' } });
      expect(hits.body.data.results).to.have.length(1);
    });

    it('ingests a real HTML page by URL and a real PDF upload; preview ranks the matching chunk first with its source', async () => {
      const page = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/hours.html` }, noWorkflow);
      const upload = await createUpload(t.db, org.orgId, { filename: 'handbook.pdf', contentType: 'application/pdf', data: pdf });
      const file = await createSource(t.db, org.orgId, { agentId, kind: 'file', fileId: upload.id }, noWorkflow);
      expect(file.name).to.equal('handbook.pdf');
      expect((await ingest(acts, org.orgId, page.id)).status).to.equal('ready');
      expect((await ingest(acts, org.orgId, file.id)).status).to.equal('ready');
      expect((await getSource(t.db, org.orgId, page.id))!).to.include({ format: 'html', title: 'Sunrise Dental & Care — Opening hours' });
      expect((await getSource(t.db, org.orgId, file.id))!).to.include({ format: 'pdf', title: 'Clinic handbook' });

      const refunds = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'How long do I have to get a refund?' } });
      expect(refunds.status).to.equal(200);
      const top = refunds.body.data.results[0];
      expect(top.content).to.contain('Refunds are issued within 30 days');
      expect(top.source).to.deep.equal({ id: file.id, kind: 'file', name: 'handbook.pdf', title: 'Clinic handbook', url: null });
      expect(top.chunkId).to.match(/^chk_/);
      expect(top.score).to.be.greaterThan(0).and.at.most(1);

      const hours = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'Are you open on Saturday?', limit: 1 } });
      expect(hours.body.data.results).to.have.length(1);
      expect(hours.body.data.results[0].content).to.contain('Saturday from 9am to 1pm');
      expect(hours.body.data.results[0].source).to.include({ id: page.id, kind: 'url', url: `${base}/hours.html` });
    });

    it('orders results by score: a chunk matching more query words ranks above one matching fewer', async () => {
      const a = await createSource(t.db, org.orgId, { agentId: siblingAgentId, kind: 'text', text: 'Invoices are emailed monthly.' }, noWorkflow);
      const b = await createSource(t.db, org.orgId, { agentId: siblingAgentId, kind: 'text', text: 'Overdue invoices incur a late fee; the late fee is waived for autopay customers.' }, noWorkflow);
      await ingest(acts, org.orgId, a.id);
      await ingest(acts, org.orgId, b.id);
      const res = await t.call('POST', `/agents/${siblingAgentId}/knowledge/preview`, { key: org.key, json: { query: 'late fee on invoices' } });
      const ids = res.body.data.results.map((r: any) => r.source.id);
      expect(ids.slice(0, 2)).to.deep.equal([b.id, a.id]);
      const scores = res.body.data.results.map((r: any) => r.score);
      expect(scores[0]).to.be.greaterThan(scores[1]);
    });

    it('fails a URL source whose host is private (SSRF refusal) as non-retryable, with the reason, without fetching', async () => {
      const before = pageHits['/hours.html'] ?? 0;
      const src = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/hours.html` }, noWorkflow);
      const outcome = await ingest(guardedActs, org.orgId, src.id);
      expect(outcome.status).to.equal('failed');
      expect(outcome.error!.type).to.equal('ssrf_refused');
      expect(outcome.error!.nonRetryable).to.equal(true);
      expect(pageHits['/hours.html'] ?? 0).to.equal(before);
      const failed = (await getSource(t.db, org.orgId, src.id))!;
      expect(failed.status).to.equal('failed');
      expect(failed.failureCode).to.equal('ssrf_refused');
      expect(failed.failureReason).to.match(/loopback/);
    });

    it('fails for good on 4xx and unsupported content, but retries 5xx', async () => {
      const missing = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/missing` }, noWorkflow);
      const gone = await ingest(acts, org.orgId, missing.id);
      expect([gone.error!.type, gone.error!.nonRetryable]).to.deep.equal(['http_status', true]);

      const image = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/logo.png` }, noWorkflow);
      const img = await ingest(acts, org.orgId, image.id);
      expect([img.error!.type, img.error!.nonRetryable]).to.deep.equal(['unsupported_content', true]);
      expect((await getSource(t.db, org.orgId, image.id))!.failureCode).to.equal('unsupported_content');

      const busy = await createSource(t.db, org.orgId, { agentId, kind: 'url', url: `${base}/busy` }, noWorkflow);
      await acts.startKnowledgeIngestion({ orgId: org.orgId, sourceId: busy.id });
      try {
        await acts.extractKnowledgeSource({ orgId: org.orgId, sourceId: busy.id });
        expect.fail('expected a failure');
      } catch (err) {
        expect(err).to.be.instanceOf(ApplicationFailure);
        expect((err as ApplicationFailure).nonRetryable).to.equal(false);
      }
      expect((await getSource(t.db, org.orgId, busy.id))!.status).to.equal('processing');
    });

    it('fails a file source whose upload disappeared before ingestion with file_expired', async () => {
      const upload = await createUpload(t.db, org.orgId, { filename: 'gone.txt', contentType: 'text/plain', data: Buffer.from('soon gone') });
      const src = await createSource(t.db, org.orgId, { agentId, kind: 'file', fileId: upload.id }, noWorkflow);
      await t.db('uploads').where({ id: upload.id }).delete();
      const outcome = await ingest(acts, org.orgId, src.id);
      expect(outcome.error!.type).to.equal('file_expired');
    });
  });

  describe('GET /agents/{agentId}/knowledge/sources', () => {
    it('lists the sources oldest first with status, failure reason and chunk count, paginated by cursor', async () => {
      const agent = (await createAgent(t.db, org.orgId, { name: 'Paging desk' })).id;
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await createSource(t.db, org.orgId, { agentId: agent, kind: 'text', text: `Fact number ${i}.` }, noWorkflow));
      await ingest(acts, org.orgId, made[0].id);
      const first = await t.call('GET', `/agents/${agent}/knowledge/sources?limit=2`, { key: org.key });
      expect(first.status).to.equal(200);
      expect(first.body.data.items.map((s: any) => s.id)).to.deep.equal([made[0].id, made[1].id]);
      expect(first.body.data.hasMore).to.equal(true);
      expect(first.body.data.items[0]).to.include({ status: 'ready', chunkCount: 1, kind: 'text', agentId: agent, failureReason: null });
      expect(first.body.data.items[1]).to.include({ status: 'pending', chunkCount: 0 });
      // A source added meanwhile does not shift the next page.
      made.push(await createSource(t.db, org.orgId, { agentId: agent, kind: 'text', text: 'Fact number 5.' }, noWorkflow));
      const second = await t.call('GET', `/agents/${agent}/knowledge/sources?limit=2&cursor=${encodeURIComponent(first.body.data.nextCursor)}`, { key: org.key });
      expect(second.body.data.items.map((s: any) => s.id)).to.deep.equal([made[2].id, made[3].id]);
      const rest = await t.call('GET', `/agents/${agent}/knowledge/sources?limit=10&cursor=${encodeURIComponent(second.body.data.nextCursor)}`, { key: org.key });
      expect(rest.body.data.items.map((s: any) => s.id)).to.deep.equal([made[4].id, made[5].id]);
      expect(rest.body.data).to.include({ hasMore: false, nextCursor: null });
    });

    it("answers 404 for another organization's agent and 400 for a bad limit", async () => {
      expect((await t.call('GET', `/agents/${otherAgentId}/knowledge/sources`, { key: org.key })).status).to.equal(404);
      const bad = await t.call('GET', `/agents/${agentId}/knowledge/sources?limit=500`, { key: org.key });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors[0].field).to.equal('limit');
    });

    it('requires knowledge:read', async () => {
      const weak = await t.org('Weak Org', ['agents:read']);
      const agent = (await createAgent(t.db, weak.orgId, { name: 'A' })).id;
      expect((await t.call('GET', `/agents/${agent}/knowledge/sources`, { key: weak.key })).status).to.equal(403);
    });
  });

  describe('POST /agents/{agentId}/knowledge/preview', () => {
    it("never returns another organization's or another agent's chunks", async () => {
      const theirs = await createSource(t.db, other.orgId, { agentId: otherAgentId, kind: 'text', text: 'Zebra crossings are painted weekly.' }, noWorkflow);
      await ingest(acts, other.orgId, theirs.id);
      const sibling = await createSource(t.db, org.orgId, { agentId: siblingAgentId, kind: 'text', text: 'Zebra stripes are unique.' }, noWorkflow);
      await ingest(acts, org.orgId, sibling.id);
      const mine = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'zebra' } });
      expect(mine.body.data.results).to.deep.equal([]);
      const theirsAsMe = await t.call('POST', `/agents/${otherAgentId}/knowledge/preview`, { key: org.key, json: { query: 'zebra' } });
      expect(theirsAsMe.status).to.equal(404);
      const theirsAsThem = await t.call('POST', `/agents/${otherAgentId}/knowledge/preview`, { key: other.key, json: { query: 'zebra' } });
      expect(theirsAsThem.body.data.results).to.have.length(1);
    });

    it('leaves out sources that are not ready', async () => {
      const pending = await createSource(t.db, org.orgId, { agentId, kind: 'text', text: 'Quokkas live on Rottnest Island.' }, noWorkflow);
      const res = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'quokka' } });
      expect(res.body.data.results).to.deep.equal([]);
      await ingest(acts, org.orgId, pending.id);
      const after = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'quokka' } });
      expect(after.body.data.results).to.have.length(1);
    });

    it('answers no results for a query of stop words and quotes, and 400 for an empty query or a bad limit', async () => {
      const stop = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: "the and of it's \\ ' \"" } });
      expect(stop.status).to.equal(200);
      expect(stop.body.data).to.deep.equal({ query: "the and of it's \\ ' \"", results: [] });
      const empty = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: '' } });
      expect(empty.status).to.equal(400);
      expect(empty.body.errors[0].field).to.equal('query');
      const limit = await t.call('POST', `/agents/${agentId}/knowledge/preview`, { key: org.key, json: { query: 'x', limit: 0 } });
      expect(limit.body.errors[0].field).to.equal('limit');
    });
  });
});
