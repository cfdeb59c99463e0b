/**
 * Time skipping: TestService compatible with @temporalio/testing, using our executable as the
 * `existing-path` test server, plus the programmatic timeSkipping option.
 */
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { startDevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker, workflowBundle } from './helpers';
import * as activities from './workflows/activities';

const BIN = path.resolve(__dirname, '../../devserver/bin/temporal-test-server');
const THIRTY_DAYS = 30 * 24 * 3600 * 1000;

describe('devserver time skipping', function () {
  this.timeout(60_000);

  it('runs under TestWorkflowEnvironment.createTimeSkipping with our executable: a 30-day timer in under a second', async () => {
    const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: BIN } } });
    try {
      const taskQueue = uniqueQueue('ts-env');
      const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities });
      await worker.runUntil(async () => {
        // Warm up the worker so the measured run is the server's time, not the first activation.
        expect(await env.client.workflow.execute('echo', { taskQueue, workflowId: uniqueQueue('warm'), args: ['x'] })).to.equal('x');
        const t0 = Date.now();
        const before = await env.currentTimeMs();
        const elapsed = await env.client.workflow.execute('sleeper', { taskQueue, workflowId: uniqueQueue('ts'), args: [THIRTY_DAYS] });
        const wall = Date.now() - t0;
        expect(elapsed).to.be.at.least(THIRTY_DAYS);
        expect(wall).to.be.lessThan(1000);
        expect((await env.currentTimeMs()) - before).to.be.at.least(THIRTY_DAYS);
      });
      // env.sleep skips time via UnlockTimeSkippingWithSleep.
      const a = await env.currentTimeMs();
      await env.sleep('2 hours');
      expect((await env.currentTimeMs()) - a).to.be.at.least(2 * 3600 * 1000);
    } finally {
      await env.teardown();
    }
  });

  it("skips time for an activity's env.sleep while that activity runs, as the real test server does (TestService UnlockTimeSkippingWithSleep)", async () => {
    const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: BIN } } });
    try {
      const taskQueue = uniqueQueue('ts-activity-sleep');
      // The activity waits two virtual minutes through the test service; the workflow gives it an hour.
      const sleepingGreet = async (name: string) => {
        const before = await env.currentTimeMs();
        await env.sleep('2 minutes');
        return `${name} after ${(await env.currentTimeMs()) - before} ms`;
      };
      const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(), activities: { ...activities, greet: sleepingGreet } });
      const answer = await worker.runUntil(env.client.workflow.execute('longGreeting', { taskQueue, workflowId: uniqueQueue('ts-act'), args: ['Ada'] }));
      const slept = Number(/after (\d+) ms/.exec(answer as string)?.[1]);
      expect(slept).to.be.at.least(120_000);
    } finally {
      await env.teardown();
    }
  });

  it('exits the test-server process when its parent dies', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const parent = spawn('sh', ['-c', `"${BIN}" ${port} & echo $!; wait`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const childPid = await new Promise<number>((resolve) => parent.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // Wait until the server accepts connections, then kill its parent.
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (up) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(alive(childPid)).to.equal(true);
    parent.kill('SIGKILL');
    const end = Date.now() + 5000;
    while (alive(childPid) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    expect(alive(childPid)).to.equal(false);
  });

  it('skips time programmatically (startDevServer timeSkipping) while activities run in real time', async () => {
    const server = await startDevServer({ timeSkipping: true });
    const c = await connect(server.address);
    try {
      const taskQueue = uniqueQueue('ts-prog');
      await withWorker(c.native, taskQueue, async () => {
        const t0 = Date.now();
        const elapsed = await c.client.workflow.execute('sleeper', { taskQueue, workflowId: uniqueQueue('tsp'), args: [THIRTY_DAYS] });
        expect(elapsed).to.be.at.least(THIRTY_DAYS);
        expect(Date.now() - t0).to.be.lessThan(2000);
        // An activity in flight blocks skipping: its 300 ms start-to-close timeout fires in real time.
        expect(await c.client.workflow.execute('timingOut', { taskQueue, workflowId: uniqueQueue('tsto') })).to.equal(
          'TimeoutFailure:START_TO_CLOSE:MAXIMUM_ATTEMPTS_REACHED',
        );
      });
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
