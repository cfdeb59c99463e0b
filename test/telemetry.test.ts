/**
 * Metrics an operator scrapes (docs/operations.md "Observability"): the API's `/metrics` behind METRICS_TOKEN,
 * the `METRICS_PORT` listener of a process (the worker's), and the embedded dev server's own `/metrics`
 * (TEMPORAL_DEV_METRICS_PORT), each after real traffic, asserting the named series move.
 */
import { expect } from 'chai';
import { Connection } from '@temporalio/client';
import { startTestApi, type TestApi } from './helpers/api';
import { startMetricsListener, temporalSdkMetricsOptions } from '../telemetry';
import { createLogger } from '../runtime';
import { createWebhookActivities } from '../activities/webhooks';
import { startDevServer } from '../devserver';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { collectProcessMetrics, instrumentProvider, metricsRegistry } from '../metrics';
import { trace as otelTrace } from '@opentelemetry/api';
import { devServerRegistry } from '../devserver/metrics';
import { advanceMessage, insertMessage } from '../db/repositories/smsMessages';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { startTracing, type Tracing } from '../telemetry';
import { loadConfig } from '../config';
import { createDb, type Db } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { startApi, type RunningApi } from '../api/server';
import { NON_RESERVED_SCOPES } from '../domain/scopes';
import { createAgentActivities } from '../activities/agents';
import { createSmsActivities } from '../activities/sms';
import { stopSandboxDispatchers } from '../providers/carrier/sandbox';
import { createSkillHttpClient } from '../providers/http/request';
import { parseAllowList } from '../domain/net/guard';
import { COMPLETE_BRAND } from './api/sms-fixtures';
import https from 'node:https';
import { callWithKey } from './helpers/api';
import { createMigratedTestDatabase } from './helpers/postgres';
import { testTemporal, uniqueTaskQueue } from './helpers/temporal';
import { until } from './helpers/wait';
import { createVoiceActivities } from '../activities/voice';
import { sandboxInventory } from '../providers/telephony/sandbox';
import { placeSandboxCall, RelayClient } from '../providers/telephony/sandboxCaller';

const TOKEN = 'metrics-test-token';
const TLS_DIR = path.join(__dirname, 'fixtures', 'tls');
const TLS = { key: fs.readFileSync(path.join(TLS_DIR, 'localhost.key')), cert: fs.readFileSync(path.join(TLS_DIR, 'localhost.crt')) };

/** The value of the series `name` whose labels include `labels` (summed over the rest); 0 when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

async function scrape(url: string, token?: string): Promise<string> {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status, url).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

describe('metrics', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let metricsUrl: string;

  before(async () => {
    t = await startTestApi('metrics', { metricsToken: TOKEN });
    org = await t.org('Metrics');
    metricsUrl = `${new URL(t.api.baseUrl).origin}/metrics`;
  });
  after(async () => {
    await t?.close();
  });

  it('answers GET /metrics only to the METRICS_TOKEN bearer, and not at all without one configured', async () => {
    const anonymous = await fetch(metricsUrl);
    expect(anonymous.status).to.equal(401);
    expect(anonymous.headers.get('www-authenticate')).to.match(/^Bearer/);
    const wrong = await fetch(metricsUrl, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).to.equal(401);
    const text = await scrape(metricsUrl, TOKEN);
    expect(text).to.include('# TYPE http_server_request_duration_seconds histogram');
    expect(text).to.include('process_cpu_user_seconds_total');
    const off = await startTestApi('metrics-off');
    try {
      expect((await fetch(`${new URL(off.api.baseUrl).origin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).to.equal(404);
    } finally {
      await off.close();
    }
  });

  it('counts requests by operationId and status class, rate-limit refusals, turns with their latency, provider calls and the pool', async () => {
    const before = await scrape(metricsUrl, TOKEN);
    const opCount = (text: string, op: string, cls: string) => sample(text, 'http_server_request_duration_seconds_count', { operation_id: op, status_class: cls });

    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Metered', voiceId: 'voice_ava', greeting: 'Hello.' } });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
    const session = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.body.data.id, draftMode: true } });
    expect(session.status, session.text).to.equal(201);
    const said = await t.call('POST', `/chat/sessions/${session.body.data.session.id}/messages`, { key: org.key, json: { content: 'What are your hours?' } });
    expect(said.status, said.text).to.equal(200);
    expect((await t.call('GET', '/agents/agt_missing', { key: org.key })).status).to.equal(404);

    const limited = await t.org('Limited', undefined, { rateLimitPoints: 1, rateLimitWindowSeconds: 60 });
    await t.call('GET', '/agents', { key: limited.key });
    expect((await t.call('GET', '/agents', { key: limited.key })).status).to.equal(429);

    const after = await scrape(metricsUrl, TOKEN);
    const createOp = Object.keys(Object.fromEntries([...after.matchAll(/operation_id="(\w+)"/g)].map((m) => [m[1], 1]))).find((op) => /createAgent/i.test(op));
    expect(createOp, 'an operationId for POST /agents').to.be.a('string');
    expect(opCount(after, createOp!, '2xx') - opCount(before, createOp!, '2xx')).to.equal(1);
    expect(sample(after, 'http_server_request_duration_seconds_count', { status_class: '4xx' }) - sample(before, 'http_server_request_duration_seconds_count', { status_class: '4xx' })).to.be.at.least(2);
    expect(sample(after, 'http_rate_limit_rejections_total', { limit: 'key' }) - sample(before, 'http_rate_limit_rejections_total', { limit: 'key' })).to.equal(1);
    expect(sample(after, 'conversation_turns_total', { channel: 'chat', outcome: 'ok' }) - sample(before, 'conversation_turns_total', { channel: 'chat', outcome: 'ok' })).to.equal(1);
    expect(sample(after, 'conversation_turn_duration_seconds_count', { channel: 'chat' }) - sample(before, 'conversation_turn_duration_seconds_count', { channel: 'chat' })).to.equal(1);
    expect(sample(after, 'conversation_turn_first_token_seconds_count', { channel: 'chat' }) - sample(before, 'conversation_turn_first_token_seconds_count', { channel: 'chat' })).to.equal(1);
    expect(sample(after, 'provider_call_duration_seconds_count', { provider_kind: 'llm', provider: 'sandbox' }) - sample(before, 'provider_call_duration_seconds_count', { provider_kind: 'llm', provider: 'sandbox' })).to.be.at.least(1);
    expect(after).to.match(/^db_client_connections_usage\{pool_name="app",state="used"\} \d+$/m);
    expect(after).to.match(/^db_client_connections_pending_requests\{pool_name="app"\} \d+$/m);
    expect(after).to.include('voice_relay_open_sockets');
  });

  it('serves the worker process metrics on METRICS_PORT: webhook attempts by outcome, SMS by status and the Node process metrics', async () => {
    const logger = createLogger('silent');
    const listener = await startMetricsListener({ port: 0, host: '127.0.0.1', logger });
    try {
      expect(listener.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const before = await scrape(listener.url!);
      const activities = createWebhookActivities({ db: t.db, config: t.config, logger } as never);
      const out = await activities.attemptWebhookDelivery({ orgId: org.orgId, deliveryId: 'whd_missing', run: 1, attempt: 1, final: false } as never);
      expect(out.outcome).to.equal('stale');
      const id = `msg_${crypto.randomBytes(8).toString('hex')}`;
      await insertMessage(t.db, org.orgId, { id, direction: 'outbound', trigger: 'reply', from: '+15550000001', to: '+15550000002', body: 'hi', status: 'queued' } as never, async () => undefined);
      expect(await advanceMessage(t.db, org.orgId, id, { status: 'sent', providerMessageId: 'p1' })).to.equal(true);
      expect(await advanceMessage(t.db, org.orgId, id, { status: 'sent' })).to.equal(false); // counted once
      expect(await advanceMessage(t.db, org.orgId, id, { status: 'delivered' }, async () => undefined)).to.equal(true);
      const after = await scrape(listener.url!);
      expect(sample(after, 'sms_messages_total', { status: 'sent' }) - sample(before, 'sms_messages_total', { status: 'sent' })).to.equal(1);
      expect(sample(after, 'sms_messages_total', { status: 'delivered' }) - sample(before, 'sms_messages_total', { status: 'delivered' })).to.equal(1);
      expect(sample(after, 'webhook_delivery_attempts_total', { outcome: 'stale' }) - sample(before, 'webhook_delivery_attempts_total', { outcome: 'stale' })).to.equal(1);
      expect(sample(after, 'nodejs_eventloop_lag_seconds')).to.be.at.least(0);
      expect(after).to.include('process_resident_memory_bytes');
      expect((await fetch(listener.url!.replace('/metrics', '/other'))).status).to.equal(404);
    } finally {
      await listener.close();
    }
  });

  it('reads TEMPORAL_SDK_METRICS_PORT into the SDK runtime Prometheus exporter, offset by the process index', () => {
    expect(temporalSdkMetricsOptions({})).to.equal(undefined);
    expect(temporalSdkMetricsOptions({ TEMPORAL_SDK_METRICS_PORT: '9464', HOST: '0.0.0.0', ACP_PROCESS_INDEX: '2' })?.metrics.prometheus.bindAddress).to.equal('0.0.0.0:9466');
    expect(() => temporalSdkMetricsOptions({ TEMPORAL_SDK_METRICS_PORT: 'x' })).to.throw(/TEMPORAL_SDK_METRICS_PORT/);
  });

  it('serves the embedded dev server metrics (TEMPORAL_DEV_METRICS_PORT): gRPC calls by operation', async () => {
    const dev = await startDevServer({ port: 0, metricsPort: 0, log: () => undefined });
    const connection = await Connection.connect({ address: dev.address });
    try {
      const before = await scrape(dev.metricsUrl!);
      await connection.workflowService.getSystemInfo({});
      await connection.workflowService.describeNamespace({ namespace: 'default' });
      const after = await scrape(dev.metricsUrl!);
      expect(sample(after, 'service_requests_total', { operation: 'GetSystemInfo' }) - sample(before, 'service_requests_total', { operation: 'GetSystemInfo' })).to.be.at.least(1);
      expect(sample(after, 'service_latency_seconds_count', { operation: 'DescribeNamespace' }) - sample(before, 'service_latency_seconds_count', { operation: 'DescribeNamespace' })).to.equal(1);
      expect(after).to.not.include('http_server_request_duration_seconds');
    } finally {
      await connection.close();
      await dev.stop();
    }
  });
});

/** One span as the OTLP/JSON exporter sends it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  /** OTLP status: code 2 = ERROR. */
  status?: { code?: number; message?: string };
}

describe('traces (OTLP/HTTP to a loopback receiver)', function () {
  this.timeout(120_000);
  const spans: OtlpSpan[] = [];
  const lines: Record<string, unknown>[] = [];
  const saved: Record<string, string | undefined> = {};
  let receiver: http.Server;
  let tracing: Tracing | undefined;
  let db: Db;
  let api: RunningApi;
  let worker: { stop(): Promise<void> };
  let key: string;
  let skillServer: https.Server;
  let skillBase: string;
  /** The `traceparent` header of each request the skill server received. */
  const skillTraceparents: (string | undefined)[] = [];

  /** The spans of `traceId` received so far, and whether `s`'s chain of parents reaches `target`. */
  const spansOf = (traceId: string) => spans.filter((s) => s.traceId === traceId);
  const reaches = (trace: OtlpSpan[], s: OtlpSpan, target: OtlpSpan): boolean => {
    const byId = new Map(trace.map((t) => [t.spanId, t]));
    for (let at: OtlpSpan | undefined = s; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) if (at.spanId === target.spanId) return true;
    return false;
  };
  const attrsOf = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

  const setEnv = (vars: Record<string, string>) => {
    for (const [k, v] of Object.entries(vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  };

  before(async () => {
    receiver = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces') {
          const body = JSON.parse(raw) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
          for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    setEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'acp-trace-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    });
    tracing = startTracing('agent-control-plane');
    expect(tracing, 'tracing starts from the OTEL_* variables').to.not.equal(undefined);

    const { connection, native } = await testTemporal();
    const taskQueue = uniqueTaskQueue('traced');
    const databaseUrl = await createMigratedTestDatabase('traces');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'info' });
    const logger = createLogger('info', { write: (s: string) => void lines.push(JSON.parse(s)) } as never);
    const client = new Client({ connection, interceptors: tracing!.clientInterceptors });
    // A skill's HTTPS endpoint on loopback, which the skill client's SSRF guard allows as test/api/chat.test.ts does.
    skillServer = https.createServer(TLS, (req, res) => {
      skillTraceparents.push(req.headers.traceparent as string | undefined);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'shipped' })));
    });
    await new Promise<void>((r) => skillServer.listen(0, '127.0.0.1', r));
    skillBase = `https://127.0.0.1:${(skillServer.address() as AddressInfo).port}`;
    const skillHttp = createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), ca: TLS.cert });
    api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue }, providers: { skillHttp } });
    const org = await createOrganization(db, 'Traced');
    ({ key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES }));
    // The workflow interceptor runs inside the workflow sandbox, so it is bundled with the workflows.
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, '..', 'workflows', 'index.ts'),
      workflowInterceptorModules: tracing!.workflowInterceptorModules,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} } as never,
    });
    const w = await Worker.create({ ...tracing!.workerOptions({ prebuiltBundle: true }), connection: native, taskQueue, workflowBundle, activities: {
        ...createAgentActivities({ db }),
        // The call workflow's status steps (the usage of a completed call).
        ...createVoiceActivities({ db }),
        // The sandbox carrier holds its verdicts for an hour: the test looks at the brand submission only.
        ...createSmsActivities({ db, config, logger }, { carrierOptions: { delayMs: 3_600_000, callbackUrl: `${api.baseUrl}/sms/provider-callbacks/sandbox` } }),
      } });
    const running = w.run();
    worker = { stop: async () => (w.shutdown(), await running.catch(() => undefined)) };
  });

  after(async () => {
    await worker?.stop();
    stopSandboxDispatchers();
    await api?.close();
    if (skillServer) {
      skillServer.closeAllConnections();
      await new Promise<void>((r) => skillServer.close(() => r()));
    }
    await db?.destroy();
    await tracing?.shutdown();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await new Promise<void>((r) => receiver?.close(() => r()));
  });

  it('follows POST /agents/{id}/publish through the agent-publish workflow, its activity and its SQL in one trace, continuing the caller’s traceparent', async () => {
    const agent = await callWithKey(api.baseUrl, key, 'POST', '/agents', { name: 'Traced agent' });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
    const traceId = crypto.randomBytes(16).toString('hex');
    const callerSpan = crypto.randomBytes(8).toString('hex');
    const published = await callWithKey(api.baseUrl, key, 'POST', `/agents/${agent.body.data.id}/publish`, { note: 'traced' }, { 'idempotency-key': 'trace-1', traceparent: `00-${traceId}-${callerSpan}-01` });
    expect(published.status, JSON.stringify(published.body)).to.equal(201);
    expect(published.headers.get('traceparent')).to.match(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const ours = () => spans.filter((s) => s.traceId === traceId);
    await until(async () => {
      await tracing!.flush();
      return ours().some((s) => s.name.startsWith('pg') && ours().some((a) => a.spanId === s.parentSpanId && a.name.startsWith('RunActivity')));
    }, 20_000, 'the activity SQL spans');
    const trace = ours();
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const named = (prefix: string) => trace.find((s) => s.name.startsWith(prefix));
    const server = named('POST /api/v1/agents/{id}/publish');
    expect(server, trace.map((s) => s.name).join(', ')).to.not.equal(undefined);
    expect(server!.parentSpanId).to.equal(callerSpan);
    expect(server!.attributes.find((a) => a.key === 'acp.operation_id')?.value).to.deep.equal({ stringValue: 'publishAgent' });
    const start = named('StartWorkflow:agentPublishWorkflow');
    const run = named('RunWorkflow:agentPublishWorkflow');
    const activity = named('RunActivity:compileAndPublishAgent');
    expect(start && run && activity, trace.map((s) => s.name).join(', ')).to.be.ok;
    // Each step's ancestry reaches the request's server span.
    const reaches = (s: OtlpSpan, target: OtlpSpan): boolean => {
      for (let at: OtlpSpan | undefined = s; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) if (at.spanId === target.spanId) return true;
      return false;
    };
    for (const s of [start!, run!, activity!]) expect(reaches(s, server!), s.name).to.equal(true);
    const sql = trace.filter((s) => s.name.startsWith('pg') && reaches(s, activity!));
    expect(sql.length).to.be.greaterThan(0);
    // No key or phone number in any attribute.
    expect(JSON.stringify(trace)).to.not.include(key);

    const requestLine = lines.find((l) => l.msg === 'request' && l.operationId === 'publishAgent');
    expect(requestLine).to.include({ trace_id: traceId });
    expect(requestLine!.span_id).to.match(/^[0-9a-f]{16}$/);
    const untraced = lines.find((l) => l.msg === 'request' && l.operationId === 'createAgent');
    expect(untraced?.trace_id, 'a request without traceparent starts its own trace').to.match(/^[0-9a-f]{32}$/).and.not.equal(traceId);
  });

  it('records a conversation turn as a span with agent, version, channel and latency stages, and no message text', async () => {
    const agent = await callWithKey(api.baseUrl, key, 'POST', '/agents', { name: 'Turn agent', greeting: 'Hello.' });
    const session = await callWithKey(api.baseUrl, key, 'POST', '/chat/sessions', { agentId: agent.body.data.id, draftMode: true });
    expect(session.status, JSON.stringify(session.body)).to.equal(201);
    const said = await callWithKey(api.baseUrl, key, 'POST', `/chat/sessions/${session.body.data.session.id}/messages`, { content: 'My number is +15551234567, what are your hours?' });
    expect(said.status).to.equal(200);
    const traceId = said.headers.get('traceparent')!.split('-')[1];
    const turn = await until(async () => {
      await tracing!.flush();
      return spans.find((s) => s.traceId === traceId && s.name === 'conversation.turn');
    }, 20_000, 'the conversation.turn span');
    const attrs = Object.fromEntries(turn.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
    expect(attrs).to.include({ 'acp.agent_id': agent.body.data.id, 'acp.agent_version_id': 'draft', 'acp.channel': 'chat', 'acp.conversation_mode': 'draft' });
    expect(attrs['acp.latency.turn_ms']).to.be.a('number');
    expect(attrs['acp.latency.llm_total_ms']).to.be.a('number');
    const everything = JSON.stringify(spans.filter((s) => s.traceId === traceId));
    expect(everything).to.not.include('5551234567');
    expect(everything).to.not.include('what are your hours');
  });

  it('follows POST /sms/submit through the sms-registration workflow and its activity to the carrier call’s provider span in one trace', async () => {
    expect((await callWithKey(api.baseUrl, key, 'PUT', '/sms', COMPLETE_BRAND)).status).to.equal(200);
    const traceId = crypto.randomBytes(16).toString('hex');
    const submitted = await callWithKey(api.baseUrl, key, 'POST', '/sms/submit', undefined, { traceparent: `00-${traceId}-${crypto.randomBytes(8).toString('hex')}-01` });
    expect(submitted.status, JSON.stringify(submitted.body)).to.equal(200);

    // The workflow's spans (StartActivity) come through the worker's exporter on their own schedule: wait for all.
    const wanted = ['POST /api/v1/sms/submit', 'StartWorkflow:smsRegistration', 'StartActivity:smsSubmitBrand', 'RunActivity:smsSubmitBrand'];
    await until(async () => {
      await tracing!.flush();
      const spans = spansOf(traceId);
      return (
        wanted.every((n) => spans.some((s) => s.name === n)) &&
        spans.some((s) => s.name.startsWith('provider.carrier.') && spans.some((a) => a.name === 'RunActivity:smsSubmitBrand' && reaches(spans, s, a)))
      );
    }, 30_000, 'the request, workflow-start, activity and carrier-call spans');
    const trace = spansOf(traceId);
    const named = (name: string) => trace.find((s) => s.name === name);
    const server = named('POST /api/v1/sms/submit');
    const start = named('StartWorkflow:smsRegistration');
    const scheduled = named('StartActivity:smsSubmitBrand');
    const activity = named('RunActivity:smsSubmitBrand');
    expect(server && start && scheduled && activity, trace.map((s) => s.name).join(', ')).to.be.ok;
    expect(reaches(trace, start!, server!)).to.equal(true);
    // The workflow's own RunWorkflow span (the parent of StartActivity) is exported when the run ends; this one waits
    // for the carrier's verdict, so the chain is followed from the activity up to the workflow's scheduling of it.
    expect(reaches(trace, activity!, scheduled!)).to.equal(true);
    const carrier = trace.filter((s) => s.name.startsWith('provider.carrier.') && reaches(trace, s, activity!));
    expect(carrier.map((s) => s.name)).to.include('provider.carrier.createOrUpdateBrand');
    const create = carrier.find((s) => s.name === 'provider.carrier.createOrUpdateBrand')!;
    expect(attrsOf(create)).to.deep.equal({ 'provider.kind': 'carrier', 'provider.name': 'sandbox', 'provider.operation': 'createOrUpdateBrand' });
    // The adapter's own SQL (its provider_requests row) runs inside the provider span.
    expect(trace.some((s) => s.name.startsWith('pg') && reaches(trace, s, create))).to.equal(true);
    const everything = JSON.stringify(trace);
    expect(everything).to.not.include(key);
    expect(everything).to.not.include(COMPLETE_BRAND.ein);
  });

  it('records a failing provider call as an ERROR span with error.type and no message, and a streamed call until its iteration ends', async () => {
    const adapter = instrumentProvider('carrier', 'fake', {
      async getBrandStatus(_orgId: string, _brandId: string): Promise<never> {
        throw Object.assign(new Error('brand of +15551234567 not found'), { code: 'not_found' });
      },
      async *events(): AsyncIterable<number> {
        yield 1;
        await new Promise((r) => setTimeout(r, 20));
        yield 2;
      },
    });
    const traceId = await otelTrace.getTracer('telemetry-test').startActiveSpan('test.parent', async (parent) => {
      await adapter.getBrandStatus('org_x', 'B1').then(() => undefined, () => undefined);
      const got: number[] = [];
      for await (const n of adapter.events()) got.push(n);
      expect(got).to.deep.equal([1, 2]);
      parent.end();
      return parent.spanContext().traceId;
    });
    await until(async () => {
      await tracing!.flush();
      return spansOf(traceId).length >= 3;
    }, 20_000, 'the provider spans');
    const failed = spansOf(traceId).find((s) => s.name === 'provider.carrier.getBrandStatus')!;
    expect(failed.status).to.include({ code: 2, message: 'not_found' });
    expect(attrsOf(failed)).to.include({ 'provider.kind': 'carrier', 'provider.name': 'fake', 'provider.operation': 'getBrandStatus', 'error.type': 'not_found' });
    expect(JSON.stringify(spansOf(traceId))).to.not.include('5551234567');
    const streamed = spansOf(traceId).find((s) => s.name === 'provider.carrier.events') as OtlpSpan & { startTimeUnixNano: string; endTimeUnixNano: string };
    expect(streamed.status?.code ?? 0).to.not.equal(2);
    expect((Number(BigInt(streamed.endTimeUnixNano) - BigInt(streamed.startTimeUnixNano)) / 1e6)).to.be.at.least(15);
  });

  it('puts a chat turn’s conversation.turn span, its LLM call and its skill’s outgoing HTTP request in the request’s trace', async () => {
    const agent = await callWithKey(api.baseUrl, key, 'POST', '/agents', { name: 'Skill agent' });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
    const skill = await callWithKey(api.baseUrl, key, 'POST', `/agents/${agent.body.data.id}/skills`, {
      name: 'check_order', type: 'http_request', description: 'Looks up an order', config: { url: `${skillBase}/orders`, method: 'POST', inputs: [{ name: 'order_id' }], timeoutMs: 2000 },
    });
    expect(skill.status, JSON.stringify(skill.body)).to.equal(201);
    const session = await callWithKey(api.baseUrl, key, 'POST', '/chat/sessions', { agentId: agent.body.data.id, draftMode: true });
    expect(session.status, JSON.stringify(session.body)).to.equal(201);
    skillTraceparents.length = 0;
    const said = await callWithKey(api.baseUrl, key, 'POST', `/chat/sessions/${session.body.data.session.id}/messages`, { content: 'Please check order order_id: 42' });
    expect(said.status, JSON.stringify(said.body)).to.equal(200);
    expect(said.body.data.receipt.toolCalls[0]).to.include({ skill: 'check_order', type: 'http_request' });
    const traceId = said.headers.get('traceparent')!.split('-')[1];
    // The trace context went out with the skill's request (W3C Trace Context).
    expect(skillTraceparents).to.have.length(1);
    expect(skillTraceparents[0]).to.match(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const isSkillCall = (s: OtlpSpan) => String(attrsOf(s)['url.full'] ?? '').startsWith(`${skillBase}/orders`);
    await until(async () => {
      await tracing!.flush();
      return spansOf(traceId).some(isSkillCall) && spansOf(traceId).some((s) => s.name === 'conversation.turn');
    }, 20_000, 'the turn and skill spans');
    const trace = spansOf(traceId);
    const server = trace.find((s) => s.name === 'POST /api/v1/chat/sessions/{id}/messages');
    const turn = trace.find((s) => s.name === 'conversation.turn')!;
    const outgoing = trace.find(isSkillCall)!;
    expect(server, trace.map((s) => s.name).join(', ')).to.not.equal(undefined);
    expect(reaches(trace, turn, server!)).to.equal(true);
    expect(reaches(trace, outgoing, turn), 'the skill request is inside the turn').to.equal(true);
    expect(attrsOf(turn)['acp.tool_calls']).to.equal(1);
    const llm = trace.filter((s) => s.name.startsWith('provider.llm.') && reaches(trace, s, turn));
    expect(llm.length, trace.map((s) => s.name).join(', ')).to.be.greaterThan(0);
    expect(attrsOf(llm[0])).to.include({ 'provider.kind': 'llm', 'provider.name': 'sandbox' });
    // The skill server was told the outgoing request's span as the parent of whatever it traces.
    expect(skillTraceparents[0]!.split('-')[2]).to.equal(outgoing.spanId);
    const everything = JSON.stringify(trace);
    expect(everything).to.not.include('check order');
    expect(everything).to.not.include(key);
  });

  it('keeps no query and no phone number of an outgoing URL, node:http or fetch, in a sampled span', async () => {
    const target = `${process.env.OTEL_EXPORTER_OTLP_ENDPOINT}/lookup/15551234567?token=secret-query`;
    const traceId = await otelTrace.getTracer('telemetry-test').startActiveSpan('test.outgoing', async (parent) => {
      await new Promise<void>((resolve, reject) => http.get(target, (res) => res.resume().on('end', resolve)).on('error', reject));
      await (await fetch(target)).text();
      parent.end();
      return parent.spanContext().traceId;
    });
    const trace = await until(async () => {
      await tracing!.flush();
      const got = spansOf(traceId);
      return got.length >= 3 ? got : null;
    }, 20_000, 'the outgoing request spans');
    const outgoing = trace.filter((s) => s.name !== 'test.outgoing');
    expect(outgoing.map((s) => Object.keys(attrsOf(s)).find((k) => k === 'http.url' || k === 'url.full'))).to.have.members(['http.url', 'url.full']);
    const everything = JSON.stringify(trace);
    expect(everything).to.include('/lookup/{redacted}');
    expect(everything).to.not.include('secret-query');
    expect(everything).to.not.include('15551234567');
  });

  describe('a voice call', () => {
    /** Every span of `traceId` once `done` holds of them (the exporter sends on its own schedule). */
    const traceWhen = (traceId: string, done: (trace: OtlpSpan[]) => boolean, what: string) =>
      until(async () => {
        await tracing!.flush();
        const trace = spansOf(traceId);
        return done(trace) ? trace : null;
      }, 30_000, what);
    const turnsUnder = (trace: OtlpSpan[], call: OtlpSpan) => trace.filter((s) => s.name === 'conversation.turn' && s.parentSpanId === call.spanId);

    it('is one voice.call trace of its turns and their LLM calls, continuing the talk page’s trace, with no phone number or text, and its post-call analysis linked to it', async () => {
      const agent = await callWithKey(api.baseUrl, key, 'POST', '/agents', { name: 'Voice traced', greeting: 'Hello there.' });
      expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
      const agentId = agent.body.data.id as string;
      const talk = await callWithKey(api.baseUrl, key, 'POST', `/agents/${agentId}/talk-token`, { draftMode: true, channel: 'voice' });
      expect(talk.status, JSON.stringify(talk.body)).to.equal(201);
      const token = talk.body.data.token as string;
      // What the talk page does: ask whom the token talks to, then open the relay with that answer's traceparent.
      const info = await fetch(`${api.baseUrl}/voice/talk/info?token=${encodeURIComponent(token)}`);
      expect(info.status).to.equal(200);
      const traceparent = info.headers.get('traceparent')!;
      expect(traceparent).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const [, traceId, pageSpan] = traceparent.split('-');

      const c = await RelayClient.open(`${api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${encodeURIComponent(token)}&traceparent=${traceparent}`);
      c.send({ type: 'setup', sessionId: 'VXtraced', callSid: 'browser', from: '+15551234567', to: '+15557654321', direction: 'inbound' });
      expect((await c.reply()).text).to.equal('Hello there.');
      c.send({ type: 'prompt', voicePrompt: 'My number is +15551234567, when are you open?', last: true });
      expect((await c.reply()).text).to.have.length.greaterThan(0);
      c.send({ type: 'prompt', voicePrompt: 'And on the weekend?', last: true });
      expect((await c.reply()).text).to.have.length.greaterThan(0);
      c.hangUp();
      await c.closedWith();

      const trace = await traceWhen(traceId, (tr) => {
        const call = tr.find((s) => s.name === 'voice.call');
        return !!call && turnsUnder(tr, call).length === 2 && tr.filter((s) => s.name.startsWith('provider.llm.')).length >= 2;
      }, 'the voice.call span, its two turns and their LLM spans');
      const calls = trace.filter((s) => s.name === 'voice.call');
      expect(calls, 'one call span').to.have.length(1);
      const call = calls[0];
      expect(call.parentSpanId, 'the call continues the talk page’s trace').to.equal(pageSpan);
      expect(attrsOf(call)).to.include({ 'acp.agent_id': agentId, 'acp.agent_version_id': 'draft', 'acp.channel': 'voice', 'acp.voice.provider': 'talk_page', 'acp.voice.turns': 2, 'acp.voice.end_reason': 'ended_by_user' });
      expect(attrsOf(call)['acp.conversation_id']).to.match(/^\w+_/);
      const turns = turnsUnder(trace, call);
      expect(turns.map((t) => attrsOf(t)['acp.turn']).sort()).to.have.length(2);
      for (const turn of turns) {
        const llm = trace.filter((s) => s.name.startsWith('provider.llm.') && reaches(trace, s, turn));
        expect(llm.length, `LLM spans under turn ${attrsOf(turn)['acp.turn']}`).to.be.greaterThan(0);
        expect(attrsOf(turn)).to.include({ 'acp.channel': 'voice', 'acp.agent_id': agentId });
      }
      const everything = JSON.stringify(trace);
      expect(everything).to.not.include('5551234567');
      expect(everything).to.not.include('5557654321');
      expect(everything).to.not.include('when are you open');
      expect(everything).to.not.include('weekend');
      // The talk token went in the info request's query, which no span keeps.
      expect(everything).to.not.include(token);
      expect(attrsOf(trace.find((s) => s.spanId === pageSpan)!)).to.include({ 'url.path': '/api/v1/voice/talk/info', 'http.response.status_code': 200 });

      // The analysis after the hang-up is a trace of its own, linked to the call (a span link, W3C/OTel).
      const postCall = await until(async () => {
        await tracing!.flush();
        return spans.find((s) => s.name === 'voice.call.post_call' && (s as OtlpSpan & { links?: { spanId: string }[] }).links?.some((l) => l.spanId === call.spanId));
      }, 30_000, 'the post-call span linked to the call');
      expect(postCall.traceId).to.not.equal(traceId);
      expect(attrsOf(postCall)['acp.conversation_id']).to.equal(attrsOf(call)['acp.conversation_id']);
      const analysis = await traceWhen(postCall.traceId, (tr) => tr.some((s) => s.name.startsWith('provider.llm.')), 'the analysis LLM call');
      expect(analysis.some((s) => s.name.startsWith('provider.llm.') && reaches(analysis, s, postCall)), 'the analysis’s LLM call is inside the post-call span').to.equal(true);
    });

    it('continues the carrier webhook’s trace through the relay reference, and the call workflow’s usage activity shares it', async () => {
      const agent = await callWithKey(api.baseUrl, key, 'POST', '/agents', { name: 'Carrier traced', voiceId: 'voice_ava', greeting: 'Thanks for calling.' });
      expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
      const agentId = agent.body.data.id as string;
      const published = await callWithKey(api.baseUrl, key, 'POST', `/agents/${agentId}/publish`, { note: 'voice' }, { 'idempotency-key': 'voice-trace-1' });
      expect(published.status, JSON.stringify(published.body)).to.equal(201);
      const e164 = sandboxInventory('312')[3].e164;
      const bought = await callWithKey(api.baseUrl, key, 'POST', '/numbers/purchase', { e164 });
      expect(bought.status, JSON.stringify(bought.body)).to.equal(200);
      expect((await callWithKey(api.baseUrl, key, 'POST', `/numbers/${bought.body.data.id}/assign`, { agentId })).status).to.equal(200);

      const rec = await placeSandboxCall({ baseUrl: api.baseUrl, from: '+15551234567', to: e164, script: [{ say: 'What are your hours?' }, { say: 'Thank you' }] });
      expect(rec.webhookStatus, rec.markup).to.equal(200);
      expect(rec.close?.code).to.equal(1000);
      const callId = /call_[A-Za-z0-9]+/.exec(Buffer.from(/ref=vrf_([A-Za-z0-9_-]+)\./.exec(rec.markup)![1], 'base64url').toString())![0];

      const call = await until(async () => {
        await tracing!.flush();
        return spans.find((s) => s.name === 'voice.call' && attrsOf(s)['acp.call_id'] === callId && turnsUnder(spansOf(s.traceId), s).length === 2);
      }, 30_000, 'the carrier call’s voice.call span and its two turns');
      const trace = await traceWhen(call.traceId, (tr) => tr.some((s) => s.name === 'RunActivity:completeVoiceCall'), 'the call workflow’s completeVoiceCall activity');
      const webhook = trace.find((s) => s.spanId === call.parentSpanId);
      expect(webhook, 'the call’s parent is the inbound webhook’s request span').to.not.equal(undefined);
      expect(webhook!.name).to.match(/^POST/);
      expect(attrsOf(call)).to.include({ 'acp.voice.provider': 'sandbox', 'acp.agent_id': agentId, 'acp.call_id': callId, 'acp.voice.turns': 2 });
      expect(attrsOf(call)['acp.agent_version_id']).to.match(/^ver_/);
      for (const turn of turnsUnder(trace, call)) expect(trace.some((s) => s.name.startsWith('provider.llm.') && reaches(trace, s, turn))).to.equal(true);
      expect(JSON.stringify(trace)).to.not.include('5551234567');
      expect(JSON.stringify(trace)).to.not.include('What are your hours');
    });
  });
});

/**
 * Series the Temporal SDK's own exporter (TEMPORAL_SDK_METRICS_PORT, @temporalio/worker 1.24 with the options of
 * telemetry.ts) served to `npm run start:worker` on 2026-11-26; the Rust exporter cannot run beside the suite's runtime.
 */
const TEMPORAL_SDK_SERIES = ['temporal_worker_task_slots_used', 'temporal_worker_task_slots_available', 'temporal_request_total', 'temporal_long_request_total', 'temporal_num_pollers', 'temporal_worker_start_total', 'temporal_request_latency_seconds_bucket', 'temporal_request_latency_seconds_count', 'temporal_request_latency_seconds_sum'];

describe('deploy/grafana dashboard', () => {
  it('queries only metrics the service exports, and shows every family of metrics.ts', async () => {
    collectProcessMetrics();
    const exported = new Set<string>(TEMPORAL_SDK_SERIES);
    for (const registry of [metricsRegistry, devServerRegistry]) {
      for (const m of await registry.getMetricsAsJSON()) {
        exported.add(m.name);
        if (m.type === ('histogram' as never)) for (const s of ['_bucket', '_count', '_sum']) exported.add(m.name + s);
      }
    }
    const dashboard = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'deploy', 'grafana', 'dashboards', 'agent-control-plane.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const PROMQL = new Set(['sum', 'by', 'rate', 'histogram_quantile', 'max', 'or', 'le', 'without', 'avg', 'min', 'count', 'irate', 'increase']);
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        // Identifiers outside label matchers, grouping clauses and range selectors: the metric names.
        const bare = expr.replace(/\{[^}]*\}/g, '').replace(/\[[^\]]*\]/g, '').replace(/\b(by|without)\s*\([^)]*\)/g, '');
        for (const [name] of bare.matchAll(/[a-zA-Z_:][\w:]*/g)) if (!PROMQL.has(name) && !/^\d/.test(name)) queried.add(name);
      }
    }
    expect(queried.size).to.be.greaterThan(10);
    for (const name of queried) expect(exported.has(name), `${name} is exported`).to.equal(true);
    const ours = ['http_server_request_duration_seconds', 'http_rate_limit_rejections_total', 'conversation_turns_total', 'conversation_turn_duration_seconds', 'conversation_turn_first_token_seconds', 'voice_relay_open_sockets', 'sms_messages_total', 'webhook_delivery_attempts_total', 'provider_call_duration_seconds', 'provider_call_errors_total', 'db_client_connections_usage', 'db_client_connections_pending_requests'];
    for (const family of ours) expect([...queried].some((q) => q.startsWith(family)), `${family} has a panel`).to.equal(true);
  });
});
