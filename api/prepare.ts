/**
 * The lazy work a serving process's first requests would otherwise do, done once when the API is composed
 * (api/server.ts `startApi`, which `npm start` and `npm run start:api` run): a process that starts — a deploy, a
 * restart — then meets its first burst of requests without stalling its event loop on it (docs/benchmarks.md
 * "sms-replies": a cold process's first second of texts). What it prepares is the libraries' own one-time set-up,
 * never a request, a text or a turn run through the service:
 * - the validators of every request body the route table checks and of every event the catalogue defines (ajv
 *   generates and compiles each on first use, milliseconds apiece; domain/validation.ts `compileSchemas`);
 * - the ICU time-zone data `Intl.DateTimeFormat` loads on its first use with a time zone (the system prompt's moment,
 *   quiet hours);
 * - libphonenumber-js's metadata and the number-type patterns a US number is checked against (V8 compiles each
 *   pattern on its first match);
 * - the tokenizer's rank tables (gpt-tokenizer builds them on its first encode; the sandbox model's usage figures).
 */
import { compileSchemas } from '../domain/validation';
import { EVENT_CATALOG } from '../domain/webhooks/catalog';
import { describeMoment, DEFAULT_TIME_ZONE } from '../domain/conversations/prompt';
import { isUsNumber } from '../services/sms/send';
import { encodeTokens } from '../providers/llm/tokens';
import { ROUTE_SCHEMAS } from './routes';

/** A number of the NANP's fictional range (555-01XX, reserved for fiction by the NANPA), only ever parsed. */
const FICTIONAL_US_NUMBER = '+12025550123';

let prepared: Promise<PreparedWork> | undefined;

/** What {@link prepareFirstRequests} did: schemas compiled and its duration in ms. */
export interface PreparedWork {
  schemas: number;
  ms: number;
}

/**
 * Does the lazy one-time work of the first requests now (the module comment), once per process: a second call
 * answers the first's outcome.
 * @returns how many schemas were compiled and how long it took (ms)
 * @throws when a schema file is missing or does not compile (the generated schemas are stale: `npm run schemas`)
 */
export function prepareFirstRequests(): Promise<PreparedWork> {
  prepared ??= Promise.resolve().then(() => {
    const t0 = performance.now();
    const names = new Set<string>(EVENT_CATALOG.map((e) => e.schema));
    for (const route of Object.values(ROUTE_SCHEMAS)) if (route?.requestSchema) names.add(route.requestSchema);
    const schemas = compileSchemas(names);
    describeMoment(Date.now(), DEFAULT_TIME_ZONE);
    isUsNumber(FICTIONAL_US_NUMBER);
    encodeTokens('prepared');
    return { schemas, ms: performance.now() - t0 };
  });
  return prepared;
}
