/**
 * Outbound voice over the API (docs/voice.md "Outbound voice campaigns"): contact list import and scrub (through the real
 * `contact-import/{listId}` workflow on the shared dev server), campaign creation rules, the state
 * machine, launch writing one attempt per valid contact, and tenancy.
 */
import { expect } from 'chai';
import { workflowIds } from '../../temporal.config';
import { phone, useDialerEnv } from './outbound-fixtures';

describe('outbound API: contact lists and campaigns', function () {
  this.timeout(60_000);
  const { env, dialer } = useDialerEnv('outbound_api');

  const campaignBody = (listId: string, extra: Record<string, unknown> = {}) => ({ name: 'Reminders', agentId: dialer.agentId, callerIdNumberId: dialer.numberId, contactListId: listId, purpose: 'informational', ...extra });

  it('imports a CSV asynchronously, keeps each rejected row with its reason and counts rows by outcome', async () => {
    const suppressed = phone('212', 7);
    const dnc = phone('212', 8);
    expect((await env.call(dialer.key, 'PUT', `/sms/contacts/${encodeURIComponent(suppressed)}/consent`, { source: 'web_form', consentedAt: '2026-01-01T00:00:00Z', proofText: 'checked the box' })).status).to.equal(200);
    expect((await env.call(dialer.key, 'DELETE', `/sms/contacts/${encodeURIComponent(suppressed)}/consent`)).status).to.equal(200);
    expect((await env.call(dialer.key, 'POST', '/do-not-call', { numbers: [dnc] })).body.data).to.deep.equal({ added: 1 });
    const csv = [
      'Phone,First Name,Last Name,Time Zone,Account',
      `${phone('212', 1)},Ada,Lovelace,,A-1`,
      `(312) 301-1001,Grace,Hopper,,A-2`, // national format → E.164
      `not a phone,Bad,Row,,A-3`,
      `+44 20 7946 0958,Brit,Row,,A-4`,
      `${phone('212', 1)},Dup,Row,,A-5`,
      `${suppressed},Opted,Out,,A-6`,
      `${dnc},Do,Not,,A-7`,
      `${phone('415', 9)},Zone,Bad,Mars/Olympus,A-8`,
      `${phone('415', 10)},Zone,Good,America/New_York,A-9`,
    ].join('\n');
    const list = await env.importList(dialer.key, csv);
    expect(list.import).to.include({ status: 'ready', rowsRead: 9, accepted: 3, rejected: 6 });
    expect(list.import.counts).to.deep.equal({ accepted: 3, invalid_phone: 1, not_us: 1, duplicate: 1, suppressed: 1, do_not_call: 1, invalid_time_zone: 1 });

    const page1 = (await env.call(dialer.key, 'GET', `/contact-lists/${list.id}/contacts?limit=4`)).body.data;
    expect(page1.items.map((c: any) => c.reason)).to.deep.equal(['accepted', 'accepted', 'invalid_phone', 'not_us']);
    expect(page1.hasMore).to.equal(true);
    const page2 = (await env.call(dialer.key, 'GET', `/contact-lists/${list.id}/contacts?limit=10&cursor=${page1.nextCursor}`)).body.data;
    expect(page2.items.map((c: any) => c.row)).to.deep.equal([5, 6, 7, 8, 9]);
    expect(page2.hasMore).to.equal(false);
    const [ada, grace] = page1.items;
    expect(ada).to.deep.include({ e164: phone('212', 1), firstName: 'Ada', lastName: 'Lovelace', status: 'accepted', zones: ['America/New_York'], variables: { Account: 'A-1' } });
    expect(grace).to.include({ e164: '+13123011001', rawPhone: '(312) 301-1001' });
    expect(grace.zones).to.deep.equal(['America/Chicago']);
    const explicit = page2.items.find((c: any) => c.row === 9);
    expect(explicit).to.deep.include({ timeZone: 'America/New_York', zones: ['America/New_York'], status: 'accepted' });
    const rejected = (await env.call(dialer.key, 'GET', `/contact-lists/${list.id}/contacts?status=rejected`)).body.data.items;
    expect(rejected.map((c: any) => [c.row, c.reason])).to.deep.equal([[3, 'invalid_phone'], [4, 'not_us'], [5, 'duplicate'], [6, 'suppressed'], [7, 'do_not_call'], [8, 'invalid_time_zone']]);
  });

  it('imports right after a valid upload every time: the workflow starts after the commit, so its first read finds the file', async () => {
    // The commit that begins an import takes 2 s more (a deferred constraint trigger runs at COMMIT): a workflow
    // started before that commit reads the list without its file and fails the import `file_expired`.
    await env.db.raw(`CREATE FUNCTION test_slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(2); RETURN NULL; END $$`);
    await env.db.raw("CREATE CONSTRAINT TRIGGER test_slow_commit AFTER UPDATE ON contact_lists DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.status = 'importing' AND OLD.status <> 'importing') EXECUTE FUNCTION test_slow_commit()");
    try {
      const lists = await Promise.all(
        Array.from({ length: 4 }, async (_, i) => {
          const list = (await env.call(dialer.key, 'POST', '/contact-lists', { name: `Fresh ${i}` })).body.data;
          const fileId = await env.upload(dialer.key, `phone\n${phone('646', 40 + i)}\n`);
          const r = await env.call(dialer.key, 'POST', `/contact-lists/${list.id}/imports`, { fileId });
          expect(r.status, JSON.stringify(r.body)).to.equal(202);
          // Started before the answer: the workflow exists as soon as the 202 arrives.
          expect((await env.client.workflow.getHandle(workflowIds.contactImport(list.id)).describe()).workflowId).to.equal(workflowIds.contactImport(list.id));
          return list.id as string;
        }),
      );
      for (const id of lists) {
        const status = await env.client.workflow.getHandle(workflowIds.contactImport(id)).result().then(
          () => 'completed',
          (err: Error) => `failed: ${(err.cause as Error | undefined)?.message ?? err.message}`,
        );
        expect(status, id).to.equal('completed');
        expect((await env.call(dialer.key, 'GET', `/contact-lists/${id}`)).body.data.import).to.include({ status: 'ready', accepted: 1 });
      }
    } finally {
      await env.db.raw('DROP TRIGGER test_slow_commit ON contact_lists');
      await env.db.raw('DROP FUNCTION test_slow_commit()');
    }
    expect(await env.db('workflow_starts').where({ org_id: dialer.orgId }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
  });

  it('answers 400 naming the row and column of a malformed CSV and imports nothing', async () => {
    const list = (await env.call(dialer.key, 'POST', '/contact-lists', { name: 'Broken' })).body.data;
    const fileId = await env.upload(dialer.key, `phone,first_name\n${phone('212', 1)},Ada\n${phone('212', 2)},Bob,extra\n`);
    const r = await env.call(dialer.key, 'POST', `/contact-lists/${list.id}/imports`, { fileId });
    expect(r.status).to.equal(400);
    expect(r.body.code).to.equal('validation_error');
    expect(r.body.errors[0].field).to.equal('fileId');
    expect(r.body.errors[0].message).to.match(/row 2, column 3.*line 3/);
    expect(r.body).to.include({ row: 2, column: 3, line: 3 });
    expect((await env.call(dialer.key, 'GET', `/contact-lists/${list.id}`)).body.data.import.status).to.equal('empty');
  });

  it('answers 400 when the file has no phone column, and follows an explicit column mapping', async () => {
    const list = (await env.call(dialer.key, 'POST', '/contact-lists', { name: 'Mapped' })).body.data;
    const fileId = await env.upload(dialer.key, `Digits,Given\n${phone('212', 3)},Ada\n`);
    const r = await env.call(dialer.key, 'POST', `/contact-lists/${list.id}/imports`, { fileId });
    expect(r.status).to.equal(400);
    expect(r.body.errors[0].message).to.match(/no phone column/);
    const mapped = await env.importList(dialer.key, `Mobile Number,Given\n${phone('212', 3)},Ada\n`, { columnMapping: { phone: 'Mobile Number', firstName: 'Given' } });
    expect(mapped.import).to.include({ status: 'ready', accepted: 1 });
  });

  it('rejects rows without consent on record for a marketing list', async () => {
    const consented = phone('212', 20);
    await env.call(dialer.key, 'PUT', `/sms/contacts/${encodeURIComponent(consented)}/consent`, { source: 'web_form', consentedAt: '2026-01-01T00:00:00Z', proofText: 'signed' });
    const list = await env.importList(dialer.key, `phone\n${consented}\n${phone('212', 21)}\n`, { purpose: 'marketing' });
    expect(list.import.error).to.equal(null);
    expect(list.import.counts).to.deep.equal({ accepted: 1, no_consent: 1 });
  });

  it('creates a draft campaign with the documented defaults and refuses a window wider than 08:00–21:00', async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 30)}\n`);
    const r = await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id));
    expect(r.status).to.equal(201);
    expect(r.body.data).to.deep.include({ status: 'draft', callingWindow: { start: '08:00', end: '21:00' }, maxConcurrentCalls: 10, maxAttempts: 3, retryDelayMinutes: 60 });
    expect(r.body.data.id).to.match(/^cmp_/);
    expect(r.body.data.daysOfWeek).to.have.length(7);
    const wide = await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id, { callingWindow: { start: '07:30', end: '21:30' } }));
    expect(wide.status).to.equal(400);
    expect(wide.body.errors.map((e: any) => e.field).sort()).to.deep.equal(['callingWindow.end', 'callingWindow.start']);
    const narrow = await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id, { callingWindow: { start: '10:00', end: '17:30' }, daysOfWeek: ['mon', 'tue'] }));
    expect(narrow.status).to.equal(201);
    expect(narrow.body.data.callingWindow).to.deep.equal({ start: '10:00', end: '17:30' });
  });

  it('answers 409 no_published_version for an agent never published and 404 for a number the organization does not own', async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 31)}\n`);
    const draft = await env.draftAgent(dialer.orgId);
    const r = await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id, { agentId: draft }));
    expect(r.status).to.equal(409);
    expect(r.body.code).to.equal('no_published_version');
    const other = await env.org('Number owner');
    const foreignNumber = await env.ownNumber(other.key);
    const n = await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id, { callerIdNumberId: foreignNumber }));
    expect(n.status).to.equal(404);
    expect(n.body.code).to.equal('number_not_found');
  });

  it('refuses to launch a non-informational campaign with 422 purpose_not_dialable and keeps it draft', async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 32)}\n`);
    const c = (await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id, { purpose: 'collections' }))).body.data;
    const r = await env.call(dialer.key, 'POST', `/campaigns/${c.id}/launch`);
    expect(r.status).to.equal(422);
    expect(r.body.code).to.equal('purpose_not_dialable');
    const after = (await env.call(dialer.key, 'GET', `/campaigns/${c.id}`)).body.data;
    expect(after.status).to.equal('draft');
    expect(after.counters.total).to.equal(0);
  });

  it('answers 409 invalid_transition for actions the state machine does not allow', async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 33)}\n`);
    const c = (await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id))).body.data;
    for (const action of ['pause', 'resume']) {
      const r = await env.call(dialer.key, 'POST', `/campaigns/${c.id}/${action}`);
      expect(r.status, action).to.equal(409);
      expect(r.body.code).to.equal('invalid_transition');
      expect(r.body.allowedActions).to.deep.equal(['launch', 'cancel']);
    }
    expect((await env.call(dialer.key, 'POST', `/campaigns/${c.id}/cancel`)).body.data.status).to.equal('cancelled');
    const relaunch = await env.call(dialer.key, 'POST', `/campaigns/${c.id}/launch`);
    expect(relaunch.status).to.equal(409);
    expect(relaunch.body.allowedActions).to.deep.equal([]);
  });

  it('launches with exactly one attempt per accepted contact and starts campaign/{id}', async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 40)}\n${phone('312', 41)}\n${phone('212', 40)}\nbad\n${phone('415', 42)}\n`);
    expect(list.import.accepted).to.equal(3);
    await env.stopWorker(); // nothing is dialed while we look
    try {
      const c = (await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id))).body.data;
      const r = await env.call(dialer.key, 'POST', `/campaigns/${c.id}/launch`);
      expect(r.status).to.equal(200);
      expect(r.body.data.status).to.equal('running');
      expect(r.body.data.counters).to.include({ total: 3, pending: 3 });
      expect(r.body.data.agentVersionId).to.match(/^ver_/);
      const again = await env.call(dialer.key, 'POST', `/campaigns/${c.id}/launch`);
      expect(again.status).to.equal(409);
      const attempts = (await env.call(dialer.key, 'GET', `/campaigns/${c.id}/attempts`)).body.data.items;
      expect(attempts.map((a: any) => a.e164).sort()).to.deep.equal([phone('212', 40), phone('312', 41), phone('415', 42)].sort());
      const wf = await env.client.workflow.getHandle(workflowIds.campaign(c.id)).describe();
      expect(wf.status.name).to.equal('RUNNING');
      expect((await env.call(dialer.key, 'POST', `/campaigns/${c.id}/cancel`)).body.data.counters).to.include({ cancelled: 3, pending: 0 });
    } finally {
      await env.startWorker();
    }
  });

  it("answers 404 for another organization's lists and campaigns, exactly like missing ones", async () => {
    const list = await env.importList(dialer.key, `phone\n${phone('212', 50)}\n`);
    const c = (await env.call(dialer.key, 'POST', '/campaigns', campaignBody(list.id))).body.data;
    const other = await env.org('Stranger');
    for (const [method, path] of [
      ['GET', `/contact-lists/${list.id}`],
      ['GET', `/contact-lists/${list.id}/contacts`],
      ['GET', `/campaigns/${c.id}`],
      ['GET', `/campaigns/${c.id}/attempts`],
      ['POST', `/campaigns/${c.id}/launch`],
      ['POST', `/campaigns/${c.id}/cancel`],
    ]) {
      const r = await env.call(other.key, method, path);
      expect(r.status, `${method} ${path}`).to.equal(404);
    }
    expect((await env.call(other.key, 'GET', '/campaigns')).body.data.items).to.deep.equal([]);
    expect((await env.call(other.key, 'GET', '/contact-lists')).body.data.items).to.deep.equal([]);
    const agentOther = await env.publishedAgent(other.orgId);
    const numberOther = await env.ownNumber(other.key);
    const r = await env.call(other.key, 'POST', '/campaigns', { name: 'x', agentId: agentOther, callerIdNumberId: numberOther, contactListId: list.id, purpose: 'informational' });
    expect(r.status).to.equal(404);
    expect(r.body.code).to.equal('contact_list_not_found');
    expect((await env.call(dialer.key, 'GET', `/campaigns/${c.id}`)).body.data.status).to.equal('draft');
  });

  it('requires outbound scopes', async () => {
    const reader = await env.org('Reader', ['outbound:read']);
    expect((await env.call(reader.key, 'GET', '/campaigns')).status).to.equal(200);
    expect((await env.call(reader.key, 'POST', '/contact-lists', { name: 'x' })).status).to.equal(403);
  });
});
