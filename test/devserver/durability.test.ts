/**
 * Durability: the dev server's state lives in Postgres (schema temporal_dev) and survives a
 * restart of both the server and the worker.
 */
import { expect } from 'chai';
import pg from 'pg';
import { temporal } from '@temporalio/proto';
import { startDevServer } from '../../devserver';
import { createTestDatabase } from '../helpers/postgres';
import { connect, startRawWorkflow, uniqueQueue, withWorker } from './helpers';
import { abandonedAttempts, asyncTokens } from './workflows/activities';

const ET = temporal.api.enums.v1.EventType;

/** Runs `sql` on the test database in a connection of its own. */
async function onDatabase(databaseUrl: string, sql: string): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(sql);
  } finally {
    await db.end();
  }
}

describe('devserver durability in Postgres', function () {
  this.timeout(60_000);

  it("retries a dead worker's started activity after its heartbeat timeout, also across a restart, not after its start-to-close timeout", async () => {
    const databaseUrl = await createTestDatabase('devserver_heartbeat');
    const taskQueue = uniqueQueue('hb-crash');
    const workflowId = uniqueQueue('hb-crash-wf');
    abandonedAttempts.length = 0;
    // First life: attempt 1 starts and is abandoned (no heartbeat, no answer); then server and worker stop.
    const s1 = await startDevServer({ databaseUrl });
    const c1 = await connect(s1.address);
    const h1 = await c1.client.workflow.start('heartbeatAfterCrash', { taskQueue, workflowId });
    await withWorker(c1.native, taskQueue, async () => {
      for (let i = 0; i < 200 && !abandonedAttempts.length; i++) await new Promise((r) => setTimeout(r, 25));
    });
    expect(abandonedAttempts).to.deep.equal([1]);
    await c1.close();
    await s1.stop();

    // Second life: the reloaded attempt times out by its heartbeat (2 s), and attempt 2 answers.
    const s2 = await startDevServer({ databaseUrl });
    const c2 = await connect(s2.address);
    try {
      const restarted = Date.now();
      const result = await withWorker(c2.native, taskQueue, () => c2.client.workflow.getHandle(workflowId, h1.firstExecutionRunId).result());
      expect(result).to.equal('attempt 2');
      expect(Date.now() - restarted, 'ms from the restart to the answer (start-to-close is 60 000)').to.be.below(5_000);
    } finally {
      await c2.close();
      await s2.stop();
    }
  });

  it('keeps histories, timers, a started activity, queued tasks and visibility across a restart (one-hour timer + signal workflow completes)', async () => {
    const databaseUrl = await createTestDatabase('devserver_durable');
    const taskQueue = uniqueQueue('durable');
    const workflowId = uniqueQueue('durable-wf');
    const pendingId = uniqueQueue('pending-wf');

    // First life: start the workflow, let the worker schedule the timer, then stop everything.
    const s1 = await startDevServer({ databaseUrl });
    const c1 = await connect(s1.address);
    const asyncId = uniqueQueue('async-wf');
    const h1 = await c1.client.workflow.start('timerAndSignal', { taskQueue, workflowId });
    asyncTokens.length = 0;
    await withWorker(c1.native, taskQueue, async () => {
      // An activity that is started (waiting for asynchronous completion) when the server stops.
      await c1.client.workflow.start('asyncActivity', { taskQueue, workflowId: asyncId });
      for (let i = 0; i < 100 && !asyncTokens.length; i++) await new Promise((r) => setTimeout(r, 50));
      expect(asyncTokens).to.have.length(1);
      for (let i = 0; i < 100; i++) {
        const evs = (await c1.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } })).history?.events ?? [];
        if (evs.some((e) => e.eventType === ET.EVENT_TYPE_TIMER_STARTED)) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('timer never started');
    });
    // A workflow whose first task is still queued when the server stops.
    await c1.client.workflow.start('greeting', { taskQueue, workflowId: pendingId, args: ['later'] });
    await c1.close();
    await s1.stop();

    const db = new pg.Client(databaseUrl);
    await db.connect();
    const rows = await db.query('SELECT count(*)::int AS n FROM temporal_dev.history_events WHERE workflow_id = $1', [workflowId]);
    await db.end();
    expect(rows.rows[0].n).to.be.at.least(5);

    // Second life: time skipping lets the one-hour timer fire once nothing else is runnable.
    const s2 = await startDevServer({ databaseUrl, timeSkipping: true });
    const c2 = await connect(s2.address);
    try {
      const listed: string[] = [];
      for await (const w of c2.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) listed.push(w.workflowId);
      expect(listed.sort()).to.deep.equal([workflowId, pendingId, asyncId].sort());
      const h2 = c2.client.workflow.getHandle(workflowId, h1.firstExecutionRunId);
      await h2.signal('finish', 'signal');
      const started = Date.now();
      await c2.client.activity.complete({ workflowId: asyncId, activityId: '1' }, 'completed after restart');
      const [r, p, a] = await withWorker(c2.native, taskQueue, () =>
        Promise.all([h2.result(), c2.client.workflow.getHandle(pendingId).result(), c2.client.workflow.getHandle(asyncId).result()]),
      );
      expect(a).to.equal('completed after restart');
      expect(r).to.equal('timer+signal');
      expect(p).to.equal('Hello, later!');
      expect(Date.now() - started).to.be.lessThan(10_000);
      const evs = (await c2.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId } })).history?.events ?? [];
      evs.forEach((e, i) => expect(Number(e.eventId)).to.equal(i + 1));
      expect(evs.map((e) => e.eventType)).to.include(ET.EVENT_TYPE_TIMER_FIRED);
    } finally {
      await c2.close();
      await s2.stop();
    }
  });

  it('writes the changes of a commit that failed with the next commit, so a restart finds them', async () => {
    const databaseUrl = await createTestDatabase('devserver_commit_retry');
    const taskQueue = uniqueQueue('commit-retry');
    const errors: string[] = [];
    const s1 = await startDevServer({ databaseUrl, log: (level, msg) => void (level === 'error' && errors.push(msg)) });
    const c1 = await connect(s1.address);
    let first: { workflowId: string; runId: string };
    let second: { workflowId: string; runId: string };
    try {
      // Postgres refuses every write of a run's state while the trigger stands: the first start's commit fails.
      await onDatabase(
        databaseUrl,
        `CREATE FUNCTION temporal_dev.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
         CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON temporal_dev.executions FOR EACH ROW EXECUTE FUNCTION temporal_dev.refuse();`,
      );
      first = await startRawWorkflow(c1.client.workflowService, taskQueue);
      expect(errors, 'the failed commit is logged').to.include('persisting state failed');
      await onDatabase(databaseUrl, 'DROP TRIGGER refuse ON temporal_dev.executions');
      // The next change commits, and with it the first start's run, history and visibility.
      second = await startRawWorkflow(c1.client.workflowService, taskQueue);
    } finally {
      await c1.close();
      await s1.stop();
    }
    const s2 = await startDevServer({ databaseUrl });
    const c2 = await connect(s2.address);
    try {
      for (const run of [first, second]) {
        const d = await c2.client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: run });
        expect(d.workflowExecutionInfo?.execution?.runId).to.equal(run.runId);
        const h = await c2.client.workflowService.getWorkflowExecutionHistory({ namespace: 'default', execution: run });
        expect(h.history?.events?.[0]?.eventType).to.equal(ET.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
      }
    } finally {
      await c2.close();
      await s2.stop();
    }
  });
});
