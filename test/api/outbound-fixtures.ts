/**
 * Fixtures of the outbound tests: a real API wired to Temporal (the run's shared dev server unless
 * another address is given), a worker with the outbound activities on a unique task queue, and helpers
 * to make an organization with a published agent, an owned caller-id number and an imported list.
 */
import { expect } from 'chai';
import { Client } from '@temporalio/client';
import { loadConfig, type AppConfig } from '../../config';
import { createDb, type Db } from '../../db';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { createAgent } from '../../db/repositories/agents';
import { insertAttempts, lockCampaign, setCampaignStatus } from '../../db/repositories/campaigns';
import { newId } from '../../db/ids';
import { startApi, type RunningApi } from '../../api/server';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createLogger } from '../../runtime';
import { createOutboundActivities } from '../../activities/outbound';
import { callWithKey } from '../helpers/api';
import { useResource } from '../helpers/mocha';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { serverNow, startTestWorker, testTemporal, uniqueTaskQueue } from '../helpers/temporal';

/** A response with its parsed JSON body. */
export interface Res {
  status: number;
  body: any;
}

/** One outbound test environment. */
export interface OutboundEnv {
  db: Db;
  api: RunningApi;
  config: AppConfig;
  client: Client;
  taskQueue: string;
  call(key: string, method: string, path: string, json?: unknown): Promise<Res>;
  /** A new organization with a secret key (every non-reserved scope unless given). */
  org(name?: string, scopes?: string[]): Promise<{ orgId: string; key: string }>;
  /** An agent with a published version (inserted directly: publishing has its own tests). */
  publishedAgent(orgId: string, name?: string): Promise<string>;
  /** An agent that was never published. */
  draftAgent(orgId: string, name?: string): Promise<string>;
  /** Buys a sandbox number in area code 415 through the API. @returns its id */
  ownNumber(key: string): Promise<string>;
  /** Uploads `csv` and imports it into a new list, waiting for the import to end. @returns the list */
  importList(key: string, csv: string, opts?: { purpose?: string; columnMapping?: Record<string, string> }): Promise<any>;
  /** Uploads a CSV through POST /uploads. @returns the file id */
  upload(key: string, csv: string): Promise<string>;
  /** Starts (or restarts) the worker with a sandbox dial latency. */
  startWorker(dialLatencyMs?: number): Promise<void>;
  stopWorker(): Promise<void>;
  close(): Promise<void>;
}

import { until } from '../helpers/wait';
import { localParts } from '../../domain/sms/quietHours';

export { until };

/**
 * Starts an environment on a fresh database.
 * @param opts.dialLatencyMs the sandbox's dial latency of the first worker
 * @param opts.temporalUiUrl the Temporal Web UI's base URL the API links to (default: none, the links are null)
 */
export async function startOutboundEnv(label: string, opts: { dialLatencyMs?: number; temporalUiUrl?: string } = {}): Promise<OutboundEnv> {
  const databaseUrl = await createMigratedTestDatabase(label);
  const db = createDb(databaseUrl);
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 1_000_000 });
  const logger = createLogger('silent');
  const { client } = await testTemporal();
  const taskQueue = uniqueTaskQueue(label);
  const api = await startApi({ db, databaseUrl, config, logger, temporal: { client, taskQueue }, temporalUiUrl: opts.temporalUiUrl });
  let worker: { stop(): Promise<void> } | undefined;
  let n = 0;

  const call = (key: string, method: string, path: string, json?: unknown): Promise<Res> => callWithKey(api.baseUrl, key, method, path, json);
  const env: OutboundEnv = {
    db,
    api,
    config,
    client,
    taskQueue,
    call,
    async org(name = 'Outbound Org', scopes = NON_RESERVED_SCOPES) {
      const org = await createOrganization(db, name);
      const { key } = await createSecretKey(db, org.id, { brand: config.keyBrandPrefix, scopes });
      return { orgId: org.id, key };
    },
    async draftAgent(orgId, name = `Agent ${++n}`) {
      return (await createAgent(db, orgId, { name })).id;
    },
    async publishedAgent(orgId, name = `Agent ${++n}`) {
      const agentId = await env.draftAgent(orgId, name);
      const versionId = newId('ver');
      await db('agent_versions').insert({ id: versionId, org_id: orgId, agent_id: agentId, number: 1, snapshot: '{}', checksum: 'x', draft_version: 1, published_by: 'test', idempotency_key: 'k', request_hash: 'h' });
      await db('agents').where({ id: agentId }).update({ published_version_id: versionId });
      return agentId;
    },
    async ownNumber(key) {
      const offered = (await call(key, 'GET', '/numbers/search?areaCode=415&limit=200')).body.data.items as { e164: string }[];
      for (const o of offered) {
        const r = await call(key, 'POST', '/numbers/purchase', { e164: o.e164 });
        if (r.status === 200) return r.body.data.id as string;
      }
      throw new Error('no sandbox number could be bought');
    },
    upload: (key, csv) => uploadCsv(api.baseUrl, key, csv),
    importList: (key, csv, o = {}) => importContactList(api.baseUrl, key, csv, { name: `List ${++n}`, ...o }),
    async startWorker(dialLatencyMs = opts.dialLatencyMs ?? 0) {
      await worker?.stop();
      worker = await startTestWorker(taskQueue, createOutboundActivities({ db, config, logger }, { telephonyOptions: { dialLatencyMs } }));
    },
    async stopWorker() {
      await worker?.stop();
      worker = undefined;
    },
    async close() {
      await worker?.stop();
      await api.close();
      await db.destroy();
    },
  };
  await env.startWorker();
  return env;
}

/** Uploads a CSV through `POST /uploads` as `key`. @returns the file id. @throws Error when the upload is refused */
export async function uploadCsv(baseUrl: string, key: string, csv: string): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
  const res = await fetch(`${baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
  const body = (await res.json()) as any;
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(body)}`);
  return body.data.id as string;
}

/**
 * Creates a contact list (`POST /contact-lists`), uploads `csv` and imports it into the list, waiting (up to 20 s) for
 * the import to end; a worker must run the `contactImport` workflow. @returns the list (import `ready` or `failed`)
 * @throws Error when the import is refused
 */
export async function importContactList(baseUrl: string, key: string, csv: string, o: { name?: string; purpose?: string; columnMapping?: Record<string, string> } = {}): Promise<any> {
  const call = (method: string, path: string, json?: unknown) => callWithKey(baseUrl, key, method, path, json);
  const list = (await call('POST', '/contact-lists', { name: o.name ?? 'Contacts', ...(o.purpose ? { purpose: o.purpose } : {}) })).body.data;
  const fileId = await uploadCsv(baseUrl, key, csv);
  const r = await call('POST', `/contact-lists/${list.id}/imports`, { fileId, ...(o.columnMapping ? { columnMapping: o.columnMapping } : {}) });
  if (r.status !== 202) throw new Error(`import refused: ${r.status} ${JSON.stringify(r.body)}`);
  return until(async () => {
    const l = (await call('GET', `/contact-lists/${list.id}`)).body.data;
    return l.import.status === 'ready' || l.import.status === 'failed' ? l : undefined;
  }, 20_000, 'the import');
}

/**
 * A fixed-offset zone (`Etc/GMT±h`) where the run's dev server clock reads noon, inside every default calling window:
 * the dialer judges the window by workflow time, which earlier suites may have skipped ahead of the wall clock.
 */
export async function noonZone(): Promise<string> {
  const offset = 12 - (await serverNow()).getUTCHours();
  return offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

/** Milliseconds from `now` to the next instant that is hh:mm in `zone` (at least one minute ahead). */
export function untilLocal(zone: string, hour: number, minute: number, now: Date): number {
  for (let t = Math.ceil((now.getTime() + 60_000) / 60_000) * 60_000; ; t += 60_000) {
    const p = localParts(zone, new Date(t));
    if (p.hour === hour && p.minute === minute) return t - now.getTime();
  }
}

/** Valid US numbers in a zone's area code ending in `last4` (sandbox magic: 0001 answered … 0005 failed). */
export function phone(areaCode: string, i: number, last4?: string): string {
  return `+1${areaCode}${String(300 + (i % 600)).padStart(3, '0')}${last4 ?? String(1000 + (i % 9000)).padStart(4, '0')}`;
}

/** An organization ready to run campaigns: its secret key, a published agent and an owned caller-id number. */
export interface Dialer {
  key: string;
  orgId: string;
  agentId: string;
  numberId: string;
}

/**
 * An outbound environment on a fresh database for the enclosing mocha `describe` (started in a
 * `before` hook with a 120 s timeout, closed in an `after` hook) and a "Dialer Co" organization in it
 * ({@link Dialer}, filled in by a second `before` hook).
 * @param opts the environment's options, read when the `before` hook runs (after the enclosing suites' hooks)
 */
export function useDialerEnv(label: string, opts: () => Parameters<typeof startOutboundEnv>[1] = () => ({})): { env: OutboundEnv; dialer: Dialer } {
  const env = useResource(`outbound env ${label}`, () => startOutboundEnv(label, opts()), (e) => e.close(), { timeoutMs: 120_000 });
  const dialer = {} as Dialer;
  before(async function () {
    this.timeout(120_000);
    const { key, orgId } = await env.org('Dialer Co');
    const agentId = await env.publishedAgent(orgId);
    Object.assign(dialer, { key, orgId, agentId, numberId: await env.ownNumber(key) });
  });
  return { env, dialer };
}

/** A running informational campaign of one contact, its attempt claimable now. @returns the campaign id */
export async function runningCampaign(env: OutboundEnv, dialer: Dialer, agentId: string, contact: string): Promise<string> {
  const list = await env.importList(dialer.key, `phone\n${contact}`);
  const created = await env.call(dialer.key, 'POST', '/campaigns', { name: 'Reminders', agentId, callerIdNumberId: dialer.numberId, contactListId: list.id, purpose: 'informational' });
  expect(created.status).to.equal(201);
  const campaignId = created.body.data.id as string;
  await env.db.transaction(async (trx) => {
    const row = await lockCampaign(trx, dialer.orgId, campaignId);
    await insertAttempts(trx, dialer.orgId, campaignId, row.list_id);
    await setCampaignStatus(trx, dialer.orgId, campaignId, 'running');
    await trx('call_attempts').where({ org_id: dialer.orgId, campaign_id: campaignId }).update({ not_before: new Date('2026-01-01T00:00:00Z') });
  });
  return campaignId;
}
