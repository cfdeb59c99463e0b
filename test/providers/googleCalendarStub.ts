/**
 * A loopback Google (OAuth 2.0 endpoints and Calendar API v3) for the Google Calendar adapter's tests. Calendar
 * requests and answers are validated against the v3 discovery document (./calendarWire.ts): `freebusy.query`,
 * `calendars.get`, `events.insert` (a client id in base32hex, 409 `duplicate` when taken), `events.get`; each must
 * carry a live bearer token. The token endpoint follows RFC 6749 §4.1.3 and §6 with PKCE (RFC 7636 §4.6): the client
 * authenticates with its id and secret, the code is single use and bound to its redirect URI and S256 challenge; a
 * revoked refresh token answers `invalid_grant`. Google's errors have its JSON shape
 * (`{error: {code, message, errors: [{domain, reason, message}], status}}`).
 *
 * Failure modes: `failNext` (any status and body), `hangNext` (no answer until the client gives up), `delayMs` (every
 * answer late), `raw` answers (unparsable).
 */
import crypto from 'node:crypto';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { googleDiscovery, googleQueryErrors, googleSchemaErrors } from './calendarWire';

const BASE32HEX = /^[a-v0-9]{5,1024}$/;

/** Google's JSON error body. */
export function googleError(code: number, reason: string, message: string): StubAnswer {
  const status: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ALREADY_EXISTS', 500: 'INTERNAL', 503: 'UNAVAILABLE' };
  return { status: code, body: { error: { code, message, errors: [{ domain: 'global', reason, message }], status: status[code] ?? 'UNKNOWN' } } };
}

/** The loopback Google. */
export class GoogleCalendarStub extends StubServer {
  readonly clientId = 'stub-client.apps.googleusercontent.com';
  readonly clientSecret = 'stub-secret';
  /** Calendars by id: time zone and busy intervals. `primary` is the owner's. */
  readonly calendars = new Map<string, { id: string; timeZone: string; busy: { start: string; end: string }[] }>([['primary', { id: 'owner@example.com', timeZone: 'America/Chicago', busy: [] }]]);
  readonly events = new Map<string, any>();
  /** Seconds an access token lives (Google: 3599). */
  expiresIn = 3599;
  /** Added to every answer, ms. */
  delayMs = 0;
  private readonly codes = new Map<string, { challenge: string | null; redirectUri: string; scope: string }>();
  private readonly access = new Set<string>();
  private readonly refresh = new Set<string>();
  readonly tokenRequests: Record<string, string>[] = [];

  /** Starts once the discovery document is readable. @throws Error in one line when it is missing */
  override async start(): Promise<this> {
    googleDiscovery();
    return super.start();
  }

  /** Revokes every refresh token (the user removed the app's access): refreshes answer `invalid_grant`. */
  revokeGrants(): void {
    this.refresh.clear();
    this.access.clear();
  }

  /** The Calendar root URL the adapter is given (GOOGLE_API_URL). */
  get apiRootUrl(): string {
    return `${this.baseUrl}/`;
  }

  /**
   * The consent screen: checks the authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, Google's offline access)
   * and answers the redirect with a code, as a person clicking Allow would.
   */
  consent(authorizationUrl: string): string {
    const u = new URL(authorizationUrl);
    const p = u.searchParams;
    const want: Record<string, string> = { response_type: 'code', client_id: this.clientId, access_type: 'offline', code_challenge_method: 'S256' };
    for (const [k, v] of Object.entries(want)) if (p.get(k) !== v) this.problem('authorize', `${k}=${p.get(k)} (expected ${v})`);
    for (const k of ['redirect_uri', 'scope', 'state', 'code_challenge']) if (!p.get(k)) this.problem('authorize', `${k} is missing`);
    const code = `4/${crypto.randomBytes(12).toString('base64url')}`;
    this.codes.set(code, { challenge: p.get('code_challenge'), redirectUri: p.get('redirect_uri') ?? '', scope: p.get('scope') ?? '' });
    const back = new URL(p.get('redirect_uri')!);
    back.searchParams.set('state', p.get('state') ?? '');
    back.searchParams.set('code', code);
    back.searchParams.set('scope', p.get('scope') ?? '');
    return back.toString();
  }

  private tokens(scope: string, withRefresh: boolean): StubAnswer {
    const accessToken = `ya29.${crypto.randomBytes(12).toString('base64url')}`;
    this.access.add(accessToken);
    const body: Record<string, unknown> = { access_token: accessToken, expires_in: this.expiresIn, scope, token_type: 'Bearer' };
    if (withRefresh) {
      const r = `1//${crypto.randomBytes(12).toString('base64url')}`;
      this.refresh.add(r);
      body.refresh_token = r;
    }
    return { status: 200, body, headers: { 'cache-control': 'no-store' } };
  }

  private token(req: StubRequest): StubAnswer {
    if (!/^application\/x-www-form-urlencoded/.test(String(req.headers['content-type']))) this.problem(req, `content-type ${req.headers['content-type']}`);
    const f = Object.fromEntries(new URLSearchParams(req.raw));
    this.tokenRequests.push(f);
    const bad = (error: string, description: string): StubAnswer => ({ status: 400, body: { error, error_description: description } });
    if (f.client_id !== this.clientId || f.client_secret !== this.clientSecret) return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    if (f.grant_type === 'authorization_code') {
      const c = this.codes.get(f.code ?? '');
      this.codes.delete(f.code ?? '');
      if (!c) return bad('invalid_grant', 'Malformed auth code.');
      if (c.redirectUri !== f.redirect_uri) return bad('redirect_uri_mismatch', 'Bad Request');
      const verifier = f.code_verifier ?? '';
      if (c.challenge && crypto.createHash('sha256').update(verifier).digest('base64url') !== c.challenge) return bad('invalid_grant', 'Invalid code verifier.');
      return this.tokens(c.scope, true);
    }
    if (f.grant_type === 'refresh_token') {
      if (!this.refresh.has(f.refresh_token ?? '')) return bad('invalid_grant', 'Token has been expired or revoked.');
      return this.tokens('https://www.googleapis.com/auth/calendar.events', false);
    }
    return bad('unsupported_grant_type', `Invalid grant_type: ${f.grant_type}`);
  }

  private answer(req: StubRequest, schema: string, body: unknown, status = 200): StubAnswer {
    this.problem(`${req.method} ${req.path} response`, googleSchemaErrors(schema, body));
    return { status, body };
  }

  private eventOf(id: string, calendarId: string, body: any): any {
    const now = new Date().toISOString();
    return {
      kind: 'calendar#event',
      etag: `"${Date.now()}"`,
      id,
      status: 'confirmed',
      htmlLink: `https://www.google.com/calendar/event?eid=${id}`,
      created: now,
      updated: now,
      summary: body.summary,
      description: body.description,
      creator: { email: this.calendars.get('primary')!.id, self: true },
      organizer: { email: this.calendars.get(calendarId)?.id ?? calendarId, self: true },
      start: body.start,
      end: body.end,
      iCalUID: `${id}@google.com`,
      sequence: 0,
      ...(body.attendees ? { attendees: body.attendees.map((a: any) => ({ ...a, responseStatus: 'needsAction' })) } : {}),
      ...(body.extendedProperties ? { extendedProperties: body.extendedProperties } : {}),
      reminders: { useDefault: true },
      eventType: 'default',
    };
  }

  /** A held request is answered with Google's backend error when the stub stops. */
  protected override released(): StubAnswer {
    return googleError(503, 'backendError', 'released at stop');
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (req.method === 'POST' && req.path === '/token') return this.token(req);
    const m = /^\/calendar\/v3\/(.+)$/.exec(req.path);
    if (!m) return googleError(404, 'notFound', 'Not Found');
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!bearer || !this.access.has(bearer)) return googleError(401, 'authError', 'Invalid Credentials');
    const rest = m[1];
    const json = req.raw ? JSON.parse(req.raw) : undefined;
    if (req.method === 'POST' && rest === 'freeBusy') {
      this.problem(req, googleQueryErrors('freebusy', 'query', req.query));
      this.problem(req, googleSchemaErrors('FreeBusyRequest', json));
      const calendars: Record<string, unknown> = {};
      for (const item of json.items ?? []) {
        const cal = this.calendars.get(item.id);
        calendars[item.id] = cal
          ? { busy: cal.busy.filter((b) => b.end > json.timeMin && b.start < json.timeMax) }
          : { busy: [], errors: [{ domain: 'global', reason: 'notFound' }] };
      }
      return this.answer(req, 'FreeBusyResponse', { kind: 'calendar#freeBusy', timeMin: json.timeMin, timeMax: json.timeMax, calendars });
    }
    const calGet = /^calendars\/([^/]+)$/.exec(rest);
    if (req.method === 'GET' && calGet) {
      this.problem(req, googleQueryErrors('calendars', 'get', req.query));
      const cal = this.calendars.get(decodeURIComponent(calGet[1]));
      if (!cal) return googleError(404, 'notFound', 'Not Found');
      return this.answer(req, 'Calendar', { kind: 'calendar#calendar', etag: '"1"', id: cal.id, summary: cal.id, timeZone: cal.timeZone, conferenceProperties: { allowedConferenceSolutionTypes: ['hangoutsMeet'] } });
    }
    const evInsert = /^calendars\/([^/]+)\/events$/.exec(rest);
    if (req.method === 'POST' && evInsert) {
      const calendarId = decodeURIComponent(evInsert[1]);
      this.problem(req, googleQueryErrors('events', 'insert', req.query));
      this.problem(req, googleSchemaErrors('Event', json));
      if (!this.calendars.has(calendarId)) return googleError(404, 'notFound', 'Not Found');
      if (json.id !== undefined && !BASE32HEX.test(json.id)) return googleError(400, 'invalid', 'Invalid resource id value.');
      for (const a of json.attendees ?? []) if (!a.email) return googleError(400, 'required', 'Missing attendee email.');
      if (!json.start?.dateTime || !json.end?.dateTime) return googleError(400, 'required', 'Missing time.');
      const id = json.id ?? crypto.randomBytes(13).toString('hex');
      const key = `${calendarId}/${id}`;
      if (this.events.has(key)) return googleError(409, 'duplicate', 'The requested identifier already exists.');
      const event = this.eventOf(id, calendarId, json);
      this.events.set(key, event);
      return this.answer(req, 'Event', event);
    }
    const evGet = /^calendars\/([^/]+)\/events\/([^/]+)$/.exec(rest);
    if (req.method === 'GET' && evGet) {
      this.problem(req, googleQueryErrors('events', 'get', req.query));
      const event = this.events.get(`${decodeURIComponent(evGet[1])}/${decodeURIComponent(evGet[2])}`);
      if (!event) return googleError(404, 'notFound', 'Not Found');
      return this.answer(req, 'Event', event);
    }
    return googleError(404, 'notFound', `No ${req.method} ${req.path}`);
  }
}
