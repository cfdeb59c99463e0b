/**
 * What the loopback provider stubs share: an HTTP server on 127.0.0.1 started by the test, a log of
 * every request, a list of wire problems (wrong auth, a request or response off the documented shape)
 * that tests assert empty, scripted failures for the next matching request, and webhook deliveries
 * done in order after the answer that caused them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the stub received it. */
export interface StubRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  raw: string;
}

/** An answer of the stub. */
export interface StubAnswer {
  status: number;
  body?: unknown;
  /** Sent verbatim instead of `body` as JSON (an unparsable answer). */
  raw?: string;
  headers?: Record<string, string>;
}

/** A loopback stub: `handle` answers each request; `problems` collects wire violations. */
export abstract class StubServer {
  readonly requests: StubRequest[] = [];
  readonly problems: string[] = [];
  private server: http.Server | undefined;
  private readonly scripted: { match: RegExp; answer: StubAnswer }[] = [];
  private readonly hangMatches: RegExp[] = [];
  private readonly hung: Array<() => void> = [];
  private webhookChain: Promise<void> = Promise.resolve();
  /** Webhook deliveries: url, status answered. */
  readonly deliveries: { url: string; status: number; body: string }[] = [];
  baseUrl = '';

  protected abstract handle(req: StubRequest): Promise<StubAnswer>;

  /** Starts listening on a free loopback port. */
  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://stub');
        const r: StubRequest = { method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(r);
        const i = this.scripted.findIndex((s) => s.match.test(`${r.method} ${r.path}`));
        const h = i >= 0 ? -1 : this.hangMatches.findIndex((m) => m.test(`${r.method} ${r.path}`));
        const answer =
          i >= 0
            ? Promise.resolve(this.scripted.splice(i, 1)[0].answer)
            : h >= 0
              ? (this.hangMatches.splice(h, 1), new Promise<StubAnswer>((resolve) => this.hung.push(() => resolve(this.released()))))
              : this.handle(r);
        answer
          .catch((err): StubAnswer => {
            this.problems.push(`${r.method} ${r.path}: stub error ${err instanceof Error ? err.stack : String(err)}`);
            return { status: 500, body: { error: 'stub error' } };
          })
          .then((a) => {
            res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
            res.end(a.raw ?? (a.body === undefined ? '' : JSON.stringify(a.body)));
          });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Answers the requests {@link hangNext} held, then stops the server after the pending webhook deliveries. */
  async stop(): Promise<void> {
    for (const release of this.hung.splice(0)) release();
    await this.webhookChain.catch(() => undefined);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The next request whose `METHOD /path` matches gets `answer` instead of the stub's own. */
  failNext(match: RegExp, answer: StubAnswer): void {
    this.scripted.push({ match, answer });
  }

  /**
   * The next request whose `METHOD /path` matches gets no answer until the stub stops (the client gives up first:
   * a provider that does not answer in time); the requests after it are answered again.
   */
  hangNext(match: RegExp): void {
    this.hangMatches.push(match);
  }

  /** What a request {@link hangNext} held is answered when the stub stops (the provider's own server error). */
  protected released(): StubAnswer {
    return { status: 503 };
  }

  /** Records a wire problem (the test asserts none). */
  problem(where: StubRequest | string, what: string[] | string): void {
    const list = Array.isArray(what) ? what : [what];
    if (list.length) this.problems.push(`${typeof where === 'string' ? where : `${where.method} ${where.path}`}: ${list.join('; ')}`);
  }

  /** Queues a webhook POST (after the answers already queued), as providers deliver after answering. */
  protected deliver(url: string, body: string, headers: () => Record<string, string>): void {
    this.webhookChain = this.webhookChain.then(async () => {
      await new Promise((r) => setTimeout(r, 5));
      const res = await fetch(url, { method: 'POST', headers: headers(), body }).catch((err) => ({ status: 0, text: async () => String(err) }));
      this.deliveries.push({ url, status: res.status, body: await res.text() });
    });
  }

  /** Resolves once every queued webhook has been delivered. */
  async settled(): Promise<void> {
    let chain: Promise<void>;
    do {
      chain = this.webhookChain;
      await chain;
    } while (chain !== this.webhookChain);
  }
}
