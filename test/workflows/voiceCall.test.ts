/**
 * The `voice-call/{callId}` workflow (docs/voice.md) with the real SDK against the dev server: a
 * sandbox call rings the webhook (which starts the workflow), converses over the relay, the worker is
 * restarted, then the carrier's `completed` status callback reaches the workflow as a signal — the
 * call is stored completed and its minutes are charged exactly once, also when the callback comes
 * again. A call whose relay died without a goodbye gets its conversation closed by the workflow.
 */
import { expect } from 'chai';
import { createDb, type Db } from '../../db';
import { loadConfig } from '../../config';
import { createLogger } from '../../runtime';
import { startApi, type RunningApi } from '../../api/server';
import { createMigratedTestDatabase } from '../helpers/postgres';
import { startTestWorker, testTemporal, uniqueTaskQueue } from '../helpers/temporal';
import { createOrganization } from '../../db/repositories/organizations';
import { createSecretKey } from '../../db/repositories/apiKeys';
import { NON_RESERVED_SCOPES } from '../../domain/scopes';
import { createVoiceActivities } from '../../activities/voice';
import { placeSandboxCall, postSandboxWebhook } from '../../providers/telephony/sandboxCaller';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { publishDraft } from '../api/agents-fixtures';
import { getVoiceCall, linkCallConversation } from '../../db/repositories/voiceCalls';
import { getConversation } from '../../db/repositories/conversations';
import { startConversation } from '../../services/conversations/service';
import { workflowIds } from '../../temporal.config';
import { until } from '../helpers/wait';
import type { Client } from '@temporalio/client';

describe('voice-call workflow (dev server, real SDK)', function () {
  this.timeout(60_000);
  let db: Db;
  let api: RunningApi;
  let client: Client;
  let taskQueue: string;
  let worker: { stop(): Promise<void> } | undefined;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let n = 0;

  const call = async (method: string, path: string, json?: unknown) => {
    const res = await fetch(`${api.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' }, body: json === undefined ? undefined : JSON.stringify(json) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const restartWorker = async () => {
    await worker?.stop();
    worker = await startTestWorker(taskQueue, createVoiceActivities({ db }) as never);
  };
  const assignedNumber = async () => {
    const e164 = sandboxInventory('212')[n++].e164;
    const p = await call('POST', '/numbers/purchase', { e164 });
    await call('POST', `/numbers/${p.body.data.id}/assign`, { agentId });
    return e164;
  };
  const minutesOf = (callId: string) => db('usage_entries').where({ org_id: org.orgId, kind: 'voice_minutes' }).whereRaw(`details->>'callId' = ?`, [callId]);

  before(async () => {
    const databaseUrl = await createMigratedTestDatabase('voice_wf');
    db = createDb(databaseUrl);
    const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent' });
    ({ client } = await testTemporal());
    taskQueue = uniqueTaskQueue('voice-wf');
    api = await startApi({ db, databaseUrl, config, logger: createLogger('silent'), temporal: { client, taskQueue } });
    const o = await createOrganization(db, 'Voice WF');
    const { key, info } = await createSecretKey(db, o.id, { brand: config.keyBrandPrefix, scopes: NON_RESERVED_SCOPES });
    org = { orgId: o.id, key, keyId: info.id };
    const agent = await call('POST', '/agents', { name: 'Desk', greeting: 'Hello, desk here.', voiceId: 'voice_ava' });
    agentId = agent.body.data.id;
    await publishDraft(db, org, agentId, 'v1');
    await restartWorker();
  });
  after(async () => {
    await worker?.stop();
    await api?.close();
    await db?.destroy();
  });

  it('follows a call across a worker restart and charges its minutes once', async () => {
    const to = await assignedNumber();
    const rec = await placeSandboxCall({ baseUrl: api.baseUrl, from: '+12065550150', to, script: [{ say: 'Hello' }], durationSeconds: null });
    const callId = /name="callId" value="(call_\w+)"/.exec(rec.markup)![1];
    const handle = client.workflow.getHandle(workflowIds.voiceCall(callId));
    expect((await handle.describe()).status.name).to.equal('RUNNING');
    const status = (params: Record<string, string>) => postSandboxWebhook(`${api.baseUrl}/voice/sandbox/status`, { CallSid: rec.callSid, ...params });
    expect((await status({ CallStatus: 'in-progress' })).status).to.equal(204);
    await restartWorker();
    expect((await status({ CallStatus: 'completed', CallDuration: '125' })).status).to.equal(204);
    expect(await handle.result()).to.deep.equal({ status: 'completed', minutes: 3 });
    // The carrier retries its callback: the workflow is gone, the inline path finds the minutes charged.
    expect((await status({ CallStatus: 'completed', CallDuration: '125' })).status).to.equal(204);
    const entries = await minutesOf(callId);
    expect(entries.map((e) => [e.quantity, e.amount_cents])).to.deep.equal([[3, 6]]);
    const stored = (await getVoiceCall(db, org.orgId, callId))!;
    expect(stored).to.include({ status: 'completed', durationSeconds: 125 });
    expect((await getConversation(db, org.orgId, stored.conversationId!))?.status).to.equal('ended');
  });

  it('closes the conversation of a call whose relay died without a goodbye', async () => {
    const to = await assignedNumber();
    const rec = await placeSandboxCall({ baseUrl: api.baseUrl, from: '+12065550151', to, script: [], durationSeconds: null });
    const callId = /name="callId" value="(call_\w+)"/.exec(rec.markup)![1];
    // The relay of this call opened (and, at the caller's hang-up, ended) a conversation of its own; wait for
    // that to settle so its late link cannot replace the one made below.
    const relayConversation = await until(async () => (await getVoiceCall(db, org.orgId, callId))?.conversationId, 20_000, 'the relay conversation linked');
    await until(async () => (await getConversation(db, org.orgId, relayConversation))?.status === 'ended' || undefined, 20_000, 'the relay conversation ended');
    // A conversation the relay opened on a process that then died: still active, linked to the call.
    const stored = (await getVoiceCall(db, org.orgId, callId))!;
    const { conversation } = await startConversation(db, org.orgId, { agentId, channel: 'voice', versionId: stored.versionId!, keyId: null });
    await db('voice_calls').where({ id: callId }).update({ conversation_id: null });
    await linkCallConversation(db, org.orgId, callId, conversation.id);
    expect((await postSandboxWebhook(`${api.baseUrl}/voice/sandbox/status`, { CallSid: rec.callSid, CallStatus: 'completed', CallDuration: '30' })).status).to.equal(204);
    expect(await client.workflow.getHandle(workflowIds.voiceCall(callId)).result()).to.deep.equal({ status: 'completed', minutes: 1 });
    expect((await getConversation(db, org.orgId, conversation.id))).to.include({ status: 'ended', endReason: 'ended_by_user' });
  });
});
