/**
 * The service's Prometheus instruments (docs/operations.md "Observability"), in prom-client's default
 * registry, and the provider adapters' spans (`@opentelemetry/api`, a no-op unless telemetry.ts started the
 * SDK). A leaf like config.ts: the layers record into these (an in-memory add, nothing more); only the
 * entry points expose them (telemetry.ts serves the registry on `METRICS_PORT` / the API's `/metrics`).
 * Names follow the Prometheus and OpenTelemetry conventions: base units (seconds), `_total` counters.
 * workflows/ never imports this (Temporal's sandbox): workflow facts are counted by their activities.
 */
import { context, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';

/** The instrumentation scope of the service's own spans (services/conversations/service.ts names the same). */
const TRACER = 'agent-control-plane';

export { register as metricsRegistry };

let collectingProcess = false;
/**
 * Adds prom-client's Node process metrics (CPU, memory, event-loop lag, GC, handles) to the registry, once
 * per process; called only where metrics are exposed, since the event-loop monitor has a (small) cost.
 */
export function collectProcessMetrics(): void {
  if (collectingProcess) return;
  collectingProcess = true;
  collectDefaultMetrics();
}

/** Buckets of request and provider durations, in seconds (5 ms … 30 s). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** Status class of an HTTP status: `2xx` … `5xx` (a constant string: no new string per request). */
export function statusClass(status: number): string {
  const n = Math.floor(status / 100);
  return STATUS_CLASSES[n] ?? `${n}xx`;
}

/** A latency histogram over {@link LATENCY_BUCKETS} (seconds), labelled by `labels`. */
function latency<L extends string>(name: string, help: string, labels: readonly L[]): Histogram<L> {
  return new Histogram<L>({ name, help, labelNames: labels, buckets: LATENCY_BUCKETS });
}

/** A `_total` counter labelled by `labels`. */
function counter<L extends string>(name: string, help: string, labels: readonly L[]): Counter<L> {
  return new Counter<L>({ name, help, labelNames: labels });
}

/** One API request, labelled by the route table's operationId (`unmatched` for none) and status class. */
export const httpRequestDuration = latency('http_server_request_duration_seconds', 'Duration of HTTP requests served by the API, by operationId, method and status class', ['operation_id', 'http_request_method', 'status_class']);
/** Requests refused with 429: `limit` = `key` (the credential's window), `burst` (its burst limit), `ip` (widget per-address budget) or `bulk` (too many of an organization's bulk requests waiting, api/middleware/admission.ts). */
export const rateLimitRejections = counter('http_rate_limit_rejections_total', 'Requests refused with 429 rate_limited, by the budget that ran out (key, burst, ip, or bulk: too many of an organization\'s bulk requests waiting)', ['limit']);
/** Conversation turns run, by channel and outcome (`ok`, `error`). */
export const conversationTurns = counter('conversation_turns_total', 'Conversation turns run, by channel and outcome', ['channel', 'outcome']);
/** Whole turn latency (the receipt's `turn` stage), by channel. */
export const conversationTurnDuration = latency('conversation_turn_duration_seconds', 'Latency of a conversation turn from the user message to the stored reply, by channel', ['channel']);
/** Time to the LLM's first token within a turn (the receipt's `llm_first_token` stage), by channel. */
export const conversationFirstToken = latency('conversation_turn_first_token_seconds', 'Latency from the LLM request to its first token within a turn, by channel', ['channel']);
/** Requests that start bulk work holding a place (`in_flight`) or waiting for one (`waiting`) on this process (api/middleware/admission.ts). */
export const bulkRequests = new Gauge({ name: 'http_bulk_requests', help: 'Requests that start bulk work on this process, admitted (in_flight) or waiting their organization\'s turn (waiting)', labelNames: ['state'] as const });
/** ConversationRelay sockets open on this process (api/voice/relay.ts). */
export const voiceRelaySockets = new Gauge({ name: 'voice_relay_open_sockets', help: 'Voice relay (ConversationRelay) WebSockets open on this process' });
/** Outbound texts that reached `sent`, `delivered` or `failed` (each transition written once). */
export const smsMessages = counter('sms_messages_total', 'Outbound SMS messages by the status they reached (sent, delivered, failed)', ['status']);
/** Webhook delivery attempts by outcome (`succeeded`, `retry`, `failed`, `stale`). */
export const webhookDeliveries = counter('webhook_delivery_attempts_total', 'Webhook delivery attempts by outcome (succeeded, retry, failed, stale; deferred: no place among the attempts in flight, nothing sent)', ['outcome']);
/** Labels of a provider adapter call: kind (carrier, telephony, llm, mailer), adapter (sandbox, telnyx …) and method. */
const PROVIDER_LABELS = ['provider_kind', 'provider', 'operation'] as const;
/** Calls into a provider adapter, by {@link PROVIDER_LABELS}. */
export const providerCallDuration = latency('provider_call_duration_seconds', 'Duration of provider adapter calls, by provider kind, adapter and operation', PROVIDER_LABELS);
/** Provider adapter calls that threw, same labels as {@link providerCallDuration}. */
export const providerCallErrors = counter('provider_call_errors_total', 'Provider adapter calls that failed, by provider kind, adapter and operation', PROVIDER_LABELS);

/** A knex (tarn) pool as far as the gauges need it. */
interface PoolLike {
  numUsed(): number;
  numPendingAcquires(): number;
  numFree(): number;
}
const pools = new Map<string, Set<WeakRef<{ client: { pool?: PoolLike } }>>>();

/**
 * Reports a Knex pool in `db_client_connections_usage{state}` and `db_client_connections_pending_requests`
 * (OpenTelemetry's database client metric names). Weakly held: a destroyed or collected pool drops out.
 * @param name the `pool_name` label (`app`, `ratelimit` …)
 */
export function observePool(name: string, knex: { client: { pool?: PoolLike } }): void {
  let set = pools.get(name);
  if (!set) pools.set(name, (set = new Set()));
  set.add(new WeakRef(knex));
}

function eachPool(fn: (name: string, pool: PoolLike) => void): void {
  for (const [name, set] of pools) {
    for (const ref of set) {
      const pool = ref.deref()?.client.pool;
      if (!pool) set.delete(ref);
      else fn(name, pool);
    }
  }
}

new Gauge({
  name: 'db_client_connections_usage',
  help: 'Postgres connections of the Knex pools by state (used, idle)',
  labelNames: ['pool_name', 'state'] as const,
  collect() {
    this.reset();
    eachPool((name, p) => {
      this.inc({ pool_name: name, state: 'used' }, p.numUsed());
      this.inc({ pool_name: name, state: 'idle' }, p.numFree());
    });
  },
});

new Gauge({
  name: 'db_client_connections_pending_requests',
  help: 'Requests waiting for a Postgres connection of the Knex pools',
  labelNames: ['pool_name'] as const,
  collect() {
    this.reset();
    eachPool((name, p) => this.inc({ pool_name: name }, p.numPendingAcquires()));
  },
});

/** The attribute of a failed call's `error.type` (OpenTelemetry semantic conventions, "error.type"): a short code or the error's class, never its message. */
function errorType(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[\w.-]{1,64}$/.test(code)) return code;
  const name = (err as Error)?.name;
  return typeof name === 'string' && /^[\w.-]{1,64}$/.test(name) ? name : '_OTHER';
}

/**
 * Runs the iteration of `iterable` inside `ctx` (so the adapter's own HTTP spans are the provider span's
 * children) and calls `done` once, when it ends, fails or is left early.
 */
function iterateIn<T>(iterable: AsyncIterable<T>, ctx: Context, done: (failed: boolean, err?: unknown) => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      let it: AsyncIterator<T>;
      try {
        it = context.with(ctx, () => iterable[Symbol.asyncIterator]());
      } catch (err) {
        done(true, err);
        throw err;
      }
      const settle = <R extends IteratorResult<T>>(p: Promise<R>, last: boolean) =>
        p.then(
          (r) => {
            if (r.done || last) done(false);
            return r;
          },
          (err: unknown) => {
            done(true, err);
            throw err;
          },
        );
      return {
        next: (...args: [] | [unknown]) => settle(context.with(ctx, () => it.next(...args)), false),
        return: (value?: unknown) => settle(context.with(ctx, () => (it.return ? it.return(value) : Promise.resolve({ done: true, value } as IteratorResult<T>))), true),
        throw: (err?: unknown) => settle(context.with(ctx, () => (it.throw ? it.throw(err) : Promise.reject(err))), true),
      };
    },
  };
}

/**
 * Wraps a provider adapter so every method call is timed into {@link providerCallDuration}, every throw
 * counted in {@link providerCallErrors}, and, inside a trace, recorded as a span `provider.<kind>.<method>`
 * (`provider.carrier.createOrUpdateBrand`, `provider.llm.stream`) with `provider.kind`, `provider.name` and
 * `provider.operation`, status ERROR and `error.type` on failure; never an argument (no secret, text or phone
 * number). The span is the active one while the method runs, so the adapter's HTTP and SQL spans are its
 * children. Methods run on the adapter itself (private fields keep working); `instanceof` still sees the
 * adapter's class. A call ends when its promise settles, when the iteration of an async iterable it returns
 * ends (`LlmProvider.stream`), else at once.
 */
export function instrumentProvider<T extends object>(kind: string, provider: string, adapter: T): T {
  // Keyed by the method itself, so a method replaced on the adapter (a test's stub) is wrapped afresh.
  const wrapped = new WeakMap<object, unknown>();
  return new Proxy(adapter, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string' || prop === 'constructor') return value;
      let fn = wrapped.get(value);
      if (!fn) {
        const labels = { provider_kind: kind, provider, operation: prop };
        const spanName = `provider.${kind}.${prop}`;
        fn = function (this: unknown, ...args: unknown[]) {
          const end = providerCallDuration.startTimer(labels);
          // Only inside a trace (a request, an activity, a turn), as the pg and HTTP instrumentations' requireParentSpan:
          // a background poll makes no root span. Without the SDK there is never an active span, so this is all it costs.
          // INTERNAL, not CLIENT: in the OpenTelemetry trace API's SpanKind, CLIENT is the remote request itself, which
          // the adapter's own HTTP span (undici, node:http) already is; a sandbox adapter makes none.
          const parent = context.active();
          const span = trace.getSpan(parent) ? trace.getTracer(TRACER).startSpan(spanName, { kind: SpanKind.INTERNAL, attributes: { 'provider.kind': kind, 'provider.name': provider, 'provider.operation': prop } }, parent) : undefined;
          const ctx = span ? trace.setSpan(parent, span) : parent;
          let finished = false;
          const finish = (failed: boolean, err?: unknown) => {
            if (finished) return;
            finished = true;
            end();
            if (failed) providerCallErrors.inc(labels);
            if (!span) return;
            if (failed) {
              span.setAttribute('error.type', errorType(err));
              span.setStatus({ code: SpanStatusCode.ERROR, message: errorType(err) });
            }
            span.end();
          };
          let out: unknown;
          try {
            const call = () => (value as (...a: unknown[]) => unknown).apply(this === receiver ? target : this, args);
            out = span ? context.with(ctx, call) : call();
          } catch (err) {
            finish(true, err);
            throw err;
          }
          if (out && typeof (out as Promise<unknown>).then === 'function') {
            (out as Promise<unknown>).then(
              () => finish(false),
              (err: unknown) => finish(true, err),
            );
          } else if (out && typeof (out as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
            return iterateIn(out as AsyncIterable<unknown>, ctx, finish);
          } else finish(false);
          return out;
        };
        wrapped.set(value, fn);
      }
      return fn;
    },
  });
}
