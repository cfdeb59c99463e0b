/**
 * `npm run start:worker` (worker.ts) as a real child process against the run's dev server and a test database, polling
 * the bulk queues only (WORKER_QUEUES, as docker-compose.yml's `worker-bulk`): its start sweep starts a workflow start a
 * crash left owed (services/workflowStarts.ts), which runs on the bulk queue, and SIGINT to its process group
 * stops it with status 0, printing no line at warn level or above and nothing on stderr (docs/operations.md "Shutdown").
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createDb, migrate } from '../db';
import { createOrganization } from '../db/repositories/organizations';
import { childEnv, TSX } from './helpers/service';
import { createTestDatabase } from './helpers/postgres';
import { testTemporal, uniqueTaskQueue } from './helpers/temporal';
import { until } from './helpers/wait';

describe('npm run start:worker as a child process', function () {
  this.timeout(180_000);

  it('polls the queues WORKER_QUEUES names, starts a workflow start left owed, and stops quietly with status 0 on SIGINT', async () => {
    const databaseUrl = await createTestDatabase('start_worker');
    const db = createDb(databaseUrl);
    await migrate(db);
    const { client, address } = await testTemporal();
    const taskQueue = uniqueTaskQueue('start-worker');
    const env = childEnv({ DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: address, TEMPORAL_TASK_QUEUE: taskQueue, LOG_LEVEL: 'info', WORKER_QUEUES: 'webhooks,bulk' });
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
        .map((l) => JSON.parse(l) as { taskQueues: string[] })[0];
      expect(running.taskQueues).to.deep.equal([`${taskQueue}-webhooks`, `${taskQueue}-bulk`]);
      const orgId = (await createOrganization(db, 'Worker Co')).id;
      const listId = `cl_owed_${process.pid}`;
      const [owed] = await db('workflow_starts')
        .insert({ org_id: orgId, workflow_type: 'contactImport', workflow_id: `contact-import/${listId}`, args: JSON.stringify([{ orgId, listId }]), resource_id: listId, options: '{}', created_at: db.raw("now() - interval '1 minute'") })
        .returning('id');
      await until(async () => (await db('workflow_starts').where({ org_id: orgId, id: owed.id }).first()) === undefined || undefined, 30_000, 'the start sweep');
      // The list does not exist, so the import (bulk work, on the bulk queue) has nothing to do and completes.
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
});
