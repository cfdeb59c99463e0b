/**
 * A loopback HubSpot (CRM API v3) for the HubSpot adapter's tests: the paths `@hubspot/api-client` calls for
 * contacts (page, search, batch upsert, create) and notes (create, search), Bearer auth checked on every request,
 * and every request body and answer validated against the package's generated models (test/providers/
 * hubspotShapes.ts). Search follows HubSpot's semantics: filter groups OR'ed, filters within a group AND'ed,
 * `EQ` exact, `CONTAINS_TOKEN` a whole token of the text, `query` over the default text properties. Failures are
 * scripted with `failNext`; `slowNext` delays an answer (a timeout when longer than the client's). HubSpot's OAuth
 * (install page, `POST /oauth/v1/token`) is ./hubspotOAuth.ts; its access tokens are accepted beside the private app's.
 */
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { hubspotShapeErrors, type HUBSPOT_MODELS } from './hubspotShapes';
import { HubSpotOAuth } from './hubspotOAuth';

type Api = keyof typeof HUBSPOT_MODELS;

interface StoredObject {
  id: string;
  properties: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  archived: boolean;
  associations?: unknown;
}

/** The loopback HubSpot. */
export class HubSpotStub extends StubServer {
  readonly contacts: StoredObject[] = [];
  readonly notes: StoredObject[] = [];
  private seq = 1000;
  private readonly slow: { match: RegExp; ms: number }[] = [];

  /** The OAuth app and its grants (./hubspotOAuth.ts): its access tokens are accepted beside the private app's. */
  readonly oauth: HubSpotOAuth;

  constructor(
    readonly accessToken: string,
    oauthApp: { clientId: string; clientSecret: string } = { clientId: 'hubspot-client', clientSecret: 'hubspot-secret' },
  ) {
    super();
    this.oauth = new HubSpotOAuth(oauthApp.clientId, oauthApp.clientSecret, ['crm.objects.contacts.read', 'crm.objects.contacts.write'], (where, what) => this.problem(where, what));
  }

  /** Adds a contact (as the CRM holds it before the test). */
  addContact(properties: Record<string, string>): StoredObject {
    const now = new Date().toISOString();
    const c = { id: String(this.seq++), properties: { ...properties, hs_object_id: '' }, createdAt: now, updatedAt: now, archived: false };
    c.properties.hs_object_id = c.id;
    this.contacts.push(c);
    return c;
  }

  /** The next request matching `METHOD /path` is answered after `ms`. */
  slowNext(match: RegExp, ms: number): void {
    this.slow.push({ match, ms });
  }

  private check(req: StubRequest, api: Api, model: string): any {
    let body: unknown;
    try {
      body = JSON.parse(req.raw);
    } catch {
      this.problem(req, 'the body is not JSON');
      return {};
    }
    if (!/^application\/json/.test(String(req.headers['content-type']))) this.problem(req, `content-type ${req.headers['content-type']}`);
    this.problem(req, hubspotShapeErrors(api, model, body));
    return body;
  }

  private answer(req: StubRequest, api: Api, model: string, status: number, body: unknown): StubAnswer {
    this.problem(`${req.method} ${req.path} response`, hubspotShapeErrors(api, model, body));
    return { status, body };
  }

  private view(o: StoredObject, props: string[] | undefined): any {
    const properties: Record<string, string> = {};
    for (const k of props?.length ? props : Object.keys(o.properties)) if (o.properties[k] !== undefined) properties[k] = o.properties[k];
    return { id: o.id, properties, createdAt: o.createdAt, updatedAt: o.updatedAt, archived: false };
  }

  private search(all: StoredObject[], q: any): StoredObject[] {
    const token = (text: string, t: string) => text.toLowerCase().split(/[^a-z0-9]+/).includes(t.toLowerCase());
    const match = (o: StoredObject, f: any) => {
      const v = o.properties[f.propertyName];
      if (f.operator === 'EQ') return v !== undefined && v.toLowerCase() === String(f.value).toLowerCase();
      if (f.operator === 'CONTAINS_TOKEN') return v !== undefined && token(v, String(f.value));
      this.problem('search', `operator ${f.operator} is not served by the stub`);
      return false;
    };
    return all.filter((o) => {
      const groups = q.filterGroups ?? [];
      if (groups.length && !groups.some((g: any) => g.filters.every((f: any) => match(o, f)))) return false;
      if (q.query) return Object.values(o.properties).some((v) => String(v).toLowerCase().includes(String(q.query).toLowerCase()));
      return true;
    });
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    const s = this.slow.findIndex((x) => x.match.test(`${req.method} ${req.path}`));
    if (s >= 0) await new Promise((r) => setTimeout(r, this.slow.splice(s, 1)[0].ms));
    if (req.method === 'POST' && req.path === '/oauth/v1/token') return this.oauth.token(req);
    const bearer = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    if (bearer !== this.accessToken && !this.oauth.accepts(bearer)) {
      return { status: 401, body: { status: 'error', message: 'Authentication credentials not found.', correlationId: 'c0ffee00-0000-4000-8000-000000000001', category: 'INVALID_AUTHENTICATION' } };
    }
    const key = `${req.method} ${req.path}`;
    const now = new Date().toISOString();
    if (key === 'GET /crm/v3/objects/contacts') {
      const limit = Number(req.query.get('limit') ?? 10);
      return this.answer(req, 'contacts', 'CollectionResponseSimplePublicObjectWithAssociationsForwardPaging', 200, { results: this.contacts.slice(0, limit).map((c) => this.view(c, req.query.get('properties')?.split(','))) });
    }
    if (key === 'POST /crm/v3/objects/contacts/search' || key === 'POST /crm/v3/objects/notes/search') {
      const api: Api = key.includes('notes') ? 'notes' : 'contacts';
      const q = this.check(req, api, 'PublicObjectSearchRequest');
      const found = this.search(api === 'notes' ? this.notes : this.contacts, q);
      const results = found.slice(0, q.limit ?? 10).map((o) => this.view(o, q.properties));
      return this.answer(req, api, 'CollectionResponseWithTotalSimplePublicObjectForwardPaging', 200, { total: found.length, results });
    }
    if (key === 'POST /crm/v3/objects/contacts/batch/upsert') {
      const b = this.check(req, 'contacts', 'BatchInputSimplePublicObjectBatchInputUpsert');
      const results = (b.inputs ?? []).map((input: any) => {
        const existing = this.contacts.find((c) => c.properties[input.idProperty]?.toLowerCase() === String(input.id).toLowerCase());
        if (existing) {
          Object.assign(existing.properties, input.properties);
          existing.updatedAt = now;
          return { ...this.view(existing, Object.keys(input.properties)), new: false };
        }
        const c = this.addContact({ ...input.properties, [input.idProperty]: input.id });
        return { ...this.view(c, Object.keys(input.properties)), new: true };
      });
      return this.answer(req, 'contacts', 'BatchResponseSimplePublicUpsertObject', 200, { status: 'COMPLETE', results, startedAt: now, completedAt: now });
    }
    if (key === 'POST /crm/v3/objects/contacts' || key === 'POST /crm/v3/objects/notes') {
      const api: Api = key.includes('notes') ? 'notes' : 'contacts';
      const b = this.check(req, api, 'SimplePublicObjectInputForCreate');
      const o: StoredObject = { id: String(this.seq++), properties: { ...b.properties }, createdAt: now, updatedAt: now, archived: false, associations: b.associations };
      if (api === 'notes') {
        for (const a of b.associations ?? []) if (!this.contacts.some((c) => c.id === a.to?.id)) return { status: 404, body: { status: 'error', message: `Contact ${a.to?.id} not found`, correlationId: 'c0ffee00-0000-4000-8000-000000000002', category: 'OBJECT_NOT_FOUND' } };
        this.notes.push(o);
      } else this.contacts.push(o);
      return this.answer(req, api, 'SimplePublicObject', 201, this.view(o, Object.keys(o.properties)));
    }
    this.problem(req, 'not a path the adapter should call');
    return { status: 404, body: { status: 'error', message: 'Not found', correlationId: 'c0ffee00-0000-4000-8000-000000000003', category: 'OBJECT_NOT_FOUND' } };
  }
}
