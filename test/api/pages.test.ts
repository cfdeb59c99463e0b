/**
 * The pages and documents around the API (docs/api-notes.md "Reference, landing page and index"): the
 * OpenAPI document's `webhooks` (every event of the catalogue, with its payload schema) and examples (each
 * valid against its schema), the `/api/v1` index, the landing page, `/docs`, the stylesheet, the favicon
 * and `/healthz`. Real HTTP on a real Postgres.
 */
import { expect } from 'chai';
import { useTestApi } from '../helpers/api';
import { EVENT_CATALOG } from '../../domain/webhooks/catalog';
import { OPERATION_EXAMPLES } from '../../api/openapiExtras';
import { ROUTE_SCHEMAS } from '../../api/routes';
import { schemaErrors } from '../../domain/validation';

describe('the OpenAPI document, the /api/v1 index and the pages around the API', () => {
  const t = useTestApi('pages', {}, { temporalUiUrl: 'http://127.0.0.1:8233' });
  let origin: string;
  before(() => {
    origin = new URL(t.api.baseUrl).origin;
  });

  it('documents every event of the webhook catalogue under `webhooks`, with its payload schema', async () => {
    const doc = (await t.call('GET', '/openapi.json')).body;
    expect(Object.keys(doc.webhooks)).to.have.members(EVENT_CATALOG.map((e) => e.type));
    for (const e of EVENT_CATALOG) {
      const post = doc.webhooks[e.type].post;
      const [envelope, typed] = post.requestBody.content['application/json'].schema.allOf;
      expect(envelope.$ref).to.equal('#/components/schemas/WebhookEventEnvelope');
      expect(typed.properties.type.const).to.equal(e.type);
      expect(typed.properties.data.$ref).to.equal(`#/components/schemas/${e.schema}`);
      expect(doc.components.schemas[e.schema], e.schema).to.be.an('object');
      expect(post.parameters.map((p: { name: string }) => p.name)).to.deep.equal(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    }
    const ids = Object.values<any>(doc.webhooks).map((w) => w.post.operationId);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('gives the main operations examples that their schemas accept', async () => {
    const doc = (await t.call('GET', '/openapi.json')).body;
    const ops = new Map<string, any>();
    for (const item of Object.values<any>(doc.paths)) for (const op of Object.values<any>(item)) if (op?.operationId) ops.set(op.operationId, op);
    for (const id of ['createAgent', 'publishAgent', 'createChatSession', 'sendChatMessage', 'createChatCompletion', 'sendSMSMessage']) {
      const op = ops.get(id);
      const request = op.requestBody.content['application/json'].examples;
      expect(Object.keys(request ?? {}), id).to.not.be.empty;
      for (const [name, ex] of Object.entries<any>(request)) {
        expect(schemaErrors(ROUTE_SCHEMAS[id]!.requestSchema!, ex.value), `${id} ${name}`).to.deep.equal([]);
      }
      for (const [name, ex] of Object.entries(OPERATION_EXAMPLES[id].response ?? {})) {
        expect(schemaErrors(ROUTE_SCHEMAS[id]!.responseSchema!, ex.value), `${id} response ${name}`).to.deep.equal([]);
        const documented = Object.values<any>(op.responses).find((r) => r.content?.['application/json']?.examples?.[name]);
        expect(documented.content['application/json'].examples[name].value).to.deep.equal({ success: true, data: ex.value });
      }
    }
  });

  it('answers GET /api/v1 with a JSON index of the API', async () => {
    for (const path of ['/api/v1', '/api/v1/']) {
      const res = await fetch(`${origin}${path}`);
      expect(res.status).to.equal(200);
      const body = (await res.json()) as any;
      expect(body.success).to.equal(true);
      expect(body.data).to.include({ name: 'Agent Control-Plane API', version: 'v1' });
      expect(body.data.links).to.include({ openapi: `${origin}/api/v1/openapi.json`, docs: `${origin}/docs`, health: `${origin}/healthz`, temporalUi: 'http://127.0.0.1:8233' });
    }
  });

  it('serves a landing page at /, the reference at /docs, the stylesheet, the favicon and /healthz', async () => {
    const landing = await fetch(`${origin}/`);
    expect(landing.status).to.equal(200);
    const html = await landing.text();
    expect(html).to.include('href="/docs"').and.include('href="/api/v1/openapi.json"').and.include('href="/healthz"').and.include('href="http://127.0.0.1:8233"').and.include('/assets/site.css');
    const docs = await fetch(`${origin}/docs`);
    expect(docs.headers.get('content-security-policy')).to.include("script-src 'self'");
    const page = await docs.text();
    expect(page).to.match(/<script src="\/docs\/assets\/scalar-api-reference\.js"><\/script>/).and.include('data-url="/api/v1/openapi.json"');
    expect(page).to.not.match(/https?:\/\//);
    const script = await fetch(`${origin}/docs/assets/scalar-api-reference.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(script.status).to.equal(200);
    expect(script.headers.get('content-type')).to.match(/javascript/);
    expect(script.headers.get('content-encoding')).to.equal('gzip');
    const again = await fetch(`${origin}/docs/assets/scalar-api-reference.js`, { headers: { 'if-none-match': script.headers.get('etag')! } });
    expect(again.status).to.equal(304);
    const css = await fetch(`${origin}/assets/site.css`);
    expect(css.headers.get('content-type')).to.match(/^text\/css/);
    for (const icon of ['/favicon.ico', '/favicon.svg']) {
      const res = await fetch(`${origin}${icon}`);
      expect(res.status, icon).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('image/svg+xml');
      expect(await res.text()).to.match(/^<svg /);
    }
    const health = await fetch(`${origin}/healthz`);
    expect(health.status).to.equal(200);
    expect(await health.json()).to.deep.equal({ status: 'ok', database: 'ok' });
  });
});
