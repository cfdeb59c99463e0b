/**
 * HTTP skills on plain `http://` for local development (docs/configuration.md "Plain HTTP for local
 * development"): accepted only to an address of HTTP_ALLOW_PRIVATE_HOSTS and never with NODE_ENV=production,
 * at skill create/update (400 naming `config.url`) and again at call time by the skill client the API
 * composes (api/app.ts `createSkillHttpClient()` from the environment). The endpoint is a loopback HTTP server.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createSkillHttpClient } from '../../providers/http/request';
import { parseAllowList } from '../../domain/net/guard';

describe('HTTP skills on plain http for local development', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let server: http.Server;
  let base: string;
  const received: Array<{ method: string; url: string; body: unknown }> = [];
  const saved = { allow: process.env.HTTP_ALLOW_PRIVATE_HOSTS, nodeEnv: process.env.NODE_ENV };

  before(async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        received.push({ method: req.method ?? '', url: req.url ?? '', body: raw ? JSON.parse(raw) : null });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ status: 'shipped', carrier: 'UPS' }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.HTTP_ALLOW_PRIVATE_HOSTS = '127.0.0.1';
    t = await startTestApi('plainhttp');
    org = await t.org('Plain http');
  });
  after(async () => {
    await t?.close();
    server?.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    for (const [k, v] of [['HTTP_ALLOW_PRIVATE_HOSTS', saved.allow], ['NODE_ENV', saved.nodeEnv]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  const newAgent = async (name: string) => {
    const res = await t.call('POST', '/agents', { key: org.key, json: { name, voiceId: 'voice_ava' } });
    expect(res.status, res.text).to.equal(201);
    return res.body.data.id as string;
  };
  const createSkill = (agentId: string, name: string, url: string) =>
    t.call('POST', `/agents/${agentId}/skills`, {
      key: org.key,
      json: { name, type: 'http_request', description: 'Looks up an order', config: { url, method: 'POST', inputs: [{ name: 'order_id' }], timeoutMs: 2000 } },
    });

  it('runs an http_request skill on a loopback http server when its address is in HTTP_ALLOW_PRIVATE_HOSTS', async () => {
    const agentId = await newAgent('Local orders');
    const skill = await createSkill(agentId, 'check_order', `${base}/orders`);
    expect(skill.status, skill.text).to.equal(201);
    await publishDraft(t.db, org, agentId, 'plain1');
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(s.status, s.text).to.equal(201);
    received.length = 0;
    const res = await t.call('POST', `/chat/sessions/${s.body.data.session.id}/messages`, { key: org.key, json: { content: 'Please check order order_id: 42' } });
    expect(res.status, res.text).to.equal(200);
    expect(received).to.deep.equal([{ method: 'POST', url: '/orders', body: { order_id: '42' } }]);
    expect(res.body.data.receipt.toolCalls[0]).to.deep.include({ skill: 'check_order', output: { status: 'shipped', carrier: 'UPS' } });
  });

  it('connects the http integration to a loopback http base URL listed in HTTP_ALLOW_PRIVATE_HOSTS, as skills, and its provisioned skill runs', async () => {
    const c = await t.call('POST', '/integrations/http/connect', { key: org.key, json: { credentials: { baseUrl: `${base}/v1/`, authorization: 'Bearer local-token' } } });
    expect(c.status, c.text).to.equal(200);
    const agentId = await newAgent('Local integration');
    const p = await t.call('POST', `/agents/${agentId}/integrations/http/provision`, { key: org.key, json: { path: '/orders', method: 'POST' } });
    expect(p.status, p.text).to.equal(201);
    expect(p.body.data.skills[0].config).to.include({ url: `${base}/v1/orders` });
    for (const baseUrl of ['http://10.1.2.3/v1', 'http://localhost:8080/v1', 'ftp://127.0.0.1/v1']) {
      const refused = await t.call('POST', '/integrations/http/connect', { key: org.key, json: { credentials: { baseUrl, authorization: 'Bearer x' } } });
      expect(refused.status, `${baseUrl}: ${refused.text}`).to.equal(400);
      expect(refused.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['credentials.baseUrl']);
    }
  });

  it('answers 400 naming config.url for plain http to an address not listed, on create and on update', async () => {
    const agentId = await newAgent('Unlisted');
    for (const url of ['http://10.1.2.3/orders', 'http://example.com/orders', 'http://localhost:8080/orders']) {
      const res = await createSkill(agentId, 'remote_order', url);
      expect(res.status, `${url}: ${res.text}`).to.equal(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['config.url']);
      expect(res.body.errors[0].message).to.contain('HTTP_ALLOW_PRIVATE_HOSTS');
    }
    const ok = await createSkill(agentId, 'secure_order', 'https://orders.example.com/orders');
    expect(ok.status, ok.text).to.equal(201);
    const patched = await t.call('PATCH', `/agents/${agentId}/skills/${ok.body.data.id}`, {
      key: org.key,
      json: { config: { url: 'http://192.168.1.20/orders', method: 'POST', inputs: [{ name: 'order_id' }] } },
    });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['config.url']);
  });

  it('refuses plain http with NODE_ENV=production even to a listed address (400 naming config.url)', async () => {
    const agentId = await newAgent('Production');
    process.env.NODE_ENV = 'production';
    let res;
    try {
      res = await createSkill(agentId, 'check_order', `${base}/orders`);
    } finally {
      if (saved.nodeEnv === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = saved.nodeEnv;
    }
    expect(res.status, res.text).to.equal(400);
    expect(res.body.errors).to.deep.equal([{ field: 'config.url', message: 'must be https: plain http is refused with NODE_ENV=production' }]);
  });

  it('the skill client refuses plain http at call time to an address no longer listed, or in production, without connecting', async () => {
    received.length = 0;
    const unlisted = createSkillHttpClient({ allow: parseAllowList('10.0.0.0/8') });
    const production = createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), production: true });
    const listed = createSkillHttpClient({ allow: parseAllowList('127.0.0.1'), production: false });
    try {
      for (const client of [unlisted, production]) {
        const err = await client.send({ method: 'POST', url: `${base}/orders`, json: {}, timeoutMs: 2000 }).then(
          () => null,
          (e: { code?: string; message?: string }) => e,
        );
        expect(err?.code).to.equal('bad_url');
        expect(err?.message).to.match(/https URLs only/);
      }
      expect(received).to.deep.equal([]);
      const res = await listed.send({ method: 'POST', url: `${base}/orders`, json: { order_id: '7' }, timeoutMs: 2000 });
      expect(res).to.deep.equal({ status: 200, body: { status: 'shipped', carrier: 'UPS' } });
    } finally {
      await Promise.all([unlisted.close(), production.close(), listed.close()]);
    }
  });
});
