/**
 * Time skipping: TestService compatible with @temporalio/testing, using our executable as the
 * `existing-path` test server, plus the programmatic timeSkipping option. The rule for activities is
 * the real test server's (temporalio/sdk-java temporal-test-server TestWorkflowMutableStateImpl:
 * `processScheduleActivityTask` locks time skipping, `completeActivityTask` / `failActivityTask` /
 * `cancelActivityTask` / `timeoutActivity` unlock it, `addActivityRetryTimer` leaves it unlocked while
 * the retry waits): an outstanding activity attempt, queued or running, keeps the clock from jumping;
 * its retry backoff is skipped.
 */
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { Connection } from '@temporalio/client';
import { InternalConnectionOptionsSymbol } from '@temporalio/client/lib/connection';
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
  it('holds the clock while an activity attempt is outstanding (queued or running) and skips its retry backoff, as the real test server locks per attempt', async () => {
    const server = await startDevServer({ timeSkipping: true });
    const c = await connect(server.address);
    const svc = c.client.workflowService;
    // The SDK builds its TestService stub only when asked to, as @temporalio/testing does.
    const testConn = await Connection.connect({ address: server.address, [InternalConnectionOptionsSymbol]: { supportsTestService: true } } as never);
    const ts = testConn.testService!;
    const DAY = 24 * 3600 * 1000;
    const now = async () => {
      const t = (await ts.getCurrentTime({})).time!;
      return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
    };
    try {
      const q = uniqueQueue('ts-act');
      const workflowId = uniqueQueue('ts-act');
      await svc.startWorkflowExecution({ namespace: 'default', workflowId, workflowType: { name: 'raw' }, taskQueue: { name: q }, requestId: uniqueQueue('r') });
      const wt = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: q }, identity: 'raw' });
      // A one-day timer beside an activity retried after one day.
      await svc.respondWorkflowTaskCompleted({
        taskToken: wt.taskToken,
        identity: 'raw',
        commands: [
          { commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_START_TIMER, startTimerCommandAttributes: { timerId: 't', startToFireTimeout: { seconds: (DAY / 1000) as never } } },
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
            scheduleActivityTaskCommandAttributes: {
              activityId: 'a',
              activityType: { name: 'work' },
              taskQueue: { name: q },
              startToCloseTimeout: { seconds: (3 * DAY / 1000) as never },
              retryPolicy: { initialInterval: { seconds: (DAY / 1000) as never }, maximumAttempts: 3 },
            },
          },
        ],
      });
      const t0 = await now();
      // Queued: the clock does not jump to the timer.
      await new Promise((r) => setTimeout(r, 300));
      expect((await now()) - t0).to.be.below(DAY);
      const first = await svc.pollActivityTaskQueue({ namespace: 'default', taskQueue: { name: q }, identity: 'raw' });
      expect(first.attempt).to.equal(1);
      // Running: still held.
      await new Promise((r) => setTimeout(r, 300));
      expect((await now()) - t0).to.be.below(DAY);
      // The attempt fails: its one-day backoff is skipped (and the timer fires on the way).
      const started = Date.now();
      await svc.respondActivityTaskFailed({ taskToken: first.taskToken, identity: 'raw', failure: { message: 'again', applicationFailureInfo: { type: 'Again' } } });
      const second = await svc.pollActivityTaskQueue({ namespace: 'default', taskQueue: { name: q }, identity: 'raw' });
      expect(second.attempt).to.equal(2);
      expect(Date.now() - started).to.be.below(5_000);
      expect((await now()) - t0).to.be.at.least(DAY);
    } finally {
      await testConn.close();
      await c.close();
      await server.stop();
    }
  });
});
