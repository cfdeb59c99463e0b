/**
 * Audit logs (docs/api-notes.md "Webhooks and audit logs", spec "Audit"): every write through the API is recorded with organization,
 * actor, operation, resource, request id, source IP, time and outcome; `GET /audit-logs` filters by
 * time range, actor and resource with cursor pagination; the log is append-only down to the database.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { createApp, BASE_PATH } from '../../api/app';
import { auditLog, AuditWriter, AUDIT_MIDDLEWARE, deriveResource } from '../../api/middleware/audit';
import * as auditRepo from '../../db/repositories/auditLogs';
import { createLogger } from '../../runtime';
import { ROUTES } from '../../api/routes/table';
import { publishDraft } from './agents-fixtures';




const ENV = { WEBHOOK_ALLOW_HTTP_HOSTS: 'hooks.example.test' };

describe('Audit logs (GET /audit-logs and the audit middleware)', function () {
  let t: TestApi;
  let server: http.Server;
  let close: () => Promise<void>;
  let base: string;
  const saved: Record<string, string | undefined> = {};

  /** fetch against the audited app. */
  async function call(method: string, path: string, opts: { key?: string; json?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(`${base}${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  }

  before(async () => {
    for (const [k, v] of Object.entries(ENV)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    t = await startTestApi('audit');
    // The app exactly as api/app.ts builds it (the audit middleware sits outside the problem middleware).
    const built = createApp({ db: t.db, config: t.config, logger: createLogger('silent'), databaseUrl: t.databaseUrl });
    const mws = built.app.middleware as unknown as Array<Record<symbol, boolean>>;
    expect(mws.some((m) => m[AUDIT_MIDDLEWARE]), 'api/app.ts installs the audit middleware').to.equal(true);
    await built.ready;
    server = http.createServer(built.app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${BASE_PATH}`;
    close = async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await built.close();
    };
  });
  after(async () => {
    await close?.();
    await t?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('records a successful write with actor, operation, resource, request id, source IP, time and status', async () => {
    const org = await t.org('Audited');
    const before = Date.now();
    const res = await call('POST', '/webhooks', { key: org.key, json: { url: 'http://hooks.example.test/a' }, headers: { 'x-request-id': 'req-audit-1' } });
    expect(res.status).to.equal(201);
    const list = await call('GET', '/audit-logs', { key: org.key });
    expect(list.status).to.equal(200);
    const entry = list.body.data.items.find((e: { requestId: string }) => e.requestId === 'req-audit-1');
    expect(entry, JSON.stringify(list.body)).to.not.equal(undefined);
    expect(entry.id).to.match(/^aud_/);
    expect(entry).to.deep.include({
      actor: { id: org.keyId, kind: 'secret' },
      operationId: 'createWebhook',
      method: 'POST',
      path: `${BASE_PATH}/webhooks`,
      resource: { type: 'webhook', id: res.body.data.id },
      statusCode: 201,
      outcome: 'success',
    });
    expect(entry.sourceIp).to.match(/127\.0\.0\.1/);
    expect(Date.parse(entry.occurredAt)).to.be.within(before - 5000, Date.now() + 5000);
  });

  it('records each PUT /sms once: in the draft save\'s own statement on the batched path, by the middleware otherwise', async () => {
    const org = await t.org('Draft saver', ['sms:write', 'audit:read']);
    const body = { displayName: 'Audited Brand', city: 'Austin', useCase: 'MIXED' };
    // The first save creates the registration (locking path); the next ones merge against the cached copy
    // and go through the batched statement, several at once; a bad value is refused before any write.
    const first = await call('PUT', '/sms', { key: org.key, json: body, headers: { 'x-request-id': 'sms-0' } });
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const batched = await Promise.all([1, 2, 3, 4].map((i) => call('PUT', '/sms', { key: org.key, json: { ...body, city: `Austin ${i}` }, headers: { 'x-request-id': `sms-${i}` } })));
    expect(batched.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    for (const id of ['sms-5', 'sms-6']) expect((await call('PUT', '/sms', { key: org.key, json: body, headers: { 'x-request-id': id } })).status).to.equal(200);
    const bad = await call('PUT', '/sms', { key: org.key, json: { ...body, supportEmail: 'not an email' }, headers: { 'x-request-id': 'sms-bad' } });
    expect(bad.status).to.equal(400);
    const items = (await call('GET', '/audit-logs', { key: org.key })).body.data.items as { requestId: string; statusCode: number; operationId: string; resource: unknown; actor: unknown }[];
    const ids = items.map((e) => e.requestId).sort();
    expect(ids).to.deep.equal(['sms-0', 'sms-1', 'sms-2', 'sms-3', 'sms-4', 'sms-5', 'sms-6', 'sms-bad']);
    for (const e of items) {
      expect(e).to.deep.include({ operationId: 'saveSMSRegistration', resource: { type: 'sms', id: null }, actor: { id: org.keyId, kind: 'secret' } });
      expect(e.statusCode).to.equal(e.requestId === 'sms-bad' ? 400 : 200);
    }
    // The stored version moved once per save. The last save, alone and against an up-to-date cached copy,
    // took the batched statement, which wrote its entry in the same transaction (the same `now()` as the
    // row), where the middleware's insert would have committed later. Compared in SQL: a JS Date would
    // drop the microseconds.
    const stored = await t.db('sms_registrations').where({ org_id: org.orgId }).first('version');
    expect(stored.version).to.equal(7);
    const sameCommit = await t.db.raw(
      `SELECT a.request_id FROM audit_logs a JOIN sms_registrations r ON r.org_id = a.org_id AND r.updated_at = a.occurred_at WHERE a.org_id = ?`,
      [org.orgId],
    );
    expect(sameCommit.rows.map((r: { request_id: string }) => r.request_id)).to.deep.equal(['sms-6']);
  });

  it("records each chat turn once, in the turn's own statement, and a refused turn by the middleware", async () => {
    const org = await t.org('Chat auditor');
    const agent = await call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hello' } });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(201);
    await publishDraft(t.db, org, agent.body.data.id, 'audit-chat');
    const session = await call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.body.data.id } });
    expect(session.status, JSON.stringify(session.body)).to.equal(201);
    const id = session.body.data.session.id as string;
    const path = `/chat/sessions/${id}/messages`;
    for (const n of [1, 2]) {
      const turn = await call('POST', path, { key: org.key, json: { content: `Question ${n}` }, headers: { 'x-request-id': `turn-${n}` } });
      expect(turn.status, JSON.stringify(turn.body)).to.equal(200);
      // The turn's entry committed with the turn (the same now() as the conversation's last activity).
      const same = await t.db.raw(
        `SELECT a.request_id FROM audit_logs a JOIN conversations c ON c.org_id = a.org_id AND c.last_activity_at = a.occurred_at WHERE a.org_id = ? AND c.id = ?`,
        [org.orgId, id],
      );
      expect(same.rows.map((r: { request_id: string }) => r.request_id)).to.deep.equal([`turn-${n}`]);
    }
    expect((await call('POST', `/chat/sessions/${id}/end`, { key: org.key, headers: { 'x-request-id': 'end' } })).status).to.equal(200);
    expect((await call('POST', path, { key: org.key, json: { content: 'Late' }, headers: { 'x-request-id': 'turn-late' } })).status).to.equal(409);
    const items = (await call('GET', '/audit-logs', { key: org.key })).body.data.items as { requestId: string; statusCode: number; operationId: string; resource: unknown; actor: unknown }[];
    const turns = items.filter((e) => e.operationId === 'sendChatMessage').sort((a, b) => a.requestId.localeCompare(b.requestId));
    expect(turns.map((e) => [e.requestId, e.statusCode])).to.deep.equal([['turn-1', 200], ['turn-2', 200], ['turn-late', 409]]);
    for (const e of turns) expect(e).to.deep.include({ resource: { type: 'message', id: null }, actor: { id: org.keyId, kind: 'secret' } });
  });

  it('records failed writes with their status code, and never reads', async () => {
    const org = await t.org('Failing writer');
    const bad = await call('POST', '/webhooks', { key: org.key, json: { url: 'http://evil.example/x' } });
    expect(bad.status).to.equal(400);
    const missing = await call('POST', '/webhooks/whk_nope/test', { key: org.key });
    expect(missing.status).to.equal(404);
    await call('GET', '/webhooks', { key: org.key });
    const items = (await call('GET', '/audit-logs', { key: org.key })).body.data.items;
    expect(items.map((e: { operationId: string; statusCode: number; outcome: string }) => [e.operationId, e.statusCode, e.outcome])).to.deep.equal([
      ['testWebhook', 404, 'failure'],
      ['createWebhook', 400, 'failure'],
    ]);
    expect(items[0].resource).to.deep.equal({ type: 'webhook', id: 'whk_nope' });
  });

  it('answers 400 naming a path or query parameter Postgres cannot store, and audits the write with U+FFFD in its place', async () => {
    const org = await t.org('Odd path');
    const res = await call('POST', '/webhooks/whk_%00x/test', { key: org.key });
    expect(res.status).to.equal(400);
    expect(res.body).to.include({ code: 'validation_error' });
    expect(res.body.errors).to.deep.equal([{ field: 'id', message: 'must not contain U+0000 or unpaired surrogate characters' }]);
    const filtered = await call('GET', '/audit-logs?actorId=key_%00', { key: org.key });
    expect(filtered.status).to.equal(400);
    expect(filtered.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['actorId']);
    const items = (await call('GET', '/audit-logs', { key: org.key })).body.data.items;
    expect(items.map((e: { resource: unknown }) => e.resource)).to.deep.equal([{ type: 'webhook', id: 'whk_\uFFFDx' }]);
  });

  it('writes the other entries of a batch when the database refuses one of them', async () => {
    const org = await t.org('Batch neighbour');
    const writer = new AuditWriter(t.db);
    const rec = (requestId: string) => ({ actorId: org.keyId, actorKind: 'secret', operationId: 'saveSMSRegistration', method: 'PUT', path: '/api/v1/sms', resourceType: 'sms_registration', resourceId: null, requestId, sourceIp: null, statusCode: 200 }) as auditRepo.AuditRecord;
    const settled = await Promise.allSettled([
      writer.write(org.orgId, rec('req-neighbour-1')),
      writer.write('org_does_not_exist', rec('req-orphan')), // foreign key refuses it
      writer.write(org.orgId, rec('req-neighbour-2')),
    ]);
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const ids = (await call('GET', '/audit-logs', { key: org.key })).body.data.items.map((e: { requestId: string }) => e.requestId);
    expect(ids).to.have.members(['req-neighbour-1', 'req-neighbour-2']);
  });

  it('filters by time range, actor and resource, newest first, with a stable cursor', async () => {
    const org = await t.org('Filters');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call('POST', '/webhooks', { key: org.key, json: { url: `http://hooks.example.test/${i}` } });
      ids.push(r.body.data.id);
    }
    // Postgres stamps microseconds and the boundary has milliseconds: keep 20 ms clear on both sides.
    await new Promise((r) => setTimeout(r, 20));
    const mid = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await call('PATCH', `/webhooks/${ids[0]}`, { key: org.key, json: { enabled: false } });

    const byResource = await call('GET', `/audit-logs?resourceType=webhook&resourceId=${ids[0]}`, { key: org.key });
    expect(byResource.body.data.items.map((e: { operationId: string }) => e.operationId)).to.deep.equal(['updateWebhook', 'createWebhook']);
    const since = await call('GET', `/audit-logs?since=${encodeURIComponent(mid)}`, { key: org.key });
    expect(since.body.data.items.every((e: { occurredAt: string }) => e.occurredAt >= mid)).to.equal(true);
    expect(since.body.data.items.map((e: { operationId: string }) => e.operationId)).to.not.include('createWebhook');
    const until = await call('GET', `/audit-logs?until=${encodeURIComponent(mid)}`, { key: org.key });
    expect(until.body.data.items).to.have.length(3);

    const other = await t.org('Filters 2');
    const byActor = await call('GET', `/audit-logs?actorId=${org.keyId}`, { key: org.key });
    expect(byActor.body.data.items.length).to.be.at.least(3);
    expect((await call('GET', `/audit-logs?actorId=${other.keyId}`, { key: org.key })).body.data.items).to.have.length(0);

    const p1 = await call('GET', '/audit-logs?limit=2', { key: org.key });
    expect(p1.body.data.items).to.have.length(2);
    expect(p1.body.data.hasMore).to.equal(true);
    await call('POST', '/webhooks', { key: org.key, json: { url: 'http://hooks.example.test/late' } }); // inserted between pages
    const p2 = await call('GET', `/audit-logs?limit=2&cursor=${encodeURIComponent(p1.body.data.nextCursor)}`, { key: org.key });
    const seen = [...p1.body.data.items, ...p2.body.data.items].map((e: { id: string }) => e.id);
    expect(new Set(seen).size).to.equal(seen.length);
    expect(p2.body.data.items[0].occurredAt <= p1.body.data.items[1].occurredAt).to.equal(true);
  });

  it('answers 400 naming since/until when they are not date-times, and a foreign cursor', async () => {
    const org = await t.org('Bad filters');
    const res = await call('GET', '/audit-logs?since=yesterday&until=2026-13-45', { key: org.key });
    expect(res.status).to.equal(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).to.have.members(['since', 'until']);
    const cur = await call('GET', '/audit-logs?cursor=abc', { key: org.key });
    expect(cur.status).to.equal(400);
  });

  it("one organization never sees another's entries", async () => {
    const a = await t.org('Tenant A');
    const b = await t.org('Tenant B');
    await call('POST', '/webhooks', { key: a.key, json: { url: 'http://hooks.example.test/a' }, headers: { 'x-request-id': 'req-tenant-a' } });
    const seenByB = await call('GET', '/audit-logs', { key: b.key });
    expect(seenByB.body.data.items.map((e: { requestId: string }) => e.requestId)).to.not.include('req-tenant-a');
    const seenByA = await call('GET', '/audit-logs', { key: a.key });
    expect(seenByA.body.data.items.map((e: { requestId: string }) => e.requestId)).to.include('req-tenant-a');
    const filtered = await call('GET', `/audit-logs?actorId=${a.keyId}`, { key: b.key });
    expect(filtered.body.data.items).to.have.length(0);
  });

  it('needs the audit:read scope', async () => {
    const org = await t.org('No audit', ['webhooks:write']);
    expect((await call('GET', '/audit-logs', { key: org.key })).status).to.equal(403);
  });

  it('is append-only: the repository has no update or delete, and UPDATE/DELETE/TRUNCATE through knex fail', async () => {
    expect(Object.keys(auditRepo).filter((k) => typeof (auditRepo as Record<string, unknown>)[k] === 'function').sort()).to.deep.equal(['auditRow', 'insertAuditLog', 'insertAuditLogs', 'listAuditLogs']);
    const org = await t.org('Immutable');
    const entry = await auditRepo.insertAuditLog(t.db, org.orgId, {
      actorId: org.keyId, actorKind: 'secret', operationId: 'createWebhook', method: 'POST', path: '/api/v1/webhooks',
      resourceType: 'webhook', resourceId: 'whk_x', requestId: 'req-x', sourceIp: '127.0.0.1', statusCode: 201,
    });
    const refusals: string[] = [];
    for (const attempt of [
      () => t.db('audit_logs').where({ id: entry.id }).update({ status_code: 200 }),
      () => t.db('audit_logs').where({ id: entry.id }).delete(),
      () => t.db.raw('TRUNCATE audit_logs'),
    ]) {
      try {
        await attempt();
      } catch (err) {
        refusals.push(String((err as Error).message));
      }
    }
    expect(refusals).to.have.length(3);
    for (const m of refusals) expect(m).to.match(/append-only/);
    const row = await t.db('audit_logs').where({ id: entry.id }).first();
    expect(row.status_code).to.equal(201);
    // Removing a whole organization still works (the cascade is the one permitted delete).
    await t.db('organizations').where({ id: org.orgId }).delete();
    expect(await t.db('audit_logs').where({ id: entry.id })).to.have.length(0);
  });

  it('derives the resource from the route: the last path parameter, or the created id of a collection POST', () => {
    expect(deriveResource('POST', '/agents/{id}/publish', { id: 'agt_1' }, undefined)).to.deep.equal({ type: 'agent', id: 'agt_1' });
    expect(deriveResource('POST', '/agents/{agentId}/knowledge/sources', { agentId: 'agt_1' }, { data: { id: 'src_9' } })).to.deep.equal({ type: 'knowledge_source', id: 'src_9' });
    expect(deriveResource('PATCH', '/agents/{agentId}/skills/{id}', { agentId: 'agt_1', id: 'skl_2' }, undefined)).to.deep.equal({ type: 'skill', id: 'skl_2' });
    expect(deriveResource('PUT', '/sms', {}, { data: { id: 'smsreg_1' } })).to.deep.equal({ type: 'sms', id: 'smsreg_1' });
    expect(deriveResource('POST', '/webhooks/{id}/deliveries/{deliveryId}/retry', { id: 'whk_1', deliveryId: 'whd_2' }, undefined)).to.deep.equal({ type: 'delivery', id: 'whd_2' });
  });
});
