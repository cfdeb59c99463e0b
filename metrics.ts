/**
 * The service's Prometheus instruments (docs/operations.md "Observability"), in prom-client's default
 * registry. A leaf like config.ts: the layers record into these (an in-memory add, nothing more); only the
 * entry points expose them (telemetry.ts serves the registry on `METRICS_PORT` / the API's `/metrics`).
 * Names follow the Prometheus and OpenTelemetry conventions: base units (seconds), `_total` counters.
 * workflows/ never imports this (Temporal's sandbox): workflow facts are counted by their activities.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';

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

/** Status class of an HTTP status: `2xx` … `5xx`. */
export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** One API request, labelled by the route table's operationId (`unmatched` for none) and status class. */
export const httpRequestDuration = new Histogram({
  name: 'http_server_request_duration_seconds',
  help: 'Duration of HTTP requests served by the API, by operationId, method and status class',
  labelNames: ['operation_id', 'http_request_method', 'status_class'] as const,
  buckets: LATENCY_BUCKETS,
});

/** Requests refused with 429 by the rate limiter: `limit` = `key` (the credential's budget) or `ip` (widget per-address budget). */
export const rateLimitRejections = new Counter({
  name: 'http_rate_limit_rejections_total',
  help: 'Requests refused with 429 rate_limited, by the budget that ran out (key or ip)',
  labelNames: ['limit'] as const,
});

/** Conversation turns run, by channel and outcome (`ok`, `error`). */
export const conversationTurns = new Counter({
  name: 'conversation_turns_total',
  help: 'Conversation turns run, by channel and outcome',
  labelNames: ['channel', 'outcome'] as const,
});

/** Whole turn latency (the receipt's `turn` stage), by channel. */
export const conversationTurnDuration = new Histogram({
  name: 'conversation_turn_duration_seconds',
  help: 'Latency of a conversation turn from the user message to the stored reply, by channel',
  labelNames: ['channel'] as const,
  buckets: LATENCY_BUCKETS,
});

/** Time to the LLM's first token within a turn (the receipt's `llm_first_token` stage), by channel. */
export const conversationFirstToken = new Histogram({
  name: 'conversation_turn_first_token_seconds',
  help: "Latency from the LLM request to its first token within a turn, by channel",
  labelNames: ['channel'] as const,
  buckets: LATENCY_BUCKETS,
});

/** ConversationRelay sockets open on this process (api/voice/relay.ts). */
export const voiceRelaySockets = new Gauge({
  name: 'voice_relay_open_sockets',
  help: 'Voice relay (ConversationRelay) WebSockets open on this process',
});

/** Outbound texts that reached `sent`, `delivered` or `failed` (each transition written once). */
export const smsMessages = new Counter({
  name: 'sms_messages_total',
  help: 'Outbound SMS messages by the status they reached (sent, delivered, failed)',
  labelNames: ['status'] as const,
});

/** Webhook delivery attempts by outcome (`succeeded`, `retry`, `failed`, `stale`). */
export const webhookDeliveries = new Counter({
  name: 'webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts by outcome (succeeded, retry, failed, stale)',
  labelNames: ['outcome'] as const,
});

/** Calls into a provider adapter: kind (carrier, telephony, llm, mailer), adapter (sandbox, telnyx …) and method. */
export const providerCallDuration = new Histogram({
  name: 'provider_call_duration_seconds',
  help: 'Duration of provider adapter calls, by provider kind, adapter and operation',
  labelNames: ['provider_kind', 'provider', 'operation'] as const,
  buckets: LATENCY_BUCKETS,
});

/** Provider adapter calls that threw, same labels as {@link providerCallDuration}. */
export const providerCallErrors = new Counter({
  name: 'provider_call_errors_total',
  help: 'Provider adapter calls that failed, by provider kind, adapter and operation',
  labelNames: ['provider_kind', 'provider', 'operation'] as const,
});

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

/**
 * Wraps a provider adapter so every method call is timed into {@link providerCallDuration} and every throw
 * counted in {@link providerCallErrors}. Methods run on the adapter itself (private fields keep working);
 * `instanceof` still sees the adapter's class. A method that returns no promise is counted at once.
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
        fn = function (this: unknown, ...args: unknown[]) {
          const end = providerCallDuration.startTimer(labels);
          let out: unknown;
          try {
            out = (value as (...a: unknown[]) => unknown).apply(this === receiver ? target : this, args);
          } catch (err) {
            end();
            providerCallErrors.inc(labels);
            throw err;
          }
          if (out && typeof (out as Promise<unknown>).then === 'function') {
            (out as Promise<unknown>).then(
              () => end(),
              () => {
                end();
                providerCallErrors.inc(labels);
              },
            );
          } else end();
          return out;
        };
        wrapped.set(value, fn);
      }
      return fn;
    },
  });
}
