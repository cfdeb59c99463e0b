/**
 * All activities of the worker, built from their dependencies (DESIGN.md "activities/"). Each area
 * exports a factory `create<Area>Activities(deps)`; activities must be idempotent because Temporal
 * retries them.
 */
import type { Logger } from 'pino';
import type { AppConfig } from '../config';
import type { Db } from '../db';

/** What activities may use. */
export interface ActivityDeps {
  db: Db;
  config: AppConfig;
  logger: Logger;
}

/** Every activity function by name (the worker registers this object). */
export function createActivities(_deps: ActivityDeps): Record<string, (...args: any[]) => Promise<unknown>> {
  return {};
}
