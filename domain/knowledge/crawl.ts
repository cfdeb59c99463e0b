/**
 * Rules of knowledge sources that refresh and crawl themselves (docs/knowledge.md "Refresh and crawl"): the
 * checks of the `refresh` and `crawl` settings, which URLs a crawl may visit (same origin, include/exclude path
 * patterns), links found in an HTML page, `<loc>` entries of a sitemap (sitemaps.org protocol 0.9) and the
 * content hash that decides whether a changed answer needs re-indexing.
 */
import crypto from 'node:crypto';
import { Parser } from 'htmlparser2';
import type { FieldError } from '../errors';
import type { KnowledgeCrawl } from '../../schemas/types/knowledge';

/** Most pages one crawl fetches (the schema's maximum of `crawl.maxPages`). */
export const MAX_CRAWL_PAGES = 500;
/** Sitemaps (index files included) read per crawl: a sitemap index that points at itself or loops stops here. */
export const MAX_SITEMAPS = 20;
/** Page URLs taken from sitemaps per crawl, before filtering. */
export const MAX_SITEMAP_URLS = 5000;

/**
 * Field errors of `refresh` and `crawl` beyond the JSON schema, for a source of `kind`.
 * @returns errors naming `refresh`, `refresh.everyHours`, `crawl`, `crawl.includePaths[i]` …; none when valid
 */
export function refreshCrawlErrors(kind: string, body: { refresh?: unknown; crawl?: unknown }): FieldError[] {
  const errors: FieldError[] = [];
  if (body.refresh !== undefined && kind !== 'url') errors.push({ field: 'refresh', message: 'is only allowed when kind is url' });
  if (body.crawl !== undefined && kind !== 'url') errors.push({ field: 'crawl', message: 'is only allowed when kind is url' });
  const crawl = body.crawl as Partial<KnowledgeCrawl> | undefined;
  if (crawl && typeof crawl === 'object') {
    for (const list of ['includePaths', 'excludePaths'] as const) {
      (crawl[list] ?? []).forEach((p, i) => {
        if (typeof p === 'string' && !p.startsWith('/')) errors.push({ field: `crawl.${list}[${i}]`, message: 'must start with /' });
      });
    }
  }
  return errors;
}

/** `#…` removed; an absolute http(s) URL, or null for anything else (mailto:, javascript:, bad syntax). */
export function normalizeUrl(href: string, base?: string | URL): string | null {
  let u: URL;
  try {
    u = new URL(href.trim(), base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  if (u.username || u.password) return null;
  u.hash = '';
  return u.toString();
}

/** A path pattern (`/docs/`, `/blog/*\/drafts`) → a prefix-matching RegExp (`*` = any characters). */
function pathPattern(p: string): RegExp {
  const escaped = p.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`^${escaped}`);
}

/** Decides which URLs a crawl visits. */
export interface CrawlScope {
  /** True when `url` may be crawled (same origin, included, not excluded). */
  allows(url: string): boolean;
}

/**
 * The scope of a crawl from `startUrl`: the start URL's origin only; a URL's path (with its query) must match one
 * of `includePaths` (all when none) and none of `excludePaths`. The start URL itself is always in scope.
 */
export function crawlScope(startUrl: string, crawl: KnowledgeCrawl): CrawlScope {
  const origin = new URL(startUrl).origin;
  const include = (crawl.includePaths ?? []).map(pathPattern);
  const exclude = (crawl.excludePaths ?? []).map(pathPattern);
  const start = normalizeUrl(startUrl);
  return {
    allows(url) {
      let u: URL;
      try {
        u = new URL(url);
      } catch {
        return false;
      }
      if (u.origin !== origin) return false;
      if (url === start) return true;
      const path = u.pathname + u.search;
      if (include.length && !include.some((r) => r.test(path))) return false;
      return !exclude.some((r) => r.test(path));
    },
  };
}

/**
 * Links of an HTML page: `<a href>` and `<link rel=alternate href>` resolved against the page URL (or its
 * `<base href>`), fragments removed, http(s) only, `rel=nofollow` links left out, each once in document order.
 */
export function htmlLinks(html: string, pageUrl: string): string[] {
  const out = new Set<string>();
  let base: string = pageUrl;
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (name === 'base' && attrs.href) {
          const b = normalizeUrl(attrs.href, pageUrl);
          if (b) base = b;
          return;
        }
        if (name !== 'a' && name !== 'link') return;
        const rel = (attrs.rel ?? '').toLowerCase().split(/\s+/);
        if (rel.includes('nofollow')) return;
        if (name === 'link' && !rel.includes('alternate')) return;
        if (!attrs.href) return;
        const u = normalizeUrl(attrs.href, base);
        if (u) out.add(u);
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return [...out];
}

/** What a sitemap file lists (sitemaps.org protocol 0.9): page URLs (`<urlset>`) and/or other sitemaps (`<sitemapindex>`). */
export interface ParsedSitemap {
  pages: string[];
  sitemaps: string[];
}

/** The `<loc>` entries of a sitemap or sitemap index (XML; anything else yields nothing). */
export function parseSitemap(xml: string, sitemapUrl: string): ParsedSitemap {
  const pages: string[] = [];
  const sitemaps: string[] = [];
  const stack: string[] = [];
  let text = '';
  const parser = new Parser(
    {
      onopentag(name) {
        stack.push(name.replace(/^.*:/, ''));
        text = '';
      },
      ontext(t) {
        text += t;
      },
      onclosetag(name) {
        const local = name.replace(/^.*:/, '');
        if (local === 'loc') {
          const parent = stack[stack.length - 2];
          const u = normalizeUrl(text, sitemapUrl);
          if (u && parent === 'url' && pages.length < MAX_SITEMAP_URLS) pages.push(u);
          if (u && parent === 'sitemap' && sitemaps.length < MAX_SITEMAPS) sitemaps.push(u);
        }
        stack.pop();
        text = '';
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.write(xml);
  parser.end();
  return { pages, sitemaps };
}

/** Hex SHA-256 of a fetched body: equal hashes mean nothing to re-index. */
export function contentHash(bytes: Buffer): string {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}
