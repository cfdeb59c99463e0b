/**
 * The guarded HTTP helper (providers/http): SSRF refusals before any connection, redirects
 * re-checked hop by hop, size and time caps, and retryable vs non-retryable failures.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { checkAddress, guardedLookup, parseAllowList } from '../../domain/net/guard';
import { createHttpClient, HttpFetchError, type HttpClient } from '../../providers/http';

/** How a test server answers one path. */
type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A local server whose behaviour per path is given by `routes`; counts requests. */
async function startServer(routes: Record<string, Route>) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const route = routes[(req.url ?? '').split('?')[0]];
    if (route) route(req, res);
    else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (p: string) => `http://127.0.0.1:${port}${p}`,
    port,
    hits,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A route that answers `statusCode` (3xx) with `location: {location}` and no body (RFC 9110 §15.4). */
function redirect(statusCode: number, location: string): Route {
  return (_req, res) => {
    res.statusCode = statusCode;
    res.setHeader('location', location);
    res.end();
  };
}

/** A route that answers `statusCode` with no body. */
function status(statusCode: number): Route {
  return (_req, res) => {
    res.statusCode = statusCode;
    res.end();
  };
}

async function fetchError(client: HttpClient, url: string): Promise<HttpFetchError> {
  try {
    await client.get(url);
  } catch (err) {
    expect(err).to.be.instanceOf(HttpFetchError);
    return err as HttpFetchError;
  }
  throw new Error(`expected ${url} to fail`);
}

describe('HTTP helper SSRF guard', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast, unique-local and metadata addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '169.254.1.1', '100.64.0.1', '100.100.100.200', '224.0.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      const v = checkAddress(a);
      expect(v.allowed, a).to.equal(false);
    }
    expect((checkAddress('169.254.169.254') as { reason: string }).reason).to.match(/metadata/);
  });

  it('allows public unicast addresses', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111']) expect(checkAddress(a).allowed, a).to.equal(true);
  });

  it('allows listed private ranges but still refuses metadata addresses inside them unless listed exactly', () => {
    const allow = parseAllowList('127.0.0.1, 10.0.0.0/8 169.254.0.0/16');
    expect(checkAddress('127.0.0.1', allow).allowed).to.equal(true);
    expect(checkAddress('127.0.0.2', allow).allowed).to.equal(false);
    expect(checkAddress('10.20.30.40', allow).allowed).to.equal(true);
    expect(checkAddress('169.254.1.1', allow).allowed).to.equal(true);
    expect(checkAddress('169.254.169.254', allow).allowed).to.equal(false);
    expect(checkAddress('169.254.169.254', parseAllowList('169.254.169.254')).allowed).to.equal(true);
    expect(() => parseAllowList('localhost')).to.throw(/not an IP address/);
  });

  it('refuses a host name when any of its resolved addresses is private', async () => {
    const lookup = guardedLookup(parseAllowList(''), async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.1.1', family: 4 },
    ]);
    const err = await new Promise<Error | null>((resolve) => lookup('rebind.example', { all: true }, (e) => resolve(e)));
    expect(err?.name).to.equal('SsrfRefusedError');
    expect(err?.message).to.match(/10\.1\.1\.1 is a private/);
  });

  it('reports a name DNS says does not exist as HostUnresolvableError, and a resolver failure as itself', async () => {
    const refuse = (code: string) => guardedLookup(parseAllowList(''), async () => Promise.reject(Object.assign(new Error(`getaddrinfo ${code}`), { code })));
    const nx = await new Promise<Error | null>((resolve) => refuse('ENOTFOUND')('gone.example', { all: true }, (e) => resolve(e)));
    expect(nx?.name).to.equal('HostUnresolvableError');
    expect(nx?.message).to.match(/gone\.example does not resolve/);
    const empty = await new Promise<Error | null>((resolve) => guardedLookup(parseAllowList(''), async () => [])('empty.example', {}, (e) => resolve(e)));
    expect(empty?.name).to.equal('HostUnresolvableError');
    const again = await new Promise<Error | null>((resolve) => refuse('EAI_AGAIN')('flaky.example', { all: true }, (e) => resolve(e)));
    expect(again?.name).to.not.equal('HostUnresolvableError');
    expect((again as NodeJS.ErrnoException).code).to.equal('EAI_AGAIN');
  });

  it('fails a fetch of a host name that does not resolve at once, as a permanent failure', async () => {
    const client = createHttpClient({ allow: parseAllowList('') });
    const started = Date.now();
    // RFC 6761: names under .invalid never resolve.
    const err = await fetchError(client, 'http://no-such-host.invalid/page');
    expect(err.code).to.equal('dns_unresolvable');
    expect(err.retryable).to.equal(false);
    expect(err.message).to.match(/no-such-host\.invalid does not resolve/);
    expect(Date.now() - started).to.be.below(2000);
    await client.close();
  });

  describe('fetching', () => {
    let server: Awaited<ReturnType<typeof startServer>>;
    before(async () => {
      server = await startServer({
        '/page': (_req, res) => {
          res.setHeader('content-type', 'text/html; charset=utf-8');
          res.end('<html><body>hello</body></html>');
        },
        '/to-private': redirect(302, 'http://10.0.0.1/internal'),
        '/to-metadata': redirect(301, 'http://169.254.169.254/latest/meta-data/'),
        // The port is known only once the server listens, so the location is made per request.
        '/to-other-loopback': (req, res) => redirect(307, `http://127.0.0.2:${server.port}/page`)(req, res),
        '/to-page': redirect(302, '/page'),
        '/loop': redirect(302, '/loop'),
        '/big': (_req, res) => {
          res.setHeader('content-length', '4096');
          res.end(Buffer.alloc(4096, 97));
        },
        '/big-chunked': (_req, res) => {
          res.write(Buffer.alloc(1000, 97));
          res.write(Buffer.alloc(1000, 97));
          res.end(Buffer.alloc(1000, 97));
        },
        '/slow': () => {
          /* never answers */
        },
        '/gone': status(410),
        '/busy': status(503),
      });
    });
    after(() => server.close());

    it('refuses 127.0.0.1 without an allow-list and never connects', async () => {
      const client = createHttpClient({ allow: parseAllowList('') });
      const before = server.hits.length;
      const err = await fetchError(client, server.url('/page'));
      expect(err.code).to.equal('ssrf_refused');
      expect(err.retryable).to.equal(false);
      expect(server.hits.length).to.equal(before);
      await client.close();
    });

    it('refuses a host name that resolves to loopback (localhost) at DNS time', async () => {
      const client = createHttpClient({ allow: parseAllowList('') });
      const err = await fetchError(client, `http://localhost:${server.port}/page`);
      expect(err.code).to.equal('ssrf_refused');
      expect(err.message).to.match(/loopback/);
      await client.close();
    });

    it('refuses the cloud metadata address 169.254.169.254', async () => {
      const client = createHttpClient({ allow: parseAllowList('') });
      const err = await fetchError(client, 'http://169.254.169.254/latest/meta-data/iam/security-credentials/');
      expect(err.code).to.equal('ssrf_refused');
      expect(err.message).to.match(/metadata/);
      await client.close();
    });

    describe('with the test server allow-listed (first hop only)', () => {
      let client: HttpClient;
      before(() => {
        client = createHttpClient({ allow: parseAllowList('127.0.0.1'), maxBytes: 2048, headersTimeoutMs: 300, totalTimeoutMs: 2000 });
      });
      after(() => client.close());

      it('fetches an allowed page and reports its media type', async () => {
        const res = await client.get(server.url('/page'));
        expect(res.status).to.equal(200);
        expect(res.contentType).to.equal('text/html');
        expect(res.body.toString()).to.contain('hello');
      });

      it('follows a redirect to an allowed address and reports the final URL', async () => {
        const res = await client.get(server.url('/to-page'));
        expect(res.url).to.equal(server.url('/page'));
        expect(res.body.toString()).to.contain('hello');
      });

      it('refuses a redirect to a private address', async () => {
        const err = await fetchError(client, server.url('/to-private'));
        expect(err.code).to.equal('ssrf_refused');
        expect(err.message).to.match(/10\.0\.0\.1/);
        expect(err.retryable).to.equal(false);
      });

      it('refuses a redirect to the metadata address', async () => {
        const err = await fetchError(client, server.url('/to-metadata'));
        expect(err.code).to.equal('ssrf_refused');
      });

      it('refuses a redirect to another loopback address outside the allow-list', async () => {
        const before = server.hits.length;
        const err = await fetchError(client, server.url('/to-other-loopback'));
        expect(err.code).to.equal('ssrf_refused');
        expect(server.hits.length).to.equal(before + 1);
      });

      it('stops after too many redirects', async () => {
        const err = await fetchError(client, server.url('/loop'));
        expect(err.code).to.equal('too_many_redirects');
      });

      it('refuses bodies over the size cap, declared or streamed', async () => {
        expect((await fetchError(client, server.url('/big'))).code).to.equal('too_large');
        const streamed = await fetchError(client, server.url('/big-chunked'));
        expect(streamed.code).to.equal('too_large');
        expect(streamed.retryable).to.equal(false);
      });

      it('times out a server that never answers, as a retryable failure', async () => {
        const err = await fetchError(client, server.url('/slow'));
        expect(err.code).to.equal('timeout');
        expect(err.retryable).to.equal(true);
      });

      it('treats 4xx as permanent and 5xx as transient', async () => {
        const gone = await fetchError(client, server.url('/gone'));
        expect([gone.code, gone.status, gone.retryable]).to.deep.equal(['http_status', 410, false]);
        const busy = await fetchError(client, server.url('/busy'));
        expect([busy.code, busy.status, busy.retryable]).to.deep.equal(['http_status', 503, true]);
      });

      it('refuses non-http schemes', async () => {
        const err = await fetchError(client, 'file:///etc/passwd');
        expect(err.code).to.equal('bad_url');
      });
    });
  });
});
