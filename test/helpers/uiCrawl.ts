/**
 * A crawler for the Temporal Web UI browser test (docs/operations.md "Inspecting workflows"): from
 * start pages it opens every same-origin link the UI renders, and reports each page that shows the
 * app's error page (404 or another status), ends on another path than its link without an expected
 * redirect, logs a console error or a payload parse warning, or a failing `/api/v1` request.
 * Links that differ only in ids the crawl does not focus on (other workflows of the shared dev
 * server, more than a few event ids of one run) are opened once per pattern.
 */
import type { Browser, Page } from 'playwright-core';

/** Options of {@link crawlUi}. */
export interface CrawlOptions {
  /** The UI's origin, `http://host:port`. */
  origin: string;
  /** Paths (with query) to start from. */
  start: string[];
  /** Workflow ids whose runs are crawled link by link; other workflows' pages once per pattern. */
  focusWorkflowIds: string[];
  /** Pages at most (a guard against a runaway crawl). Default 200. */
  maxPages?: number;
  /** Event-detail pages per run at most. Default 3. */
  eventsPerRun?: number;
  /** Logs each page opened (`CRAWL_LOG=1` prints them). */
  log?: (line: string) => void;
  /**
   * Tabs that open pages at once, each in its own page of one browser context (default 3): a page spends most of
   * its time waiting for the network to go quiet, so tabs side by side shorten the crawl without skipping a check.
   */
  tabs?: number;
  /**
   * Link patterns opened so far, shared by the crawls of one file: a crawl adds what it opens and skips what an
   * earlier one opened (the namespace's pages and other workflows' tabs look the same to each). Start paths and
   * the focused workflows' pages are opened regardless. Default: a set of this crawl's own.
   */
  seen?: Set<string>;
  /** Called with each page after it settled (screenshots). */
  onPage?: (page: Page, path: string) => Promise<void>;
}

/** What the crawl saw. */
export interface CrawlReport {
  /** Paths opened, in order. */
  visited: string[];
  /** One line per problem: `<path>: <what>`. */
  problems: string[];
}

/** Redirects the app makes on purpose: the link's path → a pattern of where it lands. */
const EXPECTED_REDIRECTS: Array<[RegExp, RegExp]> = [
  [/^\/$/, /^\/namespaces\/[^/]+\/workflows$/],
  [/^\/namespaces\/[^/]+$/, /^\/namespaces\/[^/]+\/workflows$/],
  [/^\/namespaces\/[^/]+\/workflows\/[^/]+$/, /^\/namespaces\/[^/]+\/workflows\/[^/]+\/[^/]+\/history$/],
  [/^\/namespaces\/[^/]+\/workflows\/[^/]+\/[^/]+$/, /^\/namespaces\/[^/]+\/workflows\/[^/]+\/[^/]+\/history$/],
];

/** The workflow id a path of a run's pages names, if it is one. */
function workflowIdOf(path: string): string | undefined {
  const m = /^\/namespaces\/[^/]+\/workflows\/([^/]+)\//.exec(new URL(path, 'http://x').pathname);
  return m ? decodeURIComponent(m[1]) : undefined;
}

function pattern(path: string, focus: Set<string>): { key: string; eventOf?: string } {
  const url = new URL(path, 'http://x');
  const m = /^(\/namespaces\/[^/]+\/workflows\/)([^/]+)\/([^/]+)(\/.*)?$/.exec(url.pathname);
  if (m) {
    const id = decodeURIComponent(m[2]);
    const rest = m[4] ?? '';
    const event = /^\/history\/events\/\d+$/.test(rest);
    if (focus.has(id)) return { key: url.pathname + (event ? '' : url.search), eventOf: event ? `${m[2]}/${m[3]}` : undefined };
    return { key: `${m[1]}*/*${rest.replace(/\/\d+$/, '/N')}` };
  }
  // The list with a filter: once per set of parameters (the status chips, sort, paging).
  return { key: url.pathname + (url.search ? `?${[...url.searchParams.keys()].sort().join('&')}` : '') };
}

/**
 * Waits until the page's requests are done for 400 ms (at most 10 s). Long polls (the history's
 * `waitNewEvent`) never finish while a run is open, so they do not count, and playwright's
 * `networkidle` would wait for its whole timeout.
 */
async function settle(page: Page, inFlight: Set<unknown>): Promise<void> {
  await page.waitForLoadState('load', { timeout: 20_000 }).catch(() => undefined);
  const deadline = Date.now() + 10_000;
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    if (inFlight.size) quietSince = Date.now();
    else if (Date.now() - quietSince >= 400) return;
    await page.waitForTimeout(100);
  }
}

/**
 * Crawls the UI from `opts.start` in one browser context (1280 × 900, the width the pages must
 * fit), {@link CrawlOptions.tabs} pages at a time. Resolves with the visited paths and the problems found; never rejects for a page problem.
 */
export async function crawlUi(browser: Browser, opts: CrawlOptions): Promise<CrawlReport> {
  const focus = new Set(opts.focusWorkflowIds);
  const maxPages = opts.maxPages ?? 200;
  const eventsPerRun = opts.eventsPerRun ?? 3;
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  const visited: string[] = [];
  const seen = opts.seen ?? new Set<string>();
  /** Patterns this crawl queued: a focused page is skipped only when this crawl queued it already. */
  const queued = new Set<string>();
  const eventsSeen = new Map<string, number>();
  const queue: Array<{ path: string; from: string }> = [];
  const enqueue = (path: string, from: string, start = false) => {
    const { key, eventOf } = pattern(path, focus);
    if (queued.has(key) || (seen.has(key) && !start && !focus.has(workflowIdOf(path) ?? ''))) return;
    if (eventOf) {
      const n = eventsSeen.get(eventOf) ?? 0;
      if (n >= eventsPerRun) return;
      eventsSeen.set(eventOf, n + 1);
    }
    seen.add(key);
    queued.add(key);
    queue.push({ path, from });
  };
  for (const s of opts.start) enqueue(s, '(start)', true);

  /** Pages being opened now: a tab whose queue is empty waits for them, since each may link to more. */
  let busy = 0;
  /** One tab of the crawl: its own page, so each problem is told against the path that tab was on. */
  const tab = async (): Promise<void> => {
    const page = await context.newPage();
    let current = '';
    page.on('console', (msg) => {
      const text = msg.text();
      if (msg.type() === 'error' || /could not parse payload/i.test(text)) problems.push(`${current}: console ${msg.type()}: ${text.slice(0, 300)}`);
    });
    page.on('pageerror', (err) => problems.push(`${current}: page error: ${err.message.slice(0, 300)}`));
    const inFlight = new Set<unknown>();
    page.on('request', (r) => {
      if (!/waitNewEvent=true/.test(r.url())) inFlight.add(r);
    });
    page.on('requestfinished', (r) => inFlight.delete(r));
    page.on('requestfailed', (r) => inFlight.delete(r));
    page.on('response', (r) => {
      if (r.url().includes('/api/v1/') && r.status() >= 400) problems.push(`${current}: ${r.status()} ${r.request().method()} ${r.url().replace(opts.origin, '')}`);
    });
    while (visited.length < maxPages) {
      const next = queue.shift();
      if (!next) {
        if (busy === 0) break;
        await page.waitForTimeout(50);
        continue;
      }
      busy++;
      try {
        current = next.path;
        await visit(page, next.path, next.from, inFlight);
      } finally {
        busy--;
      }
    }
    await page.close();
  };

  const visit = async (page: Page, path: string, from: string, inFlight: Set<unknown>): Promise<void> => {
    visited.push(path);
    opts.log?.(`crawl ${visited.length}: ${path}`);
    if (/\/history\.json$/.test(new URL(path, opts.origin).pathname)) {
      // "View Raw History" opens in a new tab: the download itself must be the run's history.
      const r = await context.request.get(`${opts.origin}${path}`);
      const body = (await r.json().catch(() => undefined)) as { history?: { events?: unknown[] } } | undefined;
      if (!r.ok() || !body?.history?.events?.length) problems.push(`${path}: raw history answered ${r.status()} without events (linked from ${from})`);
      return;
    }
    const res = await page.goto(`${opts.origin}${path}`).catch((err: Error) => err);
    if (res instanceof Error) {
      problems.push(`${path}: ${res.message.split('\n')[0]} (linked from ${from})`);
      return;
    }
    await settle(page, inFlight);
    const landed = new URL(page.url());
    const wanted = new URL(path, opts.origin);
    if (landed.pathname !== wanted.pathname) {
      const ok = EXPECTED_REDIRECTS.some(([a, b]) => a.test(wanted.pathname) && b.test(landed.pathname));
      if (!ok) problems.push(`${path}: redirected to ${landed.pathname}${landed.search} (linked from ${from})`);
    }
    const error = page.locator('[aria-roledescription="error"]');
    if (await error.count()) problems.push(`${path}: error page "${(await error.first().innerText()).replace(/\s+/g, ' ').slice(0, 200)}" (linked from ${from})`);
    // A run's history renders its event rows (each a link to /history/events/N) after the network went quiet on a
    // busy machine: wait for the first before reading the links (none appearing is left to the caller's checks).
    if (/\/history$/.test(wanted.pathname)) await page.locator('a[href*="/history/events/"]').first().waitFor({ timeout: 15_000 }).catch(() => undefined);
    await opts.onPage?.(page, path);
    const hrefs = await page.$$eval('a[href]', (as) => as.map((a) => (a as unknown as { href: string }).href));
    for (const href of hrefs) {
      let u: URL;
      try {
        u = new URL(href);
      } catch {
        continue; // not a URL (an empty or script href): not a page to open
      }
      if (u.origin !== opts.origin || u.pathname.startsWith('/api/')) continue;
      enqueue(u.pathname + u.search, path);
    }
  };

  try {
    await Promise.all(Array.from({ length: Math.max(1, opts.tabs ?? 3) }, () => tab()));
  } finally {
    await context.close();
  }
  if (queue.length) problems.push(`crawl stopped after ${maxPages} pages with ${queue.length} links left`);
  return { visited, problems };
}
