/**
 * What the booking tests share on every channel (chat, widget, SMS, voice; docs/api-notes.md "Booking skills"): a
 * booking endpoint speaking the contract, the loopback Google Calendar and Cal.com stubs with the environment that
 * points the adapters at them, the connections (Google by authorization code with PKCE, Cal.com by API key), agents
 * carrying both skills on a target, the failure kinds of each target, and what a line may not say when nothing was
 * booked or found.
 */
import { expect } from 'chai';
import type { TestApi } from '../helpers/api';
import { publishDraft } from '../api/agents-fixtures';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { GoogleCalendarStub, googleError } from './googleCalendarStub';
import { CalcomStub } from './calcomStub';

/** A booking endpoint speaking the contract; every request is checked against it. A repeated Idempotency-Key answers the booking it made. */
export class BookingEndpoint extends StubServer {
  readonly bookings = new Map<string, unknown>();
  protected async handle(req: StubRequest): Promise<StubAnswer> {
    if (req.method === 'GET') return { status: 405, body: { error: 'POST only' } };
    const body = JSON.parse(req.raw);
    if (req.path === '/slots') {
      for (const k of ['from', 'to', 'durationMinutes', 'timeZone', 'conversationId']) if (body[k] === undefined) this.problem(req, `${k} is missing`);
      return { status: 200, body: { slots: [{ start: '2026-12-03T16:00:00Z', end: '2026-12-03T16:30:00Z' }, { start: '2026-12-03T15:00:00Z' }] } };
    }
    const key = String(req.headers['idempotency-key'] ?? '');
    if (!/^[0-9a-f]{64}$/.test(key)) this.problem(req, `Idempotency-Key ${key}`);
    for (const k of ['startTime', 'durationMinutes', 'timeZone', 'name', 'phone', 'conversationId']) if (body[k] === undefined) this.problem(req, `${k} is missing`);
    this.bookings.set(key, body);
    return { status: 201, body: { bookingId: `bk_${key.slice(0, 8)}`, status: 'confirmed' } };
  }
}

export const START = '2026-12-03T10:00:00-06:00';
export const BOOK = `/book_appointment name: Sam Lee, phone: +13125550100, start_time: ${START}`;
export const CHECK = '/check_availability date: 2026-12-03';
/** What a line may not say when nothing was booked or found. */
export const CLAIMS = /\b(booked|book(ing)? (is )?confirmed|confirmed|all set|scheduled|you('| a)re in|available at|free at)\b|\d{4}-\d{2}-\d{2}T/i;

/** The booking targets. */
export type BookingTarget = 'url' | 'google' | 'calcom';

/** The three stubs, the environment pointing the adapters at them, and the organization's connections. */
export class BookingTargets {
  readonly endpoint = new BookingEndpoint();
  readonly google = new GoogleCalendarStub();
  readonly calcom = new CalcomStub();
  private readonly saved = { ...process.env };

  /** Starts the stubs (Cal.com event type 42; the Google primary calendar busy 09:00–10:00 Chicago) and sets the environment. */
  async start(): Promise<void> {
    await Promise.all([this.endpoint.start(), this.google.start(), this.calcom.start()]);
    this.calcom.eventTypes.set(42, { slug: 'visit', lengthInMinutes: 30, slots: ['2026-12-03T15:00:00.000Z', '2026-12-03T16:00:00.000Z', '2026-12-03T17:00:00.000Z'] });
    this.google.calendars.get('primary')!.busy.push({ start: '2026-12-03T15:00:00Z', end: '2026-12-03T16:00:00Z' });
    // Tokens that expire within the refresh margin: every Calendar call refreshes first.
    this.google.expiresIn = 30;
    Object.assign(process.env, {
      HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
      INTEGRATIONS_LIVE: 'google_calendar,calcom',
      INTEGRATIONS_TIMEOUT_MS: '1500',
      GOOGLE_OAUTH_CLIENT_ID: this.google.clientId,
      GOOGLE_OAUTH_CLIENT_SECRET: this.google.clientSecret,
      GOOGLE_OAUTH_AUTHORIZE_URL: `${this.google.baseUrl}/o/oauth2/v2/auth`,
      GOOGLE_OAUTH_TOKEN_URL: `${this.google.baseUrl}/token`,
      GOOGLE_API_URL: this.google.apiRootUrl,
      CALCOM_API_URL: this.calcom.baseUrl,
    });
  }

  /** Stops the stubs and restores the environment. */
  async stop(): Promise<void> {
    await Promise.all([this.endpoint.stop(), this.google.stop(), this.calcom.stop()]);
    for (const k of Object.keys(process.env)) if (!(k in this.saved)) delete process.env[k];
    Object.assign(process.env, this.saved);
  }

  /** Wire problems of every stub (each test asserts none). */
  problems(): string[] {
    return [this.endpoint, this.google, this.calcom].flatMap((s) => s.problems);
  }

  /** Connects Google Calendar (authorization code with PKCE through the loopback consent screen) and Cal.com (API key). */
  async connect(t: TestApi, org: { key: string }): Promise<void> {
    const begun = await t.call('POST', '/integrations/google_calendar/connect', { key: org.key, json: {} });
    expect(begun.status, begun.text).to.equal(200);
    expect(begun.body.data.authorizationUrl).to.match(new RegExp(`^${this.google.baseUrl}/o/oauth2/v2/auth\\?`));
    const back = new URL(this.google.consent(begun.body.data.authorizationUrl));
    const done = await t.call('GET', `${back.pathname.replace(/^\/api\/v1/, '')}${back.search}`);
    expect(done.status, done.text).to.equal(200);
    expect(done.body.data).to.include({ connected: true, accountLabel: 'owner@example.com', provider: 'google', status: 'connected' });
    const cal = await t.call('POST', '/integrations/calcom/connect', { key: org.key, json: { credentials: { apiKey: this.calcom.apiKey } } });
    expect(cal.status, cal.text).to.equal(200);
  }

  /** The skill config of a target (30 minutes, America/Chicago). */
  configOf(target: BookingTarget): Record<string, unknown> {
    const common = { durationMinutes: 30, timeZone: 'America/Chicago' };
    if (target === 'url') return { ...common, bookUrl: `${this.endpoint.baseUrl}/book`, slotsUrl: `${this.endpoint.baseUrl}/slots`, timeoutMs: 1000 };
    if (target === 'google') return { ...common, integration: 'google_calendar' };
    return { ...common, integration: 'calcom', eventTypeId: 42 };
  }

  /** A published agent with `book_appointment` and `check_availability` on the target. @returns its id */
  async agentOn(t: TestApi, org: { orgId: string; key: string; keyId: string }, name: string, target: BookingTarget, extra: Record<string, unknown> = {}): Promise<string> {
    const a = await t.call('POST', '/agents', { key: org.key, json: { name, voiceId: 'voice_ava', timeZone: 'America/Chicago', ...extra } });
    expect(a.status, a.text).to.equal(201);
    const id = a.body.data.id as string;
    const { bookUrl, slotsUrl, ...rest } = this.configOf(target);
    for (const [skill, url] of [
      ['book_appointment', bookUrl],
      ['check_availability', slotsUrl],
    ] as const) {
      const json = { name: skill, type: skill, description: skill, config: { ...rest, ...(url ? { url } : {}) } };
      const res = await t.call('POST', `/agents/${id}/skills`, { key: org.key, json });
      expect(res.status, res.text).to.equal(201);
    }
    expect((await publishDraft(t.db, org, id, `${name}-1`)).kind).to.equal('published');
    return id;
  }

  /**
   * The failure kinds of a target's booking (a 4xx, a 5xx, no answer in time, an unparsable answer): each arms the
   * target's stub for its next booking request.
   */
  bookingFailures(target: BookingTarget): { kind: string; arm: () => void }[] {
    if (target === 'url') {
      const book = /^POST \/book$/;
      return [
        { kind: 'a 4xx', arm: () => this.endpoint.failNext(book, { status: 409, body: { error: 'slot taken' } }) },
        { kind: 'a 5xx', arm: () => this.endpoint.failNext(book, { status: 500, body: { error: 'boom' } }) },
        { kind: 'no answer in time', arm: () => this.endpoint.hangNext(book) },
        { kind: 'an unparsable answer', arm: () => this.endpoint.failNext(book, { status: 200, raw: '<html>ok</html>', headers: { 'content-type': 'text/html' } }) },
      ];
    }
    if (target === 'google') {
      const insert = /^POST \/calendar\/v3\/calendars\/primary\/events$/;
      return [
        { kind: 'a 4xx', arm: () => this.google.failNext(insert, googleError(403, 'forbidden', 'Forbidden')) },
        { kind: 'a 5xx', arm: () => this.google.failNext(insert, googleError(503, 'backendError', 'Backend Error')) },
        { kind: 'no answer in time', arm: () => this.google.hangNext(insert) },
        { kind: 'an unparsable answer', arm: () => this.google.failNext(insert, { status: 200, raw: '<html>oops</html>', headers: { 'content-type': 'text/html' } }) },
      ];
    }
    const bookings = /^POST \/v2\/bookings$/;
    return [
      { kind: 'a 4xx', arm: () => this.calcom.failNext(bookings, { status: 400, body: { status: 'error', error: { code: 'BadRequestException', message: 'slot taken' } } }) },
      { kind: 'a 5xx', arm: () => this.calcom.failNext(bookings, { status: 500, body: { status: 'error', error: { code: 'InternalServerErrorException', message: 'boom' } } }) },
      { kind: 'no answer in time', arm: () => this.calcom.hangNext(bookings) },
      { kind: 'an unparsable answer', arm: () => this.calcom.failNext(bookings, { status: 201, raw: 'oops', headers: { 'content-type': 'text/plain' } }) },
    ];
  }

  /** How many bookings the target holds. */
  bookingCount(target: BookingTarget): number {
    if (target === 'url') return this.endpoint.bookings.size;
    if (target === 'google') return this.google.events.size;
    return this.calcom.bookings.length;
  }
}
