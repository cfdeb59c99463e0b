/**
 * A closed run's history held packed (devserver/engine/packedHistory.ts, devserver/README.md "Memory"): whatever reads
 * it afterwards — the history API, a result, a query, a replay, a reset, a restart — finds the events it had before.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { uniqueQueue, useDevServer, withWorker, workflowBundle } from './helpers';
import { finishSignal, statusQuery, waitForFinish } from './workflows';
import { devServerRegistry } from '../../devserver/metrics';
import { until } from '../helpers/wait';

const ET = temporal.api.enums.v1.EventType;
/** This suite's server packs a closed run's history this long after the close (wall-clock ms, as the server's timer): long
 * enough that the first read, right after the result, comes before the packing even on a loaded machine. */
const PACK_DELAY_MS = 3_000;

/** history_packed_runs_total of this process's dev servers (other suites' servers move it too). */
async function packedRuns(): Promise<number> {
  const m = await devServerRegistry.getSingleMetric('history_packed_runs_total')!.get();
  return m.values[0]?.value ?? 0;
}

describe('devserver packed histories', function () {
  this.timeout(30_000);
  /** The runs this suite's server packed, from its debug log line. */
  const packedRunIds = new Set<string>();
  const dev = useDevServer({
    historyPackDelayMs: PACK_DELAY_MS,
    log: (level, msg, fields) => {
      if (level === 'debug' && msg === 'history packed') packedRunIds.add(String(fields?.runId));
    },
  });

  it('answers the same history, result and query once a closed run is packed, replays it and resets from it', async () => {
    const taskQueue = uniqueQueue('packed');
    const before = await packedRuns();
    await withWorker(dev.conn.native, taskQueue, async () => {
      const h = await dev.conn.client.workflow.start(waitForFinish, { taskQueue, workflowId: uniqueQueue('packed-wf') });
      await h.signal(finishSignal, 'Ada');
      expect(await h.result()).to.equal('Hello, Ada!');
      const fresh = await h.fetchHistory();
      expect(packedRunIds.has(h.firstExecutionRunId), 'the first read came before the packing').to.equal(false);

      await until(async () => packedRunIds.has(h.firstExecutionRunId), 10_000, 'the closed run packed', 50);
      expect(await packedRuns()).to.be.above(before);
      const packed = await h.fetchHistory();
      expect(packed).to.deep.equal(fresh);
      // A result read afresh (the close event alone, HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT) and a query of the closed run.
      expect(await dev.conn.client.workflow.getHandle(h.workflowId, h.firstExecutionRunId).result()).to.equal('Hello, Ada!');
      expect(await h.query(statusQuery)).to.equal('done');
      // Read backwards, page by page.
      const reverse = await dev.conn.client.workflowService.getWorkflowExecutionHistoryReverse({ namespace: 'default', execution: { workflowId: h.workflowId, runId: h.firstExecutionRunId }, maximumPageSize: 2 });
      expect(reverse.history!.events!.map((e) => Number(e.eventId))).to.deep.equal([fresh.events!.length, fresh.events!.length - 1]);

      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, packed, h.workflowId);

      const point = Number(packed.events!.find((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)!.eventId);
      const { runId } = await dev.conn.client.workflowService.resetWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId: h.workflowId, runId: h.firstExecutionRunId },
        reason: 'from a packed history',
        workflowTaskFinishEventId: point as never,
        requestId: uniqueQueue('req'),
      });
      const reset = dev.conn.client.workflow.getHandle(h.workflowId, runId!);
      // The new run copies the base run's events up to the reset point and reapplies its signal, read from the packed
      // history after that point (the default reapply type, signals).
      expect(await reset.result()).to.equal('Hello, Ada!');
      const copied = (await reset.fetchHistory()).events!.slice(0, point - 1);
      expect(copied.map((e) => e.eventType)).to.deep.equal(fresh.events!.slice(0, point - 1).map((e) => e.eventType));
    });
  });
});
