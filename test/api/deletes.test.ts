/**
 * Deletes (docs/api-notes.md "Deletes") over a real socket and Postgres, with the sandbox telephony provider and the
 * sandbox LLM: an agent archived (numbers unassigned, publishable keys revoked, 404 on writes, its conversation
 * still readable, refused while a campaign runs), a knowledge source leaving the draft while a published version
 * keeps answering from its chunks, a playbook leaving the draft, and a number released at the provider once
 * (refused while assigned) — each with its webhook event and audit entry.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createSource, markFailed } from '../../db/repositories/knowledge';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createLogger } from '../../runtime';
import { createTelephony } from '../../providers/telephony';
import { releaseNumber } from '../../services/deletes';
import { SimulatedCrash, type FaultHook } from '../../services/effects';
import { ingestInline } from '../helpers/knowledge';

describe('Deletes: agents, knowledge sources, playbooks and numbers', () => {
  const t = useTestApi('deletes', QUICK_CLIENT);
  const SITE = 'https://shop.example.com';

  const newAgent = async (key: string, name: string) => {
    const res = await t.call('POST', '/agents', { key, json: { name, voiceId: 'voice_ava', greeting: 'Hello!' } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data as { id: string; version: number };
  };
  const eventsOf = async (orgId: string, type: string) => (await t.db('events').where({ org_id: orgId, type }).orderBy('created_at').select('data')).map((r: { data: any }) => r.data);
  const auditOf = (orgId: string, operationId: string) => t.db('audit_logs').where({ org_id: orgId, operation_id: operationId }).orderBy('occurred_at').select('resource_type', 'resource_id', 'status_code');
  const buyNumber = async (key: string, areaCode: string) => {
    const found = await t.call('GET', `/numbers/search?areaCode=${areaCode}&limit=1`, { key });
    const bought = await t.call('POST', '/numbers/purchase', { key, json: { e164: found.body.data.items[0].e164 } });
    expect(bought.status, bought.text).to.equal(200);
    return bought.body.data as { id: string; e164: string };
  };
  /** A text source ingested to `ready` by the real ingestion activities, inline (no workflow). */
  const readySource = async (orgId: string, agentId: string, name: string, text: string) => {
    const src = await createSource(t.db, orgId, { agentId, kind: 'text', name, text }, async () => undefined);
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId, sourceId: src.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    return src.id;
  };

  describe('DELETE /agents/{id}', () => {
    it('archives the agent: numbers unassigned, widget keys revoked, 404 on reads and writes, conversation and versions still readable, event and audit entry', async () => {
      const org = await t.org('Archive');
      const agent = await newAgent(org.key, 'Front desk');
      await publishDraft(t.db, org, agent.id, 'd1');
      const num = await buyNumber(org.key, '415');
      expect((await t.call('POST', `/numbers/${num.id}/assign`, { key: org.key, json: { agentId: agent.id } })).status).to.equal(200);
      const pk = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'shop', agentId: agent.id, allowedOrigins: [SITE] } });
      expect(pk.status, pk.text).to.equal(201);
      expect((await t.call('POST', '/chat/widget/sessions', { headers: { authorization: `Bearer ${pk.body.data.key}`, origin: SITE }, json: {} })).status).to.equal(201);
      const session = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).body.data.session;
      expect((await t.call('POST', `/chat/sessions/${session.id}/messages`, { key: org.key, json: { content: 'Are you open on Sunday?' } })).status).to.equal(200);
      expect((await t.call('POST', `/chat/sessions/${session.id}/end`, { key: org.key })).status).to.equal(200);

      const del = await t.call('DELETE', `/agents/${agent.id}`, { key: org.key });
      expect(del.status, del.text).to.equal(200);
      expect(del.body.data).to.deep.include({ id: agent.id, deleted: true, unassignedNumberIds: [num.id], revokedPublishableKeyIds: [pk.body.data.id] });
      expect(Date.parse(del.body.data.archivedAt)).to.be.greaterThan(0);

      // Gone from the Agents surface: reads, writes and the list.
      const patch = await t.call('PATCH', `/agents/${agent.id}`, { key: org.key, headers: { 'if-match': '*' }, json: { greeting: 'Back?' } });
      expect(patch.status).to.equal(404);
      expect(patch.body.code).to.equal('agent_not_found');
      for (const [method, path, json] of [
        ['GET', `/agents/${agent.id}`, undefined],
        ['PUT', `/agents/${agent.id}/guardrails`, { blockedTopics: [], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null }],
        ['POST', `/agents/${agent.id}/playbooks`, { name: 'intake' }],
        ['POST', `/agents/${agent.id}/rollback`, { versionId: 'ver_x' }],
        ['DELETE', `/agents/${agent.id}`, undefined],
      ] as const) {
        const res = await t.call(method, path, { key: org.key, json });
        expect(res.status, `${method} ${path}: ${res.text}`).to.equal(404);
      }
      expect((await t.call('POST', `/agents/${agent.id}/publish`, { key: org.key, headers: { 'idempotency-key': 'after-delete' }, json: {} })).status).to.equal(404);
      expect((await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).status).to.equal(404);
      expect((await t.call('POST', `/numbers/${num.id}/assign`, { key: org.key, json: { agentId: agent.id } })).status).to.equal(404);
      expect((await t.call('GET', '/agents', { key: org.key })).body.data.items.map((a: { id: string }) => a.id)).to.not.include(agent.id);
      // Its number answers for no agent; its widget key no longer authenticates.
      expect((await t.call('GET', '/numbers', { key: org.key })).body.data.items.find((n: { id: string }) => n.id === num.id)).to.include({ agentId: null });
      expect((await t.call('POST', '/chat/widget/sessions', { headers: { authorization: `Bearer ${pk.body.data.key}`, origin: SITE }, json: {} })).status).to.equal(401);

      // History stays: the conversation (transcript, list) and the frozen versions.
      const transcript = await t.call('GET', `/conversations/${session.id}/transcript`, { key: org.key });
      expect(transcript.status, transcript.text).to.equal(200);
      expect(transcript.body.data.messages.map((m: { text: string }) => m.text)).to.include('Are you open on Sunday?');
      expect((await t.call('GET', `/conversations?agentId=${agent.id}`, { key: org.key })).body.data.items.map((c: { id: string }) => c.id)).to.include(session.id);
      expect((await t.call('GET', `/agents/${agent.id}/versions`, { key: org.key })).body.data.items).to.have.length(1);

      expect(await eventsOf(org.orgId, 'agent.deleted')).to.deep.equal([
        { agentId: agent.id, name: 'Front desk', unassignedNumberIds: [num.id], revokedPublishableKeyIds: [pk.body.data.id], archivedAt: del.body.data.archivedAt },
      ]);
      expect(await auditOf(org.orgId, 'deleteAgent')).to.deep.equal([
        { resource_type: 'agent', resource_id: agent.id, status_code: 200 },
        { resource_type: 'agent', resource_id: agent.id, status_code: 404 },
      ]);
      // The name is free for a new agent.
      expect((await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk' } })).status).to.equal(201);
    });

    it('answers 409 campaign_running while one of its campaigns runs or is paused, and deletes once it is cancelled', async () => {
      const org = await t.org('Campaigning');
      const agent = await newAgent(org.key, 'Dialer');
      const num = await buyNumber(org.key, '212');
      const listId = `cl_${agent.id}`;
      await t.db('contact_lists').insert({ id: listId, org_id: org.orgId, name: 'Patients', purpose: 'informational', status: 'ready' });
      const campaign = {
        id: `cmp_${agent.id}`, org_id: org.orgId, name: 'Reminders', agent_id: agent.id, caller_id_number_id: num.id, caller_id: num.e164, list_id: listId, purpose: 'informational',
        status: 'running', window_start_minutes: 540, window_end_minutes: 1200, days_of_week: ['mon'], max_concurrent_calls: 1, max_attempts: 1, retry_delay_minutes: 60,
      };
      await t.db('campaigns').insert(campaign);
      for (const status of ['running', 'paused']) {
        await t.db('campaigns').where({ id: campaign.id }).update({ status });
        const refused = await t.call('DELETE', `/agents/${agent.id}`, { key: org.key });
        expect(refused.status, status).to.equal(409);
        expect(refused.body).to.include({ code: 'campaign_running' });
        expect(refused.body.campaignIds).to.deep.equal([campaign.id]);
      }
      expect((await t.call('GET', `/agents/${agent.id}`, { key: org.key })).status, 'nothing changed').to.equal(200);
      expect(await eventsOf(org.orgId, 'agent.deleted')).to.deep.equal([]);
      await t.db('campaigns').where({ id: campaign.id }).update({ status: 'cancelled' });
      expect((await t.call('DELETE', `/agents/${agent.id}`, { key: org.key })).status).to.equal(200);
      expect((await auditOf(org.orgId, 'deleteAgent')).map((a) => a.status_code)).to.deep.equal([409, 409, 200]);
    });

    it("answers 404 for another organization's agent, and 403 without agents:write", async () => {
      const org = await t.org('Owner');
      const agent = await newAgent(org.key, 'Mine');
      const other = await t.org('Intruder');
      expect((await t.call('DELETE', `/agents/${agent.id}`, { key: other.key })).status).to.equal(404);
      const reader = await t.org('Reader', ['agents:read']);
      expect((await t.call('DELETE', `/agents/${agent.id}`, { key: reader.key })).status).to.equal(403);
      expect((await t.call('GET', `/agents/${agent.id}`, { key: org.key })).status).to.equal(200);
    });
  });

  describe('DELETE /agents/{agentId}/knowledge/sources/{id}', () => {
    it('takes a ready source out of the draft while the published version keeps answering from its chunks; refuses one still ingesting', async () => {
      const org = await t.org('Knowledge');
      const agent = await newAgent(org.key, 'Parking desk');
      const parking = await readySource(org.orgId, agent.id, 'Parking', 'Parking is free behind the building on Elm Street, every day until 9pm.');
      await publishDraft(t.db, org, agent.id, 'k1');
      const unpublished = await readySource(org.orgId, agent.id, 'Lockers', 'Lockers are rented at the front desk for five dollars.');
      const pending = await createSource(t.db, org.orgId, { agentId: agent.id, kind: 'text', text: 'Still being ingested.' }, async () => undefined);
      const pinned = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id } })).body.data.session;

      const busy = await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${pending.id}`, { key: org.key });
      expect(busy.status).to.equal(409);
      expect(busy.body.code).to.equal('source_ingesting');

      const del = await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${parking}`, { key: org.key });
      expect(del.status, del.text).to.equal(200);
      expect(del.body.data).to.include({ id: parking, agentId: agent.id, deleted: true, chunksKept: true });
      // Out of the draft: the list, the preview and the next publish.
      const listed = (await t.call('GET', `/agents/${agent.id}/knowledge/sources`, { key: org.key })).body.data.items.map((s: { id: string }) => s.id);
      expect(listed).to.have.members([unpublished, pending.id]);
      const preview = await t.call('POST', `/agents/${agent.id}/knowledge/preview`, { key: org.key, json: { query: 'Where is parking?' } });
      expect(preview.status, preview.text).to.equal(200);
      expect(preview.body.data.results.map((r: { source: { id: string } }) => r.source.id)).to.not.include(parking);
      const v2 = await publishDraft(t.db, org, agent.id, 'k2');
      const snapshot = (await t.db('agent_versions').where({ id: (v2 as any).version.id }).first('snapshot')).snapshot;
      expect(snapshot.knowledge.map((k: { id: string }) => k.id)).to.deep.equal([unpublished]);

      // The session pinned to version 1 still retrieves the deleted source's chunks.
      const turn = await t.call('POST', `/chat/sessions/${pinned.id}/messages`, { key: org.key, json: { content: 'Where is parking?' } });
      expect(turn.status, turn.text).to.equal(200);
      expect(turn.body.data.receipt.knowledge[0].results[0]).to.include({ sourceId: parking });
      expect(turn.body.data.reply.content).to.contain('Elm Street');

      // Version 2 lists the lockers: their chunks stay too. A source no version lists loses its chunks with it.
      expect((await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${unpublished}`, { key: org.key })).body.data.chunksKept).to.equal(true);
      const towels = await readySource(org.orgId, agent.id, 'Towels', 'Towels are handed out at the pool entrance.');
      const gone = await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${towels}`, { key: org.key });
      expect(gone.body.data.chunksKept).to.equal(false);
      expect(await t.db('knowledge_chunks').where({ source_id: towels }).count({ n: '*' }).first()).to.deep.include({ n: 0 });
      expect(await t.db('knowledge_chunks').where({ source_id: parking }).count({ n: '*' }).first()).to.not.deep.include({ n: 0 });
      await markFailed(t.db, org.orgId, pending.id, 'http_status', 'the page answered 404');
      expect((await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${pending.id}`, { key: org.key })).status).to.equal(200);
      expect((await t.call('DELETE', `/agents/${agent.id}/knowledge/sources/${parking}`, { key: org.key })).status).to.equal(404);

      const events = await eventsOf(org.orgId, 'knowledge.source.deleted');
      expect(events.map((e) => [e.sourceId, e.status, e.chunksKept])).to.deep.equal([
        [parking, 'ready', true],
        [unpublished, 'ready', true],
        [towels, 'ready', false],
        [pending.id, 'failed', false],
      ]);
      expect(events[0]).to.include({ agentId: agent.id, chunkCount: 1, deletedAt: del.body.data.deletedAt });
      expect((await auditOf(org.orgId, 'deleteKnowledgeSource')).map((a) => [a.resource_type, a.status_code])).to.deep.equal([
        ['knowledge_source', 409],
        ['knowledge_source', 200],
        ['knowledge_source', 200],
        ['knowledge_source', 200],
        ['knowledge_source', 200],
        ['knowledge_source', 404],
      ]);
    });
  });

  describe('DELETE /agents/{agentId}/playbooks/{id}', () => {
    it('removes the playbook from the draft as one draft edit (If-Match honoured), the published version keeps its copy', async () => {
      const org = await t.org('Playbooks');
      const agent = await newAgent(org.key, 'Intake desk');
      const created = await t.call('POST', `/agents/${agent.id}/playbooks`, { key: org.key, json: { name: 'intake', description: 'Collects details' } });
      expect(created.status, created.text).to.equal(201);
      const playbookId = created.body.data.id as string;
      await publishDraft(t.db, org, agent.id, 'p1');
      const version = (await t.call('GET', `/agents/${agent.id}`, { key: org.key })).body.data.version as number;

      const stale = await t.call('DELETE', `/agents/${agent.id}/playbooks/${playbookId}`, { key: org.key, headers: { 'if-match': `"${version - 1}"` } });
      expect(stale.status).to.equal(409);
      expect(stale.body.code).to.equal('version_conflict');
      const del = await t.call('DELETE', `/agents/${agent.id}/playbooks/${playbookId}`, { key: org.key, headers: { 'if-match': `"${version}"` } });
      expect(del.status, del.text).to.equal(200);
      expect(del.body.data).to.deep.equal({ id: playbookId, agentId: agent.id, name: 'intake', deleted: true, draftVersion: version + 1 });
      expect(del.headers.get('etag')).to.equal(`"${version + 1}"`);
      expect((await t.call('GET', `/agents/${agent.id}/playbooks`, { key: org.key })).body.data.items).to.deep.equal([]);
      expect((await t.call('GET', `/agents/${agent.id}/playbooks/${playbookId}/graph`, { key: org.key })).status).to.equal(404);
      const [v1] = await t.db('agent_versions').where({ agent_id: agent.id }).select('snapshot');
      expect(v1.snapshot.playbooks.map((p: { name: string }) => p.name)).to.deep.equal(['intake']);

      // A second delete is 404 and changes nothing, not even the draft version.
      const again = await t.call('DELETE', `/agents/${agent.id}/playbooks/${playbookId}`, { key: org.key });
      expect(again.status).to.equal(404);
      expect(again.body.code).to.equal('playbook_not_found');
      expect((await t.call('GET', `/agents/${agent.id}`, { key: org.key })).body.data.version).to.equal(version + 1);
      expect(await eventsOf(org.orgId, 'playbook.deleted')).to.have.length(1);
      expect((await eventsOf(org.orgId, 'playbook.deleted'))[0]).to.include({ agentId: agent.id, playbookId, name: 'intake', draftVersion: version + 1 });
      expect((await auditOf(org.orgId, 'deletePlaybook')).map((a) => [a.resource_type, a.resource_id, a.status_code])).to.deep.equal([
        ['playbook', playbookId, 409],
        ['playbook', playbookId, 200],
        ['playbook', playbookId, 404],
      ]);
    });
  });

  describe('DELETE /numbers/{id}', () => {
    it('refuses an assigned number with 409, then releases it at the provider once, with its intent, event and audit entry', async () => {
      const org = await t.org('Numbers');
      const agent = await newAgent(org.key, 'Line');
      const num = await buyNumber(org.key, '303');
      await t.call('POST', `/numbers/${num.id}/assign`, { key: org.key, json: { agentId: agent.id } });
      const refused = await t.call('DELETE', `/numbers/${num.id}`, { key: org.key });
      expect(refused.status).to.equal(409);
      expect(refused.body.code).to.equal('number_assigned');
      await t.call('POST', `/numbers/${num.id}/assign`, { key: org.key, json: { agentId: null } });

      const del = await t.call('DELETE', `/numbers/${num.id}`, { key: org.key });
      expect(del.status, del.text).to.equal(200);
      const purchase = await t.db('provider_intents').where({ org_id: org.orgId, kind: 'number_purchase', reference: num.id }).first('result');
      expect(del.body.data).to.deep.equal({ id: num.id, e164: num.e164, status: 'released', provider: 'sandbox', providerNumberId: purchase.result.providerNumberId });
      // The intent was recorded and resolved; the provider was asked once, with its own id of the number.
      const intent = await t.db('provider_intents').where({ org_id: org.orgId, kind: 'number_release', reference: num.id }).first();
      expect(intent).to.include({ status: 'done', subject_id: num.id, provider: 'sandbox' });
      const asked = await t.db('provider_requests').where({ org_id: org.orgId, operation: 'releaseNumber' }).select('request');
      expect(asked.map((r: { request: unknown }) => r.request)).to.deep.equal([{ providerNumberId: purchase.result.providerNumberId }]);

      expect((await t.call('GET', '/numbers', { key: org.key })).body.data.items.map((n: { id: string }) => n.id)).to.not.include(num.id);
      expect((await t.call('DELETE', `/numbers/${num.id}`, { key: org.key })).status).to.equal(404);
      expect(await t.db('provider_requests').where({ org_id: org.orgId, operation: 'releaseNumber' }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
      const [event] = await eventsOf(org.orgId, 'number.released');
      expect(event).to.include({ numberId: num.id, e164: num.e164, provider: 'sandbox', providerNumberId: purchase.result.providerNumberId });
      expect((await auditOf(org.orgId, 'releaseNumber')).map((a) => [a.resource_type, a.resource_id, a.status_code])).to.deep.equal([
        ['number', num.id, 409],
        ['number', num.id, 200],
        ['number', num.id, 404],
      ]);
    });

    it('records the release intent before asking the provider: a worker dying before the request leaves the number held, and the retry releases it once', async () => {
      const org = await t.org('Crashy');
      const num = await buyNumber(org.key, '312');
      const telephony = createTelephony({ db: t.db, config: t.config });
      const crash: FaultHook = (step, kind) => {
        if (step === 'before_request') throw new SimulatedCrash(step, kind);
      };
      let err: unknown;
      try {
        await releaseNumber({ db: t.db, telephony, faults: crash }, org.orgId, num.id);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(SimulatedCrash);
      expect(await t.db('provider_intents').where({ org_id: org.orgId, kind: 'number_release', reference: num.id }).first()).to.include({ status: 'pending' });
      expect((await t.call('GET', '/numbers', { key: org.key })).body.data.items.map((n: { id: string }) => n.id)).to.include(num.id);
      expect(await eventsOf(org.orgId, 'number.released')).to.deep.equal([]);

      const out = await releaseNumber({ db: t.db, telephony }, org.orgId, num.id);
      expect(out.kind).to.equal('released');
      expect(await t.db('provider_intents').where({ org_id: org.orgId, kind: 'number_release', reference: num.id }).first()).to.include({ status: 'done' });
      expect(await t.db('provider_requests').where({ org_id: org.orgId, operation: 'releaseNumber' }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
      expect(await eventsOf(org.orgId, 'number.released')).to.have.length(1);
    });

    it("lets a reservation go without asking the provider, and answers 404 for another organization's number", async () => {
      const org = await t.org('Reserver');
      const found = await t.call('GET', '/numbers/search?areaCode=617&limit=1', { key: org.key });
      const reserved = (await t.call('POST', '/numbers/reserve', { key: org.key, json: { e164: found.body.data.items[0].e164 } })).body.data;
      const other = await t.org('Stranger');
      expect((await t.call('DELETE', `/numbers/${reserved.id}`, { key: other.key })).status).to.equal(404);
      const del = await t.call('DELETE', `/numbers/${reserved.id}`, { key: org.key });
      expect(del.status, del.text).to.equal(200);
      expect(del.body.data).to.include({ status: 'released', provider: null, providerNumberId: null });
      expect(await t.db('provider_intents').where({ org_id: org.orgId, kind: 'number_release' }).first()).to.equal(undefined);
      // The number is free to reserve again.
      expect((await t.call('POST', '/numbers/reserve', { key: other.key, json: { e164: reserved.e164 } })).status).to.equal(200);
    });
  });
});
