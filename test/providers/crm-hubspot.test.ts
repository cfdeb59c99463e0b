/**
 * HubSpot on its real API (docs/going-live.md "HubSpot") against the loopback HubSpot (test/providers/hubspotStub.ts,
 * every request and answer checked against `@hubspot/api-client`'s models): a connection made with
 * INTEGRATIONS_LIVE=hubspot validates its token at HubSpot and records its provider (`hubspot`); `lookup_record` searches
 * contacts at run time (success, 4xx, 5xx, timeout), and in a conversation a failed lookup is never presented as a
 * found record; an ended conversation's summary is written to the contact as one note however often the activity
 * is retried.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { useEnvVars, useResource } from '../helpers/mocha';
import { useTestApi } from '../helpers/api';
import { getConnection } from '../../db/repositories/integrations';
import { listIntents } from '../../db/repositories/providerIntents';
import { HubSpotCrm, loadHubSpotSettings } from '../../providers/integrations/hubspot';
import { IntegrationProviderError } from '../../providers/integrations';
import { lookupCrmContacts, writeBackConversationNote } from '../../services/integrations/crm';
import { analyzeConversation } from '../../services/conversations/analysis';
import { createLlm } from '../../providers/llm';
import { SimulatedCrash } from '../../services/effects';
import { TOOL_FAILURE_SENTENCE } from '../../providers/llm/sandboxReplies';
import { HubSpotStub } from './hubspotStub';
import { startTestApi, type TestApi } from '../helpers/api';
import { until } from '../helpers/wait';
import { testTemporal } from '../helpers/temporal';
import { publishDraft } from '../api/agents-fixtures';
import { createActivities } from '../../activities';
import { createIntegrationActivities } from '../../activities/integrations';
import { noteReference } from '../../services/integrations/crm';

const TOKEN = `pat-na1-${crypto.randomUUID()}`;

describe('HubSpot CRM on its API (loopback HubSpot)', function () {
  this.timeout(60_000);
  const stub = useResource('HubSpot stub', () => new HubSpotStub(TOKEN).start(), (s) => s.stop());
  useEnvVars(() => ({ INTEGRATIONS_LIVE: 'hubspot', HUBSPOT_API_BASE: stub.baseUrl, HUBSPOT_TIMEOUT_MS: '1000' }));
  const t = useTestApi('crm_hubspot');
  let org: { orgId: string; key: string };

  before(async () => {
    org = await t.org();
    stub.addContact({ firstname: 'Katherine', lastname: 'Johnson', phone: '+17575550100', email: 'kj@example.com', company: 'NASA' });
    const bad = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: 'pat-na1-not-the-token' } } });
    expect(bad.status, bad.text).to.equal(422);
    expect(bad.body.code).to.equal('integration_credentials_rejected');
    const ok = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: TOKEN } } });
    expect(ok.status, ok.text).to.equal(200);
  });
  afterEach(() => {
    expect(stub.problems).to.deep.equal([]);
  });

  const crm = () => new HubSpotCrm(loadHubSpotSettings());

  it('connects on the API (the token checked at HubSpot) and records its provider on the connection', async () => {
    const c = await getConnection(t.db, org.orgId, 'hubspot');
    expect(c!.provider).to.equal('hubspot');
    expect(c!.config).not.to.have.property('adapter');
    expect(stub.requests.filter((r) => r.method === 'GET' && r.path === '/crm/v3/objects/contacts').length).to.be.at.least(2);
  });

  it('looks contacts up by phone and e-mail and keeps them as Records; 4xx, 5xx and a timeout are clear errors', async () => {
    const c = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    const byPhone = await lookupCrmContacts(t.db, org.orgId, c, { phone: '+17575550100' }, 3, crm());
    expect(byPhone.map((r) => ({ name: r.name, phone: r.phone, email: r.email }))).to.deep.equal([{ name: 'Katherine Johnson', phone: '+17575550100', email: 'kj@example.com' }]);
    const byEmail = await lookupCrmContacts(t.db, org.orgId, c, { email: 'KJ@example.com' }, 3, crm());
    expect(byEmail.map((r) => r.id)).to.deep.equal(byPhone.map((r) => r.id)); // upserted once, by contact id
    expect(await lookupCrmContacts(t.db, org.orgId, c, { phone: '+12025550199' }, 3, crm())).to.deep.equal([]);
    const failing = async (answer: () => void): Promise<IntegrationProviderError> => {
      answer();
      try {
        await lookupCrmContacts(t.db, org.orgId, c, { phone: '+17575550100' }, 3, crm());
      } catch (err) {
        expect(err).to.be.instanceOf(IntegrationProviderError);
        return err as IntegrationProviderError;
      }
      throw new Error('the lookup did not fail');
    };
    const search = /^POST \/crm\/v3\/objects\/contacts\/search$/;
    const bad = await failing(() => stub.failNext(search, { status: 400, body: { status: 'error', message: 'Invalid filter', correlationId: 'c0ffee00-0000-4000-8000-00000000000a', category: 'VALIDATION_ERROR' } }));
    expect(bad.code).to.equal('refused');
    const down = await failing(() => stub.failNext(search, { status: 502, body: { status: 'error', message: 'Bad gateway', correlationId: 'c0ffee00-0000-4000-8000-00000000000b', category: 'INTERNAL_ERROR' } }));
    expect(down.code).to.equal('unavailable');
    const slow = await failing(() => stub.slowNext(search, 1500));
    expect(slow.code).to.equal('timeout');
    expect(slow.message).to.match(/within 1000 ms/);
    expect((await getConnection(t.db, org.orgId, 'hubspot'))!.lastError).to.match(/within 1000 ms/);
  });

  it("syncs the connection's records from HubSpot's contacts (not the sandbox's)", async () => {
    const c = (await getConnection(t.db, org.orgId, 'hubspot'))!;
    const page = await createIntegrationActivities({ db: t.db }).recordsSyncPage(org.orgId, c.id, null, 0);
    expect(page).to.deep.equal({ nextCursor: null, processed: stub.contacts.length });
    const rows = await t.db('records').where({ org_id: org.orgId, source: 'hubspot' }).select('name', 'external_id');
    expect(rows.map((r: any) => r.external_id).sort()).to.deep.equal(stub.contacts.map((x) => x.id).sort());
  });

  it('never presents a failed lookup to the caller as a found record', async () => {
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', variables: [{ name: 'phone', description: "caller's phone" }] } });
    const agentId = agent.body.data.id as string;
    const skill = await t.call('POST', `/agents/${agentId}/integrations/hubspot/provision`, { key: org.key, json: { skillName: 'find_caller' } });
    expect(skill.status, skill.text).to.equal(201);
    const say = async (prepare?: () => void) => {
      const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, draftMode: true, variables: { phone: '+17575550100' } } });
      expect(s.status, s.text).to.equal(201);
      prepare?.();
      const r = await t.call('POST', `/chat/sessions/${s.body.data.session.id}/messages`, { key: org.key, json: { content: 'Please find_caller for my account' } });
      expect(r.status, r.text).to.equal(200);
      return { reply: r.body.data.reply.content as string, call: r.body.data.receipt.toolCalls.find((c: any) => c.skill === 'find_caller') };
    };
    const found = await say();
    expect(found.call.output.matches.map((m: any) => m.name)).to.deep.equal(['Katherine Johnson']);
    expect(found.reply).to.match(/^All done\. Matched on phone/);
    const search = /^POST \/crm\/v3\/objects\/contacts\/search$/;
    const failures: Array<[string, () => void]> = [
      ['4xx', () => stub.failNext(search, { status: 403, body: { status: 'error', message: 'Missing scopes', correlationId: 'c0ffee00-0000-4000-8000-00000000000c', category: 'MISSING_SCOPES' } })],
      ['5xx', () => stub.failNext(search, { status: 500, body: { status: 'error', message: 'Internal error', correlationId: 'c0ffee00-0000-4000-8000-00000000000d', category: 'INTERNAL_ERROR' } })],
      ['timeout', () => stub.slowNext(search, 1500)],
    ];
    for (const [what, prepare] of failures) {
      const failed = await say(prepare);
      expect(failed.call.output, what).to.equal(undefined);
      expect(failed.call.error, what).to.be.a('string');
      expect(failed.reply, what).to.equal(TOOL_FAILURE_SENTENCE);
      expect(failed.reply, what).not.to.match(/Katherine|Johnson|matched|found|All done/i);
    }
  });

  it("writes an ended conversation's summary to the caller's contact as one note, however often the activity is retried", async () => {
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Notes desk', voiceId: 'voice_ava' } });
    const agentId = agent.body.data.id as string;
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, draftMode: true, variables: { phone: '+14155550123', name: 'Sam Lee' } } });
    const conversationId = s.body.data.session.id as string;
    await t.call('POST', `/chat/sessions/${conversationId}/messages`, { key: org.key, json: { content: 'I would like to move my appointment to Friday' } });
    expect((await t.call('POST', `/chat/sessions/${conversationId}/end`, { key: org.key, json: {} })).status).to.equal(200);
    const analysis = await analyzeConversation({ db: t.db, llm: createLlm() }, org.orgId, conversationId, { retake: true });
    expect(analysis?.summary).to.be.a('string');
    const notesBefore = stub.notes.length;
    // The first attempt dies after HubSpot accepted the note, before it was recorded.
    const crash = async (step: string) => {
      if (step === 'after_accept') throw new SimulatedCrash('after_accept', 'crm_note');
    };
    let crashed = false;
    try {
      await writeBackConversationNote(t.db, org.orgId, conversationId, { crm: crm(), fault: crash });
    } catch (err) {
      crashed = err instanceof SimulatedCrash;
    }
    expect(crashed).to.equal(true);
    const again = await writeBackConversationNote(t.db, org.orgId, conversationId, { crm: crm() });
    expect(again).to.include({ status: 'written', performedNow: false });
    const third = await writeBackConversationNote(t.db, org.orgId, conversationId, { crm: crm() });
    expect(third).to.include({ status: 'written', performedNow: false, noteId: again.status === 'written' ? again.noteId : '' });
    expect(stub.notes.length).to.equal(notesBefore + 1);
    const note = stub.notes[stub.notes.length - 1];
    expect(note.properties.hs_note_body).to.contain(analysis!.summary!);
    const contact = stub.contacts.find((c) => c.properties.phone === '+14155550123');
    expect(contact?.properties).to.include({ firstname: 'Sam', lastname: 'Lee' });
    expect(note.associations).to.deep.equal([{ to: { id: contact!.id }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 202 }] }]);
    const intents = await listIntents(t.db, org.orgId, { kind: 'crm_note' });
    expect(intents.map((i) => [i.subjectId, i.status])).to.deep.equal([[conversationId, 'done']]);
  });
});

describe('HubSpot note write-back on the worker (conversation-analysis/{id})', function () {
  this.timeout(90_000);
  const stub = useResource('HubSpot stub', () => new HubSpotStub(TOKEN).start(), (s) => s.stop());
  useEnvVars(() => ({ INTEGRATIONS_LIVE: 'hubspot', HUBSPOT_API_BASE: stub.baseUrl }));
  let t: TestApi;
  before(async () => {
    t = await startTestApi('crm_hubspot_wf', {}, { worker: (deps) => createActivities(deps) });
  });
  after(async () => t?.close());

  it('writes the summary of an ended chat as one note on the caller\'s contact after the analysis', async () => {
    const org = await t.org('Notes');
    expect((await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: TOKEN } } })).status).to.equal(200);
    const agent = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava' } })).body.data;
    await publishDraft(t.db, org, agent.id, 'w1');
    const id = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agent.id, variables: { email: 'sam@example.com', name: 'Sam Lee' } } })).body.data.session.id as string;
    await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content: 'Please move my visit to Friday' } });
    expect((await t.call('POST', `/chat/sessions/${id}/end`, { key: org.key })).status).to.equal(200);
    expect(await (await testTemporal()).client.workflow.getHandle(`conversation-analysis/${id}`).result()).to.equal('completed');
    const notes = await until(async () => {
      const n = stub.notes.filter((x) => x.properties.hs_note_body.includes(noteReference(id)));
      return n.length ? n : undefined;
    }, 10_000, 'the note');
    expect(notes).to.have.length(1);
    const contact = stub.contacts.find((c) => c.properties.email === 'sam@example.com');
    expect(contact?.properties).to.include({ firstname: 'Sam', lastname: 'Lee' });
    expect(stub.problems).to.deep.equal([]);
  });
});
