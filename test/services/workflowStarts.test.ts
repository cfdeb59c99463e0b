/**
 * Workflows start after the commit (services/workflowStarts.ts; docs/operations.md "Workflows start after the commit"),
 * with the real SDK against the run's dev server: a recorded start reaches Temporal only once its transaction has
 * committed, never after a rollback, and what a crash or an unreachable Temporal left owed is started by the sweep.
 * The task queue is unique and unpolled, so the started workflows only wait there.
 */
import { expect } from 'chai';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { createOrganization } from '../../db/repositories/organizations';
import { workflowStartsDepth } from '../../db/repositories/workflowStarts';
import { createLogger } from '../../runtime';
import { startWorkflowStartSweep, transactionWithStarts, WorkflowStarts } from '../../services/workflowStarts';
import { workflowIds } from '../../temporal.config';
import { useMigratedDb } from '../helpers/postgres';
import { testTemporal, uniqueTaskQueue } from '../helpers/temporal';

describe('workflow starts after the commit (services/workflowStarts.ts)', function () {
  this.timeout(30_000);
  const db = useMigratedDb('workflow_starts');
  const logger = createLogger('silent');
  const taskQueue = uniqueTaskQueue('wf-starts');
  let client: Client;
  let orgId: string;
  let n = 0;

  before(async () => {
    client = (await testTemporal()).client;
    orgId = (await createOrganization(db(), 'Starts Co')).id;
  });

  /** A fresh contact-import start of a list that only this test names. */
  const importOf = () => {
    const listId = `cl_starts_${process.pid}_${Date.now()}_${++n}`;
    return { listId, workflowId: workflowIds.contactImport(listId), opts: { workflowId: workflowIds.contactImport(listId), args: [{ orgId, listId }] as [{ orgId: string; listId: string }], orgId, resourceId: listId } };
  };
  const exists = async (workflowId: string) => {
    try {
      await client.workflow.getHandle(workflowId).describe();
      return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  };
  const owed = async (workflowId: string) => db()('workflow_starts').where({ org_id: orgId, workflow_id: workflowId }).first();

  it('starts nothing while the transaction is open, and the workflow at once after its commit', async () => {
    const { workflowId, opts } = importOf();
    let seenInside: boolean | undefined;
    await transactionWithStarts({ db: db(), temporal: { client, taskQueue }, log: logger }, async (trx, starts) => {
      await starts.record(trx, 'contactImport', opts);
      seenInside = await exists(workflowId);
    });
    expect(seenInside).to.equal(false);
    expect(await exists(workflowId)).to.equal(true);
    expect(await owed(workflowId)).to.equal(undefined);
  });

  it('never starts a start recorded in a transaction that rolled back', async () => {
    const { workflowId, opts } = importOf();
    const starts = new WorkflowStarts(db(), { client, taskQueue }, logger);
    const failed = await db()
      .transaction(async (trx) => {
        await starts.record(trx, 'contactImport', opts);
        throw new Error('rolled back');
      })
      .catch((err: Error) => err.message);
    expect(failed).to.equal('rolled back');
    expect(await starts.afterCommit()).to.equal(0);
    const sweep = startWorkflowStartSweep({ db: db(), logger, temporal: { client, taskQueue }, intervalMs: 0, minAgeMs: 0 });
    await sweep.sweep();
    await sweep.stop();
    expect(await exists(workflowId)).to.equal(false);
    expect(await owed(workflowId)).to.equal(undefined);
  });

  it('has the sweep start what a crash between the commit and the start left owed', async () => {
    const { workflowId, opts } = importOf();
    // The process "dies" after the commit: afterCommit never runs.
    await db().transaction(async (trx) => new WorkflowStarts(db(), { client, taskQueue }, logger).record(trx, 'contactImport', opts));
    expect(await exists(workflowId)).to.equal(false);
    const young = startWorkflowStartSweep({ db: db(), logger, temporal: { client, taskQueue }, intervalMs: 0, minAgeMs: 60_000 });
    expect(await young.sweep(), 'a row younger than minAgeMs is its request\'s').to.equal(0);
    await young.stop();
    const sweep = startWorkflowStartSweep({ db: db(), logger, temporal: { client, taskQueue }, intervalMs: 0, minAgeMs: 0 });
    expect(await sweep.sweep()).to.be.at.least(1);
    await sweep.stop();
    expect(await exists(workflowId)).to.equal(true);
    expect(await owed(workflowId)).to.equal(undefined);
  });

  it('keeps a start Temporal refused owed, with the error and a later try, and the sweep starts it once Temporal takes it', async () => {
    const { workflowId, opts } = importOf();
    const broken = { client: new Client({ connection: client.connection, namespace: 'no-such-namespace' }), taskQueue };
    await transactionWithStarts({ db: db(), temporal: broken }, (trx, starts) => starts.record(trx, 'contactImport', opts));
    const row = await owed(workflowId);
    expect(row).to.include({ attempts: 1 });
    expect(row.last_error).to.match(/namespace/i);
    expect(new Date(row.next_attempt_at).getTime()).to.be.greaterThan(new Date(row.created_at).getTime());
    const sweep = startWorkflowStartSweep({ db: db(), logger, temporal: { client, taskQueue }, intervalMs: 0, minAgeMs: 0 });
    expect(await sweep.sweep(), 'not due before next_attempt_at').to.equal(0);
    await db()('workflow_starts').where({ org_id: orgId, id: row.id }).update({ next_attempt_at: db().raw("now() - interval '1 second'") });
    expect(await sweep.sweep()).to.equal(1);
    await sweep.stop();
    expect(await exists(workflowId)).to.equal(true);
    expect(await workflowStartsDepth(db())).to.equal(0);
  });

  it('counts a workflow already started under the id as started', async () => {
    const { workflowId, opts } = importOf();
    await client.workflow.start('contactImport', { workflowId, taskQueue, args: opts.args });
    expect(await transactionWithStarts({ db: db(), temporal: { client, taskQueue } }, async (trx, starts) => starts.record(trx, 'contactImport', opts).then(() => 'ok'))).to.equal('ok');
    expect(await owed(workflowId)).to.equal(undefined);
  });
});
