/**
 * The crawl rules of domain/knowledge/crawl.ts (docs/knowledge.md "Refresh and crawl"): the scope of a crawl,
 * the links of an HTML page, the entries of a sitemap and the field errors of `refresh` / `crawl`.
 */
import { expect } from 'chai';
import { contentHash, crawlScope, htmlLinks, normalizeUrl, parseSitemap, refreshCrawlErrors } from '../../../domain/knowledge/crawl';

describe('knowledge crawl rules', () => {
  it('keeps a crawl on the start origin, inside includePaths and outside excludePaths (the start URL always in)', () => {
    const scope = crawlScope('https://clinic.example/docs/', { maxPages: 5, includePaths: ['/docs/', '/help/*/faq'], excludePaths: ['/docs/drafts/'] });
    expect(scope.allows('https://clinic.example/docs/')).to.equal(true);
    expect(scope.allows('https://clinic.example/docs/a.html')).to.equal(true);
    expect(scope.allows('https://clinic.example/help/billing/faq')).to.equal(true);
    expect(scope.allows('https://clinic.example/docs/drafts/x.html')).to.equal(false);
    expect(scope.allows('https://clinic.example/blog/')).to.equal(false);
    expect(scope.allows('http://clinic.example/docs/a.html')).to.equal(false);
    expect(scope.allows('https://other.example/docs/a.html')).to.equal(false);
    const start = crawlScope('https://clinic.example/start', { maxPages: 5, includePaths: ['/docs/'] });
    expect(start.allows('https://clinic.example/start')).to.equal(true);
  });

  it('finds the links of a page: resolved against <base>, fragments dropped, nofollow and non-http left out, each once', () => {
    const html = `<html><head><base href="/kb/"><link rel="alternate" href="feed.xml"><link rel="stylesheet" href="s.css"></head>
      <body><a href="a.html#top">A</a><a href="a.html">A again</a><a href="/b?x=1">B</a><a rel="nofollow" href="c.html">C</a>
      <a href="mailto:x@example.com">mail</a><a href="javascript:void(0)">js</a><a href="https://other.example/">other</a></body></html>`;
    expect(htmlLinks(html, 'https://clinic.example/docs/page.html')).to.deep.equal([
      'https://clinic.example/kb/feed.xml',
      'https://clinic.example/kb/a.html',
      'https://clinic.example/b?x=1',
      'https://other.example/',
    ]);
  });

  it('reads page URLs from a urlset and sitemap URLs from a sitemap index; anything else yields nothing', () => {
    const urlset = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc> https://a.example/x </loc><lastmod>2026-01-01</lastmod></url><url><loc>https://a.example/y?a=1&amp;b=2</loc></url></urlset>`;
    expect(parseSitemap(urlset, 'https://a.example/sitemap.xml')).to.deep.equal({ pages: ['https://a.example/x', 'https://a.example/y?a=1&b=2'], sitemaps: [] });
    const index = `<sitemapindex><sitemap><loc>https://a.example/s1.xml</loc></sitemap></sitemapindex>`;
    expect(parseSitemap(index, 'https://a.example/sitemap.xml')).to.deep.equal({ pages: [], sitemaps: ['https://a.example/s1.xml'] });
    expect(parseSitemap('<html><body>not a sitemap</body></html>', 'https://a.example/sitemap.xml')).to.deep.equal({ pages: [], sitemaps: [] });
  });

  it('normalizes URLs and hashes bodies', () => {
    expect(normalizeUrl('HTTPS://Clinic.Example/a#b')).to.equal('https://clinic.example/a');
    expect(normalizeUrl('ftp://x.example/')).to.equal(null);
    expect(normalizeUrl('https://user:pw@x.example/')).to.equal(null);
    expect(contentHash(Buffer.from('abc'))).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('names refresh and crawl on a kind other than url, and a path pattern without a leading slash', () => {
    expect(refreshCrawlErrors('text', { refresh: { everyHours: 1 }, crawl: { maxPages: 1 } }).map((e) => e.field)).to.deep.equal(['refresh', 'crawl']);
    expect(refreshCrawlErrors('url', { crawl: { maxPages: 1, includePaths: ['/ok', 'bad'], excludePaths: ['*x'] } }).map((e) => e.field)).to.deep.equal(['crawl.includePaths[1]', 'crawl.excludePaths[0]']);
    expect(refreshCrawlErrors('url', { refresh: { everyHours: 1 } })).to.deep.equal([]);
  });
});
