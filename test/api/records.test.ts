/**
 * Records over a real socket and Postgres (docs/api-notes.md "Integrations and records"): CRUD with cursor lists,
 * search by phone/email/name, every read audited, CSV import through the contact-list reader,
 * tenancy and scopes; and provisioned skills running in a conversation through the skill runner
 * (`lookup_record` over Records, `book_appointment` on the connected calendar).
 */
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { chain } from './agents-fixtures';
import { sandboxConsent } from '../../providers/integrations/sandbox';

describe('records', () => {
  let t: TestApi;
  let org: { orgId: string; key: string };
  let other: { orgId: string; key: string };

  const upload = async (key: string, csv: string) => {
    const fd = new FormData();
    fd.append('file', new Blob([csv], { type: 'text/csv' }), 'records.csv');
    const res = await fetch(`${t.api.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: fd });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).to.equal(201);
    return body.data.id as string;
  };
  const audits = async (orgId: string, operationId: string) => t.db('audit_logs').where({ org_id: orgId, operation_id: operationId }).orderBy('seq');

  before(async () => {
    t = await startTestApi('records', QUICK_CLIENT);
    org = await t.org('Records');
    other = await t.org('Other');
  });
  after(async () => t?.close());

  it('creates, reads, updates and deletes a record; another organization gets 404', async () => {
    const c = await t.call('POST', '/records', { key: org.key, json: { name: 'Ada Lovelace', phone: '+14155550100', email: 'ada@example.com', fields: { account: 'A-1' } } });
    expect(c.status, c.text).to.equal(201);
    const id = c.body.data.id as string;
    expect(id).to.match(/^rec_/);
    expect(c.body.data).to.include({ source: 'api', externalId: null });
    const g = await t.call('GET', `/records/${id}`, { key: org.key });
    expect(g.body.data.fields).to.deep.equal({ account: 'A-1' });
    const p = await t.call('PATCH', `/records/${id}`, { key: org.key, json: { email: 'ada@lovelace.org', fields: { account: 'A-2' } } });
    expect(p.status).to.equal(200);
    expect(p.body.data).to.include({ email: 'ada@lovelace.org', name: 'Ada Lovelace' });
    for (const [method, json] of [['GET', undefined], ['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
      const r = await t.call(method, `/records/${id}`, { key: other.key, json });
      expect(r.status, method).to.equal(404);
      expect(r.body.code).to.equal('record_not_found');
    }
    expect((await t.call('DELETE', `/records/${id}`, { key: org.key })).status).to.equal(200);
    expect((await t.call('GET', `/records/${id}`, { key: org.key })).status).to.equal(404);
  });

  it('answers 400 naming the field for a bad phone, email or empty record', async () => {
    const phone = await t.call('POST', '/records', { key: org.key, json: { phone: '555-0100' } });
    expect(phone.status).to.equal(400);
    expect(phone.body.errors.map((e: any) => e.field)).to.deep.equal(['phone']);
    const email = await t.call('POST', '/records', { key: org.key, json: { email: 'not an email' } });
    expect(email.body.errors.map((e: any) => e.field)).to.deep.equal(['email']);
    const empty = await t.call('POST', '/records', { key: org.key, json: {} });
    expect(empty.status).to.equal(400);
    const search = await t.call('GET', '/records?phone=abc', { key: org.key });
    expect(search.status).to.equal(400);
    expect(search.body.errors[0].field).to.equal('phone');
  });

  it('searches by phone, email and name with cursor pages, and audits every read', async () => {
    const people = [
      ['Grace Hopper', '+12025550101', 'grace@navy.mil'],
      ['Grace Kelly', '+12025550102', 'kelly@example.com'],
      ['Alan Turing', '+12025550103', 'alan@example.com'],
    ];
    for (const [name, phone, email] of people) expect((await t.call('POST', '/records', { key: other.key, json: { name, phone, email } })).status).to.equal(201);
    const byName = await t.call('GET', '/records?name=grace&limit=1', { key: other.key });
    expect(byName.body.data.items.map((r: any) => r.name)).to.deep.equal(['Grace Hopper']);
    expect(byName.body.data.hasMore).to.equal(true);
    const next = await t.call('GET', `/records?name=grace&limit=1&cursor=${byName.body.data.nextCursor}`, { key: other.key });
    expect(next.body.data.items.map((r: any) => r.name)).to.deep.equal(['Grace Kelly']);
    expect(next.body.data.hasMore).to.equal(false);
    const byPhone = await t.call('GET', '/records?phone=%2B12025550103', { key: other.key });
    expect(byPhone.body.data.items.map((r: any) => r.name)).to.deep.equal(['Alan Turing']);
    const byEmail = await t.call('GET', '/records?email=GRACE@NAVY.MIL', { key: other.key });
    expect(byEmail.body.data.items.map((r: any) => r.name)).to.deep.equal(['Grace Hopper']);
    const q = await t.call('GET', '/records?q=kelly%40example.com', { key: other.key });
    expect(q.body.data.items.map((r: any) => r.name)).to.deep.equal(['Grace Kelly']);
    // The first organization finds none of them.
    expect((await t.call('GET', '/records?name=grace', { key: org.key })).body.data.items).to.deep.equal([]);

    const listAudits = await audits(other.orgId, 'listRecords');
    expect(listAudits).to.have.length(5);
    expect(listAudits[0]).to.include({ resource_type: 'record', method: 'GET', status_code: 200 });
    const one = byPhone.body.data.items[0].id;
    await t.call('GET', `/records/${one}`, { key: other.key });
    const getAudits = await audits(other.orgId, 'getRecord');
    // Reads that found nothing are audited too (the 404s of the first test, by the other organization's key).
    expect(getAudits.map((a: any) => [a.resource_id, a.status_code]).at(-1)).to.deep.equal([one, 200]);
    expect(getAudits.some((a: any) => a.status_code === 404)).to.equal(true);
    // The audit log shows the reads to audit:read.
    const log = await t.call('GET', '/audit-logs?limit=200', { key: other.key });
    expect(log.body.data.items.some((e: any) => e.operationId === 'getRecord' && e.resource.id === one)).to.equal(true);
  });

  it('imports a CSV upload (upsert by phone; bad phones listed) and refuses a malformed one naming fileId', async () => {
    const csv = 'phone,first_name,last_name,email,plan\n+13125550100,Mae,Jemison,mae@example.com,gold\n(312) 555-0101,Sally,Ride,,silver\nnot-a-phone,Bad,Row,,\n';
    const r = await t.call('POST', '/records/imports', { key: org.key, json: { fileId: await upload(org.key, csv) } });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.data).to.deep.include({ rowsRead: 3, created: 2, updated: 0, rejectedCount: 1 });
    expect(r.body.data.rejected).to.deep.equal([{ row: 3, reason: 'invalid_phone' }]);
    const mae = (await t.call('GET', '/records?phone=%2B13125550100', { key: org.key })).body.data.items[0];
    expect(mae).to.include({ name: 'Mae Jemison', email: 'mae@example.com', source: 'csv', externalId: '+13125550100' });
    expect(mae.fields).to.deep.equal({ plan: 'gold' });
    const again = await t.call('POST', '/records/imports', { key: org.key, json: { fileId: await upload(org.key, 'phone,name\n+13125550100,Mae C. Jemison\n') } });
    expect(again.body.data).to.include({ created: 0, updated: 1 });
    const bad = await t.call('POST', '/records/imports', { key: org.key, json: { fileId: await upload(org.key, 'name,email\nA,a@b.c\n') } });
    expect(bad.status).to.equal(400);
    expect(bad.body.errors[0].field).to.equal('fileId');
    const gone = await t.call('POST', '/records/imports', { key: other.key, json: { fileId: await upload(org.key, csv) } });
    expect(gone.status).to.equal(404);
    expect(gone.body.code).to.equal('file_expired');
  });

  it('enforces records:read and records:write', async () => {
    const reader = await t.org('Reader', ['records:read']);
    expect((await t.call('GET', '/records', { key: reader.key })).status).to.equal(200);
    const w = await t.call('POST', '/records', { key: reader.key, json: { name: 'x' } });
    expect(w.status).to.equal(403);
    expect(w.body.code).to.equal('insufficient_scope');
    const none = await t.org('None', ['agents:read']);
    expect((await t.call('GET', '/records', { key: none.key })).status).to.equal(403);
  });

  it('runs provisioned skills in a conversation: lookup_record finds the caller (audited) and the calendar books', async () => {
    const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', variables: [{ name: 'phone', description: "caller's phone" }] } });
    const agentId = agent.body.data.id as string;
    await t.call('POST', '/records', { key: org.key, json: { name: 'Katherine Johnson', phone: '+17575550100', fields: { tier: 'vip' } } });
    // Connect the calendar through the sandbox consent screen, then provision both skills.
    const begun = await t.call('POST', '/integrations/google_calendar/connect', { key: org.key });
    const back = new URL(sandboxConsent(begun.body.data.authorizationUrl));
    expect((await t.call('GET', `/integrations/google_calendar/oauth/callback${back.search}`)).status).to.equal(200);
    expect((await t.call('POST', `/agents/${agentId}/integrations/google_calendar/provision`, { key: org.key, json: { timeZone: 'America/New_York' } })).status).to.equal(201);
    const hub = await t.call('POST', '/integrations/hubspot/connect', { key: org.key, json: { credentials: { accessToken: 'pat-test' } } });
    expect(hub.status).to.equal(200);
    const lookupSkill = await t.call('POST', `/agents/${agentId}/integrations/hubspot/provision`, { key: org.key, json: { skillName: 'find_caller' } });
    expect(lookupSkill.status, lookupSkill.text).to.equal(201);
    // The hubspot lookup only sees hubspot records; use an unrestricted lookup for the API-created record.
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'lookup_record', type: 'lookup_record', config: { matchOn: ['phone'] } } });
    const pb = await t.call('POST', `/agents/${agentId}/playbooks`, {
      key: org.key,
      json: {
        name: 'account',
        graph: {
          nodes: [
            { id: 'start', type: 'start' },
            { id: 'find', type: 'skill', skill: 'lookup_record' },
            { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
            { id: 'ask_time', type: 'ask', prompt: 'When would you like to come?', gathers: 'start_time' },
            { id: 'book', type: 'skill', skill: 'book_appointment' },
            { id: 'done', type: 'say', prompt: 'All set.' },
            { id: 'end', type: 'end' },
          ],
          edges: chain('start', 'find', 'ask_name', 'ask_time', 'book', 'done', 'end'),
        },
      },
    });
    expect(pb.status, pb.text).to.equal(201);
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId, draftMode: true, variables: { phone: '+17575550100' } } });
    expect(s.status, s.text).to.equal(201);
    const sid = s.body.data.session.id;
    const a = await t.call('POST', `/chat/sessions/${sid}/messages`, { key: org.key, json: { content: 'A question about my account please' } });
    expect(a.status, a.text).to.equal(200);
    const found = a.body.data.receipt.toolCalls.find((c: any) => c.skill === 'lookup_record');
    expect(found.output.matches.map((m: any) => m.name)).to.deep.equal(['Katherine Johnson']);
    const skillAudit = await t.db('audit_logs').where({ org_id: org.orgId, actor_kind: 'agent', resource_type: 'record' });
    expect(skillAudit).to.have.length(1);
    expect(skillAudit[0].actor_id).to.equal(sid);
    await t.call('POST', `/chat/sessions/${sid}/messages`, { key: org.key, json: { content: 'Katherine Johnson' } });
    const b = await t.call('POST', `/chat/sessions/${sid}/messages`, { key: org.key, json: { content: '2026-12-01T15:00:00Z' } });
    const booked = b.body.data.receipt.toolCalls.find((c: any) => c.skill === 'book_appointment');
    expect(booked.output).to.include({ status: 'confirmed', startTime: '2026-12-01T10:00:00-05:00', endTime: '2026-12-01T10:30:00-05:00', timeZone: 'America/New_York' });
    expect(booked.output.bookingId).to.match(/^evt_/);
    expect(b.body.data.reply.content).to.equal('All set.');
  });
});
