/**
 * Traffic splits over a real socket, Postgres and Temporal (docs/api-notes.md "Traffic splits"): the default split,
 * the 400s, a 90/10 split over 1,000 new conversations, stickiness on every channel (chat customer, widget visitor,
 * `/chat/completions` and `/responses` user, SMS sender, inbound caller), the version and split recorded on each
 * conversation, the conversation list's `versionId` filter and analytics by version, explicit pins (`@vN`, a talk
 * token) winning over the split, and the reset on publish (over HTTP, through the `agent-publish` workflow) and
 * rollback with `traffic.updated`.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { createActivities } from '../../activities';
import { startConversation } from '../../services/conversations/service';
import { stickyPoint } from '../../domain/agents/traffic';
import { endConversation, getConversation } from '../../db/repositories/conversations';
import { getVoiceCall } from '../../db/repositories/voiceCalls';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { placeSandboxCall } from '../../providers/telephony/sandboxCaller';
import { until } from '../helpers/wait';

const SITE = 'https://shop.example.com';

describe('traffic splits (sticky routing over published versions)', function () {
  this.timeout(180_000);
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let v1: string;
  let v2: string;
  let publishes = 0;

  const publish = async (id: string) => {
    const r = await t.call('POST', `/agents/${id}/publish`, { key: org.key, json: {}, headers: { 'idempotency-key': `traffic-${++publishes}` } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data.id as string;
  };
  const editGreeting = async (id: string, greeting: string) => {
    const v = (await t.call('GET', `/agents/${id}`, { key: org.key })).body.data.version;
    const r = await t.call('PATCH', `/agents/${id}`, { key: org.key, json: { greeting }, headers: { 'if-match': `"${v}"` } });
    expect(r.status, r.text).to.equal(200);
  };
  const putSplit = (json: unknown, id = agentId) => t.call('PUT', `/agents/${id}/traffic`, { key: org.key, json });
  const trafficEvents = async () => (await t.db('events').where({ org_id: org.orgId, type: 'traffic.updated' }).orderBy('created_at').orderBy('id')).map((e: any) => e.data);
  const newAgent = async (name: string) => {
    const r = await t.call('POST', '/agents', { key: org.key, json: { name, voiceId: 'voice_ava', greeting: 'Hello from v1' } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data.id as string;
  };

  before(async () => {
    t = await startTestApi('traffic', QUICK_CLIENT, { worker: ({ db, config, logger }) => createActivities({ db, config, logger }) });
    org = await t.org('Traffic');
    agentId = await newAgent('Split');
    await t.call('PUT', `/agents/${agentId}/widget`, { key: org.key, json: { enabled: true, title: 'Shop', greeting: null, primaryColor: '#0a7d3b', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Help' } });
    v1 = await publish(agentId);
    await editGreeting(agentId, 'Hello from v2');
    v2 = await publish(agentId);
  });
  after(async () => t?.close());

  it('answers 409 no_published_version before the first publish, and 100 % on the live version by default', async () => {
    const fresh = await newAgent('Unpublished');
    const none = await t.call('GET', `/agents/${fresh}/traffic`, { key: org.key });
    expect(none.status).to.equal(409);
    expect(none.body.code).to.equal('no_published_version');
    expect((await putSplit({ splits: [{ versionId: v1, percent: 100 }] }, fresh)).body.code).to.equal('no_published_version');
    const got = await t.call('GET', `/agents/${agentId}/traffic`, { key: org.key });
    expect(got.status, got.text).to.equal(200);
    expect(got.body.data).to.deep.equal({ agentId, splits: [{ versionId: v2, percent: 100 }], stickiness: 'counterpart', publishedVersionId: v2, custom: false, updatedAt: null });
    expect((await t.call('GET', `/agents/agt_doesnotexist1/traffic`, { key: org.key })).status).to.equal(404);
  });

  it('refuses a split that does not sum to 100, repeats a version or has a percent outside 1..100 (400 naming the field), and one naming a version of another agent (404 naming the field), storing nothing', async () => {
    const other = await newAgent('Other');
    const foreign = await publish(other);
    const cases: [unknown, string][] = [
      [{ splits: [{ versionId: v1, percent: 50 }, { versionId: v2, percent: 40 }] }, 'splits'],
      [{ splits: [{ versionId: v1, percent: 50 }, { versionId: v1, percent: 50 }] }, 'splits.1.versionId'],
      [{ splits: [{ versionId: v1, percent: 0 }, { versionId: v2, percent: 100 }] }, 'splits.0.percent'],
      [{ splits: [{ versionId: v1, percent: 90.5 }, { versionId: v2, percent: 9.5 }] }, 'splits.0.percent'],
      [{ splits: [{ versionId: v1, percent: 100 }], stickiness: 'sometimes' }, 'stickiness'],
      [{ splits: [] }, 'splits'],
    ];
    for (const [json, field] of cases) {
      const r = await putSplit(json);
      expect(r.status, JSON.stringify(json)).to.equal(400);
      expect(r.body.code).to.equal('validation_error');
      expect(r.body.errors.map((e: { field: string }) => e.field), JSON.stringify(json)).to.include(field);
    }
    const foreignVersion = await putSplit({ splits: [{ versionId: v1, percent: 50 }, { versionId: foreign, percent: 50 }] });
    expect(foreignVersion.status).to.equal(404);
    expect(foreignVersion.body.code).to.equal('version_not_found');
    expect(foreignVersion.body.errors).to.deep.equal([{ field: 'splits.1.versionId', message: 'is not a version of this agent' }]);
    expect((await t.call('GET', `/agents/${agentId}/traffic`, { key: org.key })).body.data.custom).to.equal(false);
    expect(await trafficEvents()).to.deep.equal([]);
  });

  it('splits 1,000 new conversations 90/10, each by the point of its key (within ±5 points overall), and records the version and split on each; traffic.updated on the PUT', async () => {
    const set = await putSplit({ splits: [{ versionId: v1, percent: 90 }, { versionId: v2, percent: 10 }], stickiness: 'counterpart' });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.data).to.deep.include({ agentId, splits: [{ versionId: v1, percent: 90 }, { versionId: v2, percent: 10 }], stickiness: 'counterpart', publishedVersionId: v2, custom: true });
    const events = await trafficEvents();
    expect(events).to.have.length(1);
    expect(events[0]).to.deep.include({ agentId, splits: [{ versionId: v1, percent: 90 }, { versionId: v2, percent: 10 }], stickiness: 'counterpart', reason: 'put' });

    // Most through the service function every channel uses; a handful over HTTP below.
    const split = { splits: [{ versionId: v1, percent: 90 }, { versionId: v2, percent: 10 }], stickiness: 'counterpart' };
    const ids: string[] = [];
    for (let batch = 0; batch < 1000; batch += 20) {
      const started = await Promise.all(
        Array.from({ length: 20 }, (_, i) => startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, stickinessKey: `customer-${batch + i}` })),
      );
      started.forEach((s, i) => {
        // Sticky by counterpart: the key's point on [0, 100) decides, below 90 → v1 (domain/agents/traffic.ts).
        expect(s.conversation.versionId).to.equal(stickyPoint(agentId, `customer-${batch + i}`) < 90 ? v1 : v2);
        ids.push(s.conversation.id);
      });
    }
    const rows = await t.db('conversations').whereIn('id', ids).select('version_id', 'traffic_split');
    expect(rows).to.have.length(1000);
    for (const r of rows) expect(r.traffic_split).to.deep.equal(split);
    const onV1 = rows.filter((r) => r.version_id === v1).length;
    const share = (onV1 / 1000) * 100;
    // The agent id is new on every run, so the keys' points are a fresh uniform sample: ±5 points is 5.3 standard
    // deviations of a binomial share of 1,000 at 90 % (±3 was 3.2, one run in about 600 fell outside).
    expect(share).to.be.within(85, 95);
    // The greeting stored is the picked version's.
    const sample = await startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, stickinessKey: 'customer-0' });
    expect(sample.greeting?.content).to.equal(sample.conversation.versionId === v1 ? 'Hello from v1' : 'Hello from v2');
  });

  it('keeps a repeat counterpart on one version on every channel: chat customerId, widget visitor, completions and responses user, SMS sender, inbound caller', async () => {
    const versionsOf = async (starts: (() => Promise<string>)[]) => {
      const ids: string[] = [];
      for (const s of starts) ids.push(await s());
      const rows = await t.db('conversations').whereIn('id', ids).select('version_id', 'traffic_split');
      for (const r of rows) expect(r.traffic_split?.splits).to.have.length(2);
      return new Set(rows.map((r) => r.version_id));
    };
    const times = <T>(n: number, f: () => T) => Array.from({ length: n }, f);

    for (const customerId of ['alice', 'bob', 'carol']) {
      const seen = await versionsOf(
        times(3, () => async () => {
          const r = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, customerId } });
          expect(r.status, r.text).to.equal(201);
          return r.body.data.session.id as string;
        }),
      );
      expect(seen.size, customerId).to.equal(1);
    }
    const missing = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, customerId: '' } });
    expect(missing.status).to.equal(400);
    expect(missing.body.errors[0].field).to.equal('customerId');

    const pk = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'shop', agentId, allowedOrigins: [SITE] } })).body.data.key;
    const widget = async (visitorId: string) => {
      const res = await fetch(`${t.api.baseUrl}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${pk}`, origin: SITE, 'content-type': 'application/json' }, body: JSON.stringify({ visitorId }) });
      const body = (await res.json()) as any;
      expect(res.status, JSON.stringify(body)).to.equal(201);
      return body.data.session.id as string;
    };
    expect((await versionsOf(times(3, () => () => widget('visitor-42')))).size).to.equal(1);

    const completion = async (user: string) => {
      const r = await t.call('POST', '/chat/completions', { key: org.key, json: { model: agentId, user, messages: [{ role: 'user', content: 'hi' }] } });
      expect(r.status, r.text).to.equal(200);
      return String(r.body.id).replace(/^chatcmpl-/, '');
    };
    expect((await versionsOf(times(3, () => () => completion('end-user-7')))).size).to.equal(1);

    const response = async (user: string) => {
      const r = await t.call('POST', '/responses', { key: org.key, json: { model: agentId, user, input: 'hi' } });
      expect(r.status, r.text).to.equal(200);
      return (await t.db('conversations').where({ org_id: org.orgId }).whereRaw(`metadata->>'api' = 'responses'`).orderBy('started_at', 'desc').first('id')).id as string;
    };
    expect((await versionsOf(times(3, () => () => response('end-user-8')))).size).to.equal(1);

    // An SMS thread starts its conversation with the sender as counterpart (services/sms/answer.ts); one open at a time.
    const sms = async () => {
      const { conversation } = await startConversation(t.db, org.orgId, { agentId, channel: 'sms', keyId: null, counterpart: '+13125550188', seed: [] });
      await endConversation(t.db, org.orgId, conversation.id, 'idle');
      return conversation.id;
    };
    expect((await versionsOf(times(3, () => sms))).size).to.equal(1);

    // Inbound calls through the carrier webhook and the relay: the caller's number is the key.
    const e164 = sandboxInventory('206')[3].e164;
    const bought = await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } });
    expect(bought.status, bought.text).to.equal(200);
    expect((await t.call('POST', `/numbers/${bought.body.data.id}/assign`, { key: org.key, json: { agentId } })).status).to.equal(200);
    const call = async () => {
      const rec = await placeSandboxCall({ baseUrl: t.api.baseUrl, from: '+12065550123', to: e164, script: [{ say: 'hello' }] });
      expect(rec.webhookStatus).to.equal(200);
      const callId = /name="callId" value="(call_[A-Za-z0-9]+)"/.exec(rec.markup)![1];
      const conversationId = await until(async () => (await getVoiceCall(t.db, org.orgId, callId))?.conversationId ?? null, 10_000, 'call linked');
      const c = (await getConversation(t.db, org.orgId, conversationId))!;
      expect(c.versionId).to.equal((await getVoiceCall(t.db, org.orgId, callId))!.versionId);
      return conversationId;
    };
    expect((await versionsOf(times(2, () => call))).size).to.equal(1);
  });

  it('lists conversations by version and groups an agent\'s analytics by version', async () => {
    const counts = await t.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).groupBy('version_id').select('version_id', t.db.raw('count(*)::int AS n'));
    const byVersion = new Map(counts.map((r: any) => [r.version_id, r.n]));
    const listed = await t.call('GET', `/conversations?agentId=${agentId}&versionId=${v2}&limit=100`, { key: org.key });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.data.items.length).to.equal(Math.min(100, byVersion.get(v2)!));
    for (const c of listed.body.data.items) expect(c.versionId).to.equal(v2);
    expect(listed.body.data.items[0].trafficSplit).to.deep.include({ stickiness: 'counterpart' });
    expect((await t.call('GET', '/conversations?versionId=not%20an%20id', { key: org.key })).body.errors[0].field).to.equal('versionId');

    const analytics = await t.call('GET', `/agents/${agentId}/analytics?groupBy=version`, { key: org.key });
    expect(analytics.status, analytics.text).to.equal(200);
    const versions = analytics.body.data.versions as { versionId: string; versionNumber: number; conversations: number }[];
    expect(versions.map((v) => [v.versionId, v.versionNumber, v.conversations])).to.deep.equal([
      [v1, 1, byVersion.get(v1)],
      [v2, 2, byVersion.get(v2)],
    ]);
    expect(analytics.body.data.totals.conversations).to.equal(byVersion.get(v1)! + byVersion.get(v2)!);
    expect((await t.call('GET', `/agents/${agentId}/analytics?groupBy=hour`, { key: org.key })).body.errors[0].field).to.equal('groupBy');
    expect((await t.call('GET', `/agents/${agentId}/analytics`, { key: org.key })).body.data).to.not.have.property('versions');
  });

  it('never lets the split override an explicit pin: `@vN` models and talk tokens', async () => {
    expect((await putSplit({ splits: [{ versionId: v1, percent: 100 }] })).status).to.equal(200);
    const pinned = await t.call('POST', '/chat/completions', { key: org.key, json: { model: `${agentId}@v2`, user: 'end-user-7', messages: [{ role: 'user', content: 'hi' }] } });
    expect(pinned.status, pinned.text).to.equal(200);
    const row = await t.db('conversations').where({ id: String(pinned.body.id).replace(/^chatcmpl-/, '') }).first('version_id', 'traffic_split');
    expect(row).to.deep.equal({ version_id: v2, traffic_split: null });
    const unpinned = await t.call('POST', '/chat/completions', { key: org.key, json: { model: agentId, messages: [{ role: 'user', content: 'hi' }] } });
    expect((await t.db('conversations').where({ id: String(unpinned.body.id).replace(/^chatcmpl-/, '') }).first('version_id')).version_id).to.equal(v1);
    // A talk token pins the live version it was minted for, whatever the split.
    const token = await t.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: {} });
    expect(token.status, token.text).to.equal(201);
    expect(token.body.data).to.include({ versionId: v2, mode: 'published' });
  });

  it('picks at random per conversation with stickiness none, even for one key', async () => {
    expect((await putSplit({ splits: [{ versionId: v1, percent: 50 }, { versionId: v2, percent: 50 }], stickiness: 'none' })).status).to.equal(200);
    const seen = new Set<string | null>();
    for (let i = 0; i < 40; i++) seen.add((await startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, stickinessKey: 'same-customer' })).conversation.versionId);
    expect([...seen].sort()).to.deep.equal([v1, v2].sort());
  });

  it('resets the split to 100 % on the new live version on publish (HTTP, agent-publish workflow) and on rollback, with traffic.updated', async () => {
    expect((await putSplit({ splits: [{ versionId: v1, percent: 30 }, { versionId: v2, percent: 70 }] })).status).to.equal(200);
    await editGreeting(agentId, 'Hello from v3');
    const v3 = await publish(agentId);
    const afterPublish = (await t.call('GET', `/agents/${agentId}/traffic`, { key: org.key })).body.data;
    expect(afterPublish).to.deep.include({ splits: [{ versionId: v3, percent: 100 }], publishedVersionId: v3, custom: false, updatedAt: null });
    let events = await trafficEvents();
    expect(events[events.length - 1]).to.deep.include({ agentId, splits: [{ versionId: v3, percent: 100 }], reason: 'published' });
    const started = await startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, stickinessKey: 'customer-1' });
    expect(started.conversation.versionId).to.equal(v3);

    // A publish with no split set emits no traffic.updated.
    const before = events.length;
    await editGreeting(agentId, 'Hello from v4');
    const v4 = await publish(agentId);
    expect(await trafficEvents()).to.have.length(before);

    expect((await putSplit({ splits: [{ versionId: v3, percent: 50 }, { versionId: v4, percent: 50 }] })).status).to.equal(200);
    const rolled = await t.call('POST', `/agents/${agentId}/rollback`, { key: org.key, json: { versionId: v2 } });
    expect(rolled.status, rolled.text).to.equal(200);
    expect((await t.call('GET', `/agents/${agentId}/traffic`, { key: org.key })).body.data).to.deep.include({ splits: [{ versionId: v2, percent: 100 }], publishedVersionId: v2, custom: false });
    events = await trafficEvents();
    expect(events[events.length - 1]).to.deep.include({ agentId, splits: [{ versionId: v2, percent: 100 }], stickiness: 'counterpart', reason: 'rolled_back' });
    expect((await startConversation(t.db, org.orgId, { agentId, channel: 'chat', keyId: null, stickinessKey: 'customer-1' })).conversation.versionId).to.equal(v2);
  });
});
