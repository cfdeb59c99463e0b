/**
 * Property: no request body makes a write operation answer 5xx, and every 4xx is RFC 9457 problem+json
 * (README "API notes": wire conventions). For each write operation of the OpenAPI document that is built,
 * fast-check generates hostile and schema-adjacent bodies from the operation's request schema
 * (test/helpers/hostile.ts) and sends them over a real socket, with path ids of real resources of the
 * caller's organization so that handlers run as far as the body lets them. Fixed seed: `FUZZ_SEED`,
 * `FUZZ_RUNS` (bodies per operation) change it (README "Scripts").
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { newId } from '../../db/ids';
import { createActivities } from '../../activities';
import { createLogger } from '../../runtime';
import { startTestWorker, testTemporal } from '../helpers/temporal';
import { fuzzSettings, hostileBodies, hostileForms, typeConfusedBodies, type HostileForm } from '../helpers/hostile';
import { startOutboundEnv, type OutboundEnv } from './outbound-fixtures';

type Json = Record<string, any>;

describe('hostile request bodies never cause a 5xx (every write operation of the OpenAPI document)', function () {
  this.timeout(240_000);
  let env: OutboundEnv;
  let key: string;
  let doc: Json;
  const ids: Record<string, string> = {};
  let worker: { stop(): Promise<void> } | undefined;

  before(async function () {
    this.timeout(120_000);
    env = await startOutboundEnv('fuzz');
    // Every activity (publish compiles, sources ingest), not only the outbound ones.
    await env.stopWorker();
    worker = await startTestWorker(env.taskQueue, createActivities({ db: env.db, config: env.config, logger: createLogger('silent') }));
    const org = await env.org('Fuzz Org');
    key = org.key;
    const db = env.db;
    ids.agent = await env.publishedAgent(org.orgId);
    ids.version = (await db('agent_versions').where({ agent_id: ids.agent }).first()).id;
    ids.number = await env.ownNumber(key);
    ids.list = (await env.call(key, 'POST', '/contact-lists', { name: 'Fuzz list' })).body.data.id;
    ids.skill = (await env.call(key, 'POST', `/agents/${ids.agent}/skills`, { name: 'fuzz_skill', type: 'end_call', config: {} })).body.data.id;
    ids.playbook = (await env.call(key, 'POST', `/agents/${ids.agent}/playbooks`, { name: 'fuzz_book' })).body.data.id;
    ids.webhook = newId('whe');
    await db('webhook_endpoints').insert({ id: ids.webhook, org_id: org.orgId, url: 'https://hooks.example.com/a', secret_sealed: 'x', secret_prefix: 'whsec_x' });
    doc = (await (await fetch(`${env.api.baseUrl}/openapi.json`)).json()) as Json;
  });
  after(async () => {
    // A body that happens to be a valid scheduled report starts a workflow that sleeps to the end of the day:
    // end it while its worker still runs, or its timer would later wait on a queue nobody polls.
    const open = env ? await env.db('reports').whereIn('status', ['queued', 'running', 'scheduled']).pluck('id') : [];
    const { client } = await testTemporal();
    for (const id of open) await client.workflow.getHandle(`report-export/${id}`).terminate('fuzz test done').catch(() => undefined);
    await worker?.stop();
    await env?.close();
  });

  /** Fills `{param}`s: resources of the caller's organization where the operation names one. */
  function fill(path: string): string {
    return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      if (name === 'agentId') return ids.agent;
      if (name === 'versionId') return ids.version;
      if (name === 'e164') return encodeURIComponent('+14155550123');
      if (name === 'kind') return 'calendar';
      if (name === 'deliveryId') return 'dlv_missing';
      if (path.startsWith('/agents/{agentId}/skills/')) return ids.skill;
      if (path.startsWith('/agents/{agentId}/playbooks/')) return ids.playbook;
      if (path.startsWith('/agents/')) return ids.agent;
      if (path.startsWith('/numbers/')) return ids.number;
      if (path.startsWith('/contact-lists/')) return ids.list;
      if (path.startsWith('/webhooks/')) return ids.webhook;
      return 'x_missing';
    });
  }

  /** Write operations that are built and open to an API key (provider callbacks verify a signature; uploads are multipart). */
  function writeOperations(): { operationId: string; method: string; path: string; schema?: Json }[] {
    const out: { operationId: string; method: string; path: string; schema?: Json }[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
        if (/^(Reserved|Not implemented)/.test(op.description) || op.description.includes('Not implemented')) continue;
        if (!op.security?.length || op.operationId === 'createUpload') continue;
        out.push({ operationId: op.operationId, method: method.toUpperCase(), path, schema: op.requestBody?.content?.['application/json']?.schema });
      }
    }
    return out;
  }

  it('covers every built write operation with a request schema', () => {
    const ops = writeOperations();
    expect(ops.filter((o) => o.schema).length).to.be.at.least(30);
  });

  /** Sends one body; asserts no 5xx and a problem+json body for every 4xx. @returns the status */
  async function send(op: { operationId: string; method: string; path: string }, body: unknown): Promise<number> {
    const res = await fetch(`${env.api.baseUrl}${fill(op.path)}`, {
      method: op.method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': newId('idk'), 'if-match': '*' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    const what = `${op.operationId} ${JSON.stringify(body)?.slice(0, 300)} → ${res.status} ${text.slice(0, 300)}`;
    expect(res.status, what).to.be.below(500);
    if (res.status >= 400) {
      expect(res.headers.get('content-type'), what).to.match(/^application\/problem\+json/);
      const problem = JSON.parse(text);
      expect(problem.status, what).to.equal(res.status);
      expect(problem.title, what).to.be.a('string');
      expect(problem.type, what).to.be.a('string');
      expect(problem.code, what).to.be.a('string');
    }
    return res.status;
  }

  it('answers a wrong type at every depth of every request schema with a 4xx problem (systematic sweep)', async () => {
    const components = doc.components.schemas as Json;
    let sent = 0;
    for (const op of writeOperations()) {
      for (const body of typeConfusedBodies(op.schema, components)) {
        const status = await send(op, body);
        sent++;
        expect(status, `${op.operationId} ${JSON.stringify(body).slice(0, 200)}`).to.be.at.least(400);
      }
    }
    expect(sent).to.be.greaterThan(200);
  });

  it('answers every hostile body with a non-5xx status, and every 4xx with problem+json', async () => {
    const { seed, numRuns } = fuzzSettings();
    const components = doc.components.schemas as Json;
    const seen = new Map<number, number>();
    for (const op of writeOperations()) {
      await fc.assert(
        fc.asyncProperty(hostileBodies(op.schema, components), async (body) => {
          const status = await send(op, body);
          seen.set(status, (seen.get(status) ?? 0) + 1);
        }),
        { seed, numRuns, endOnFailure: true },
      );
    }
    // The bodies reach past the parser: some are refused by the schema, some get further.
    expect(seen.get(400) ?? 0).to.be.greaterThan(0);
    expect([...seen.keys()].some((s) => s < 300)).to.equal(true);
  });

  /**
   * The form operations of the document (the OAuth endpoints at the origin root, each path item naming its
   * server): their answers follow the OAuth RFCs, so a 4xx is RFC 6749 §5.2 JSON (`error`), problem+json
   * (the form reader's 413 and 415) or an HTML error page (the authorization endpoint, RFC 6749 §4.1.2.1).
   */
  it('answers every hostile form of the origin-root OAuth operations with a non-5xx status and an error body', async () => {
    const { seed, numRuns } = fuzzSettings();
    const ops: { operationId: string; url: string; schema: Json }[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        const schema = method === 'post' ? op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema : undefined;
        if (schema) ops.push({ operationId: op.operationId, url: `${item.servers[0].url}${path}`, schema });
      }
    }
    expect(ops.map((o) => o.operationId).sort()).to.deep.equal(['approveOAuthApp', 'issueOAuthToken', 'revokeOAuthToken']);
    const seen = new Map<number, number>();
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(hostileForms(op.schema), async (form: HostileForm) => {
          const res = await fetch(op.url, {
            method: 'POST',
            headers: { 'content-type': form.contentType, ...(form.authorization ? { authorization: form.authorization } : {}) },
            body: form.body,
            redirect: 'manual',
          });
          const text = await res.text();
          const what = `${op.operationId} ${form.contentType} ${form.authorization ?? ''} ${form.body.slice(0, 200)} → ${res.status} ${text.slice(0, 300)}`;
          expect(res.status, what).to.be.below(500);
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
          if (res.status < 400) return;
          const type = res.headers.get('content-type') ?? '';
          if (type.startsWith('text/html')) expect(text, what).to.match(/<html/i);
          else if (type.startsWith('application/problem+json')) expect(JSON.parse(text).code, what).to.be.a('string');
          else {
            expect(type, what).to.match(/^application\/json/);
            expect(JSON.parse(text).error, what).to.be.a('string');
          }
        }),
        { seed, numRuns: numRuns * 4, endOnFailure: true },
      );
    }
    // Refusals of several kinds: the form reader's and the OAuth server's own.
    expect([...seen.keys()].filter((s) => s >= 400).length).to.be.at.least(3);
  });
});
