/**
 * A small web site on loopback for the refresh and crawl tests: pages that change between fetches, each with an
 * ETag (RFC 9110 §8.8.3) and Last-Modified honoured on conditional GETs (If-None-Match → 304), a robots.txt and
 * sitemaps, a page streamed to any size, and a log of the requests it saw.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One page of the site. `stream` bytes of filler are written (chunked, no Content-Length) instead of `body`. */
export interface SitePage {
  type?: string;
  body?: string | Buffer;
  status?: number;
  stream?: number;
  /** Answer without ETag / Last-Modified (validators then cannot be used). */
  noValidators?: boolean;
}

/** A request the site saw. */
export interface SiteHit {
  path: string;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  status: number;
}

/** The running site. */
export interface TestSite {
  base: string;
  pages: Map<string, SitePage>;
  hits: SiteHit[];
  /** Sets (or replaces) a page. */
  set(path: string, page: SitePage): void;
  /** Hits of `path` since the log was last cleared. */
  hitsOf(path: string): SiteHit[];
  close(): Promise<void>;
}

const ETAG_TIME = new Date('2026-01-01T00:00:00Z').toUTCString();

/** Starts the site on 127.0.0.1 (an ephemeral port). */
export async function startSite(initial: Record<string, SitePage> = {}): Promise<TestSite> {
  const pages = new Map(Object.entries(initial));
  const hits: SiteHit[] = [];
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    const page = pages.get(path);
    const hit: SiteHit = { path, ifNoneMatch: (req.headers['if-none-match'] as string) ?? null, ifModifiedSince: (req.headers['if-modified-since'] as string) ?? null, status: 200 };
    hits.push(hit);
    if (!page) {
      hit.status = 404;
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    if (page.type) res.setHeader('content-type', page.type);
    if (page.stream) {
      const chunk = Buffer.alloc(1024 * 1024, 'a');
      let left = page.stream;
      const write = () => {
        while (left > 0) {
          left -= chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      res.on('error', () => undefined);
      req.socket.on('error', () => undefined);
      write();
      return;
    }
    const body = page.body ?? '';
    const etag = `"${crypto.createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
    if (!page.noValidators) {
      res.setHeader('etag', etag);
      res.setHeader('last-modified', ETAG_TIME);
    }
    if (!page.noValidators && hit.ifNoneMatch === etag) {
      hit.status = 304;
      res.statusCode = 304;
      res.end();
      return;
    }
    hit.status = page.status ?? 200;
    res.statusCode = hit.status;
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    pages,
    hits,
    set: (path, page) => void pages.set(path, page),
    hitsOf: (path) => hits.filter((h) => h.path === path),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** An HTML page with a title, a paragraph and links. */
export function htmlPage(title: string, text: string, links: string[] = []): SitePage {
  const a = links.map((l) => `<a href="${l}">${l}</a>`).join(' ');
  return { type: 'text/html; charset=utf-8', body: `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p><nav>${a}</nav></body></html>` };
}
