/**
 * `POST /agents/{id}/publish` end to end against the embedded Temporal dev server with the real SDK:
 * the handler starts `agent-publish/{agentId}/{key}`, a worker runs the compile activity, the handler
 * answers 201 with the version. Idempotent retries, concurrency and validation failures.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { DevServer } from '../../devserver';
import { startRecordingDevServer } from '../helpers/histories';
import { loadConfig } from '../../config';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { startApi, type RunningApi } from '../../api/server';
import { createLogger } from '../../runtime';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createAgentActivities } from '../../activities/agents';
import { QUICK_CLIENT, callWithKey } from '../helpers/api';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { serviceWorkflowBundle } from '../helpers/temporal';

try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed by another suite in this process
}

const BOOK = { name: 'book_appointment', type: 'book_appointment', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } };

describe('agent publish workflow (dev server, real SDK)', function () {
  this.timeout(120_000);
  let server: DevServer;
  let connection: Connection;
  let native: NativeConnection;
  let db: Db;
  let api: RunningApi;
  let worker: Worker;
  let running: Promise<void>;
  let key: string;
  const taskQueue = `agent-publish-${crypto.randomBytes(4).toString('hex')}`;

  const call = (method: string, p: string, json?: unknown, headers: Record<string, string> = {}) => callWithKey(api.baseUrl, key, method, p, json, headers);
  const newAgent = async (name: string) => {
    const id = (await call('POST', '/agents', { name })).body.data.id as string;
    await call('POST', `/agents/${id}/skills`, BOOK);
    return id;
  };
  const publish = (agentId: string, idem: string, note?: string) => call('POST', `/agents/${agentId}/publish`, note === undefined ? {} : { note }, { 'idempotency-key': idem });

  before(async () => {
    server = await startRecordingDevServer({ log: () => {} });
    connection = await Connection.connect({ address: server.address });
    native = await NativeConnection.connect({ address: server.address });
    const databaseUrl = await createMigratedTestDatabase('agentpublishwf');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', ...QUICK_CLIENT });
    api = await startApi({ db, databaseUrl, config, logger: createLogger('silent'), temporal: { client: new Client({ connection }), taskQueue } });
    const org = await createOrganization(db, 'Publisher');
    ({ key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES }));
    const workflowBundle = await serviceWorkflowBundle();
    worker = await Worker.create({ connection: native, taskQueue, workflowBundle, activities: createAgentActivities({ db }) });
    running = worker.run();
  });

  after(async () => {
    worker?.shutdown();
    await running?.catch(() => {});
    await api?.close();
    await db?.destroy();
    await connection?.close();
    await native?.close();
    await server?.stop();
  });

  it('publishes version 1 through the workflow and answers 201 with it', async () => {
    const agentId = await newAgent('Workflow one');
    const r = await publish(agentId, 'first', 'launch');
    expect(r.status).to.equal(201);
    expect(r.body.data).to.include({ number: 1, note: 'launch', isPublished: true, agentId });
    const agent = (await call('GET', `/agents/${agentId}`)).body.data;
    expect(agent.publishedVersionId).to.equal(r.body.data.id);
    const wf = await new Client({ connection }).workflow.getHandle(`agent-publish/${agentId}/first`).describe();
    expect(wf.status.name).to.equal('COMPLETED');
  });

  it('answers the same version to retries with the same key, concurrent or later, and publishes once', async () => {
    const agentId = await newAgent('Workflow retry');
    const rs = await Promise.all([publish(agentId, 'dup', 'n'), publish(agentId, 'dup', 'n'), publish(agentId, 'dup', 'n')]);
    expect(rs.map((r) => r.status)).to.deep.equal([201, 201, 201]);
    expect(new Set(rs.map((r) => r.body.data.id)).size).to.equal(1);
    const later = await publish(agentId, 'dup', 'n');
    expect(later.body.data.id).to.equal(rs[0].body.data.id);
    const reused = await publish(agentId, 'dup', 'other');
    expect(reused.status).to.equal(422);
    expect(reused.body.code).to.equal('idempotency_key_reused');
    expect((await call('GET', `/agents/${agentId}/versions`)).body.data.items).to.have.length(1);
  });

  it('gives racing publishes with different keys consecutive version numbers', async () => {
    const agentId = await newAgent('Workflow race');
    const rs = await Promise.all(['a', 'b', 'c', 'd'].map((k) => publish(agentId, k)));
    for (const r of rs) expect([201, 409]).to.include(r.status);
    const numbers = rs.filter((r) => r.status === 201).map((r) => r.body.data.number).sort();
    expect(numbers).to.deep.equal(Array.from({ length: numbers.length }, (_, i) => i + 1));
  });

  it('answers 400 naming the broken fields and publishes nothing for an invalid draft', async () => {
    const agentId = await newAgent('Workflow invalid');
    await db('agent_skills').where({ agent_id: agentId }).update({ config: JSON.stringify({ url: 'nope', durationMinutes: 30, timeZone: 'UTC' }) });
    const r = await publish(agentId, 'bad');
    expect(r.status).to.equal(400);
    expect(r.body.code).to.equal('validation_error');
    expect(r.body.errors.map((e: any) => e.field)).to.include('skills[book_appointment].config.url');
    expect((await call('GET', `/agents/${agentId}`)).body.data.publishedVersionId).to.equal(null);
    // Fixed draft, same key: the closed workflow id is reused and this time it publishes.
    await db('agent_skills').where({ agent_id: agentId }).update({ config: JSON.stringify(BOOK.config) });
    const again = await publish(agentId, 'bad');
    expect(again.status).to.equal(201);
    expect(again.body.data.number).to.equal(1);
  });
});
