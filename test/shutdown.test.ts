/**
 * A stop with work in flight is quiet and prompt (docs/operations.md "Shutdown"): `npm start` as a real process
 * group, with hundreds of webhook deliveries hanging on a loopback endpoint that accepts and never answers and an
 * outbound campaign running, gets Ctrl-C (SIGINT to the whole group, as a terminal sends it) and exits 0 within
 * 15 s, printing no line at warn level or above and nothing on stderr. On the way, a workflow start left owed in
 * `workflow_starts` (a crash after its commit) is started by the start sweep `npm start` runs (services/workflowStarts.ts).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../db/embedded';
import { createDb } from '../db';
import { api, childEnv, postgresPort, startService } from './helpers/service';
import { until } from './helpers/wait';

const ENDPOINTS = 20;
const TESTS_PER_ENDPOINT = 15;

describe('stopping npm start with work in flight', function () {
  this.timeout(300_000);

  it(`exits 0 within 15 s of Ctrl-C, with no warning or error line, while ${ENDPOINTS * TESTS_PER_ENDPOINT} webhook deliveries hang and a campaign runs`, async () => {
    // Accepts every connection and never answers: each delivery attempt waits for its timeout.
    const held = new Set<net.Socket>();
    const blackHole = net.createServer((socket) => {
      held.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => held.delete(socket));
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const holePort = (blackHole.address() as net.AddressInfo).port;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-shutdown-'));
    let s: Awaited<ReturnType<typeof startService>> | undefined;
    try {
      const env = childEnv({
        DATA_DIR: dir,
        PORT: String(await freePort()),
        LOG_LEVEL: 'info',
        WEBHOOK_ALLOW_HTTP_HOSTS: '127.0.0.1',
        HTTP_ALLOW_PRIVATE_HOSTS: '127.0.0.1',
        RATE_LIMIT_POINTS: '1000000',
      });
      s = await startService(env, true);
      const service = s;
      const key = (service.stdout.match(/acp_sk_live_[A-Za-z0-9]+/) ?? [''])[0];
      expect(key).to.not.equal('');

      // A published agent (through the API: a campaign call carries its compiled agent to the relay), a number and a one-contact list.
      const agentId = (await api(service, 'POST', '/agents', key, { name: 'Dialer' })).body.data.id as string;
      const published = await api(service, 'POST', `/agents/${agentId}/publish`, key, { note: 'dialer' }, { 'idempotency-key': 'shutdown-publish' });
      expect(published.status, JSON.stringify(published.body)).to.equal(201);
      const offered = (await api(service, 'GET', '/numbers/search?areaCode=415&limit=20', key)).body.data.items as { e164: string }[];
      const bought = await api(service, 'POST', '/numbers/purchase', key, { e164: offered[0].e164 });
      expect(bought.status, JSON.stringify(bought.body)).to.equal(200);
      const list = (await api(service, 'POST', '/contact-lists', key, { name: 'Evening' })).body.data;
      const form = new FormData();
      form.append('file', new Blob(['phone\n+12125550101\n+12125550102\n'], { type: 'text/csv' }), 'contacts.csv');
      const uploaded = (await (await fetch(`${service.baseUrl}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form })).json()) as any;
      expect((await api(service, 'POST', `/contact-lists/${list.id}/imports`, key, { fileId: uploaded.data.id })).status).to.equal(202);
      await until(async () => (await api(service, 'GET', `/contact-lists/${list.id}`, key)).body.data.import.status === 'ready' || undefined, 60_000, 'the import');
      const campaign = (await api(service, 'POST', '/campaigns', key, { name: 'Reminders', agentId, callerIdNumberId: bought.body.data.id, contactListId: list.id, purpose: 'informational' })).body.data;
      expect((await api(service, 'POST', `/campaigns/${campaign.id}/launch`, key)).status).to.equal(200);

      // A start owed by a process that died after its commit: npm start's start sweep starts it (the list is
      // imported already, so the run changes nothing) and deletes the row.
      const password = fs.readFileSync(path.join(dir, 'secrets', 'EMBEDDED_POSTGRES_PASSWORD'), 'utf8').trim();
      const db = createDb(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${postgresPort(dir)}/acp`);
      try {
        const orgId = (await db('api_keys').first('org_id')).org_id as string;
        const [owed] = await db('workflow_starts')
          .insert({ org_id: orgId, workflow_type: 'contactImport', workflow_id: `contact-import/${list.id}`, args: JSON.stringify([{ orgId, listId: list.id }]), resource_id: list.id, options: '{}', created_at: db.raw("now() - interval '1 minute'") })
          .returning('id');
        await until(async () => (await db('workflow_starts').where({ id: owed.id }).first()) === undefined || undefined, 30_000, 'the start sweep');
      } finally {
        await db.destroy();
      }

      // Hundreds of deliveries to the black hole.
      const endpoints: string[] = [];
      for (let i = 0; i < ENDPOINTS; i++) {
        const r = await api(service, 'POST', '/webhooks', key, { url: `http://127.0.0.1:${holePort}/hook/${i}` });
        expect(r.status, JSON.stringify(r.body)).to.equal(201);
        endpoints.push(r.body.data.id);
      }
      const sent = await Promise.all(endpoints.map(async (id) => {
        let accepted = 0;
        for (let j = 0; j < TESTS_PER_ENDPOINT; j++) if ((await api(service, 'POST', `/webhooks/${id}/test`, key)).status === 202) accepted++;
        return accepted;
      }));
      expect(sent.reduce((a, b) => a + b, 0)).to.equal(ENDPOINTS * TESTS_PER_ENDPOINT);
      await until(async () => held.size >= 10 || undefined, 60_000, 'deliveries hanging on the black hole');

      const stoppedAt = Date.now();
      process.kill(-service.child.pid!, 'SIGINT');
      const status = await service.exited;
      const tookMs = Date.now() - stoppedAt;
      const { stdout, stderr } = service.output();
      if (process.env.DEBUG_SHUTDOWN) fs.writeFileSync(process.env.DEBUG_SHUTDOWN, `took ${tookMs} ms\n${stdout}\n--- stderr ---\n${stderr}`);
      const loud = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 40)
        .map((l) => l.msg);
      expect({ status, loud: [...new Set(loud)], stderr: stderr.trim().split('\n').slice(0, 5).join('\n') }).to.deep.equal({ status: 0, loud: [], stderr: '' });
      expect(stdout).to.include('"msg":"shutting down"');
      expect(tookMs, 'ms from SIGINT to exit').to.be.below(15_000);
    } finally {
      if (s?.child.exitCode === null) {
        try {
          process.kill(-s.child.pid!, 'SIGKILL');
        } catch {
          // gone already
        }
        await s.exited;
      }
      for (const socket of held) socket.destroy();
      blackHole.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
