/**
 * The `temporal server start-dev` flags the dev server CLI takes (devserver/bin.ts) and the
 * schedule visibility the Web UI reads: `--db-filename` keeps state across a restart on the same
 * path (the real CLI persists to its file), `--ui-port` serves the Web UI or is refused with what
 * to do, `historySizeBytes` of a reloaded run, ListSchedules' `query`, and the schedule count
 * (schedules are scheduler workflows in the real server's visibility:
 * TemporalNamespaceDivision="TemporalScheduler", service/worker/scheduler).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, startFromOptions } from '../../devserver/bin';
import { startDevServer } from '../../devserver';
import { connect, uniqueQueue } from './helpers';

const quiet = () => undefined;

describe('devserver CLI flags and schedule visibility', function () {
  this.timeout(120_000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'devserver-cli-'));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it('--db-filename keeps workflows across a restart on the same path, historySizeBytes included', async () => {
    const dir = path.join(tmp, 'state');
    const args = ['--port', '0', '--db-filename', dir, '--log-level', 'error'];
    const first = await startFromOptions(parseArgs(args), quiet);
    const workflowId = uniqueQueue('persisted');
    let before: number;
    try {
      const c = await connect(first.server.address);
      await c.client.workflow.start('raw', { taskQueue: uniqueQueue('nobody'), workflowId });
      before = Number((await c.client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } })).workflowExecutionInfo?.historySizeBytes);
      expect(before).to.be.greaterThan(0);
      await c.close();
    } finally {
      await first.stop();
    }
    expect(fs.existsSync(path.join(dir, 'PG_VERSION'))).to.equal(true);
    const second = await startFromOptions(parseArgs(args), quiet);
    try {
      const c = await connect(second.server.address);
      const d = await c.client.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId } });
      expect(d.workflowExecutionInfo?.execution?.workflowId).to.equal(workflowId);
      expect(Number(d.workflowExecutionInfo?.historySizeBytes)).to.equal(before);
      await c.client.workflow.getHandle(workflowId).terminate('done');
      await c.close();
    } finally {
      await second.stop();
    }
  });

  it('--db-filename refuses a regular file (such as the real CLI SQLite file), naming what to give instead', async () => {
    const file = path.join(tmp, 'temporal.db');
    fs.writeFileSync(file, 'SQLite format 3\0');
    const err = await startFromOptions(parseArgs(['--port', '0', '--db-filename', file]), quiet).catch((e: Error) => e);
    expect((err as Error).message).to.match(/is a file.*Postgres data directory.*--db <postgres-url>/);
  });

  it('--ui-port serves the Web UI build with the settings and API beside it, and is refused when there is no build', async () => {
    const build = path.join(tmp, 'ui-build');
    fs.mkdirSync(build, { recursive: true });
    fs.writeFileSync(path.join(build, 'index.html'), '<!doctype html><title>Temporal</title>');
    const started = await startFromOptions({ ...parseArgs(['--port', '0', '--ui-port', '0']), uiBuildDir: build }, quiet);
    try {
      expect(started.uiUrl).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await (await fetch(started.uiUrl + '/')).text()).to.contain('<title>Temporal</title>');
      const settings = (await (await fetch(started.uiUrl + '/api/v1/settings')).json()) as { WorkflowResetDisabled: boolean };
      expect(settings.WorkflowResetDisabled).to.equal(false);
      const ns = await fetch(started.uiUrl + '/api/v1/namespaces/default');
      expect(ns.status).to.equal(200);
    } finally {
      await started.stop();
    }
    const err = await startFromOptions({ ...parseArgs(['--port', '0', '--ui-port', '0']), uiBuildDir: path.join(tmp, 'none') }, quiet).catch((e: Error) => e);
    expect((err as Error).message).to.match(/--ui-port: the Temporal Web UI is not built .*scripts\/build-ui\.ts/);
  });

  it("filters ListSchedules by its query and counts schedules under TemporalNamespaceDivision='TemporalScheduler'", async () => {
    const server = await startDevServer({});
    const c = await connect(server.address);
    try {
      const action = { type: 'startWorkflow' as const, workflowType: 'raw', taskQueue: uniqueQueue('nobody'), args: [] };
      const a = await c.client.schedule.create({ scheduleId: uniqueQueue('sched-a'), spec: { intervals: [{ every: '1h' }] }, action });
      const b = await c.client.schedule.create({ scheduleId: uniqueQueue('sched-b'), spec: { intervals: [{ every: '1h' }] }, action, state: { paused: true } });
      const svc = c.client.workflowService;
      const ids = async (query: string) => (await svc.listSchedules({ namespace: 'default', query })).schedules.map((s) => s.scheduleId);
      expect(await ids(`ScheduleId = '${a.scheduleId}'`)).to.deep.equal([a.scheduleId]);
      expect(await ids('TemporalSchedulePaused = true')).to.deep.equal([b.scheduleId]);
      expect(await ids('')).to.have.members([a.scheduleId, b.scheduleId]);
      const bad = await svc.listSchedules({ namespace: 'default', query: 'ScheduleId = ' }).catch((e: { code: number }) => e);
      expect((bad as { code: number }).code).to.equal(3);
      // The Web UI's "N Schedules": a workflow count in the scheduler's division.
      const count = await svc.countWorkflowExecutions({ namespace: 'default', query: 'TemporalNamespaceDivision="TemporalScheduler" AND ExecutionStatus="Running"' });
      expect(Number(count.count)).to.equal(2);
      // Ordinary workflow counts do not see schedules.
      expect(Number((await svc.countWorkflowExecutions({ namespace: 'default', query: 'ExecutionStatus="Running"' })).count)).to.equal(0);
      await a.delete();
      await b.delete();
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
