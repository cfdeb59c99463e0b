/**
 * Temporal's HTTP API on the dev server (devserver/README.md "HTTP API") against its gRPC API for
 * the same workflow, run by a real SDK worker: the same history and the same describe, in the
 * proto3 JSON mapping (int64 as strings, enums by name, RFC 3339 times, payload shorthand unless
 * `noPayloadShorthand`); query, signal and terminate over HTTP; errors shaped as the real server's
 * HTTP API (google.rpc.Status with its details, 404 / 400 / 501 naming the method).
 */
import { expect } from 'chai';
import { startDevServer, type DevServer } from '../../devserver';
import { connect, uniqueQueue, withWorker } from './helpers';
import { toHttpJson, type PbReflType } from '../../devserver/http/json';
import { httpRoutes } from '../../devserver/http/routes';

const ns = 'default';

describe('dev server HTTP API', function () {
  this.timeout(60_000);
  let server: DevServer;
  let c: Awaited<ReturnType<typeof connect>>;
  const get = async (p: string) => {
    const r = await fetch(`${server.httpUrl}${p}`);
    return { status: r.status, body: (await r.json()) as any };
  };
  const post = async (p: string, json: unknown) => {
    const r = await fetch(`${server.httpUrl}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof json === 'string' ? json : JSON.stringify(json) });
    return { status: r.status, body: (await r.json()) as any };
  };

  before(async () => {
    server = await startDevServer({ httpPort: 0 });
    c = await connect(server.address);
  });
  after(async () => {
    await c?.close();
    await server?.stop();
  });

  it('answers history and describe as the gRPC API does, and queries, signals and terminates', async () => {
    const taskQueue = uniqueQueue('http');
    const workflowId = `http/${taskQueue}`;
    const path = `/api/v1/namespaces/${ns}/workflows/${encodeURIComponent(workflowId)}`;
    await withWorker(c.native, taskQueue, async () => {
      const handle = await c.client.workflow.start('waitForFinish', { taskQueue, workflowId, memo: { note: 'hi' }, searchAttributes: { CustomKeywordField: ['k1'] } });
      expect((await handle.query<string>('status'))).to.equal('waiting');

      const q = await post(`${path}/query/status`, { query: {} });
      expect(q.status, JSON.stringify(q.body)).to.equal(200);
      expect(q.body.queryResult).to.deep.equal(['waiting']);

      const d = await get(path);
      const g = await c.connection.workflowService.describeWorkflowExecution({ namespace: ns, execution: { workflowId } });
      const info = d.body.workflowExecutionInfo;
      expect(info.execution).to.deep.equal({ workflowId, runId: handle.firstExecutionRunId });
      expect(info.status).to.equal('WORKFLOW_EXECUTION_STATUS_RUNNING');
      expect(info.historyLength).to.equal(String(g.workflowExecutionInfo!.historyLength));
      expect(info.type.name).to.equal(g.workflowExecutionInfo!.type!.name);
      expect(Date.parse(info.startTime)).to.equal(Number(g.workflowExecutionInfo!.startTime!.seconds) * 1000 + Math.floor(g.workflowExecutionInfo!.startTime!.nanos! / 1e6));
      expect(info.memo.fields.note).to.equal('hi');
      expect(info.searchAttributes.indexedFields.CustomKeywordField).to.deep.equal(['k1']);
      expect(d.body.executionConfig.taskQueue).to.deep.equal({ name: taskQueue, kind: 'TASK_QUEUE_KIND_NORMAL' });
      expect(d.body.executionConfig.defaultWorkflowTaskTimeout).to.equal('10s');

      const s = await post(`${path}/signal/finish`, { input: ['Ada'] });
      expect(s.status, JSON.stringify(s.body)).to.equal(200);
      expect(await handle.result()).to.equal('Hello, Ada!');

      const h = await get(`${path}/history`);
      const raw = await get(`${path}/history?noPayloadShorthand`);
      const gh = await c.connection.workflowService.getWorkflowExecutionHistory({ namespace: ns, execution: { workflowId } });
      const events = gh.history!.events!;
      expect(h.body.history.events).to.have.length(events.length);
      h.body.history.events.forEach((e: any, i: number) => {
        const ge = events[i];
        expect(e.eventId).to.equal(String(ge.eventId));
        expect(e.eventType).to.equal(`EVENT_TYPE_${String(Object.keys(ge).find((k) => k.endsWith('EventAttributes') && (ge as any)[k]))
          .replace(/EventAttributes$/, '').replace(/([A-Z])/g, '_$1').toUpperCase()}`);
        expect(Date.parse(e.eventTime)).to.equal(Number(ge.eventTime!.seconds) * 1000 + Math.floor(ge.eventTime!.nanos! / 1e6));
      });
      const completed = h.body.history.events.at(-1);
      expect(completed.eventType).to.equal('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
      expect(completed.workflowExecutionCompletedEventAttributes.result).to.deep.equal(['Hello, Ada!']);
      const rawResult = raw.body.history.events.at(-1).workflowExecutionCompletedEventAttributes.result.payloads[0];
      const grpcResult = events.at(-1)!.workflowExecutionCompletedEventAttributes!.result!.payloads![0];
      expect(rawResult.data).to.equal(Buffer.from(grpcResult.data!).toString('base64'));
      expect(rawResult.metadata.encoding).to.equal(Buffer.from('json/plain').toString('base64'));

      const reverse = await get(`${path}/history-reverse`);
      expect(reverse.body.history.events.map((e: any) => e.eventId)).to.deep.equal(h.body.history.events.map((e: any) => e.eventId).reverse());

      const list = await get(`/api/v1/namespaces/${ns}/workflows?query=${encodeURIComponent(`WorkflowId="${workflowId}"`)}`);
      expect(list.body.executions.map((e: any) => e.status)).to.deep.equal(['WORKFLOW_EXECUTION_STATUS_COMPLETED']);
      const count = await get(`/api/v1/namespaces/${ns}/workflow-count?query=${encodeURIComponent(`TaskQueue="${taskQueue}" GROUP BY ExecutionStatus`)}`);
      expect(count.body.count).to.equal('1');
      expect(count.body.groups).to.have.length(1);
      expect(count.body.groups[0].count).to.equal('1');
      // A Keyword search-attribute payload carries `type` metadata besides its encoding: full form.
      expect(Buffer.from(count.body.groups[0].groupValues[0].data, 'base64').toString()).to.equal('"Completed"');
      // The Web UI's landing asks without a filter: the whole namespace, grouped.
      const all = await get(`/api/v1/namespaces/${ns}/workflow-count?query=${encodeURIComponent('GROUP BY ExecutionStatus')}`);
      expect(all.status, JSON.stringify(all.body)).to.equal(200);
      const sum = all.body.groups.reduce((n: number, g: any) => n + Number(g.count), 0);
      expect(Number(all.body.count)).to.be.at.least(1).and.to.equal(sum);

      const second = await c.client.workflow.start('waitForFinish', { taskQueue, workflowId: `${workflowId}-2` });
      const term = await post(`/api/v1/namespaces/${ns}/workflows/${encodeURIComponent(second.workflowId)}/terminate`, { reason: 'from HTTP' });
      expect(term.status).to.equal(200);
      const gd = await c.connection.workflowService.describeWorkflowExecution({ namespace: ns, execution: { workflowId: second.workflowId } });
      expect(gd.workflowExecutionInfo!.status).to.equal(5); // WORKFLOW_EXECUTION_STATUS_TERMINATED
    });
  });

  it("describes a started activity as the real server and gives the Web UI null payloads as JSON nulls", async () => {
    const taskQueue = uniqueQueue('http-hb');
    const workflowId = `http-hb/${taskQueue}`;
    await withWorker(c.native, taskQueue, async () => {
      const handle = await c.client.workflow.start('bareHeartbeats', { taskQueue, workflowId });
      const path = `/api/v1/namespaces/${ns}/workflows/${encodeURIComponent(workflowId)}`;
      const pending = async () => (await get(path)).body.pendingActivities?.[0];
      const deadline = Date.now() + 20_000;
      while (!(await pending())?.lastHeartbeatTime && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const act = await pending();
      // A heartbeat without details leaves no details; a started attempt has no scheduled time (the UI's "Next Retry").
      expect(act.state).to.equal('PENDING_ACTIVITY_STATE_STARTED');
      expect(act.lastHeartbeatTime).to.be.a('string');
      expect(act).to.not.have.property('heartbeatDetails');
      expect(act).to.not.have.property('scheduledTime');
      expect(act.lastStartedTime).to.be.a('string');
      const d = await get(path);
      expect(Number(d.body.workflowExecutionInfo.historySizeBytes)).to.be.greaterThan(0);
      await handle.terminate('test over');
    });
    // A data-less binary/null payload (the SDK's `undefined`): JSON null for the UI, as it is elsewhere.
    const payloadType = httpRoutes(['temporal.api.workflowservice.v1.WorkflowService'])
      .find((r) => r.method === 'QueryWorkflow')!.responseType.fields.queryResult.resolve().resolvedType as PbReflType;
    const nullPayloads = { payloads: [{ metadata: { encoding: Buffer.from('binary/null') } }] };
    expect(toHttpJson(payloadType, nullPayloads, { payloadShorthand: false, nullPayloadAsJson: true })).to.deep.equal({
      payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('null').toString('base64') }],
    });
    expect(toHttpJson(payloadType, nullPayloads, { payloadShorthand: false })).to.deep.equal({ payloads: [{ metadata: { encoding: Buffer.from('binary/null').toString('base64') } }] });
  });

  it('shapes errors as the real server: status, google.rpc.Status body, 501 naming the method', async () => {
    const missing = await get(`/api/v1/namespaces/${ns}/workflows/no-such-workflow`);
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal(5);
    expect(missing.body.details[0]['@type']).to.equal('type.googleapis.com/temporal.api.errordetails.v1.NotFoundFailure');
    const unimplemented = await get(`/api/v1/namespaces/${ns}/batch-operations`);
    expect(unimplemented.status).to.equal(501);
    expect(unimplemented.body).to.include({ code: 12 });
    expect(unimplemented.body.message).to.contain('ListBatchOperations');
    // Schedules are implemented (devserver/schedules.ts), so the HTTP API reaches them like any other RPC.
    const schedules = await get(`/api/v1/namespaces/${ns}/schedules`);
    expect(schedules.status).to.equal(200);
    const badJson = await post(`/api/v1/namespaces/${ns}/workflows/x/terminate`, '{');
    expect(badJson.status).to.equal(400);
    expect(badJson.body.code).to.equal(3);
    const badField = await post(`/api/v1/namespaces/${ns}/workflows/x/terminate`, { reasonx: 'a' });
    expect(badField.status).to.equal(400);
    expect(badField.body.message).to.contain('reasonx');
    const noRoute = await get('/api/v1/nothing-here');
    expect(noRoute.status).to.equal(404);
    const systemInfo = await get('/api/v1/system-info');
    expect(systemInfo.body.serverVersion).to.be.a('string');
    const attrs = await get(`/api/v1/namespaces/${ns}/search-attributes`);
    expect(attrs.body.systemAttributes.ExecutionStatus).to.equal('INDEXED_VALUE_TYPE_KEYWORD');
  });
});
