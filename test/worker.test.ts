/**
 * `npm run start:worker` (worker.ts) as a real child process against the run's dev server and a test database, polling
 * the bulk queues only (WORKER_QUEUES, as docker-compose.yml's `worker-bulk`): its start sweep starts a workflow start a
 * crash left owed (services/workflowStarts.ts), which runs on the bulk queue, at the nice value WORKER_NICE and the scheduling policy WORKER_SCHED_POLICY give, and SIGINT to its process group
 * stops it with status 0, printing no line at warn level or above and nothing on stderr (docs/operations.md "Shutdown").
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { childEnv, TSX } from './helpers/service';
import { createMigratedTestDatabase } from './helpers/postgres';
import { testTemporal, uniqueTaskQueue } from './helpers/temporal';
import { until } from './helpers/wait';
import { applyWorkerSchedPolicy } from '../worker';

describe('npm run start:worker as a child process', function () {
  this.timeout(180_000);

  it('polls the queues WORKER_QUEUES names, starts a workflow start left owed, and stops quietly with status 0 on SIGINT', async () => {
    const databaseUrl = await createMigratedTestDatabase('start_worker');
    const db = createDb(databaseUrl);
    const { client, address } = await testTemporal();
    const taskQueue = uniqueTaskQueue('start-worker');
    const env = childEnv({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue, LOG_LEVEL: 'info', WORKER_QUEUES: 'webhooks,bulk', WORKER_NICE: '10', WORKER_SCHED_POLICY: 'idle' });
    const child = spawn(process.execPath, [TSX, 'worker.ts'], { cwd: path.resolve(__dirname, '..'), env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
    try {
      await until(async () => stdout.includes('"msg":"worker running"') || undefined, 150_000, `the worker to run: ${stderr}`);
      const running = stdout
        .split('\n')
        .filter((l) => l.includes('"msg":"worker running"'))
        .map((l) => JSON.parse(l) as { taskQueues: string[]; pid: number; bulkSlots: unknown; schedPolicy: string })[0];
      expect(running.taskQueues).to.deep.equal([`${taskQueue}-webhooks`, `${taskQueue}-bulk`]);
      // The bulk queues' slots follow the machine's spare CPU and memory (temporal.config.ts bulkResourceTargets).
      expect(running.bulkSlots).to.deep.equal({ targetCpuUsage: 0.5, targetMemoryUsage: 0.8 });
      // WORKER_NICE, as docker-compose.yml's `worker-bulk`: every thread (the SDK's too) runs at nice 10 or more.
      // (The worker's own pid, from its log line: tsx's command line runs it as a child of its own.)
      expect(os.getPriority(running.pid)).to.equal(10);
      if (process.platform === 'linux') {
        const threads = fs.readdirSync(`/proc/${running.pid}/task`);
        // Field 19 of /proc/<pid>/task/<tid>/stat is the nice value (proc(5)); the name in field 2 may hold spaces.
        const nices = threads.map((tid) => Number(fs.readFileSync(`/proc/${running.pid}/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[16]));
        expect(threads.length).to.be.greaterThan(4);
        expect(Math.min(...nices)).to.equal(10);
        // WORKER_SCHED_POLICY=idle, as docker-compose.yml's `worker-bulk`: field 41 is the policy, 5 is SCHED_IDLE (sched(7)).
        const policies = threads.map((tid) => Number(fs.readFileSync(`/proc/${running.pid}/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[38]));
        expect(new Set(policies)).to.deep.equal(new Set([5]));
        expect(running.schedPolicy).to.equal('idle');
      }
      const orgId = (await createOrganization(db, 'Worker Co')).id;
      const listId = `cl_owed_${process.pid}`;
      const [owed] = await db('workflow_starts')
        .insert({ org_id: orgId, workflow_type: 'contactImport', workflow_id: `contact-import/${listId}`, args: JSON.stringify([{ orgId, listId }]), resource_id: listId, options: '{}', created_at: db.raw("now() - interval '1 minute'") })
        .returning('id');
      await until(async () => (await db('workflow_starts').where({ org_id: orgId, id: owed.id }).first()) === undefined || undefined, 30_000, 'the start sweep');
      // Its Postgres sessions carry its name (db/index.ts `createDb`; docs/operations.md "Postgres sessions"): the pool's and
      // the webhook outbox dispatcher's LISTEN session, so pg_stat_activity tells them from the API's.
      const names = async () =>
        (await db.raw(`select distinct application_name as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`)).rows.map((r: { n: string }) => r.n);
      await until(async () => ((await names()).includes('agent-control-plane-webhook-outbox') ? true : undefined), 30_000, 'the dispatcher listening');
      expect(await names()).to.include.members(['agent-control-plane-worker', 'agent-control-plane-webhook-outbox']);
      // The list does not exist, so the import (bulk work, on the bulk queue, its activity in a slot the resource-based
      // tuner handed out) has nothing to do and completes.
      expect(await client.workflow.getHandle(`contact-import/${listId}`).result()).to.deep.equal({ rowsRead: 0, accepted: 0, rejected: 0 });

      process.kill(-child.pid!, 'SIGINT');
      expect(await exited).to.equal(0);
      const loud = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 40)
        .map((l) => l.msg);
      expect({ loud, stderr: stderr.trim() }).to.deep.equal({ loud: [], stderr: '' });
    } finally {
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // gone already
        }
        await exited;
      }
      await db.destroy();
    }
  });

  it('refuses a WORKER_SCHED_POLICY it does not know, naming the setting, and leaves the default policy alone', () => {
    expect(() => applyWorkerSchedPolicy({ WORKER_SCHED_POLICY: 'fast' })).to.throw(/WORKER_SCHED_POLICY must be one of other, batch, idle, got "fast"/);
    expect(applyWorkerSchedPolicy({})).to.equal('other');
    expect(applyWorkerSchedPolicy({ WORKER_SCHED_POLICY: 'other' })).to.equal('other');
  });
});
