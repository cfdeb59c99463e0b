import { expect } from 'chai';
import { startDevServer, DevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker } from './helpers';

describe('devserver smoke', function () {
  this.timeout(60_000);
  let server: DevServer;
  before(async () => {
    server = await startDevServer({ log: (l, m, f) => console.error(l, m, f) });
  });
  after(async () => server?.stop());

  it('runs a workflow with one activity through the real SDK', async () => {
    const c = await connect(server.address);
    const taskQueue = uniqueQueue('smoke');
    const result = await withWorker(c.native, taskQueue, () =>
      c.client.workflow.execute('greeting', { taskQueue, workflowId: uniqueQueue('wf'), args: ['dev'] }),
    );
    expect(result).to.equal('Hello, dev!');
    await c.close();
  });
});
