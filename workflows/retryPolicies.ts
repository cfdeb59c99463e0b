/**
 * The named set of activity retry policies every workflow draws from (DESIGN.md "temporal.config.ts";
 * Temporal "Retry Policies"). Kept beside the workflows because the workflow bundle must not load
 * temporal.config.ts, which reads the environment; temporal.config.ts re-exports this set.
 * Intervals use Temporal's duration strings; `maximumAttempts` absent means unlimited.
 */
import type { RetryPolicy } from '@temporalio/common';

/** Activity retry policies by purpose. */
export const RETRY = {
  /** Work that must finish eventually (a dial waiting on its call): 1 s doubling to 1 min, unlimited attempts. */
  untilDone: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
  /** Short Postgres steps whose loss delays others (claiming campaign attempts): 1 s doubling to 30 s, unlimited. */
  quick: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
  /** Bookkeeping and provider sends: 1 s doubling to 1 min, 20 attempts. */
  standard: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 20 },
  /** 10DLC steps against a carrier API that may be down for a while: 1 s doubling to 1 min, 50 attempts. */
  carrier: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 50 },
  /** Agent compile-and-publish, whose failures are mostly final (an invalid draft): 1 s doubling to 8 s, 5 attempts. */
  compile: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '8s', maximumAttempts: 5 },
  /** A first step that may run before the API's transaction commits: 500 ms doubling to 10 s, 6 attempts. */
  commitRace: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 6 },
  /** Fetching and extracting documents from the web: 2 s doubling to 1 min, 6 attempts. */
  fetch: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 6 },
  /** Importing an uploaded file: 2 s doubling to 1 min, 5 attempts. */
  fileImport: { initialInterval: '2s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5 },
  /** One webhook attempt's bookkeeping around its POST: 1 s doubling to 30 s, 5 attempts. */
  webhookAttempt: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
} as const satisfies Record<string, RetryPolicy>;
