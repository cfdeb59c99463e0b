/**
 * Refresh and crawl of URL knowledge sources (docs/knowledge.md "Refresh and crawl"; workflow
 * `knowledge-refresh/{sourceId}`, workflows/knowledgeRefresh.ts, and the crawl step of knowledge ingestion).
 *
 * A single-document source is fetched with a conditional GET (RFC 9110 §13.1: its ETag as If-None-Match, its
 * Last-Modified as If-Modified-Since): a 304, or a body whose SHA-256 equals the indexed one, is `unchanged`;
 * otherwise the text is extracted, chunked and embedded first and the chunks swapped in one transaction, so the
 * old chunks serve until the new ones are ready. A crawling source does the same per page, for the pages found
 * from its start URL, its sitemaps (robots.txt `Sitemap:` lines and /sitemap.xml; a sitemap index is followed at
 * most MAX_SITEMAPS files deep, so one that points at itself ends) and the links of its HTML pages, same origin
 * only, robots.txt honoured (RFC 9309), at most `maxPages` fetched. Every fetch goes through the SSRF-guarded
 * helper (HTTP_ALLOW_PRIVATE_HOSTS) with its body-size cap enforced while streaming.
 *
 * Bad input never loses what is indexed: an unreachable site, a 5xx, an oversize or unsupported page is recorded
 * as a `failed` check (on the source, and on the page) and the chunks already indexed stay.
 */
import { Context, heartbeat } from '@temporalio/activity';
import robotsParser from 'robots-parser';
import { chunkText } from '../domain/knowledge/chunk';
import { extractDocument, UnsupportedContentError } from '../domain/knowledge/extract';
import { contentHash, crawlScope, htmlLinks, MAX_CRAWL_PAGES, MAX_SITEMAPS, normalizeUrl, parseSitemap } from '../domain/knowledge/crawl';
import { sourceTextSearchConfig } from '../domain/knowledge/language';
import type { KnowledgeCrawl, KnowledgeSourceCheck, KnowledgeSourceStatus } from '../schemas/types/knowledge';
import {
  ensurePage,
  getRefreshTarget,
  knownPages,
  recordPageCheck,
  recordSourceCheck,
  swapDocumentChunks,
  type DocumentVersion,
  type FetchValidators,
  type RefreshTarget,
  type SourceCheck,
} from '../db/repositories/knowledgeRefresh';
import type { OnSourceChange } from '../db/repositories/knowledge';
import { agentLanguage } from '../db/repositories/knowledgeEmbeddings';
import { emitEvent } from '../events/emit';
import { createHttpClient, HttpFetchError, type HttpClient, type HttpResponse } from '../providers/http';
import { configuredEmbeddings } from '../services/knowledge/retrieval';
import { embedForIndex } from './knowledge';
import { removeKnowledgeRefreshSchedule } from '../services/knowledge/refreshSchedule';
import type { ActivityDeps } from './index';
import type { KnowledgeActivityOptions, KnowledgeSourceRef } from './knowledge';

const ACCEPT = 'text/html, application/xhtml+xml, application/pdf, text/markdown, text/plain;q=0.9, */*;q=0.1';
/** Product token matched against robots.txt `User-agent` lines (RFC 9309 §2.2.1). */
export const ROBOTS_PRODUCT_TOKEN = 'agent-control-plane';
/** Bytes of robots.txt parsed (RFC 9309 §2.5: at least 500 KiB). */
const ROBOTS_MAX_BYTES = 512 * 1024;

/** Input of {@link KnowledgeRefreshActivities.refreshKnowledgeSource}. */
export interface KnowledgeRefreshInput extends KnowledgeSourceRef {
  /** True when the ingestion workflow crawls a new source (status `processing`); a refresh skips such a source. */
  ingestion?: boolean;
}

/** What one refresh did. */
export interface KnowledgeRefreshResult {
  /** `gone`: the source was deleted (its schedule is removed); `skipped`: not a URL source, or still ingesting. */
  outcome: KnowledgeSourceCheck['outcome'] | 'gone' | 'skipped';
  /** The source's status after the check. */
  status: KnowledgeSourceStatus | null;
  statusCode: number | null;
  /** Chunks of the source after the check. */
  chunkCount?: number;
  failureCode?: string | null;
  failureReason?: string | null;
  pages?: KnowledgeSourceCheck['pages'];
}

/** A failed fetch → the check's failure fields. */
function fetchFailure(err: HttpFetchError): { statusCode: number | null; failureCode: string; failureReason: string } {
  return { statusCode: err.status ?? null, failureCode: err.code, failureReason: err.message };
}

function urlFilename(url: string): string | null {
  try {
    return decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '') || null;
  } catch {
    return null;
  }
}

/** Validators of a response (null for an absent one). */
function validatorsOf(res: HttpResponse, hash: string | null): FetchValidators {
  return { etag: res.etag ?? null, lastModified: res.lastModified ?? null, contentHash: hash };
}

/**
 * Builds the refresh activities.
 * @param opts.http the guarded client (default: configured from the environment); `chunking`, `embeddings` as for ingestion
 */
export function createKnowledgeRefreshActivities(deps: ActivityDeps, opts: KnowledgeActivityOptions = {}) {
  const { db } = deps;
  let http = opts.http;
  const client = (): HttpClient => (http ??= createHttpClient());
  const notify = (orgId: string): OnSourceChange => (trx, change) => emitEvent(trx, orgId, 'knowledge.source.updated', change);
  // Composed when the worker starts, as ingestion's (activities/knowledge.ts).
  const provider = opts.embeddings ?? configuredEmbeddings();

  /**
   * Extracts, chunks and embeds a fetched document (the new chunk set, built before any swap).
   * @returns the version, or the failure (unsupported or empty content) to record
   */
  async function buildVersion(target: RefreshTarget & { orgId: string }, res: HttpResponse, hash: string): Promise<DocumentVersion | { failureCode: string; failureReason: string }> {
    let doc;
    try {
      doc = await extractDocument({ bytes: res.body, contentType: res.contentTypeHeader, filename: urlFilename(res.url) });
    } catch (err) {
      if (err instanceof UnsupportedContentError) return { failureCode: 'unsupported_content', failureReason: err.message };
      return { failureCode: 'extraction_failed', failureReason: err instanceof Error ? err.message : String(err) };
    }
    if (!doc.text.trim()) return { failureCode: 'empty_content', failureReason: `${res.url}: the document contains no text` };
    const chunks = chunkText(doc.text, opts.chunking);
    const textSearchConfig = sourceTextSearchConfig(doc.text, await agentLanguage(db, target.orgId, target.agentId));
    const embeddings = await embed(target.id, chunks.map((c) => c.content));
    return {
      chunks,
      textSearchConfig,
      embeddings,
      format: doc.format,
      title: doc.title,
      contentType: res.contentType,
      text: doc.text,
      httpStatus: res.status,
      validators: validatorsOf(res, hash),
    };
  }

  /** Vectors of the chunks, as ingestion makes them (./knowledge.ts embedForIndex). */
  const embed = (sourceId: string, texts: string[]) =>
    embedForIndex({ db, logger: deps.logger, provider }, texts, { sourceId }, 'embedding the refreshed chunks failed; they are indexed for full-text search only');

  /** One check of a single-document source. */
  async function checkDocument(target: RefreshTarget & { orgId: string }): Promise<SourceCheck> {
    // Validators are sent only for a copy that is indexed: a failed source is fetched in full.
    const conditional = target.status === 'ready' ? { etag: target.etag, lastModified: target.lastModified } : undefined;
    let res: HttpResponse;
    try {
      res = await client().get(target.url!, { accept: ACCEPT, conditional });
    } catch (err) {
      if (err instanceof HttpFetchError) return { outcome: 'failed', ...fetchFailure(err) };
      throw err;
    }
    if (res.status === 304) return { outcome: 'unchanged', statusCode: 304, validators: { etag: res.etag ?? target.etag, lastModified: res.lastModified ?? target.lastModified } };
    const hash = contentHash(res.body);
    if (target.status === 'ready' && hash === target.contentHash) return { outcome: 'unchanged', statusCode: res.status, validators: validatorsOf(res, hash) };
    const version = await buildVersion(target, res, hash);
    if ('failureCode' in version) return { outcome: 'failed', statusCode: res.status, ...version };
    const n = await swapDocumentChunks(db, target.orgId, target.id, null, version);
    if (n === undefined) return { outcome: 'failed', statusCode: res.status, failureCode: 'source_deleted', failureReason: 'The source was deleted during the refresh' };
    return { outcome: 'updated', statusCode: res.status };
  }

  /** robots.txt of the start URL's origin (RFC 9309 §2.3.1: 4xx → no rules; 5xx or unreachable → crawl nothing). */
  async function robotsOf(start: string): Promise<{ allowed(url: string): boolean; sitemaps: string[] } | { failure: SourceCheck }> {
    const robotsUrl = new URL('/robots.txt', start).toString();
    let text = '';
    try {
      const res = await client().get(robotsUrl, { accept: 'text/plain' });
      text = res.body.subarray(0, ROBOTS_MAX_BYTES).toString('utf8');
    } catch (err) {
      if (!(err instanceof HttpFetchError)) throw err;
      const clientError = err.code === 'http_status' && err.status !== undefined && err.status >= 400 && err.status < 500;
      if (!clientError) {
        const f = fetchFailure(err);
        return { failure: { outcome: 'failed', ...f, failureCode: err.code === 'http_status' ? 'robots_unavailable' : f.failureCode, failureReason: `robots.txt: ${f.failureReason}` } };
      }
    }
    const robots = robotsParser(robotsUrl, text);
    return { allowed: (url) => robots.isAllowed(url, ROBOTS_PRODUCT_TOKEN) !== false, sitemaps: robots.getSitemaps() };
  }

  /** Page URLs listed by the site's sitemaps; a sitemap index is followed, each file read once, at most MAX_SITEMAPS. */
  async function sitemapPages(start: string, listed: string[], inScope: (url: string) => boolean): Promise<string[]> {
    const origin = new URL(start).origin;
    const queue = [...listed, new URL('/sitemap.xml', start).toString()].map((u) => normalizeUrl(u)).filter((u): u is string => !!u && new URL(u).origin === origin);
    const read = new Set<string>();
    const pages: string[] = [];
    while (queue.length && read.size < MAX_SITEMAPS) {
      const url = queue.shift()!;
      if (read.has(url)) continue;
      read.add(url);
      heartbeatIfActivity({ sitemaps: read.size });
      let body: string;
      try {
        body = (await client().get(url, { accept: 'application/xml, text/xml;q=0.9, */*;q=0.1' })).body.toString('utf8');
      } catch (err) {
        if (err instanceof HttpFetchError) continue; // a missing or broken sitemap: links still find pages
        throw err;
      }
      const parsed = parseSitemap(body, url);
      for (const p of parsed.pages) if (inScope(p)) pages.push(p);
      for (const s of parsed.sitemaps) if (!read.has(s) && new URL(s).origin === origin) queue.push(s);
    }
    return pages;
  }

  /** One check of a crawling source: every page in scope, up to `maxPages` fetched. */
  async function checkCrawl(target: RefreshTarget & { orgId: string }, crawl: KnowledgeCrawl): Promise<SourceCheck> {
    const start = normalizeUrl(target.url!);
    if (!start) return { outcome: 'failed', statusCode: null, failureCode: 'bad_url', failureReason: `"${target.url}" is not an absolute http(s) URL` };
    const scope = crawlScope(start, crawl);
    const robots = await robotsOf(start);
    if ('failure' in robots) return robots.failure;
    const known = new Map((await knownPages(db, target.orgId, target.id)).map((p) => [p.url, p]));
    const queue: string[] = [];
    const seen = new Set<string>();
    const enqueue = (u: string) => {
      if (seen.has(u) || !scope.allows(u)) return;
      seen.add(u);
      queue.push(u);
    };
    enqueue(start);
    for (const u of known.keys()) enqueue(u);
    for (const u of await sitemapPages(start, robots.sitemaps, (u) => scope.allows(u))) enqueue(u);

    const maxPages = Math.min(crawl.maxPages, MAX_CRAWL_PAGES);
    const pages = { checked: 0, updated: 0, unchanged: 0, failed: 0 };
    let startCheck: { statusCode: number | null; failureCode?: string; failureReason?: string } | undefined;
    let firstFailure: { failureCode: string; failureReason: string } | undefined;
    while (queue.length && pages.checked < maxPages) {
      const url = queue.shift()!;
      if (!robots.allowed(url)) continue;
      pages.checked++;
      heartbeatIfActivity(pages);
      const pageId = await ensurePage(db, target.orgId, target.id, url);
      const prior = known.get(url);
      const fail = async (statusCode: number | null, failureCode: string, failureReason: string) => {
        pages.failed++;
        firstFailure ??= { failureCode, failureReason };
        if (url === start) startCheck = { statusCode, failureCode, failureReason };
        await recordPageCheck(db, target.orgId, pageId, { outcome: 'failed', httpStatus: statusCode, failureCode, failureReason });
      };
      let res: HttpResponse;
      try {
        res = await client().get(url, { accept: ACCEPT, conditional: prior?.status === 'ready' ? { etag: prior.etag, lastModified: prior.lastModified } : undefined });
      } catch (err) {
        if (!(err instanceof HttpFetchError)) throw err;
        const f = fetchFailure(err);
        await fail(f.statusCode, f.failureCode, f.failureReason);
        continue;
      }
      if (url === start) startCheck = { statusCode: res.status };
      if (res.status === 304) {
        pages.unchanged++;
        await recordPageCheck(db, target.orgId, pageId, { outcome: 'unchanged', httpStatus: 304, validators: { etag: res.etag ?? prior?.etag ?? null, lastModified: res.lastModified ?? prior?.lastModified ?? null } });
        continue;
      }
      if (!scope.allows(res.url)) {
        await fail(res.status, 'off_origin', `${url} redirected to ${res.url}, outside the crawl`);
        continue;
      }
      if (res.contentType === 'text/html' || res.contentType === 'application/xhtml+xml') {
        for (const link of htmlLinks(res.body.toString('utf8'), res.url)) enqueue(link);
      }
      const hash = contentHash(res.body);
      if (prior?.status === 'ready' && hash === prior.contentHash) {
        pages.unchanged++;
        await recordPageCheck(db, target.orgId, pageId, { outcome: 'unchanged', httpStatus: res.status, validators: { etag: res.etag ?? null, lastModified: res.lastModified ?? null } });
        continue;
      }
      const version = await buildVersion(target, res, hash);
      if ('failureCode' in version) {
        await fail(res.status, version.failureCode, version.failureReason);
        continue;
      }
      if ((await swapDocumentChunks(db, target.orgId, target.id, pageId, version)) === undefined) {
        return { outcome: 'failed', statusCode: null, failureCode: 'source_deleted', failureReason: 'The source was deleted during the crawl' };
      }
      pages.updated++;
    }
    const statusCode = startCheck?.statusCode ?? null;
    if (pages.updated) return { outcome: 'updated', statusCode, pages };
    if (pages.unchanged) return { outcome: 'unchanged', statusCode, pages };
    const failure = startCheck?.failureCode ? { failureCode: startCheck.failureCode, failureReason: startCheck.failureReason! } : (firstFailure ?? { failureCode: 'no_pages', failureReason: 'No page of the site could be crawled (robots.txt or the include/exclude paths left none)' });
    return { outcome: 'failed', statusCode, pages, ...failure };
  }

  return {
    /**
     * Checks a URL source for changes and re-indexes what changed (module docstring), then records the check on
     * the source. A deleted source's schedule is removed. Expected failures (unreachable site, HTTP errors,
     * oversize or unsupported pages) are recorded, not thrown.
     * @throws retryable ApplicationFailure `embeddings_unavailable`; database errors (retried)
     */
    async refreshKnowledgeSource(input: KnowledgeRefreshInput): Promise<KnowledgeRefreshResult> {
      const found = await getRefreshTarget(db, input.orgId, input.sourceId);
      if (!found || found.deleted) {
        await removeScheduleIfActivity(input.sourceId);
        return { outcome: 'gone', status: null, statusCode: null };
      }
      const target = { ...found, orgId: input.orgId };
      const ingesting = target.status === 'pending' || target.status === 'processing';
      if (target.kind !== 'url' || !target.url || (ingesting && !input.ingestion)) return { outcome: 'skipped', status: target.status, statusCode: null };
      const check = target.crawl ? await checkCrawl(target, target.crawl) : await checkDocument(target);
      const after = await recordSourceCheck(db, input.orgId, input.sourceId, check, notify(input.orgId));
      return { outcome: check.outcome, status: after?.status ?? null, chunkCount: after?.chunkCount ?? 0, statusCode: check.statusCode, failureCode: check.failureCode ?? null, failureReason: check.failureReason ?? null, pages: check.pages ?? null };
    },

    /** Records a refresh that failed for good (its activity ran out of attempts) as a failed check; chunks are kept. */
    async failKnowledgeRefresh(input: KnowledgeSourceRef & { code: string; reason: string }): Promise<void> {
      await recordSourceCheck(db, input.orgId, input.sourceId, { outcome: 'failed', statusCode: null, failureCode: input.code, failureReason: input.reason }, notify(input.orgId));
    },
  };
}

/** Heartbeats when running as an activity (a direct call in a test has no activity context). */
function heartbeatIfActivity(details: unknown): void {
  try {
    Context.current();
  } catch {
    return;
  }
  heartbeat(details);
}

/** Removes the source's refresh schedule through the worker's client (nothing outside an activity). */
async function removeScheduleIfActivity(sourceId: string): Promise<void> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return;
  }
  await removeKnowledgeRefreshSchedule(ctx.client, sourceId);
}

/** The activity functions' types, for `proxyActivities` in the workflows. */
export type KnowledgeRefreshActivities = ReturnType<typeof createKnowledgeRefreshActivities>;
