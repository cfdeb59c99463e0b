/**
 * Behaviours matched to the real server: the timeout type of an activity no worker ever polls
 * (schedule-to-close only → SCHEDULE_TO_START).
 */
import { expect } from 'chai';
import { startDevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker } from './helpers';

describe('devserver fidelity with the real server', function () {
  this.timeout(60_000);

  it('fails an activity that no worker polls, with only schedule-to-close, as SCHEDULE_TO_START', async () => {
    const server = await startDevServer();
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('s2c-only');
      await withWorker(c.native, taskQueue, async () => {
        expect(await c.client.workflow.execute('unpolledScheduleToClose', { taskQueue, workflowId: uniqueQueue('s2c') })).to.equal('SCHEDULE_TO_START');
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
