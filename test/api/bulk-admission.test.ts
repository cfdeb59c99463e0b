/**
 * Admission of requests that start bulk work (api/middleware/admission.ts; docs/api-notes.md "Rate limits"), over a
 * real socket: one organization's bulk requests go through one at a time, the next waiting its turn, while another
 * organization's bulk requests and the organization's own interactive requests are not held; and they start no closer
 * together than the key's sustained rate allows (BULK_REQUESTS_PACING=key, the default).
 */
import http from 'node:http';
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';
import { createAgent } from '../../db/repositories/agents';
import { bulkRequests } from '../../metrics';
import { loadConfig } from '../../config';
import { MAX_BULK_SPACING_MS } from '../../api/app';

/** The gauge's current value for `state`. */
async function gauge(state: 'in_flight' | 'waiting'): Promise<number> {
  const { values } = await bulkRequests.get();
  return values.find((v) => v.labels.state === state)?.value ?? 0;
}

/**
 * Polls the gauge until it reads `want`, yielding to the event loop between reads (no sleep). The first request of
 * a key may wait on Postgres (the key's lookup, its rate-limit counters), so the bound is time, not reads.
 * @throws after 10 s
 */
async function untilGauge(state: 'in_flight' | 'waiting', want: number): Promise<void> {
  for (const start = Date.now(); Date.now() - start < 10_000; ) {
    if ((await gauge(state)) === want) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`http_bulk_requests{state="${state}"} never read ${want} (last ${await gauge(state)})`);
}

describe('bulk admission (requests that start bulk work)', () => {
  const t = useTestApi('bulk_admission', QUICK_CLIENT, { temporal: true });

  it("admits an organization's bulk requests one at a time in arrival order, while other organizations' and its interactive requests go through", async () => {
    const a = await t.org('Bulk A');
    const b = await t.org('Bulk B');
    const agentA = (await createAgent(t.db, a.orgId, { name: 'A desk' })).id;
    const agentB = (await createAgent(t.db, b.orgId, { name: 'B desk' })).id;
    const before = { inFlight: await gauge('in_flight'), waiting: await gauge('waiting') };
    const order: string[] = [];

    // A request whose body has not all arrived holds organization A's place: admission runs before the body is read.
    const body = JSON.stringify({ kind: 'text', text: 'Held page: the clinic opens at 8 on weekdays.' });
    const held = http.request(`${t.api.baseUrl}/agents/${agentA}/knowledge/sources`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    });
    const heldAnswer = new Promise<number>((resolve, reject) => {
      held.on('response', (res) => {
        res.resume();
        res.on('end', () => (order.push('held'), resolve(res.statusCode ?? 0)));
      });
      held.on('error', reject);
    });
    held.write(body.slice(0, 10));
    await untilGauge('in_flight', before.inFlight + 1);

    // A's next bulk request waits for the place.
    const second = t.call('POST', `/agents/${agentA}/knowledge/sources`, { key: a.key, json: { kind: 'text', text: 'Second page: parking behind the building.' } }).then((r) => (order.push('second'), r));
    await untilGauge('waiting', before.waiting + 1);

    // Meanwhile B's bulk request and A's own interactive request are answered at once.
    const other = await t.call('POST', `/agents/${agentB}/knowledge/sources`, { key: b.key, json: { kind: 'text', text: 'Another organization: open at 9.' } });
    expect(other.status).to.equal(202);
    const listed = await t.call('GET', `/agents/${agentA}/knowledge/sources`, { key: a.key });
    expect(listed.status).to.equal(200);
    expect(order).to.deep.equal([]);
    expect(await gauge('waiting')).to.equal(before.waiting + 1);

    // The held request finishes; the waiting one is admitted after it.
    held.end(body.slice(10));
    expect(await heldAnswer).to.equal(202);
    const secondAnswer = await second;
    expect(secondAnswer.status).to.equal(202);
    expect(order).to.deep.equal(['held', 'second']);
    await untilGauge('in_flight', before.inFlight);
    expect(await gauge('waiting')).to.equal(before.waiting);

    const sources = await t.call('GET', `/agents/${agentA}/knowledge/sources`, { key: a.key });
    expect(sources.body.data.items).to.have.length(2);
  });

  it('gives the place back when a request is refused after admission, and skips a waiting request whose client went away', async () => {
    const a = await t.org('Bulk C');
    const agentA = (await createAgent(t.db, a.orgId, { name: 'C desk' })).id;
    const inFlight = await gauge('in_flight');
    // Refused by the body's validation after admission: the place is free again for the next request.
    const bad = await t.call('POST', `/agents/${agentA}/knowledge/sources`, { key: a.key, json: { kind: 'text' } });
    expect(bad.status).to.equal(400);
    await untilGauge('in_flight', inFlight);
    const good = await t.call('POST', `/agents/${agentA}/knowledge/sources`, { key: a.key, json: { kind: 'text', text: 'Open at 10.' } });
    expect(good.status).to.equal(202);

    // A held request, and a waiting one whose client then hangs up: the next request gets the place after the held one.
    const body = JSON.stringify({ kind: 'text', text: 'Held again.' });
    const open = (b: string, len = Buffer.byteLength(b)) =>
      http.request(`${t.api.baseUrl}/agents/${agentA}/knowledge/sources`, { method: 'POST', headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json', 'content-length': String(len) } });
    const held = open(body);
    const heldDone = new Promise<number>((resolve, reject) => {
      held.on('response', (res) => (res.resume(), res.on('end', () => resolve(res.statusCode ?? 0))));
      held.on('error', reject);
    });
    held.write(body.slice(0, 5));
    await untilGauge('in_flight', inFlight + 1);
    const waitingBefore = await gauge('waiting');
    const quitter = open(body);
    quitter.on('error', () => undefined);
    quitter.end(body);
    await untilGauge('waiting', waitingBefore + 1);
    quitter.destroy();
    await untilGauge('waiting', waitingBefore);
    held.end(body.slice(5));
    expect(await heldDone).to.equal(202);
    await untilGauge('in_flight', inFlight);
    const after = await t.call('POST', `/agents/${agentA}/knowledge/sources`, { key: a.key, json: { kind: 'text', text: 'After the quitter.' } });
    expect(after.status).to.equal(202);
    await untilGauge('in_flight', inFlight);
  });

  it("spaces an organization's bulk requests at its key's sustained rate: sent together, they wait their turn instead of answering 429", async () => {
    // 60 requests per 12 s: one every 200 ms sustained (its burst limit, 10 per second, lets all five through at once).
    const a = await t.org('Bulk paced', undefined, { rateLimitPoints: 60, rateLimitWindowSeconds: 12 });
    const agentA = (await createAgent(t.db, a.orgId, { name: 'Paced desk' })).id;
    const waitingBefore = await gauge('waiting');
    const sent = performance.now();
    const answers = Array.from({ length: 5 }, (_, i) =>
      t.call('POST', `/agents/${agentA}/knowledge/sources`, { key: a.key, json: { kind: 'text', text: `Paced page ${i}: open at 8.` } }).then((r) => ({ status: r.status, at: performance.now() - sent })),
    );
    // While the first runs, the others wait in line (not refused).
    await untilGauge('waiting', waitingBefore + 4);
    const done = await Promise.all(answers);
    expect(done.map((d) => d.status)).to.deep.equal([202, 202, 202, 202, 202]);
    // The fifth started at least four spacings (800 ms) after the first: none sooner, whatever the machine's speed.
    expect(Math.max(...done.map((d) => d.at))).to.be.at.least(800 - 5);
    await untilGauge('waiting', waitingBefore);

    // A key allowed few requests per long window (6 per hour: 10 minutes sustained) is spaced at most 1 s apart.
    const slow = await t.org('Bulk slow key', undefined, { rateLimitPoints: 6, rateLimitWindowSeconds: 3600 });
    const agentS = (await createAgent(t.db, slow.orgId, { name: 'Slow desk' })).id;
    const slowSent = performance.now();
    const slowDone = await Promise.all(
      [0, 1].map((i) => t.call('POST', `/agents/${agentS}/knowledge/sources`, { key: slow.key, json: { kind: 'text', text: `Slow page ${i}.` } }).then((r) => ({ status: r.status, at: performance.now() - slowSent }))),
    );
    expect(slowDone.map((d) => d.status)).to.deep.equal([202, 202]);
    expect(Math.max(...slowDone.map((d) => d.at))).to.be.within(MAX_BULK_SPACING_MS - 5, 60_000);
  });

  it('reads BULK_REQUESTS_PACING as key (the default) or off, and refuses anything else naming the setting', () => {
    const saved = process.env.BULK_REQUESTS_PACING;
    try {
      delete process.env.BULK_REQUESTS_PACING;
      expect(loadConfig().bulkRequestsPacing).to.equal('key');
      process.env.BULK_REQUESTS_PACING = ' Off ';
      expect(loadConfig().bulkRequestsPacing).to.equal('off');
      process.env.BULK_REQUESTS_PACING = 'fast';
      expect(() => loadConfig()).to.throw(/BULK_REQUESTS_PACING must be one of key, off, got "fast"/);
    } finally {
      if (saved === undefined) delete process.env.BULK_REQUESTS_PACING;
      else process.env.BULK_REQUESTS_PACING = saved;
    }
  });
});
