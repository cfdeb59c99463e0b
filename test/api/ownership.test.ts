/**
 * Ids named in request bodies resolve inside the caller's organization (spec "Authentication"; DESIGN.md
 * "Tenancy"): the test reads every write operation's request schema from the OpenAPI document, finds each
 * field that names a resource (`…Id`, `…Ids`), and sends organization B's request with organization A's id
 * in that field. Each answers 404 exactly like a missing id, naming the field, and stores nothing.
 */
import { expect } from 'chai';
import { startOutboundEnv, type OutboundEnv } from './outbound-fixtures';
import { callWithKey } from '../helpers/api';

/** Fields naming something that is not an organization's resource (a catalogue shared by every organization). */
const GLOBAL_FIELDS = new Set([
  'voiceId',
  // The calendar's id at the connected provider (docs/api-notes.md "Integrations and records"), not a resource of this service.
  'calendarId',
  // The Cal.com event type bookings are made for: an id at the provider too (docs/going-live.md "Cal.com").
  'eventTypeId',
  // The caller's own identifiers of its customer and widget visitor (the traffic split's stickiness key), not resources.
  'customerId',
  'visitorId',
]);

type Json = Record<string, any>;

/** Finds the `…Id`/`…Ids` properties of a schema (through $ref, anyOf/oneOf/allOf, nested objects and arrays). */
function idFields(schema: Json, components: Json, prefix = '', seen = new Set<string>()): string[] {
  if (!schema || typeof schema !== 'object') return [];
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop()!;
    if (seen.has(name)) return [];
    return idFields(components[name], components, prefix, new Set([...seen, name]));
  }
  const out: string[] = [];
  for (const k of ['anyOf', 'oneOf', 'allOf']) for (const s of schema[k] ?? []) out.push(...idFields(s, components, prefix, seen));
  for (const [k, v] of Object.entries<Json>(schema.properties ?? {})) {
    if (/Ids?$/.test(k)) out.push(prefix + k);
    out.push(...idFields(v, components, `${prefix}${k}.`, seen));
  }
  if (schema.items) out.push(...idFields(schema.items, components, `${prefix}[].`, seen));
  return [...new Set(out)];
}

describe('ids in request bodies belong to the caller (every write operation of the OpenAPI document)', function () {
  this.timeout(120_000);
  let env: OutboundEnv;
  let a: { orgId: string; key: string };
  let b: { orgId: string; key: string };
  /** Organization A's resources, which B must never reach. */
  const theirs: Record<string, string> = {};
  /** Organization B's own resources, for valid requests. */
  const ours: Record<string, string> = {};

  before(async function () {
    this.timeout(120_000);
    env = await startOutboundEnv('ownership');
    a = await env.org('Owner A');
    b = await env.org('Caller B');
    theirs.agent = await env.publishedAgent(a.orgId);
    theirs.version = (await env.db('agent_versions').where({ agent_id: theirs.agent }).first()).id;
    theirs.number = await env.ownNumber(a.key);
    theirs.list = (await env.call(a.key, 'POST', '/contact-lists', { name: 'A list' })).body.data.id;
    theirs.file = await env.upload(a.key, 'phone\n+14155550100\n');
    ours.agent = await env.publishedAgent(b.orgId);
    ours.number = await env.ownNumber(b.key);
    ours.e164 = (await env.db('phone_numbers').where({ id: ours.number }).first()).e164;
    ours.list = (await env.call(b.key, 'POST', '/contact-lists', { name: 'B list' })).body.data.id;
    theirs.destination = (await env.call(a.key, 'POST', '/escalation-destinations', { name: 'A desk', kind: 'email', address: 'desk@a.test', timeZone: 'UTC' })).body.data.id;
    const suite = { name: 'Smoke', scenarios: [{ name: 'hello', turns: [{ say: 'Hello' }] }] };
    theirs.suite = (await env.call(a.key, 'POST', `/agents/${theirs.agent}/eval-suites`, suite)).body.data.id;
    ours.suite = (await env.call(b.key, 'POST', `/agents/${ours.agent}/eval-suites`, suite)).body.data.id;
    ours.dashboard = (await env.call(b.key, 'POST', '/dashboards', { name: 'B', widgets: [{ title: 't', metric: 'conversations', rangeDays: 1 }] })).body.data.id;
  });
  after(async () => env?.close());

  /** B's request for each (operation, field) with A's id in that field, and the code it must answer. */
  const cases = (): Record<string, { method: string; path: string; body: Json; code: string; headers?: Record<string, string> }> => {
    const campaign = { name: 'C', agentId: ours.agent, callerIdNumberId: ours.number, contactListId: ours.list, purpose: 'informational' };
    const widget = { title: 'w', metric: 'conversations', rangeDays: 1, agentId: theirs.agent };
    return {
      'rollbackAgent versionId': { method: 'POST', path: `/agents/${ours.agent}/rollback`, body: { versionId: theirs.version }, code: 'version_not_found' },
      'createKnowledgeSource fileId': { method: 'POST', path: `/agents/${ours.agent}/knowledge/sources`, body: { kind: 'file', fileId: theirs.file }, code: 'file_expired' },
      'assignNumber agentId': { method: 'POST', path: `/numbers/${ours.number}/assign`, body: { agentId: theirs.agent }, code: 'agent_not_found' },
      'importContacts fileId': { method: 'POST', path: `/contact-lists/${ours.list}/imports`, body: { fileId: theirs.file }, code: 'file_expired' },
      'importRecords fileId': { method: 'POST', path: '/records/imports', body: { fileId: theirs.file }, code: 'file_expired' },
      'createCampaign agentId': { method: 'POST', path: '/campaigns', body: { ...campaign, agentId: theirs.agent }, code: 'agent_not_found' },
      'createCampaign callerIdNumberId': { method: 'POST', path: '/campaigns', body: { ...campaign, callerIdNumberId: theirs.number }, code: 'number_not_found' },
      'createChatSession agentId': { method: 'POST', path: '/chat/sessions', body: { agentId: theirs.agent }, code: 'agent_not_found' },
      'createAnalysisRun agentId': { method: 'POST', path: '/conversations/analysis-runs', body: { agentId: theirs.agent }, code: 'agent_not_found' },
      'createPublishableKey agentId': { method: 'POST', path: '/publishable-keys', body: { name: 'w', agentId: theirs.agent, allowedOrigins: ['https://a.example'] }, code: 'agent_not_found' },
      'createCampaign contactListId': { method: 'POST', path: '/campaigns', body: { ...campaign, contactListId: theirs.list }, code: 'contact_list_not_found' },
      'createCall agentId': { method: 'POST', path: '/calls', body: { agentId: theirs.agent, from: ours.e164, to: '+12125550101' }, code: 'agent_not_found', headers: { 'idempotency-key': 'ownership-call' } },
      'setAgentTraffic splits.[].versionId': { method: 'PUT', path: `/agents/${ours.agent}/traffic`, body: { splits: [{ versionId: theirs.version, percent: 100 }] }, code: 'version_not_found' },
      'createEvalRun target.versionId': { method: 'POST', path: `/eval-suites/${ours.suite}/runs`, body: { target: { versionId: theirs.version } }, code: 'version_not_found' },
      'publishAgent gate.suiteId': { method: 'POST', path: `/agents/${ours.agent}/publish`, body: { gate: { suiteId: theirs.suite, minPassRate: 1 } }, code: 'eval_suite_not_found', headers: { 'idempotency-key': 'ownership-gate' } },
      'createDashboard widgets.[].agentId': { method: 'POST', path: '/dashboards', body: { name: 'D', widgets: [widget] }, code: 'agent_not_found' },
      'updateDashboard widgets.[].agentId': { method: 'PATCH', path: `/dashboards/${ours.dashboard}`, body: { widgets: [widget] }, code: 'agent_not_found' },
      'putPhoneSettings businessHours.escalationDestinationId': {
        method: 'PUT',
        path: `/numbers/${ours.number}/settings`,
        body: {
          voicemail: { enabled: false, greeting: null, transcribe: false, maxSeconds: 60 },
          recordingConsent: { mode: 'none', announcement: null },
          businessHours: { timeZone: 'UTC', hours: null, afterHours: 'escalation', escalationDestinationId: theirs.destination },
        },
        code: 'escalation_destination_not_found',
      },
    };
  };

  it('every resource id field of every write operation is covered here', async () => {
    const doc = (await (await fetch(`${env.api.baseUrl}/openapi.json`)).json()) as Json;
    const components = doc.components?.schemas ?? {};
    const found: string[] = [];
    for (const item of Object.values<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
        const schema = op.requestBody?.content?.['application/json']?.schema;
        for (const f of idFields(schema, components)) if (!GLOBAL_FIELDS.has(f)) found.push(`${op.operationId} ${f}`);
      }
    }
    expect(found.length).to.be.greaterThan(5);
    // mediaIds of sendSMSMessage: test/api/sms-media.test.ts sends another organization's attachment ids.
    expect(found.filter((f) => f !== 'sendSMSMessage mediaIds').sort()).to.deep.equal(Object.keys(cases()).sort());
  });

  it("answers 404 naming the field for another organization's id, and stores nothing", async () => {
    for (const [name, c] of Object.entries(cases())) {
      const res = c.headers ? await callWithKey(env.api.baseUrl, b.key, c.method, c.path, c.body, c.headers) : await env.call(b.key, c.method, c.path, c.body);
      expect(res.status, name).to.equal(404);
      expect(res.body.code, name).to.equal(c.code);
      // An array index in the field (`widgets[0].agentId`, `splits.0.versionId`) reads as the schema path's `[]`.
      expect(res.body.errors?.[0]?.field?.replace(/\[\d+\]|\.\d+(?=\.)/g, '.[]'), name).to.equal(name.split(' ')[1]);
    }
    expect((await env.db('phone_numbers').where({ id: ours.number }).first()).agent_id).to.equal(null);
    expect(await env.db('campaigns').where({ org_id: b.orgId })).to.have.length(0);
    expect(await env.db('knowledge_sources').where({ org_id: b.orgId })).to.have.length(0);
    expect(await env.db('api_keys').where({ org_id: b.orgId, kind: 'publishable' })).to.have.length(0);
    expect(await env.db('dashboards').where({ org_id: b.orgId })).to.have.length(1);
    expect(await env.db('number_settings').where({ org_id: b.orgId })).to.have.length(0);
    expect(await env.db('records').where({ org_id: b.orgId })).to.have.length(0);
    expect(await env.db('voice_calls').where({ org_id: b.orgId })).to.have.length(0);
  });

  it('accepts the same requests with its own ids (the refusals above are about ownership, not shape)', async () => {
    expect((await env.call(b.key, 'POST', `/numbers/${ours.number}/assign`, { agentId: ours.agent })).status).to.equal(200);
    const created = await env.call(b.key, 'POST', '/campaigns', { name: 'C', agentId: ours.agent, callerIdNumberId: ours.number, contactListId: ours.list, purpose: 'informational' });
    expect(created.status).to.equal(201);
  });
});
