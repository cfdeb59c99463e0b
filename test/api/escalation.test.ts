/**
 * Escalation destinations, teammates' presence, `transfer_call` targeting a destination, and the phone
 * settings of numbers (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"). Real HTTP on a
 * real Postgres.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { isOpen } from '../../domain/settings/hours';
import { createSkillRunner } from '../../services/conversations/skills';

const FRONT_DESK = {
  name: 'Front desk',
  kind: 'phone',
  address: '+14155550123',
  timeZone: 'America/Chicago',
  hours: [{ day: 'mon', open: '09:00', close: '17:00' }],
  teammate: 'Ana@Acme.test',
};

describe('escalation destinations, presence and phone settings', () => {
  const t = useTestApi('escalation', QUICK_CLIENT);
  let org: { orgId: string; key: string; keyId: string };
  let other: { orgId: string; key: string; keyId: string };
  let destId: string;

  before(async () => {
    org = await t.org('Esc');
    other = await t.org('Esc other');
  });

  const create = (json: unknown, key = org.key) => t.call('POST', '/escalation-destinations', { key, json });

  it('creates each kind of destination with hours, and answers openNow and the presence of its teammate', async () => {
    const r = await create(FRONT_DESK);
    expect(r.status).to.equal(201);
    destId = r.body.data.id;
    expect(destId).to.match(/^esc_/);
    expect(r.body.data).to.include({ kind: 'phone', address: '+14155550123', timeZone: 'America/Chicago', teammate: 'ana@acme.test', presence: null });
    expect(r.body.data.openNow).to.equal(isOpen('America/Chicago', FRONT_DESK.hours as never));
    for (const [kind, address] of [['sip', 'sip:desk@pbx.acme.test'], ['email', 'desk@acme.test'], ['webhook', 'https://hooks.acme.test/escalate']]) {
      const d = await create({ name: `via ${kind}`, kind, address, timeZone: 'UTC' });
      expect(d.status, kind).to.equal(201);
      expect(d.body.data).to.include({ hours: null, openNow: true });
    }
    const p = await t.call('PUT', '/presence/ana@acme.test', { key: org.key, json: { status: 'available', note: 'on shift' } });
    expect(p.status).to.equal(200);
    expect(p.body.data).to.include({ teammate: 'ana@acme.test', status: 'available' });
    expect(p.body.data.id).to.match(/^prs_/);
    expect((await t.call('GET', `/escalation-destinations/${destId}`, { key: org.key })).body.data.presence).to.equal('available');
    const list = await t.call('GET', '/escalation-destinations?limit=2', { key: org.key });
    expect(list.body.data.items).to.have.length(2);
    expect(list.body.data.hasMore).to.equal(true);
    expect((await t.call('GET', `/escalation-destinations?cursor=${list.body.data.nextCursor}`, { key: org.key })).body.data.items).to.have.length(2);
    expect((await t.call('GET', '/presence', { key: org.key })).body.data.items.map((i: { teammate: string }) => i.teammate)).to.deep.equal(['ana@acme.test']);
  });

  it('refuses addresses that do not fit the kind, unknown time zones and hours that close before they open, naming each field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ kind: 'phone', address: '415-555-0100' }, 'address'],
      [{ kind: 'sip', address: 'desk@pbx' }, 'address'],
      [{ kind: 'email', address: 'not-an-email' }, 'address'],
      [{ kind: 'webhook', address: 'http://hooks.acme.test/x' }, 'address'],
      [{ timeZone: 'Mars/Olympus' }, 'timeZone'],
      [{ hours: [{ day: 'tue', open: '18:00', close: '09:00' }] }, 'hours[0].close'],
      [{ kind: 'fax' }, 'kind'],
    ];
    for (const [patch, field] of cases) {
      const r = await create({ ...FRONT_DESK, name: `bad ${field}`, ...patch });
      expect(r.status, JSON.stringify(patch)).to.equal(400);
      expect(r.body.errors.map((e: { field: string }) => e.field), JSON.stringify(patch)).to.include(field);
    }
    expect((await create(FRONT_DESK)).body.code).to.equal('destination_name_taken');
    const moved = await t.call('PATCH', `/escalation-destinations/${destId}`, { key: org.key, json: { kind: 'sip', address: 'sips:desk@pbx.acme.test:5061', hours: null } });
    expect(moved.status).to.equal(200);
    expect(moved.body.data).to.include({ kind: 'sip', address: 'sips:desk@pbx.acme.test:5061', hours: null, openNow: true, name: 'Front desk' });
    await t.call('PATCH', `/escalation-destinations/${destId}`, { key: org.key, json: { kind: 'phone', address: FRONT_DESK.address } });
    const kindOnly = await t.call('PATCH', `/escalation-destinations/${destId}`, { key: org.key, json: { kind: 'email' } });
    expect(kindOnly.status).to.equal(400);
    expect(kindOnly.body.errors[0].field).to.equal('address');
    const badPresence = await t.call('PUT', '/presence/nobody', { key: org.key, json: { status: 'away' } });
    expect(badPresence.body.errors[0].field).to.equal('teammate');
    expect((await t.call('PUT', '/presence/a@b.test', { key: org.key, json: { status: 'asleep' } })).status).to.equal(400);
  });

  it("answers 404 for another organization's destination, and checks scopes (presence:write apart)", async () => {
    for (const [method, json] of [['GET', undefined], ['PATCH', { name: 'x' }], ['DELETE', undefined]] as const) {
      const r = await t.call(method, `/escalation-destinations/${destId}`, { key: other.key, json });
      expect(r.status, method).to.equal(404);
      expect(r.body.code).to.equal('escalation_destination_not_found');
    }
    const reader = await t.org('Esc reader', ['escalation_destinations:read']);
    expect((await t.call('GET', '/escalation-destinations', { key: reader.key })).status).to.equal(200);
    expect((await create({ ...FRONT_DESK, name: 'x' }, reader.key)).status).to.equal(403);
    expect((await t.call('PUT', '/presence/a@b.test', { key: reader.key, json: { status: 'away' } })).status).to.equal(403);
    const presenceOnly = await t.org('Presence only', ['presence:write']);
    expect((await t.call('PUT', '/presence/a@b.test', { key: presenceOnly.key, json: { status: 'away' } })).status).to.equal(200);
    expect((await t.call('GET', '/presence', { key: presenceOnly.key })).status).to.equal(403);
    // The escalation endpoints themselves stay reserved.
    const reserved = await t.call('GET', '/escalations', { key: org.key });
    expect(reserved.status).to.equal(403);
  });

  it('lets transfer_call target a destination: checked when saved and at publish, resolved when it runs', async () => {
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Transfers', voiceId: 'voice_ava', greeting: 'Hi' } })).body.data.id;
    const skill = (destinationId: string) => ({ name: 'to_desk', type: 'transfer_call', config: { destinationId, announceSummary: true } });
    const foreign = (await create({ ...FRONT_DESK, name: 'Theirs' }, other.key)).body.data.id;
    const refused = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: skill(foreign) });
    expect(refused.status).to.equal(404);
    expect(refused.body.code).to.equal('escalation_destination_not_found');
    expect(refused.body.errors[0].field).to.equal('config.destinationId');
    const both = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'both', type: 'transfer_call', config: { destinationId: destId, phoneNumber: '+14155550100' } } });
    expect(both.status).to.equal(400);
    expect(both.body.errors[0].field).to.equal('config.destinationId');
    const ok = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: skill(destId) });
    expect(ok.status).to.equal(201);
    expect((await publishDraft(t.db, org, agentId, 'esc-1')).kind).to.equal('published');

    const runSkill = createSkillRunner({ db: t.db, http: undefined as never });
    const call = { callId: 'c1', args: {}, skill: { name: 'to_desk', type: 'transfer_call', config: { destinationId: destId } }, conversation: { id: 'cnv_x', orgId: org.orgId, agentId, variables: {} } };
    const out = await runSkill(call as never);
    expect(out.effect).to.equal('transfer');
    expect(out.output).to.include({ status: 'transferring', to: '+14155550123', destinationId: destId, kind: 'phone' });

    const inUse = await t.call('DELETE', `/escalation-destinations/${destId}`, { key: org.key });
    expect(inUse.status).to.equal(409);
    expect(inUse.body.code).to.equal('destination_in_use');
    // A destination deleted behind the draft's back makes the publish fail on that field.
    await t.db('escalation_destinations').where({ id: destId }).delete();
    const v = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data.version;
    await t.call('PATCH', `/agents/${agentId}`, { key: org.key, json: { greeting: 'Hello' }, headers: { 'if-match': `"${v}"` } });
    const out2 = await publishDraft(t.db, org, agentId, 'esc-2');
    expect(out2.kind).to.equal('invalid');
    if (out2.kind === 'invalid') expect(out2.errors.map((e) => e.field)).to.include('skills[to_desk].config.destinationId');
    destId = (await create({ ...FRONT_DESK, name: 'Front desk 2' })).body.data.id;
  });

  describe('phone settings (/numbers/{id}/settings)', () => {
    let numberId: string;
    const settings = () => ({
      voicemail: { enabled: true, greeting: 'Leave a message', transcribe: true, maxSeconds: 90 },
      recordingConsent: { mode: 'announce', announcement: null },
      businessHours: { timeZone: 'America/New_York', hours: [{ day: 'fri', open: '08:00', close: '18:00' }], afterHours: 'escalation', escalationDestinationId: destId },
    });

    before(async () => {
      const e164 = sandboxInventory('415')[3].e164;
      numberId = (await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164 } })).body.data.id;
    });

    it('answers the defaults before the first PUT, then the settings saved, with a revision', async () => {
      const before = await t.call('GET', `/numbers/${numberId}/settings`, { key: org.key });
      expect(before.status).to.equal(200);
      expect(before.body.data).to.include({ numberId, revision: 0, updatedAt: null, openNow: true });
      expect(before.body.data.voicemail.enabled).to.equal(false);
      const put = await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: settings() });
      expect(put.status).to.equal(200);
      expect(put.body.data.revision).to.equal(1);
      expect(put.body.data.recordingConsent.announcement).to.match(/recorded/);
      expect(put.body.data.businessHours.escalationDestinationId).to.equal(destId);
      expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: settings() })).body.data.revision).to.equal(2);
      const inUse = await t.call('DELETE', `/escalation-destinations/${destId}`, { key: org.key });
      expect(inUse.body.usedBy).to.deep.equal([`number ${numberId}`]);
    });

    it('refuses bad settings naming the field, and hides other organizations\' numbers', async () => {
      const s = settings();
      const noDest = await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: { ...s, businessHours: { ...s.businessHours, escalationDestinationId: null } } });
      expect(noDest.body.errors[0].field).to.equal('businessHours.escalationDestinationId');
      const foreign = (await create({ ...FRONT_DESK, name: 'Theirs 2' }, other.key)).body.data.id;
      const theirs = await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: { ...s, businessHours: { ...s.businessHours, escalationDestinationId: foreign } } });
      expect(theirs.status).to.equal(404);
      expect(theirs.body.code).to.equal('escalation_destination_not_found');
      expect(theirs.body.errors[0].field).to.equal('businessHours.escalationDestinationId');
      const tz = await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: { ...s, businessHours: { ...s.businessHours, timeZone: 'Nowhere/Else' } } });
      expect(tz.body.errors[0].field).to.equal('businessHours.timeZone');
      expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: org.key, json: { ...s, voicemail: { ...s.voicemail, maxSeconds: 5 } } })).body.errors[0].field).to.equal('voicemail.maxSeconds');
      expect((await t.call('GET', `/numbers/${numberId}/settings`, { key: other.key })).status).to.equal(404);
      expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: other.key, json: s })).status).to.equal(404);
      const readOnly = await t.org('Phone reader', ['phone:read']);
      expect((await t.call('PUT', `/numbers/${numberId}/settings`, { key: readOnly.key, json: s })).status).to.equal(403);
    });
  });
});
