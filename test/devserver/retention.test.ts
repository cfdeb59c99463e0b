/**
 * Retention (devserver/engine/retention.ts, devserver/README.md "Retention"): a closed run is deleted once its
 * namespace's retention has passed since it closed — gone from describe, history and visibility, no longer the
 * workflow's current run (a start with its id is not refused by it), and gone from Postgres; a running run stays.
 */
import { expect } from 'chai';
import pg from 'pg';
import { temporal } from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../devserver';
import { createTestDatabase } from '../helpers/postgres';
import { until } from '../helpers/wait';
import { connect, startRawWorkflow, uniqueQueue } from './helpers';

const ReusePolicy = temporal.api.enums.v1.WorkflowIdReusePolicy;
/** Registers a namespace that keeps closed runs `retentionMs` (the real server's least is a day; the dev server's none). */
async function briefNamespace(svc: Awaited<ReturnType<typeof connect>>['client']['workflowService'], retentionMs: number): Promise<string> {
  const namespace = uniqueQueue('brief');
  await svc.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: Math.floor(retentionMs / 1000) as never, nanos: (retentionMs % 1000) * 1e6 } });
  return namespace;
}

/** Whether describe still finds the run (false on NOT_FOUND). */
async function exists(svc: Awaited<ReturnType<typeof connect>>['client']['workflowService'], namespace: string, workflowId: string, runId: string): Promise<boolean> {
  return svc.describeWorkflowExecution({ namespace, execution: { workflowId, runId } }).then(
    () => true,
    (err: { code?: number }) => {
      if (err.code !== 5) throw err;
      return false;
    },
  );
}

describe('devserver retention', function () {
  this.timeout(30_000);

  it('deletes a closed run once its namespace retention passed, frees its workflow id, and keeps a running run', async () => {
    const server = await startDevServer({ retentionSweepMs: 100 });
    const c = await connect(server.address);
    try {
      const svc = c.client.workflowService;
      const namespace = await briefNamespace(svc, 1_000);
      const queue = uniqueQueue('retention');
      const closed = await startRawWorkflow(svc, queue, { workflowIdReusePolicy: ReusePolicy.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE }, namespace);
      const running = await startRawWorkflow(svc, queue, {}, namespace);
      await svc.terminateWorkflowExecution({ namespace, workflowExecution: closed, reason: 'done' });
      const closedAt = Date.now();
      // Kept for its retention: a start with its id is refused by it (REJECT_DUPLICATE), its history reads.
      expect(await exists(svc, namespace, closed.workflowId, closed.runId)).to.equal(true);
      const refused = await svc
        .startWorkflowExecution({ namespace, workflowId: closed.workflowId, workflowType: { name: 'raw' }, taskQueue: { name: queue }, requestId: uniqueQueue('req'), workflowIdReusePolicy: ReusePolicy.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE })
        .catch((err: { code?: number }) => err);
      expect((refused as { code?: number }).code, 'ALREADY_EXISTS while the closed run is kept').to.equal(6);

      await until(async () => !(await exists(svc, namespace, closed.workflowId, closed.runId)), 10_000, 'the closed run deleted', 100);
      expect(Date.now() - closedAt, 'ms from the close to the deletion').to.be.at.least(950);
      const history = await svc.getWorkflowExecutionHistory({ namespace, execution: closed }).catch((err: { code?: number }) => err);
      expect((history as { code?: number }).code).to.equal(5);
      const listed = await svc.listWorkflowExecutions({ namespace, query: '' });
      expect(listed.executions!.map((e) => e.execution!.workflowId)).to.deep.equal([running.workflowId]);
      // No longer the workflow's current run: the same id starts again under REJECT_DUPLICATE.
      const again = await svc.startWorkflowExecution({ namespace, workflowId: closed.workflowId, workflowType: { name: 'raw' }, taskQueue: { name: queue }, requestId: uniqueQueue('req'), workflowIdReusePolicy: ReusePolicy.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE });
      expect(again.runId).to.be.a('string').and.not.equal(closed.runId);
      expect(await exists(svc, namespace, running.workflowId, running.runId), 'a running run is never deleted').to.equal(true);
    } finally {
      await c.close();
      await server.stop();
    }
  });

  it('deletes the rows of a run past its retention, also when it expired while the server was stopped', async () => {
    const databaseUrl = await createTestDatabase('devserver_retention');
    const rows = async (runId: string): Promise<number> => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        const r = await client.query(
          `SELECT (SELECT count(*) FROM temporal_dev.executions WHERE run_id = $1) + (SELECT count(*) FROM temporal_dev.history_events WHERE run_id = $1) AS n`,
          [runId],
        );
        return Number(r.rows[0].n);
      } finally {
        await client.end();
      }
    };
    // First life: the sweep runs every 100 ms, so the first run is deleted while the server runs.
    let server: DevServer = await startDevServer({ databaseUrl, retentionSweepMs: 100 });
    let c = await connect(server.address);
    const namespace = await briefNamespace(c.client.workflowService, 1_000);
    const first = await startRawWorkflow(c.client.workflowService, uniqueQueue('retention'), {}, namespace);
    await c.client.workflowService.terminateWorkflowExecution({ namespace, workflowExecution: first, reason: 'done' });
    const briefer = await briefNamespace(c.client.workflowService, 300);
    expect(await rows(first.runId)).to.be.above(1);
    await until(async () => (await rows(first.runId)) === 0, 10_000, 'the first run deleted from Postgres', 100);
    // Second life: the second run closes under a sweep that never comes, then the server stops past its retention.
    await c.close();
    await server.stop();
    server = await startDevServer({ databaseUrl, retentionSweepMs: 3_600_000 });
    c = await connect(server.address);
    const second = await startRawWorkflow(c.client.workflowService, uniqueQueue('retention'), {}, briefer);
    await c.client.workflowService.terminateWorkflowExecution({ namespace: briefer, workflowExecution: second, reason: 'done' });
    await c.close();
    await server.stop();
    expect(await rows(second.runId)).to.be.above(1);
    // Retention is kept on the server's clock, wall-clock time without time skipping: past it while stopped.
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Third life: restored, already past its retention, and deleted as the server starts.
    server = await startDevServer({ databaseUrl, retentionSweepMs: 3_600_000 });
    c = await connect(server.address);
    try {
      expect(await exists(c.client.workflowService, briefer, second.workflowId, second.runId)).to.equal(false);
      await until(async () => (await rows(second.runId)) === 0, 10_000, 'the second run deleted from Postgres', 100);
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
