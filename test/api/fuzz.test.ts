/**
 * Property: no request body makes a write operation answer 5xx, and every 4xx is RFC 9457 problem+json
 * (docs/api-notes.md: wire conventions). For each write operation of the OpenAPI document that is built,
 * fast-check generates hostile and schema-adjacent bodies from the operation's request schema
 * (test/helpers/hostile.ts) and sends them over a real socket, with path ids of real resources of the
 * caller's organization so that handlers run as far as the body lets them. Fixed seed: `FUZZ_SEED`,
 * `FUZZ_RUNS` (bodies per operation) change it (docs/operations.md "Scripts").
 */
import { openAiErrorType, speaksOpenAi } from '../../api/middleware/problem';
import { expect } from 'chai';
import fc from 'fast-check';
import { newId } from '../../db/ids';
import { createActivities } from '../../activities';
import { createLogger } from '../../runtime';
import { startTestWorker, testTemporal } from '../helpers/temporal';
import { fuzzSettings, hostileBodies, hostileForms, typeConfusedBodies, type HostileForm } from '../helpers/hostile';
import { startOutboundEnv, type OutboundEnv } from './outbound-fixtures';
import WebSocket from 'ws';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { publishDraft } from './agents-fixtures';

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
    ids.org = org.orgId;
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
    if (res.status >= 400 && speaksOpenAi(`/api/v1${fill(op.path)}`)) {
      // The OpenAI-compatible routes answer OpenAI's error shape (docs/api-notes.md "OpenAI compatibility").
      expect(res.headers.get('content-type'), what).to.match(/^application\/json/);
      expect(JSON.parse(text).error, what).to.include({ type: openAiErrorType(res.status) }).and.to.have.property('code').that.is.a('string');
    } else if (res.status >= 400) {
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

  /**
   * Public sessions (docs/security.md "Public sessions"): the widget-session routes — `POST /chat/widget/sessions`
   * (publishable key), `GET /chat/sessions/{id}` and `POST /chat/sessions/{id}/messages` (JSON and SSE) with a
   * widget session token — and the talk-token routes — `POST /agents/{agentId}/talk-token` and the relay socket
   * a talk token opens — under hostile bodies, tokens (renamed kinds, truncated, another session's) and session
   * ids. Every answer, frame and event is checked: never a receipt, a tool call, message or output, a guardrail
   * decision or the session's state, never another session's messages, no 5xx, and every 4xx problem+json.
   */
  it('never shows a widget session or a talk token a receipt, a tool exchange or another session (hostile bodies, tokens and ids)', async () => {
    const { seed, numRuns } = fuzzSettings();
    const components = doc.components.schemas as Json;
    const SITE = 'https://fuzz.example.com';
    const MARKER = 'OTHERSESSIONMARKER';
    const INTERNAL = ['receipt', 'toolCalls', 'toolCallId', 'inputs', 'output', 'guardrails', 'knowledge', 'latency', 'caller_verified', 'origin'];
    const keysOf = (v: unknown, out = new Set<string>()): Set<string> => {
      if (Array.isArray(v)) v.forEach((x) => keysOf(x, out));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) keysOf(x, out.add(k));
      return out;
    };
    const agentId = (await env.call(key, 'POST', '/agents', { name: 'Fuzz public', voiceId: 'voice_ava', greeting: 'Hello' })).body.data.id as string;
    expect((await env.call(key, 'POST', `/agents/${agentId}/skills`, { name: 'find_customer', type: 'lookup_record', config: { matchOn: ['phone'] } })).status).to.equal(201);
    await env.call(key, 'PUT', `/agents/${agentId}/guardrails`, { redactPii: true, blockedTopics: [], forbiddenPhrases: ['competitor'], escalateOn: [], profanityFilter: false, maxConversationMinutes: null });
    await env.call(key, 'PUT', `/agents/${agentId}/widget`, { enabled: true, title: 'Fuzz', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' });
    await env.call(key, 'POST', '/records', { name: 'Zed Fuzzrecord', phone: '+14155550188', fields: { pin: '2468', tier: 'gold' } });
    await publishDraft(env.db, { orgId: ids.org, keyId: 'fuzz' }, agentId, 'fuzz-public');
    const pk = (await env.call(key, 'POST', '/publishable-keys', { name: 'fuzz', agentId, allowedOrigins: [SITE] })).body.data.key as string;
    const startWidget = async () => {
      const res = await fetch(`${env.api.baseUrl}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${pk}`, origin: SITE, 'content-type': 'application/json' }, body: '{}' });
      return ((await res.json()) as Json).data as { session: { id: string }; sessionToken: string };
    };
    const own = await startWidget();
    const otherWidget = await startWidget();
    // Another session of the organization with a tool exchange and a marker only it ever said.
    const other = (await env.call(key, 'POST', '/chat/sessions', { agentId })).body.data.session.id as string;
    await env.call(key, 'POST', `/chat/sessions/${other}/messages`, { content: `find customer with phone +14155550188 ${MARKER}` });
    const talkToken = (await env.call(key, 'POST', `/agents/${agentId}/talk-token`, { channel: 'voice' })).body.data.token as string;

    /** Checks one answer (JSON, problem or event data) of a public session. */
    const checkPublic = (what: string, status: number, type: string | null, text: string, sessionId: string | null = own.session.id) => {
      expect(status, what).to.be.below(500);
      expect(text, what).to.not.include(MARKER);
      if (status >= 400 && status !== 101) expect(type ?? '', what).to.match(/^application\/problem\+json/);
      if (!text.trim() || !/json/.test(type ?? '')) return;
      const body = JSON.parse(text);
      for (const k of INTERNAL) expect(keysOf(body).has(k), `${what}: ${k}`).to.equal(false);
      if (status < 300 && body.data?.session) {
        if (sessionId) expect(body.data.session.id, what).to.equal(sessionId);
        else expect([other, otherWidget.session.id], what).to.not.include(body.data.session.id);
      }
    };
    const tokens: Record<string, string> = {
      own: own.sessionToken,
      otherWidget: otherWidget.sessionToken,
      renamedTalk: `wst_${talkToken.slice(3)}`,
      truncated: own.sessionToken.slice(0, -3),
      publishable: pk,
      secretKey: key,
    };
    /** The session each widget token belongs to: the only one it may ever be answered about. */
    const ownerOf: Record<string, string> = { own: own.session.id, otherWidget: otherWidget.session.id };
    const sessionIds: Record<string, string> = { own: own.session.id, other, otherWidget: otherWidget.session.id, missing: 'cnv_00000000000000000000' };
    const messageBodies = fc.oneof(
      hostileBodies(components.ChatMessageCreate, components),
      fc.constantFrom({ content: 'find customer with phone +14155550188' }, { content: 'say competitor, card 4111 1111 1111 1111' }),
    );
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(tokens)), fc.constantFrom(...Object.keys(sessionIds)), fc.constantFrom('get', 'post', 'sse', 'start'), messageBodies, async (tok, sid, op, body) => {
        const token = tokens[tok];
        const what = `${op} token=${tok} session=${sid} ${JSON.stringify(body)?.slice(0, 120)}`;
        const headers: Record<string, string> = { authorization: `Bearer ${token}`, origin: SITE, 'content-type': 'application/json' };
        const path = op === 'start' ? '/chat/widget/sessions' : op === 'get' ? `/chat/sessions/${sessionIds[sid]}` : `/chat/sessions/${sessionIds[sid]}/messages`;
        if (op === 'sse') headers.accept = 'text/event-stream';
        const res = await fetch(`${env.api.baseUrl}${path}`, { method: op === 'get' ? 'GET' : 'POST', headers, body: op === 'get' ? undefined : JSON.stringify(body) });
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        const type = res.headers.get('content-type');
        if (res.status === 200 && type?.startsWith('text/event-stream')) {
          const events: EventSourceMessage[] = [];
          const parser = createParser({ onEvent: (e) => events.push(e) });
          parser.feed(await res.text());
          // A secret key with calls:read sees everything of its organization: only public credentials are checked.
          if (tok === 'secretKey') return;
          for (const e of events) {
            expect(['message.delta', 'message.completed', 'error', 'done'], `${what}: ${e.event}`).to.include(e.event);
            checkPublic(`${what} ${e.event}`, 200, 'application/json', e.data, ownerOf[tok] ?? own.session.id);
          }
          return;
        }
        const text = await res.text();
        // A secret key with calls:read sees everything of its organization: only public credentials are checked.
        if (tok === 'secretKey' && op !== 'start') return void expect(res.status, what).to.be.below(500);
        checkPublic(what, res.status, type, text, op === 'start' ? null : (ownerOf[tok] ?? own.session.id));
      }),
      { seed, numRuns: numRuns * 4, endOnFailure: true },
    );
    expect(seen.get(200) ?? 0, 'some requests of the own session succeed').to.be.greaterThan(0);
    expect([...seen.keys()].filter((s) => s >= 400).length, 'refusals of several kinds').to.be.at.least(2);

    // Talk tokens: hostile bodies of the issuing route, then hostile tokens and prompts on the relay socket.
    await fc.assert(
      fc.asyncProperty(hostileBodies(components.TalkTokenRequest, components), async (body) => {
        const res = await fetch(`${env.api.baseUrl}/agents/${agentId}/talk-token`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const text = await res.text();
        checkPublic(`talk-token ${JSON.stringify(body)?.slice(0, 120)}`, res.status, res.headers.get('content-type'), text);
      }),
      { seed, numRuns, endOnFailure: true },
    );
    const relayTokens: Record<string, string> = {
      voice: talkToken,
      chat: (await env.call(key, 'POST', `/agents/${agentId}/talk-token`, { channel: 'chat' })).body.data.token,
      renamedWidget: `tt_${own.sessionToken.slice(4)}`,
      truncated: talkToken.slice(0, -2),
      garbage: 'tt_x.y',
    };
    const prompts = fc.oneof(
      fc.constantFrom('find customer with phone +14155550188', 'say competitor please', `${MARKER}`, '4111 1111 1111 1111', '<script>alert(1)</script>', '\u0000', '😀'.repeat(50)),
      fc.string({ maxLength: 300 }).filter((x) => x.trim().length > 0),
    );
    let opened = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(relayTokens)), prompts, async (tok, prompt) => {
        const what = `relay token=${tok} prompt=${JSON.stringify(prompt).slice(0, 80)}`;
        const ws = new WebSocket(`${env.api.baseUrl.replace(/^http/, 'ws')}/voice/relay?token=${encodeURIComponent(relayTokens[tok])}`);
        const frames: Json[] = [];
        const outcome = await new Promise<'open' | number>((resolve) => {
          ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
          ws.on('open', () => resolve('open'));
          ws.on('error', () => resolve(0));
        });
        if (outcome !== 'open') {
          expect(tok, what).to.not.equal('voice');
          expect(outcome, what).to.equal(401);
          return;
        }
        opened++;
        expect(tok, what).to.equal('voice');
        const done = new Promise<void>((resolve) => {
          let texts = 0;
          ws.on('message', (d) => {
            const f = JSON.parse(d.toString()) as Json;
            frames.push(f);
            if (f.type === 'text' && f.last && ++texts >= 2) resolve();
            if (f.type === 'end') resolve();
          });
          ws.on('close', () => resolve());
          setTimeout(resolve, 5000).unref();
        });
        ws.send(JSON.stringify({ type: 'setup', sessionId: 'fuzz', callSid: 'fuzz', from: '', to: '', direction: 'inbound', customParameters: {} }));
        ws.send(JSON.stringify({ type: 'prompt', voicePrompt: prompt, lang: 'en-US', last: true }));
        await done;
        ws.close();
        for (const f of frames) {
          expect(['text', 'end'], what).to.include(f.type);
          expect(Object.keys(f).every((k) => ['type', 'token', 'last'].includes(k)), `${what}: ${JSON.stringify(f)}`).to.equal(true);
          expect(JSON.stringify(f), what).to.not.include(MARKER);
        }
      }),
      { seed, numRuns, endOnFailure: true },
    );
    expect(opened, 'some sockets opened with the valid voice token').to.be.greaterThan(0);
  });
});
