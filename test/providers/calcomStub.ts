/**
 * A loopback Cal.com API v2 for the Cal.com adapter's tests: `GET /v2/me`, `GET /v2/slots`, `GET /v2/bookings`,
 * `POST /v2/bookings`. Every request is checked against Cal.com's OpenAPI document (./calendarWire.ts): the bearer API
 * key, the required `cal-api-version` header and its value, the documented query parameters, the request body against
 * `CreateBookingInput_2024_08_13`; every answer against the operation's documented response (the slots map of
 * `GET /v2/slots` is checked as the document's schema describes it: the `data` member). A booked start is taken: a
 * second booking of it answers 400, as Cal.com does.
 *
 * Failure modes: `failNext` (any status and body; `raw` for an unparsable one), `hangNext` (no answer until the client
 * gives up), `delayMs` (every answer late).
 */
import crypto from 'node:crypto';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { calcomBodyErrors, calcomOpenApi, calcomParameterErrors, calcomResponseErrors } from './calendarWire';

const VERSIONS: Record<string, string> = { '/v2/slots': '2024-09-04', '/v2/bookings': '2024-08-13' };

/** The loopback Cal.com. */
export class CalcomStub extends StubServer {
  readonly apiKey = `cal_test_${crypto.randomBytes(8).toString('hex')}`;
  /** Free slot starts (UTC ISO) of each event type, with the length in minutes. */
  readonly eventTypes = new Map<number, { slug: string; lengthInMinutes: number; slots: string[] }>();
  readonly bookings: any[] = [];
  delayMs = 0;
  private nextId = 1000;

  /** Starts once the OpenAPI document is readable. @throws Error in one line when it is missing */
  override async start(): Promise<this> {
    calcomOpenApi();
    return super.start();
  }

  private answer(req: StubRequest, template: string, status: number, body: any, validate: unknown = body): StubAnswer {
    this.problem(`${req.method} ${req.path} response`, calcomResponseErrors(template, req.method, status, validate));
    return { status, body };
  }

  private error(status: number, message: string): StubAnswer {
    const code: Record<number, string> = { 400: 'BadRequestException', 401: 'UnauthorizedException', 404: 'NotFoundException' };
    return { status, body: { status: 'error', timestamp: new Date().toISOString(), path: '', error: { code: code[status] ?? 'InternalServerErrorException', message } } };
  }

  private bookingOutput(b: any): any {
    const et = this.eventTypes.get(b.eventTypeId)!;
    return {
      id: b.id,
      uid: b.uid,
      title: `${et.slug} between Owner and ${b.attendee.name}`,
      description: '',
      hosts: [{ id: 1, name: 'Owner', email: 'owner@example.com', displayEmail: 'owner@example.com', username: 'owner', timeZone: 'America/Chicago' }],
      status: b.status,
      start: b.start,
      end: b.end,
      duration: et.lengthInMinutes,
      eventTypeId: b.eventTypeId,
      eventType: { id: b.eventTypeId, slug: et.slug },
      location: '',
      absentHost: false,
      createdAt: b.createdAt,
      updatedAt: b.createdAt,
      metadata: b.metadata ?? {},
      attendees: [
        {
          name: b.attendee.name,
          email: b.attendee.email ?? `${String(b.attendee.phoneNumber ?? 'guest').replace(/\D/g, '')}@sms.cal.com`,
          displayEmail: b.attendee.email ?? `${String(b.attendee.phoneNumber ?? 'guest').replace(/\D/g, '')}@sms.cal.com`,
          timeZone: b.attendee.timeZone,
          absent: false,
          ...(b.attendee.phoneNumber ? { phoneNumber: b.attendee.phoneNumber } : {}),
        },
      ],
      bookingFieldsResponses: { name: b.attendee.name },
    };
  }

  /** A held request is answered with Cal.com's server error when the stub stops. */
  protected override released(): StubAnswer {
    return this.error(500, 'released at stop');
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const template = req.path;
    if (!['/v2/me', '/v2/slots', '/v2/bookings'].includes(template)) return this.error(404, `Cannot ${req.method} ${req.path}`);
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) return this.error(401, 'Invalid API Key');
    this.problem(req, calcomParameterErrors(template, req.method, req.headers, req.query));
    const version = VERSIONS[template];
    if (version && req.headers['cal-api-version'] !== version) this.problem(req, `cal-api-version ${req.headers['cal-api-version']} (expected ${version})`);
    if (req.method === 'GET' && template === '/v2/me') {
      const me = { id: 1, username: 'owner', email: 'owner@example.com', name: 'Owner', avatarUrl: null, bio: null, timeFormat: 12, defaultScheduleId: 1, weekStart: 'Monday', timeZone: 'America/Chicago', organizationId: null };
      return this.answer(req, template, 200, { status: 'success', data: me });
    }
    if (req.method === 'GET' && template === '/v2/slots') {
      const et = this.eventTypes.get(Number(req.query.get('eventTypeId')));
      if (!et) return this.error(404, 'Event type not found');
      const from = Date.parse(req.query.get('start') ?? '');
      const to = Date.parse(req.query.get('end') ?? '');
      const taken = new Set(this.bookings.filter((b) => b.status !== 'cancelled').map((b) => b.start));
      const data: Record<string, { start: string; end: string }[]> = {};
      for (const s of et.slots) {
        const ms = Date.parse(s);
        if (ms < from || ms >= to || taken.has(new Date(ms).toISOString())) continue;
        const day = s.slice(0, 10);
        (data[day] ??= []).push({ start: s, end: new Date(ms + et.lengthInMinutes * 60_000).toISOString() });
      }
      // The document's schema is that of the `data` map (its examples wrap it in {status, data}).
      return this.answer(req, template, 200, { status: 'success', data }, data);
    }
    if (req.method === 'GET' && template === '/v2/bookings') {
      const eventTypeId = Number(req.query.get('eventTypeId'));
      const after = req.query.get('afterStart');
      const before = req.query.get('beforeEnd');
      const items = this.bookings.filter((b) => (!eventTypeId || b.eventTypeId === eventTypeId) && (!after || b.start >= after) && (!before || b.end <= before)).map((b) => this.bookingOutput(b));
      const pagination = { totalItems: items.length, remainingItems: 0, returnedItems: items.length, itemsPerPage: 100, currentPage: 1, totalPages: 1, hasNextPage: false, hasPreviousPage: false };
      return this.answer(req, template, 200, { status: 'success', data: items, pagination });
    }
    if (req.method === 'POST' && template === '/v2/bookings') {
      const json = JSON.parse(req.raw);
      this.problem(req, calcomBodyErrors('CreateBookingInput_2024_08_13', json));
      const et = this.eventTypes.get(json.eventTypeId);
      if (!et) return this.error(404, `Event type with id=${json.eventTypeId} was not found`);
      const start = new Date(json.start).toISOString();
      if (!et.slots.some((s) => Date.parse(s) === Date.parse(start)) || this.bookings.some((b) => b.start === start && b.status !== 'cancelled')) {
        return this.error(400, 'User either already has booking at this time or is not available');
      }
      const now = new Date().toISOString();
      const b = { id: this.nextId++, uid: crypto.randomBytes(11).toString('base64url'), status: 'accepted', start, end: new Date(Date.parse(start) + et.lengthInMinutes * 60_000).toISOString(), eventTypeId: json.eventTypeId, attendee: json.attendee, metadata: json.metadata, createdAt: now };
      this.bookings.push(b);
      return this.answer(req, template, 201, { status: 'success', data: this.bookingOutput(b) });
    }
    return this.error(404, `Cannot ${req.method} ${req.path}`);
  }
}
