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
 * noisy-neighbour). With pacing (BULK_REQUESTS_PACING=key), each also starts no sooner than the key's sustained spacing
 * after the organization's previous one (a leaky bucket: requests over the rate wait their turn instead of being
 * refused), so a client that sends eight at once gets them answered evenly at its key's rate rather than in bursts
 * followed by 429s. Interactive routes (chat, texts, calls, publish) never wait here.
 */
import { ApiError } from '../../domain/errors';
import { bulkRequests, rateLimitRejections } from '../../metrics';
import type { AppContext } from '../context';
import type { Guard } from './auth';

/** One organization's admission state: requests holding a place, the ones waiting for one (oldest first), and the pace. */
interface OrgQueue {
  active: number;
  waiting: Array<{ grant: () => void; intervalMs: number }>;
  /** `performance.now()` (ms) before which the next request is not admitted (pacing; 0: now). */
  nextAt: number;
  /** Set while a timer waits for `nextAt` to admit the line's head or to drop this idle state. */
  timer?: NodeJS.Timeout;
}

/**
 * The admission guard of bulk routes (run after authentication, the rate limits and the scope check, so a refused
 * request never takes a place). A place is given back when the response closes (sent, failed or aborted).
 * @param opts.inFlight places per organization in this process (≥ 1); `opts.queued` requests that may wait for one
 * @param opts.intervalMs with pacing, the least time (ms) between the starts of two of the organization's bulk requests
 *   in this process, from the request's own credential (api/app.ts: its key's sustained spacing, the window's seconds ÷
 *   its points, at most 1 s); omitted: not paced
 * @returns a Guard: synchronous while a place is free and the pace allows, else a promise settled when they do
 * @throws ApiError 429 rate_limited when `opts.queued` requests of the organization already wait
 */
export function bulkAdmission(opts: { inFlight: number; queued: number; intervalMs?: (ctx: AppContext) => number }): Guard {
  const inFlight = Math.max(1, Math.floor(opts.inFlight));
  const orgs = new Map<string, OrgQueue>();
  const inFlightGauge = bulkRequests.labels({ state: 'in_flight' });
  const waitingGauge = bulkRequests.labels({ state: 'waiting' });
  /** Takes a place for a request starting now, and moves the pace on by its interval. */
  const take = (q: OrgQueue, intervalMs: number, now: number): void => {
    q.active++;
    inFlightGauge.inc();
    q.nextAt = Math.max(now, q.nextAt) + intervalMs;
  };
  /** Admits the line's head while places are free and the pace allows; otherwise waits for the pace, or forgets an idle organization. */
  const pump = (orgId: string, q: OrgQueue): void => {
    if (q.timer) return; // a timer will pump
    while (q.waiting.length && q.active < inFlight) {
      const now = performance.now();
      if (now < q.nextAt) {
        // Unreferenced: the waiting request's own socket keeps the process up, and a stop need not wait for the pace.
        (q.timer = setTimeout(() => ((q.timer = undefined), pump(orgId, q)), q.nextAt - now)).unref();
        return;
      }
      const head = q.waiting.shift()!;
      waitingGauge.dec();
      take(q, head.intervalMs, now);
      head.grant();
    }
    if (q.active === 0 && !q.waiting.length) {
      // Idle: kept until its pace has passed, so a request right after still waits its interval.
      const left = q.nextAt - performance.now();
      if (left <= 0) orgs.delete(orgId);
      else (q.timer = setTimeout(() => ((q.timer = undefined), q.active === 0 && !q.waiting.length ? orgs.delete(orgId) : pump(orgId, q)), left)).unref();
    }
  };
  const release = (orgId: string, q: OrgQueue): void => {
    inFlightGauge.dec();
    q.active--;
    pump(orgId, q);
  };
  return (ctx: AppContext) => {
    const orgId = ctx.state.auth!.orgId;
    let q = orgs.get(orgId);
    if (!q) orgs.set(orgId, (q = { active: 0, waiting: [], nextAt: 0 }));
    const queue = q;
    const intervalMs = opts.intervalMs?.(ctx) ?? 0;
    const now = performance.now();
    if (!queue.waiting.length && queue.active < inFlight && now >= queue.nextAt) {
      if (queue.timer) (clearTimeout(queue.timer), (queue.timer = undefined)); // the idle state's drop timer
      take(queue, intervalMs, now);
      ctx.res.once('close', () => release(orgId, queue));
      return;
    }
    if (queue.waiting.length >= opts.queued) {
      rateLimitRejections.inc({ limit: 'bulk' });
      throw new ApiError(429, 'rate_limited', `Too many bulk requests of this organization waiting (${opts.queued}); retry after 1 s`, { headers: { 'Retry-After': '1' } });
    }
    return new Promise<void>((resolve) => {
      let held = false;
      const entry = {
        intervalMs,
        grant: () => {
          held = true;
          resolve();
        },
      };
      queue.waiting.push(entry);
      waitingGauge.inc();
      // Closed after its turn came: the place is given back; closed while waiting (the client went away): it leaves the line.
      ctx.res.once('close', () => {
        if (held) return release(orgId, queue);
        queue.waiting.splice(queue.waiting.indexOf(entry), 1);
        waitingGauge.dec();
      });
      pump(orgId, queue);
    });
  };
}
