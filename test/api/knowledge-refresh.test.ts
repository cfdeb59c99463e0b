/**
 * Refresh and crawl of URL knowledge sources (docs/knowledge.md "Refresh and crawl") against a loopback site whose
 * pages change between fetches, over real Postgres, without Temporal: the activities run inline in the order the
 * workflows call them (workflows/knowledgeIngestion.ts, workflows/knowledgeRefresh.ts). The workflows themselves,
 * the schedule and the HTTP routes are driven in test/workflows/knowledgeRefresh.test.ts.
 */
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { createAgent } from '../../db/repositories/agents';
import { createSource, getSource, searchChunks, type NewKnowledgeSource } from '../../db/repositories/knowledge';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createKnowledgeRefreshActivities } from '../../activities/knowledgeRefresh';
import { createHttpClient, parseAllowList, type HttpClient } from '../../providers/http';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import { createLogger } from '../../runtime';
import { htmlPage, startSite, type TestSite } from './knowledge-site';
import { ingestInline } from '../helpers/knowledge';

const MB = 1024 * 1024;

describe('knowledge sources that refresh and crawl (activities inline)', function () {
  this.timeout(60_000);
  let t: TestApi;
  let orgId: string;
  let site: TestSite;
  let http: HttpClient;
  let acts: ReturnType<typeof createKnowledgeActivities>;
  let refresh: ReturnType<typeof createKnowledgeRefreshActivities>;
  let deps: { db: TestApi['db']; config: TestApi['config']; logger: ReturnType<typeof createLogger> };

  before(async () => {
    t = await startTestApi('knowledge_refresh');
    orgId = (await t.org('Refresh Org')).orgId;
    site = await startSite();
    // The guard admits loopback only because the test says so (HTTP_ALLOW_PRIVATE_HOSTS in a deployment); 25 MiB cap.
    http = createHttpClient({ allow: parseAllowList('127.0.0.1'), headersTimeoutMs: 3000, connectTimeoutMs: 2000 });
    deps = { db: t.db, config: t.config, logger: createLogger('silent') };
    acts = createKnowledgeActivities(deps, { http });
    refresh = createKnowledgeRefreshActivities(deps, { http });
  });
  after(async () => {
    await http?.close();
    await site?.close();
    await t?.close();
  });

  /** A new agent of the organization (each test searches its own). */
  let agents = 0;
  const newAgent = async (name = 'Desk') => (await createAgent(t.db, orgId, { name: `${name} ${++agents}` })).id;

  /** Creates a source and runs its ingestion inline (the crawl step for a crawling source). */
  async function ingest(input: NewKnowledgeSource): Promise<string> {
    const src = await createSource(t.db, orgId, input, async () => undefined);
    await ingestInline(acts, { orgId, sourceId: src.id }, (ref) => refresh.refreshKnowledgeSource({ ...ref, ingestion: true }));
    return src.id;
  }

  const chunksOf = async (sourceId: string): Promise<{ id: string; content: string; page_id: string | null }[]> =>
    t.db('knowledge_chunks').where({ org_id: orgId, source_id: sourceId }).orderBy(['page_id', 'ordinal']).select('id', 'content', 'page_id');
  const text = (chunks: { content: string }[]) => chunks.map((c) => c.content).join('\n');

  describe('a single page', () => {
    it('sends its ETag and Last-Modified back, records a 304 as unchanged and keeps the chunks', async () => {
      site.set('/hours.html', htmlPage('Hours', 'The clinic opens at eight in the morning.'));
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${site.base}/hours.html`, refreshEveryHours: 1 });
      const before = await chunksOf(id);
      expect((await getSource(t.db, orgId, id))!.status).to.equal('ready');
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'unchanged', status: 'ready', statusCode: 304 });
      const last = site.hitsOf('/hours.html').at(-1)!;
      expect(last.ifNoneMatch).to.match(/^"[0-9a-f]{16}"$/);
      expect(last.ifModifiedSince).to.equal(new Date('2026-01-01T00:00:00Z').toUTCString());
      expect(last.status).to.equal(304);
      const src = (await getSource(t.db, orgId, id))!;
      expect(src.lastCheck).to.include({ outcome: 'unchanged', statusCode: 304, failureCode: null });
      expect(src.refresh).to.deep.equal({ everyHours: 1 });
      expect((await chunksOf(id)).map((c) => c.id)).to.deep.equal(before.map((c) => c.id));
    });

    it('calls the same bytes without validators unchanged by their SHA-256, without re-indexing', async () => {
      site.set('/plain.txt', { type: 'text/plain', body: 'Parking is free behind the building.', noValidators: true });
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${site.base}/plain.txt` });
      const before = await chunksOf(id);
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'unchanged', statusCode: 200 });
      expect(site.hitsOf('/plain.txt').at(-1)!.ifNoneMatch).to.equal(null);
      expect((await chunksOf(id)).map((c) => c.id)).to.deep.equal(before.map((c) => c.id));
    });

    it('re-indexes a changed page; the old chunks serve until the new set is swapped in one transaction', async () => {
      // Embeddings are the last step before the swap: holding them open shows what readers see meanwhile.
      let reached!: () => void;
      const building = new Promise<void>((r) => (reached = r));
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const gated: EmbeddingsProvider = {
        name: 'gated',
        model: 'gated-test@2',
        async embed(texts) {
          reached();
          await gate;
          return texts.map(() => [1, 0]);
        },
      };
      const otherOrg = (await t.org('Swap Org')).orgId;
      const agentId = (await createAgent(t.db, otherOrg, { name: 'Swap desk' })).id;
      const gatedActs = createKnowledgeRefreshActivities(deps, { http, embeddings: gated });
      site.set('/menu.html', htmlPage('Menu', 'Our soup of the day is tomato basil.'));
      const src = await createSource(t.db, otherOrg, { agentId, kind: 'url', url: `${site.base}/menu.html` }, async () => undefined);
      const plain = createKnowledgeActivities(deps, { http, embeddings: { name: 'none', model: null, embed: async () => [] } });
      expect((await ingestInline(plain, { orgId: otherOrg, sourceId: src.id })).status).to.equal('ready');
      const search = (q: string) => searchChunks(t.db, otherOrg, agentId, q, 5);
      expect((await search('tomato'))[0].content).to.include('tomato basil');

      site.set('/menu.html', htmlPage('Menu', 'Our soup of the day is mushroom barley.'));
      const running = gatedActs.refreshKnowledgeSource({ orgId: otherOrg, sourceId: src.id });
      await building;
      // The new chunk set is being built: the old chunks still answer, the new text is not searchable yet.
      expect((await search('tomato')).map((h) => h.content).join()).to.include('tomato basil');
      expect(await search('mushroom')).to.deep.equal([]);
      expect((await getSource(t.db, otherOrg, src.id))!.status).to.equal('ready');
      release();
      const out = await running;
      expect(out).to.include({ outcome: 'updated', status: 'ready', statusCode: 200 });
      expect(await search('tomato')).to.deep.equal([]);
      expect((await search('mushroom'))[0].content).to.include('mushroom barley');
      const vectors = await t.db('knowledge_chunk_embeddings').where({ org_id: otherOrg, source_id: src.id, model: 'gated-test@2' }).count({ n: '*' }).first();
      const chunks = await t.db('knowledge_chunks').where({ org_id: otherOrg, source_id: src.id }).count({ n: '*' }).first();
      expect(Number(vectors!.n)).to.equal(Number(chunks!.n)).and.be.greaterThan(0);
      const after = (await getSource(t.db, otherOrg, src.id))!;
      expect(after.lastCheck).to.include({ outcome: 'updated', statusCode: 200 });
      const events = await t.db('events').where({ org_id: otherOrg, type: 'knowledge.source.updated' }).orderBy('created_at').select('data');
      expect(events.at(-1)!.data).to.include({ sourceId: src.id, status: 'ready' });
    });

    it('records an unreachable site as a failed check and keeps serving the indexed chunks', async () => {
      const gone = await startSite({ '/about.html': htmlPage('About', 'Founded in nineteen ninety by two dentists.') });
      const agentId = await newAgent();
      const id = await ingest({ agentId, kind: 'url', url: `${gone.base}/about.html` });
      const before = await chunksOf(id);
      expect(before.length).to.be.greaterThan(0);
      await gone.close();
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'failed', status: 'ready', statusCode: null, failureCode: 'network' });
      const src = (await getSource(t.db, orgId, id))!;
      expect(src).to.include({ status: 'ready', failureCode: null });
      expect(src.lastCheck).to.include({ outcome: 'failed', failureCode: 'network' });
      expect((await chunksOf(id)).map((c) => c.id)).to.deep.equal(before.map((c) => c.id));
      expect((await searchChunks(t.db, orgId, agentId, 'dentists', 3))[0].content).to.include('two dentists');
    });

    it('stops reading a 50 MB page at the size cap (too_large) and keeps the chunks', async () => {
      site.set('/grows.html', htmlPage('Grows', 'Small today: the waiting room has six chairs.'));
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${site.base}/grows.html` });
      const before = await chunksOf(id);
      site.set('/grows.html', { type: 'text/html', stream: 50 * MB });
      const started = Date.now();
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'failed', status: 'ready', failureCode: 'too_large' });
      expect(Date.now() - started).to.be.below(20_000);
      expect((await chunksOf(id)).map((c) => c.id)).to.deep.equal(before.map((c) => c.id));
      expect(text(await chunksOf(id))).to.include('six chairs');
    });

    it('records a page that turned into an unsupported type as failed (unsupported_content) and keeps the chunks', async () => {
      site.set('/swap.html', htmlPage('Swap', 'Walk-ins are welcome on Fridays.'));
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${site.base}/swap.html` });
      site.set('/swap.html', { type: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]) });
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'failed', status: 'ready', statusCode: 200, failureCode: 'unsupported_content' });
      expect(text(await chunksOf(id))).to.include('Walk-ins are welcome');
    });

    it('retries a failed source: the refresh fetches it in full and makes it ready', async () => {
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${site.base}/later.html` });
      expect((await getSource(t.db, orgId, id))!).to.include({ status: 'failed', failureCode: 'http_status' });
      site.set('/later.html', htmlPage('Later', 'Teeth whitening takes one hour.'));
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'updated', status: 'ready' });
      expect(site.hitsOf('/later.html').at(-1)!.ifNoneMatch).to.equal(null);
      const src = (await getSource(t.db, orgId, id))!;
      expect(src).to.include({ status: 'ready', failureCode: null, failureReason: null, format: 'html' });
      expect(src.chunkCount).to.be.greaterThan(0);
    });

    it('skips a file or text source and a source still ingesting', async () => {
      const textSrc = await createSource(t.db, orgId, { agentId: await newAgent(), kind: 'text', text: 'hello there' }, async () => undefined);
      expect(await refresh.refreshKnowledgeSource({ orgId, sourceId: textSrc.id })).to.include({ outcome: 'skipped' });
      const pending = await createSource(t.db, orgId, { agentId: await newAgent(), kind: 'url', url: `${site.base}/hours.html` }, async () => undefined);
      expect(await refresh.refreshKnowledgeSource({ orgId, sourceId: pending.id })).to.include({ outcome: 'skipped', status: 'pending' });
      expect(await refresh.refreshKnowledgeSource({ orgId, sourceId: 'ks_missing' })).to.include({ outcome: 'gone' });
    });
  });

  describe('a crawl', () => {
    let crawlSite: TestSite;
    before(async () => {
      crawlSite = await startSite();
      const b = crawlSite.base;
      crawlSite.set('/robots.txt', { type: 'text/plain', body: `User-agent: *\nDisallow: /docs/private/\n\nSitemap: ${b}/sitemap.xml\n` });
      // A sitemap index that lists itself (a loop) and a page sitemap.
      crawlSite.set('/sitemap.xml', {
        type: 'application/xml',
        body: `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${b}/sitemap.xml</loc></sitemap><sitemap><loc>${b}/sitemap-pages.xml</loc></sitemap></sitemapindex>`,
      });
      crawlSite.set('/sitemap-pages.xml', {
        type: 'application/xml',
        body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${['/docs/billing.html', '/docs/private/salaries.html', '/blog/news.html', '/docs/drafts/next.html']
          .map((p) => `<url><loc>${b}${p}</loc></url>`)
          .join('')}<url><loc>http://localhost:1/docs/elsewhere.html</loc></url></urlset>`,
      });
      crawlSite.set('/docs/', htmlPage('Docs', 'Welcome to the clinic handbook.', ['/docs/hours.html', '/docs/logo.png', '/docs/huge.html', '/docs/private/keys.html', 'http://localhost:1/docs/x.html', 'mailto:desk@example.com']));
      crawlSite.set('/docs/hours.html', htmlPage('Hours', 'Open weekdays from eight to six.', ['/docs/']));
      crawlSite.set('/docs/billing.html', htmlPage('Billing', 'Invoices are emailed monthly.'));
      crawlSite.set('/docs/drafts/next.html', htmlPage('Draft', 'Unpublished draft text.'));
      crawlSite.set('/docs/private/salaries.html', htmlPage('Private', 'Secret salaries.'));
      crawlSite.set('/blog/news.html', htmlPage('News', 'Blog news.'));
      crawlSite.set('/docs/logo.png', { type: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]) });
      crawlSite.set('/docs/huge.html', { type: 'text/html', stream: 50 * MB });
    });
    after(async () => crawlSite?.close());

    const crawl = { maxPages: 20, sameOrigin: true as const, includePaths: ['/docs/'], excludePaths: ['/docs/drafts/'] };
    const pagesOf = async (sourceId: string) =>
      Object.fromEntries(
        (await t.db('knowledge_source_pages').where({ org_id: orgId, source_id: sourceId }).select('url', 'status', 'failure_code', 'chunk_count', 'last_outcome')).map((p: any) => [
          p.url.replace(crawlSite.base, ''),
          { status: p.status, failureCode: p.failure_code, chunks: p.chunk_count, outcome: p.last_outcome },
        ]),
      );

    it('indexes the pages of the sitemap and links in scope, each with its own status, honouring robots.txt', async () => {
      const agentId = await newAgent('Crawl desk');
      const id = await ingest({ agentId, kind: 'url', url: `${crawlSite.base}/docs/`, crawl });
      const src = (await getSource(t.db, orgId, id))!;
      expect(src).to.include({ status: 'ready' });
      expect(src.crawl).to.deep.equal(crawl);
      expect(src.lastCheck).to.include({ outcome: 'updated', statusCode: 200 });
      expect(src.lastCheck!.pages).to.deep.equal({ checked: 5, updated: 3, unchanged: 0, failed: 2 });
      const pages = await pagesOf(id);
      expect(Object.keys(pages).sort()).to.deep.equal(['/docs/', '/docs/billing.html', '/docs/hours.html', '/docs/huge.html', '/docs/logo.png']);
      expect(pages['/docs/hours.html']).to.include({ status: 'ready', outcome: 'updated' });
      expect(pages['/docs/logo.png']).to.include({ status: 'failed', failureCode: 'unsupported_content', chunks: 0 });
      expect(pages['/docs/huge.html']).to.include({ status: 'failed', failureCode: 'too_large' });
      // robots.txt disallows /docs/private/; /blog/ is not included, /docs/drafts/ excluded, localhost:1 another origin.
      for (const p of ['/docs/private/salaries.html', '/docs/private/keys.html', '/blog/news.html', '/docs/drafts/next.html']) expect(crawlSite.hitsOf(p), p).to.have.length(0);
      // The sitemap index that lists itself is read once.
      expect(crawlSite.hitsOf('/sitemap.xml')).to.have.length(1);
      const all = text(await chunksOf(id));
      expect(all).to.include('Invoices are emailed monthly').and.include('Open weekdays').and.not.include('Secret salaries');
      expect(src.chunkCount).to.equal((await chunksOf(id)).length);
      expect((await searchChunks(t.db, orgId, agentId, 'invoices', 3))[0].source.id).to.equal(id);
    });

    it('fetches at most maxPages pages', async () => {
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${crawlSite.base}/docs/`, crawl: { ...crawl, maxPages: 2 } });
      expect(Object.keys(await pagesOf(id))).to.have.length(2);
      expect((await getSource(t.db, orgId, id))!.lastCheck!.pages).to.include({ checked: 2 });
    });

    it('re-checks each page conditionally and swaps only the chunks of the page that changed', async () => {
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${crawlSite.base}/docs/`, crawl: { ...crawl, excludePaths: ['/docs/drafts/', '/docs/huge.html'] } });
      const before = await chunksOf(id);
      const idsOfPage = async (chunks: typeof before, path: string) => {
        const page = await t.db('knowledge_source_pages').where({ source_id: id, url: `${crawlSite.base}${path}` }).first('id');
        return chunks.filter((c) => c.page_id === page.id).map((c) => c.id);
      };
      crawlSite.set('/docs/billing.html', htmlPage('Billing', 'Invoices are now sent every two weeks.'));
      const out = await refresh.refreshKnowledgeSource({ orgId, sourceId: id });
      expect(out).to.include({ outcome: 'updated', status: 'ready' });
      expect(out.pages).to.deep.equal({ checked: 4, updated: 1, unchanged: 2, failed: 1 });
      const after = await chunksOf(id);
      expect(await idsOfPage(after, '/docs/hours.html')).to.deep.equal(await idsOfPage(before, '/docs/hours.html'));
      expect(await idsOfPage(after, '/docs/billing.html')).to.not.deep.equal(await idsOfPage(before, '/docs/billing.html'));
      expect(text(after)).to.include('every two weeks').and.not.include('emailed monthly');
      expect(crawlSite.hitsOf('/docs/hours.html').at(-1)).to.include({ status: 304 });
      crawlSite.set('/docs/billing.html', htmlPage('Billing', 'Invoices are emailed monthly.'));
    });

    it('marks a crawl of an unreachable site failed with the reason, indexing nothing', async () => {
      const id = await ingest({ agentId: await newAgent(), kind: 'url', url: 'http://127.0.0.1:1/docs/', crawl });
      const src = (await getSource(t.db, orgId, id))!;
      expect(src).to.include({ status: 'failed', failureCode: 'network', chunkCount: 0 });
      expect(src.lastCheck).to.include({ outcome: 'failed', failureCode: 'network' });
    });

    it('marks a crawl failed when robots.txt disallows every page', async () => {
      const closed = await startSite({ '/robots.txt': { type: 'text/plain', body: 'User-agent: *\nDisallow: /\n' }, '/': htmlPage('Home', 'Home page.') });
      try {
        const id = await ingest({ agentId: await newAgent(), kind: 'url', url: `${closed.base}/`, crawl: { maxPages: 5 } });
        expect((await getSource(t.db, orgId, id))!).to.include({ status: 'failed', failureCode: 'no_pages' });
        expect(closed.hitsOf('/')).to.have.length(0);
      } finally {
        await closed.close();
      }
    });
  });
});
