/**
 * Booking skills over every target (docs/api-notes.md "Booking skills", docs/going-live.md "Google Calendar" and
 * "Cal.com"): a plain booking endpoint (the JSON contract), Google Calendar (OAuth with PKCE against the loopback
 * Google, refresh before expiry, a revoked grant → `needs_reauth` with an event) and Cal.com (API key, API v2), each
 * a loopback stub that validates every request and answer against the provider's own document. For each target and
 * skill, a chat conversation on the sandbox model: success, a 4xx, a 5xx, no answer in time, an unparsable answer —
 * the person never hears that something was booked or offered when it was not (in chat, in a playbook and over the
 * widget; by text and on the phone: test/api/sms-booking.test.ts, test/api/voice-booking.test.ts). Plus: a booking
 * attempt that crashed after the target answered is reconciled from its intent and books once,
 * a private url is refused (400 naming `config.url`), and the pre-publish report names each target and flags the
 * unreachable one.
 */
import http from 'node:http';
import { expect } from 'chai';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { chain, publishDraft } from '../api/agents-fixtures';
import { SKILL_ERROR_REPLY } from '../../domain/conversations/playbook';
import type { StubAnswer } from './stubServer';
import { googleError } from './googleCalendarStub';
import { BOOK, BookingTargets, CHECK, CLAIMS, START } from './bookingFixtures';
import { TOOL_FAILURE_SENTENCE } from '../../providers/llm/sandboxReplies';
import { bookingIdempotencyKey } from '../../services/conversations/booking';
import { integrationsAdapter } from '../../providers/integrations';
import { openCredentials } from '../../services/integrations/connections';
import { createSkillRunner } from '../../services/conversations/skills';
import { createSkillHttpClient } from '../../providers/http/request';
import { SimulatedCrash, type EffectStep } from '../../services/effects';
import { listIntents } from '../../db/repositories/providerIntents';
import type { SkillCall } from '../../domain/conversations/runtime';
import type { BookingTarget } from './bookingFixtures';

describe('booking skills: a plain endpoint, Google Calendar and Cal.com (loopback stubs)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const targets = new BookingTargets();
  const { endpoint, google, calcom } = targets;
  const agents: Record<'url' | 'google' | 'calcom', string> = { url: '', google: '', calcom: '' };

  /** One chat turn; returns the reply, every assistant line stored so far and the tool result the model saw. */
  const turn = async (agent: keyof typeof agents, content: string) => {
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agents[agent] } });
    expect(s.status, s.text).to.equal(201);
    const id = s.body.data.session.id as string;
    const res = await t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });
    expect(res.status, res.text).to.equal(200);
    const rows = await t.db('conversation_messages').where({ org_id: org.orgId, conversation_id: id }).orderBy('seq');
    const lines = rows.filter((r) => r.role === 'assistant' && r.content).map((r) => r.content as string);
    const tool = rows.filter((r) => r.role === 'tool').map((r) => JSON.parse(r.content));
    return { id, reply: res.body.data.reply.content as string, lines, tool, call: res.body.data.receipt.toolCalls[0] };
  };

  /** A failed turn: the apology and the offer of a person, no line claiming an effect, the model told it failed. */
  const failed = (out: Awaited<ReturnType<typeof turn>>, what: 'book' | 'check') => {
    expect(out.reply).to.equal(TOOL_FAILURE_SENTENCE);
    for (const line of out.lines) expect(line, 'a line the person sees').to.not.match(CLAIMS);
    expect(out.tool).to.have.length(1);
    expect(out.tool[0].ok).to.equal(false);
    expect(out.tool[0].error).to.match(what === 'book' ? /NOT booked.*do not say it is booked/ : /could not be checked.*Do not offer/);
    expect(out.call.output).to.equal(undefined);
  };

  before(async () => {
    await targets.start();
    t = await startTestApi('booking', QUICK_CLIENT);
    org = await t.org('Booking');
    await targets.connect(t, org);
    agents.url = await targets.agentOn(t, org, 'Url desk', 'url');
    agents.google = await targets.agentOn(t, org, 'Google desk', 'google');
    agents.calcom = await targets.agentOn(t, org, 'Cal desk', 'calcom');
  });
  after(async () => {
    await t?.close();
    await targets.stop();
  });
  afterEach(() => {
    expect(targets.problems(), 'wire problems').to.deep.equal([]);
  });

  describe('the plain endpoint (booking and availability contracts)', () => {
    it('books: the contract on the wire with an Idempotency-Key of the conversation and tool call; the person hears the booking', async () => {
      const out = await turn('url', BOOK);
      expect(out.call.output).to.include({ status: 'confirmed', startTime: START, endTime: '2026-12-03T10:30:00-06:00', timeZone: 'America/Chicago' });
      const key = bookingIdempotencyKey(out.id, out.call.id);
      expect(endpoint.bookings.get(key)).to.deep.equal({ startTime: '2026-12-03T16:00:00.000Z', durationMinutes: 30, timeZone: 'America/Chicago', name: 'Sam Lee', phone: '+13125550100', conversationId: out.id });
      // Said as a person would, in the agent's time zone: no booking id, no ISO timestamp.
      expect(out.reply).to.match(/^All done\. The status is confirmed/).and.contain('the start time is Thursday, December 3 at 10:00 AM');
      expect(out.reply).to.not.contain(String(out.call.output.bookingId)).and.not.match(/\d{4}-\d{2}-\d{2}/);
    });
    for (const [label, answer] of [
      ['a 4xx', { status: 409, body: { error: 'slot taken' } }],
      ['a 5xx', { status: 500, body: { error: 'boom' } }],
      ['an unparsable answer', { status: 200, raw: '<html>ok</html>', headers: { 'content-type': 'text/html' } }],
      ['a 2xx off the contract', { status: 200, body: { ok: true } }],
      ['a status other than confirmed', { status: 200, body: { bookingId: 'bk_1', status: 'rejected' } }],
    ] as const) {
      it(`a booking answered with ${label} is a failed skill, never a confirmation`, async () => {
        endpoint.failNext(/^POST \/book$/, answer as StubAnswer);
        failed(await turn('url', BOOK), 'book');
      });
    }
    it('a booking endpoint that does not answer within timeoutMs is a failed skill', async () => {
      endpoint.hangNext(/^POST \/book$/);
      const out = await turn('url', BOOK);
      failed(out, 'book');
      expect(out.call.error).to.match(/did not answer within 1000 ms/);
    });
    it('a playbook whose booking endpoint answers 500 takes the error path: the confirmation line is never said', async () => {
      const a = await t.call('POST', '/agents', { key: org.key, json: { name: 'Playbook desk', voiceId: 'voice_ava', variables: [{ name: 'phone', defaultValue: '+13125550100' }] } });
      const id = a.body.data.id as string;
      const skill = { name: 'book_visit', type: 'book_appointment', config: { url: `${endpoint.baseUrl}/book`, durationMinutes: 30, timeZone: 'America/Chicago', timeoutMs: 1000 } };
      expect((await t.call('POST', `/agents/${id}/skills`, { key: org.key, json: skill })).status).to.equal(201);
      const graph = {
        nodes: [
          { id: 'start', type: 'start' },
          { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
          { id: 'ask_time', type: 'ask', prompt: 'When would you like to come?', gathers: 'start_time' },
          { id: 'book', type: 'skill', skill: 'book_visit' },
          { id: 'done', type: 'say', prompt: 'You are all set, {{name}}: your visit is booked for {{start_time}}.' },
          { id: 'end', type: 'end' },
        ],
        edges: chain('start', 'ask_name', 'ask_time', 'book', 'done', 'end'),
      };
      expect((await t.call('POST', `/agents/${id}/playbooks`, { key: org.key, json: { name: 'booking', graph } })).status).to.equal(201);
      expect((await publishDraft(t.db, org, id, 'pb-1')).kind).to.equal('published');
      const s = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: id } })).body.data.session.id;
      const say = async (content: string) => (await t.call('POST', `/chat/sessions/${s}/messages`, { key: org.key, json: { content } })).body.data.reply.content as string;
      expect(await say('I would like a booking please')).to.equal('May I have your name?');
      expect(await say('Sam Lee')).to.equal('When would you like to come?');
      endpoint.failNext(/^POST \/book$/, { status: 500, body: { error: 'boom' } });
      expect(await say(START)).to.equal(SKILL_ERROR_REPLY);
      const lines = (await t.db('conversation_messages').where({ org_id: org.orgId, conversation_id: s, role: 'assistant' }).whereNotNull('content')).map((r) => r.content as string);
      for (const line of lines) expect(line).to.not.match(CLAIMS);
    });
    it('the widget channel: a booking answered 502 is the same apology, and no line claims it', async () => {
      const site = 'https://clinic.example.com';
      const pk = (await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'site', agentId: agents.url, allowedOrigins: [site] } })).body.data.key;
      const post = (path: string, bearer: string, body: unknown) =>
        fetch(`${t.api.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: site, authorization: `Bearer ${bearer}` }, body: JSON.stringify(body) });
      const started = ((await (await post('/chat/widget/sessions', pk, {})).json()) as { data: any }).data;
      endpoint.failNext(/^POST \/book$/, { status: 502, body: { error: 'bad gateway' } });
      const res = await post(`/chat/sessions/${started.session.id}/messages`, started.sessionToken, { content: BOOK });
      expect(res.status).to.equal(200);
      expect(((await res.json()) as { data: any }).data.reply.content).to.equal(TOOL_FAILURE_SENTENCE);
      const lines = (await t.db('conversation_messages').where({ org_id: org.orgId, conversation_id: started.session.id, role: 'assistant' }).whereNotNull('content')).map((r) => r.content as string);
      expect(lines).to.have.length.greaterThan(0);
      for (const line of lines) expect(line).to.not.match(CLAIMS);
    });
    it('offers the free slots in the skill time zone, earliest first', async () => {
      const out = await turn('url', CHECK);
      expect(out.call.output).to.deep.include({ available: true, slotCount: 2, nextSlot: '2026-12-03T09:00:00-06:00' });
      expect(out.call.output.slots[1]).to.deep.equal({ start: '2026-12-03T10:00:00-06:00', end: '2026-12-03T10:30:00-06:00' });
      expect(out.reply).to.contain('the next slot is Thursday, December 3 at 9:00 AM').and.not.match(/\d{4}-\d{2}-\d{2}/);
    });
    for (const [label, answer] of [
      ['a 4xx', { status: 400, body: { error: 'bad' } }],
      ['a 5xx', { status: 503 }],
      ['an unparsable answer', { status: 200, raw: 'not json', headers: { 'content-type': 'text/plain' } }],
    ] as const) {
      it(`availability answered with ${label} offers no time`, async () => {
        endpoint.failNext(/^POST \/slots$/, answer as StubAnswer);
        failed(await turn('url', CHECK), 'check');
      });
    }
    it('availability that does not answer in time offers no time', async () => {
      endpoint.hangNext(/^POST \/slots$/);
      failed(await turn('url', CHECK), 'check');
    });
  });

  describe('Google Calendar (@googleapis/calendar, OAuth with PKCE)', () => {
    it('books an event in the calendar time zone after refreshing the access token; a retried booking finds the same event', async () => {
      const before = google.tokenRequests.length;
      const out = await turn('google', `${BOOK}, email: sam@example.com`);
      expect(out.call.output).to.include({ status: 'confirmed', startTime: START, endTime: '2026-12-03T10:30:00-06:00' });
      expect(google.tokenRequests.slice(before).map((r) => r.grant_type)).to.include('refresh_token');
      const ev = [...google.events.values()].find((e) => e.id === out.call.output.bookingId);
      expect(ev.start).to.deep.equal({ dateTime: START, timeZone: 'America/Chicago' });
      expect(ev.description).to.contain('Sam Lee').and.contain('+13125550100');
      expect(ev.attendees).to.deep.equal([{ email: 'sam@example.com', displayName: 'Sam Lee', responseStatus: 'needsAction' }]);
      expect(google.requests.find((r) => r.method === 'POST' && r.path.endsWith('/events'))!.query.get('sendUpdates')).to.equal('all');
      // The same request again (a retried turn): 409 on the client id, then the event it made is read.
      const conn = await t.db('integration_connections').where({ org_id: org.orgId, kind: 'google_calendar' }).first();
      const again = await integrationsAdapter(process.env, 'google').createCalendarEvent(openCredentials(conn.credentials_sealed), {
        calendarId: 'primary',
        eventTypeId: null,
        start: '2026-12-03T16:00:00Z',
        durationMinutes: 30,
        timeZone: 'America/Chicago',
        summary: 'Appointment: Sam Lee',
        attendee: { name: 'Sam Lee', phone: '+13125550100', email: null },
        notes: null,
        requestId: `${out.id}:${out.call.id}`,
      });
      expect(again.eventId).to.equal(out.call.output.bookingId);
      expect(google.events.size).to.equal(1);
    });
    it('offers the slots free/busy leaves inside opening hours', async () => {
      const out = await turn('google', CHECK);
      // 09:00–10:00 Chicago is busy (15:00–16:00Z): the first free slot is 10:00.
      expect(out.call.output).to.deep.include({ available: true, nextSlot: '2026-12-03T10:00:00-06:00' });
    });
    for (const [label, match, answer, what] of [
      ['a 4xx on events.insert', /^POST \/calendar\/v3\/calendars\/primary\/events$/, googleError(403, 'forbidden', 'Forbidden'), 'book'],
      ['a 5xx on events.insert', /^POST \/calendar\/v3\/calendars\/primary\/events$/, googleError(503, 'backendError', 'Backend Error'), 'book'],
      ['an unparsable events.insert answer', /^POST \/calendar\/v3\/calendars\/primary\/events$/, { status: 200, raw: '<html>oops</html>', headers: { 'content-type': 'text/html' } }, 'book'],
      ['a 4xx on freebusy.query', /^POST \/calendar\/v3\/freeBusy$/, googleError(400, 'invalid', 'Bad Request'), 'check'],
      ['a 5xx on freebusy.query', /^POST \/calendar\/v3\/freeBusy$/, googleError(500, 'backendError', 'Backend Error'), 'check'],
      ['an unparsable freebusy.query answer', /^POST \/calendar\/v3\/freeBusy$/, { status: 200, raw: '{"kind":', headers: { 'content-type': 'application/json' } }, 'check'],
    ] as const) {
      it(`${label} is a failed skill, never a claim`, async () => {
        google.failNext(match, answer as StubAnswer);
        failed(await turn('google', what === 'book' ? BOOK.replace('10:00', '11:00') : CHECK), what);
      });
    }
    it('no answer in time from Calendar is a failed booking', async () => {
      google.hangNext(/^POST \/calendar\/v3\/calendars\/primary\/events$/);
      const out = await turn('google', BOOK.replace('10:00', '12:00'));
      failed(out, 'book');
      expect(out.call.error).to.match(/no answer within 1500 ms/);
    });
    it('a revoked grant marks the connection needs_reauth with one event; the skill fails until it is connected again', async () => {
      google.revokeGrants();
      failed(await turn('google', BOOK.replace('10:00', '13:00')), 'book');
      failed(await turn('google', CHECK), 'check');
      const status = (await t.call('GET', '/integrations', { key: org.key })).body.data.items.find((i: { kind: string }) => i.kind === 'google_calendar');
      expect(status).to.include({ status: 'needs_reauth', provider: 'google' });
      expect(status.lastError).to.match(/invalid_grant/);
      const events = await t.db('events').where({ org_id: org.orgId, type: 'integration.needs_reauth' });
      expect(events).to.have.length(1);
      expect(events[0].data).to.include({ kind: 'google_calendar', provider: 'google' });
      const report = (await t.call('GET', `/agents/${agents.google}/prepublish-report`, { key: org.key })).body.data;
      expect(report.warnings.find((w: { code: string }) => w.code === 'booking_target_unreachable')).to.include({ field: 'skills[book_appointment].config.integration' });
    });
  });

  describe('Cal.com (API v2)', () => {
    it('books the event type with the caller as attendee; a retried booking finds the one it made', async () => {
      const out = await turn('calcom', BOOK);
      expect(out.call.output).to.include({ status: 'confirmed', startTime: START });
      expect(calcom.bookings).to.have.length(1);
      expect(calcom.bookings[0].attendee).to.deep.equal({ name: 'Sam Lee', timeZone: 'America/Chicago', phoneNumber: '+13125550100' });
      const conn = await t.db('integration_connections').where({ org_id: org.orgId, kind: 'calcom' }).first();
      const again = await integrationsAdapter(process.env, 'calcom').createCalendarEvent(openCredentials(conn.credentials_sealed), {
        calendarId: 'primary',
        eventTypeId: 42,
        start: '2026-12-03T16:00:00Z',
        durationMinutes: 30,
        timeZone: 'America/Chicago',
        summary: 'x',
        attendee: { name: 'Sam Lee', phone: '+13125550100', email: null },
        notes: null,
        requestId: `${out.id}:${out.call.id}`,
      });
      expect(again.eventId).to.equal(out.call.output.bookingId);
      expect(calcom.bookings).to.have.length(1);
    });
    it('offers the event type slots still free', async () => {
      const out = await turn('calcom', CHECK);
      expect(out.call.output).to.deep.include({ available: true, slotCount: 2, nextSlot: '2026-12-03T09:00:00-06:00' });
    });
    it('a taken slot (Cal.com 400) is a failed booking', async () => {
      failed(await turn('calcom', BOOK), 'book');
    });
    for (const [label, match, answer, what] of [
      ['a 5xx on the booking', /^POST \/v2\/bookings$/, { status: 500, body: { status: 'error', error: { code: 'InternalServerErrorException', message: 'boom' } } }, 'book'],
      ['an unparsable booking answer', /^POST \/v2\/bookings$/, { status: 201, raw: 'oops', headers: { 'content-type': 'text/plain' } }, 'book'],
      ['a 4xx on the slots', /^GET \/v2\/slots$/, { status: 400, body: { status: 'error', error: { code: 'BadRequestException', message: 'bad' } } }, 'check'],
      ['a 5xx on the slots', /^GET \/v2\/slots$/, { status: 502 }, 'check'],
      ['an unparsable slots answer', /^GET \/v2\/slots$/, { status: 200, raw: '<xml/>', headers: { 'content-type': 'application/xml' } }, 'check'],
    ] as const) {
      it(`${label} is a failed skill, never a claim`, async () => {
        calcom.failNext(match, answer as StubAnswer);
        failed(await turn('calcom', what === 'book' ? BOOK.replace('10:00', '11:00') : CHECK), what);
      });
    }
    it('a slow Cal.com inside the time cap still answers the slots', async () => {
      calcom.delayMs = 100;
      try {
        const out = await turn('calcom', CHECK);
        expect(out.call.output).to.include({ available: true });
      } finally {
        calcom.delayMs = 0;
      }
    });
    it('no answer in time from Cal.com offers no time', async () => {
      calcom.hangNext(/^GET \/v2\/slots$/);
      failed(await turn('calcom', CHECK), 'check');
    });
  });

  describe('a booking is written once (performOnce), whatever the crash', () => {
    // Google's grant was revoked above: consent again.
    before(() => targets.connect(t, org));
    /** The agent's booking skill as a tool call of a new chat conversation. */
    const bookingCall = async (target: BookingTarget, callId: string, start: string): Promise<SkillCall> => {
      const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: agents[target] } });
      expect(s.status, s.text).to.equal(201);
      const skill = await t.db('agent_skills').where({ org_id: org.orgId, agent_id: agents[target], name: 'book_appointment' }).first();
      return {
        callId,
        skill: { name: 'book_appointment', type: 'book_appointment', description: 'book', config: skill.config } as SkillCall['skill'],
        args: { name: 'Ada Park', phone: '+13125550177', start_time: start },
        conversation: { id: s.body.data.session.id, orgId: org.orgId, agentId: agents[target], channel: 'chat', variables: {} },
      };
    };
    /** A fault hook crashing the attempt at `step` of the booking. */
    const crashAt = (at: EffectStep) => async (step: EffectStep) => {
      if (step === at) throw new SimulatedCrash(step, 'booking');
    };
    // Free Cal.com slots of the event type (9:00 and 10:00 are taken by the tests above; 11:00 by the 4xx/5xx ones).
    for (const [target, start] of [
      ['url', '2026-12-04T09:00:00-06:00'],
      ['google', '2026-12-04T09:00:00-06:00'],
      ['calcom', '2026-12-04T09:00:00-06:00'],
    ] as const) {
      it(`${target}: an attempt that dies after the answer, before its record, is reconciled from the intent — one booking; one that dies after the record asks nothing`, async () => {
        const slots = calcom.eventTypes.get(42)!.slots;
        if (!slots.includes('2026-12-04T15:00:00.000Z')) slots.push('2026-12-04T15:00:00.000Z');
        const http = createSkillHttpClient();
        const call = await bookingCall(target, 'call_once_1', start);
        const before = targets.bookingCount(target);
        let crashed: unknown;
        await createSkillRunner({ db: t.db, http, faults: crashAt('after_accept') })(call).catch((err) => (crashed = err));
        expect(crashed, String(crashed)).to.be.instanceOf(SimulatedCrash);
        expect(targets.bookingCount(target), 'the first attempt booked').to.equal(before + 1);
        const [pending] = await listIntents(t.db, org.orgId, { kind: 'booking' }).then((l) => l.filter((i) => i.subjectId === call.conversation.id));
        expect(pending).to.include({ status: 'pending', reference: bookingIdempotencyKey(call.conversation.id, call.callId), provider: target === 'url' ? 'url' : target });
        // The retried attempt finds the pending intent and reconciles through the target's look-up.
        const again = await createSkillRunner({ db: t.db, http, faults: crashAt('after_record') })(call).catch((err) => err);
        expect(again).to.be.instanceOf(SimulatedCrash);
        expect(targets.bookingCount(target), 'one booking at the target').to.equal(before + 1);
        const done = (await listIntents(t.db, org.orgId, { kind: 'booking' })).find((i) => i.id === pending.id)!;
        expect(done.status).to.equal('done');
        expect(done.tries).to.equal(2);
        // Once recorded, a retry answers the recorded booking without a request.
        const requests = [targets.endpoint, google, calcom].map((x) => x.requests.length);
        const third = await createSkillRunner({ db: t.db, http })(call);
        expect([targets.endpoint, google, calcom].map((x) => x.requests.length)).to.deep.equal(requests);
        expect(third.output).to.include({ bookingId: done.result!.bookingId, status: 'confirmed', startTime: start });
        expect(targets.bookingCount(target)).to.equal(before + 1);
      });
    }
  });

  describe('bad input and the pre-publish report', () => {
    it('answers 400 naming config.url for a booking url on a private address not listed in HTTP_ALLOW_PRIVATE_HOSTS', async () => {
      const a = await t.call('POST', '/agents', { key: org.key, json: { name: 'Private', voiceId: 'voice_ava' } });
      for (const [type, url] of [
        ['book_appointment', 'https://10.0.0.5/book'],
        ['check_availability', 'http://192.168.1.20/slots'],
        ['book_appointment', 'https://localhost/book'],
      ]) {
        const res = await t.call('POST', `/agents/${a.body.data.id}/skills`, { key: org.key, json: { name: 'b', type, config: { url, durationMinutes: 30, timeZone: 'America/Chicago' } } });
        expect(res.status, `${url}: ${res.text}`).to.equal(400);
        expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['config.url']);
        expect(res.body.errors[0].message).to.contain('HTTP_ALLOW_PRIVATE_HOSTS');
      }
    });
    it('says what each booking skill really does and flags an endpoint that does not answer', async () => {
      const closed = http.createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const port = (closed.address() as { port: number }).port;
      await new Promise<void>((r) => closed.close(() => r()));
      const a = await t.call('POST', '/agents', { key: org.key, json: { name: 'Reported', voiceId: 'voice_ava' } });
      const id = a.body.data.id;
      await t.call('POST', `/agents/${id}/skills`, { key: org.key, json: { name: 'book_appointment', type: 'book_appointment', config: { url: `http://127.0.0.1:${port}/book`, durationMinutes: 30, timeZone: 'America/Chicago' } } });
      await t.call('POST', `/agents/${id}/skills`, { key: org.key, json: { name: 'check_availability', type: 'check_availability', config: { integration: 'calcom', eventTypeId: 42, durationMinutes: 30, timeZone: 'America/Chicago' } } });
      const report = (await t.call('GET', `/agents/${id}/prepublish-report`, { key: org.key })).body.data;
      const said = report.willSay.join('\n');
      expect(said).to.contain(`book_appointment books 30-minute appointments (America/Chicago) through POST http://127.0.0.1:${port}/book`).and.contain('sending name, phone, email, start_time');
      expect(said).to.contain('check_availability reads free 30-minute slots (America/Chicago) from the connected Cal.com (event type 42)');
      const flagged = report.warnings.filter((w: { code: string }) => w.code === 'booking_target_unreachable');
      expect(flagged.map((w: { field: string }) => w.field)).to.deep.equal(['skills[book_appointment].config.url']);
      expect(report.dataLeavingSystem.find((d: { skill: string }) => d.skill === 'check_availability')).to.include({ destination: 'api.cal.com' });
    });
  });
});
