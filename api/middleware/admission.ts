/**
 * Admission of requests that start bulk work (routes marked `workload: 'bulk'` in api/routes/table.ts: knowledge
 * ingestion, webhook tests and replays, imports, reports, evaluations, analysis runs; docs/api-notes.md "Rate
 * limits"). Each organization has at most `inFlight` of them in flight in this API process; the next ones wait in
 * arrival order, at most `queued` of them, and past that the request answers 429 `rate_limited` with
 * `Retry-After: 1` (RFC 9110 § 10.2.3). The rate limits bound how many such requests a key sends per second, not how
 * many arrive at the same moment: a client's workers that waited out the same `Retry-After` come back together, and
 * their requests, workflow starts and first workflow tasks then hold the API, Temporal and Postgres at once in front
 * of every other organization's interactive work. Admitting them one after the other keeps the same rate (a bulk
 * request takes milliseconds, far under the burst limit's spacing) and spreads the work out (docs/benchmarks.md,
 * noisy-neighbour). Interactive routes (chat, texts, calls, publish) never wait here.
 */
import { ApiError } from '../../domain/errors';
import { bulkRequests, rateLimitRejections } from '../../metrics';
import type { AppContext } from '../context';
import type { Guard } from './auth';

/** One organization's admission state: requests holding a place, and the ones waiting for one, oldest first. */
interface OrgQueue {
  active: number;
  waiting: Array<() => void>;
}

/**
 * The admission guard of bulk routes (run after authentication, the rate limits and the scope check, so a refused
 * request never takes a place). A place is given back when the response closes (sent, failed or aborted).
 * @param opts.inFlight places per organization in this process (≥ 1); `opts.queued` requests that may wait for one
 * @returns a Guard: synchronous while a place is free, else a promise settled when one is
 * @throws ApiError 429 rate_limited when `opts.queued` requests of the organization already wait
 */
export function bulkAdmission(opts: { inFlight: number; queued: number }): Guard {
  const inFlight = Math.max(1, Math.floor(opts.inFlight));
  const orgs = new Map<string, OrgQueue>();
  const inFlightGauge = bulkRequests.labels({ state: 'in_flight' });
  const waitingGauge = bulkRequests.labels({ state: 'waiting' });
  const release = (orgId: string, q: OrgQueue): void => {
    const next = q.waiting.shift();
    if (next) {
      waitingGauge.dec();
      return next(); // the place passes on: `active` stays
    }
    inFlightGauge.dec();
    if (--q.active === 0) orgs.delete(orgId);
  };
  return (ctx: AppContext) => {
    const orgId = ctx.state.auth!.orgId;
    let q = orgs.get(orgId);
    if (!q) orgs.set(orgId, (q = { active: 0, waiting: [] }));
    const queue = q;
    if (queue.active < inFlight) {
      queue.active++;
      inFlightGauge.inc();
      ctx.res.once('close', () => release(orgId, queue));
      return;
    }
    if (queue.waiting.length >= opts.queued) {
      rateLimitRejections.inc({ limit: 'bulk' });
      throw new ApiError(429, 'rate_limited', `Too many bulk requests of this organization waiting (${opts.queued}); retry after 1 s`, { headers: { 'Retry-After': '1' } });
    }
    return new Promise<void>((resolve) => {
      let held = false;
      const grant = () => {
        held = true;
        resolve();
      };
      queue.waiting.push(grant);
      waitingGauge.inc();
      // Closed after its turn came: the place is given back; closed while waiting (the client went away): it leaves the line.
      ctx.res.once('close', () => {
        if (held) return release(orgId, queue);
        queue.waiting.splice(queue.waiting.indexOf(grant), 1);
        waitingGauge.dec();
      });
    });
  };
}
