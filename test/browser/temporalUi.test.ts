/**
 * The official Temporal Web UI against the embedded dev server (docs/operations.md "Inspecting workflows"):
 * a 10DLC submission starts `sms-registration/{orgId}` (the real workflow, the real SMS activities,
 * the sandbox carrier holding its verdict back), then headless Chromium (same discovery as the
 * widget's test) opens the UI served from `ui/build`, filters the workflow list by the
 * `OrganizationId` search attribute, opens the workflow and sees its history (the start event,
 * the brand submission activity, the polling timer it waits on), its call stack (where it waits for
 * the carrier's verdict), its progress query, and its other tabs, with no failing API request. A launched
 * outbound campaign `campaign/{id}` (the real dialer workflow and outbound activities, sandbox dials held
 * for minutes by the sandbox's dial latency) opens at the `temporalUiUrl` of `GET /campaigns/{id}`, answers its `progress`
 * query from the Queries tab, and lists its dials in flight on the Pending Activities tab. From the
 * list, each of these workflows and a schedule, a crawl (test/helpers/uiCrawl.ts) opens every link
 * the UI renders at 1280 px and fails on an error page, an unexpected redirect, a console error or a
 * failing API request; the landing counts the namespace's workflows and the list fits the window.
 * A failed run is reset from the Reset dialog to its workflow task (ResetWorkflowExecution as the UI
 * sends it) and the page links the new run; the schedules page counts the namespace's schedules as
 * ListSchedules lists them (a paused one counts, a deleted one no more).
 * Screenshots land in `test-artifacts/`. The UI is built
 * once per change of its inputs (scripts/build-ui.ts); without a browser the test is skipped with a
 * message, except under CI.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import fs from 'node:fs';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { serverNow, testDevServer, testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { createSmsActivities } from '../../activities/sms';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { serveWebUi, webUiVersion, type WebUiServer } from '../../devserver/http/ui';
import { ensureUiBuilt, UI_BUILD_DIR } from '../../scripts/build-ui';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { phone, useDialerEnv } from '../api/outbound-fixtures';
import { workflowIds } from '../../temporal.config';
import { crawlUi } from '../helpers/uiCrawl';
import { ensureBillingCalendar } from '../../activities/billing';



/** `CRAWL_LOG=1` prints each page the crawls open. */
const CRAWL_LOG = process.env.CRAWL_LOG ? (line: string) => console.log(`      ${line}`) : undefined;

describe('the Temporal Web UI in headless Chromium', function () {
  this.timeout(300_000);
  let browser: Browser | undefined;
  let ui: WebUiServer;
  const failedRequests: string[] = [];
  /** The crawls' link patterns: each crawl opens the namespace's pages and other workflows' tabs the earlier ones did not. */
  const crawled = new Set<string>();

  before(async function () {
    await ensureUiBuilt();
    browser = await launchChromium(this);
    const server = await testDevServer();
    ui = await serveWebUi({ buildDir: UI_BUILD_DIR, httpApi: server.httpApi, host: '127.0.0.1', port: 0, defaultNamespace: 'default', version: webUiVersion() });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await ui?.close();
  });

  async function open(url: string): Promise<Page> {
    const context = await browser!.newContext({ viewport: { width: 1440, height: 1000 } });
    const page = await context.newPage();
    page.on('response', (r) => {
      if (r.url().includes('/api/v1/') && r.status() >= 400) failedRequests.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(url);
    return page;
  }

  describe('a 10DLC registration', () => {
    let t: TestApi;
    let orgId = '';
    let key = '';
    before(async () => {
      // The sandbox carrier answers in an hour: the registration waits for its callback signal.
      t = await startTestApi('temporalui', {}, {
        temporalUiUrl: ui.url,
        worker: (deps) => createSmsActivities(deps, { carrierOptions: { delayMs: 3_600_000, callbackUrl: `${deps.baseUrl}/sms/provider-callbacks/sandbox` } }),
      });
      const org = await t.org('UI Dental');
      orgId = org.orgId;
      key = org.key;
      const put = await t.call('PUT', '/sms', { key: org.key, json: COMPLETE_BRAND });
      expect(put.status, put.text).to.equal(200);
      expect((await t.call('GET', '/sms', { key: org.key })).body.data).to.not.have.property('temporalUiUrl'); // no workflow before the submission
      expect((await t.call('POST', '/sms/review', { key: org.key })).body.data.verdict).to.equal('pass');
      const sub = await t.call('POST', '/sms/submit', { key: org.key });
      expect(sub.status, sub.text).to.equal(200);
    });
    after(async () => {
      stopSandboxDispatchers();
      // The registration waits on a timer of the shared dev server: it must not outlive its worker.
      if (orgId) await (await testTemporal()).client.workflow.getHandle(`sms-registration/${orgId}`).terminate('test over').catch(() => undefined);
      await t?.close();
    });

    it('lists the registration filtered by OrganizationId, opens it and shows its history, call stack and progress query', async () => {
      const workflowId = `sms-registration/${orgId}`;
      // The workflow is running and has reached its wait before the browser looks.
      await until(async () => {
        const r = await fetch(`${ui.url}/api/v1/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
        const body = (await r.json()) as { workflowExecutionInfo?: { historyLength?: string } };
        return r.ok && Number(body.workflowExecutionInfo?.historyLength)  > 5 ? true : undefined;
      }, 60_000, 'the registration reaches its wait');
      const query = `OrganizationId="${orgId}"`;
      const page = await open(`${ui.url}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
      const row = page.getByRole('link', { name: workflowId });
      await row.first().waitFor({ timeout: 30_000 });
      expect(await page.getByText('Running').count()).to.be.greaterThan(0);
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-workflows.png'), fullPage: true });

      await row.first().click();
      await page.waitForURL(/\/history/, { timeout: 30_000 });

      // The event list shows the start event, the brand submission activity and the polling timer it waits on.
      await page.getByText('Workflow Execution Started').first().waitFor({ timeout: 30_000 });
      await page.getByText('Activity Task Scheduled').first().waitFor({ timeout: 30_000 });
      await page.getByText('Timer Started').first().waitFor({ timeout: 30_000 });
      expect(await page.getByText(workflowId).count()).to.be.greaterThan(0);
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-history.png'), fullPage: true });
      const runUrl = page.url().replace(/\/history.*$/, '');
      // Where it waits: the call stack (the SDK's __stack_trace query) names the verdict wait.
      await page.goto(`${runUrl}/call-stack`);
      await page.getByText(/awaitVerdict/).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-call-stack.png'), fullPage: true });
      // The registration's progress query, run from the Queries tab.
      await page.goto(`${runUrl}/query`);
      await page.getByRole('button', { name: 'Run Query' }).click();
      await page.getByText(/"step"/).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-query.png'), fullPage: true });
      for (const tab of ['pending-activities', 'workers', 'metadata']) {
        await page.goto(`${runUrl}/${tab}`);
        await page.getByText(workflowId).first().waitFor({ timeout: 30_000 });
      }
      // The API's link, the pattern of docs/operations.md "Inspecting workflows": a workflow id alone opens its latest run's history.
      const link = (await t.call('GET', '/sms', { key })).body.data.temporalUiUrl;
      expect(link).to.equal(`${ui.url}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
      await page.goto(link);
      await page.waitForURL(/\/history$/, { timeout: 30_000 });
      expect(page.url()).to.equal(`${runUrl}/history`);
      expect(failedRequests, failedRequests.join('\n')).to.deep.equal([]);
      await page.context().close();
    });

    it('opens every link the UI renders from the list and the registration without an error page', async function () {
      this.timeout(600_000);
      const workflowId = `sms-registration/${orgId}`;
      const report = await crawlUi(browser!, {
        origin: ui.url,
        start: [`/namespaces/default/workflows?query=${encodeURIComponent(`OrganizationId="${orgId}"`)}`, `/namespaces/default/workflows/${encodeURIComponent(workflowId)}`],
        focusWorkflowIds: [workflowId],
        log: CRAWL_LOG,
        seen: crawled,
      });
      expect(report.problems, report.problems.join('\n')).to.deep.equal([]);
      // The links of the issue's dead ends were all rendered and opened.
      for (const p of [/\/relationships$/, /\/history\/events\/\d+$/, /\/task-queues\/[^/]+$/, /\/history\.json$/, /\/schedules$/, /^\/namespaces$/, /\/call-stack$/, /\/workers$/]) {
        expect(report.visited.some((v) => p.test(v.split('?')[0])), `${p} in\n${report.visited.join('\n')}`).to.equal(true);
      }
    });

    it('counts the namespace on the landing and fits the list into 1280 px', async () => {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${ui.url}/namespaces/default/workflows`);
      await page.getByRole('link', { name: `sms-registration/${orgId}` }).first().waitFor({ timeout: 30_000 });
      const count = await fetch(`${ui.url}/api/v1/namespaces/default/workflow-count?query=${encodeURIComponent('GROUP BY ExecutionStatus')}`);
      expect(count.status).to.equal(200);
      const total = Number(((await count.json()) as { count: string }).count);
      expect(total).to.be.greaterThan(0);
      await page.getByText(new RegExp(`^\\s*${total}\\s+Workflows?\\s*$`)).first().waitFor({ timeout: 30_000 });
      // The official layout: each row one line high (ids never break a character per line), the table scrolling
      // sideways inside its own box, and the page itself never wider than the window — at 1280 and at 390 px.
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: 900 });
        await page.waitForTimeout(100);
        const layout = await page.evaluate(() => {
          type El = { scrollWidth: number; clientWidth: number; getBoundingClientRect(): { right: number; height: number } };
          const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): ArrayLike<El>; documentElement: El } }).document;
          const rows = Array.from(doc.querySelectorAll('.paginated-table-body tr'));
          const wrappers = Array.from(doc.querySelectorAll('.paginated-table-wrapper'));
          return { rowHeight: Math.max(...rows.map((r) => r.getBoundingClientRect().height)), wrapperRight: Math.max(...wrappers.map((w) => w.getBoundingClientRect().right)), page: doc.documentElement.scrollWidth };
        });
        await page.screenshot({ path: path.join(ARTIFACTS, `temporal-ui-landing-${width}.png`) });
        expect(layout.rowHeight, `one line per row at ${width} px`).to.be.at.most(60);
        expect(layout.wrapperRight, `the list's box ends inside the window at ${width} px`).to.be.at.most(width);
        expect(layout.page, `no horizontal scrolling of the page at ${width} px`).to.be.at.most(width);
      }
      await context.close();
    });
  });

  describe('an outbound campaign', () => {
    const { env, dialer } = useDialerEnv('temporalui_campaign', () => ({ temporalUiUrl: ui.url }));
    let workflowId = '';
    after(async () => {
      // The dials wait minutes of real time: terminating the run cancels them (on their next heartbeat,
      // or at the worker's shutdown), so nothing outlives the test on the shared dev server.
      if (workflowId) await env.client.workflow.getHandle(workflowId).terminate('test over').catch(() => undefined);
    });

    it('opens campaign/{id} at the temporalUiUrl of GET /campaigns/{id}, runs its progress query and lists its pending dials', async () => {
      // Contacts in a zone where it is noon by the dev server's clock (no time skipping: a workflow another
      // suite left, or a query the UI crawl sent to a workflow without a worker, would hold it), and dials
      // that stay in flight for ten minutes.
      const offset = 12 - (await serverNow()).getUTCHours();
      const noonZone = offset === 0 ? 'Etc/GMT' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
      await env.startWorker(600_000);
      const numbers = [phone('212', 500), phone('212', 501), phone('212', 502)];
      const list = await env.importList(dialer.key, ['phone,time_zone', ...numbers.map((n) => `${n},${noonZone}`)].join('\n'));
      const created = await env.call(dialer.key, 'POST', '/campaigns', { name: 'UI reminders', agentId: dialer.agentId, callerIdNumberId: dialer.numberId, contactListId: list.id, purpose: 'informational', maxConcurrentCalls: 3 });
      expect(created.status).to.equal(201);
      const id = created.body.data.id as string;
      expect((await env.call(dialer.key, 'GET', `/campaigns/${id}`)).body.data).to.not.have.property('temporalUiUrl'); // no workflow before the launch
      expect((await env.call(dialer.key, 'POST', `/campaigns/${id}/launch`)).status).to.equal(200);
      workflowId = workflowIds.campaign(id);
      // All three dials are in flight before the browser looks.
      await until(async () => {
        const r = await fetch(`${ui.url}/api/v1/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
        const body = (await r.json()) as { pendingActivities?: unknown[] };
        return r.ok && (body.pendingActivities?.length ?? 0) === 3 ? true : undefined;
      }, 60_000, 'three dials in flight');

      // The API's link (the pattern of docs/operations.md "Inspecting workflows": the workflow id alone opens the latest run's history).
      const link = (await env.call(dialer.key, 'GET', `/campaigns/${id}`)).body.data.temporalUiUrl;
      expect(link).to.equal(`${ui.url}/namespaces/default/workflows/${encodeURIComponent(workflowId)}`);
      const page = await open(link);
      await page.waitForURL(/\/history$/, { timeout: 30_000 });
      // The event list ends with the three dials in flight: scheduled, and pending (a started activity's
      // event is written only when it ends, as on the real server).
      const pendingRows = page.getByText('Pending Activity', { exact: true });
      await pendingRows.first().waitFor({ timeout: 30_000 });
      expect(await pendingRows.count()).to.equal(3);
      expect(await page.getByText(workflowId).count()).to.be.greaterThan(0);
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-campaign-history.png'), fullPage: true });
      const runUrl = page.url().replace(/\/history$/, '');

      // The progress query from the Queries tab: three dials in flight, not paused.
      await page.goto(`${runUrl}/query`);
      await page.getByRole('button', { name: 'Run Query' }).click();
      const answer = page.getByText(/"inFlight"/).first();
      await answer.waitFor({ timeout: 30_000 });
      const text = (await page.locator('body').innerText()).replace(/\s+/g, ' ');
      expect(text).to.match(/"inFlight": ?3/);
      expect(text).to.match(/"paused": ?false/);
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-campaign-query.png'), fullPage: true });

      // The dials in flight on the Pending Activities tab.
      await page.goto(`${runUrl}/pending-activities`);
      await page.getByText('outboundDial').first().waitFor({ timeout: 30_000 });
      expect(await page.getByText('outboundDial').count()).to.be.at.least(3);
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-campaign-pending-activities.png'), fullPage: true });
      // Heartbeats without details show no details; nothing in the past is a "next retry".
      const text2 = await page.locator('body').innerText();
      expect(text2).to.not.match(/Heartbeat Details\s*null/i);
      expect(text2).to.not.match(/Next Retry/i); // the dials are started, not waiting for a retry
      expect(failedRequests, failedRequests.join('\n')).to.deep.equal([]);
      await page.context().close();

      const report = await crawlUi(browser!, {
        origin: ui.url,
        start: [`/namespaces/default/workflows/${encodeURIComponent(workflowId)}`],
        focusWorkflowIds: [workflowId],
        log: CRAWL_LOG,
        seen: crawled,
        onPage: async (p, at) => {
          if (!at.endsWith('/call-stack') || !at.includes(encodeURIComponent(workflowId))) return;
          // The call stack names the workflow's source by its path in the project, not on this machine.
          const stack = await until(async () => {
            const text = await p.locator('body').innerText();
            return /workflows\/\w+\.ts:\d+/.test(text) ? text : undefined;
          }, 30_000, 'the call stack').catch(async (err) => {
            await p.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-campaign-call-stack.png'), fullPage: true });
            throw err;
          });
          await p.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-campaign-call-stack.png'), fullPage: true });
          expect(stack).to.match(/workflows\/\w+\.ts:\d+/);
          expect(stack).to.not.include(path.resolve(__dirname, '..', '..'));
        },
      });
      expect(report.problems, report.problems.join('\n')).to.deep.equal([]);
      expect(report.visited.join('\n')).to.include('/pending-activities');
    });
  });

  describe('a failed workflow', () => {
    const workflowId = `ui-reset-${Date.now().toString(36)}`;
    const taskQueue = `ui-reset-${Date.now().toString(36)}`;
    after(async () => {
      await (await testTemporal()).client.workflow.getHandle(workflowId).terminate('test over').catch(() => undefined);
    });

    it('resets the failed run from the Reset dialog to its workflow task and links the new run', async () => {
      const { client } = await testTemporal();
      const svc = client.workflowService;
      // A run that fails on its first workflow task's FailWorkflowExecution command (a raw worker on its own queue):
      // Started, WorkflowTaskScheduled, WorkflowTaskStarted, WorkflowTaskCompleted (event 4), WorkflowExecutionFailed.
      const { runId } = await svc.startWorkflowExecution({ namespace: 'default', workflowId, workflowType: { name: 'uiResetTarget' }, taskQueue: { name: taskQueue }, requestId: `${workflowId}-start` });
      const task = await svc.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, identity: 'ui-test-worker' });
      await svc.respondWorkflowTaskCompleted({
        taskToken: task.taskToken,
        identity: 'ui-test-worker',
        commands: [{ commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, failWorkflowExecutionCommandAttributes: { failure: { message: 'bad deploy' } } }],
      });
      const consoleErrors: string[] = [];
      const page = await open(`${ui.url}/namespaces/default/workflows/${encodeURIComponent(workflowId)}/${runId}/history`);
      page.on('console', (m) => void (m.type() === 'error' && consoleErrors.push(m.text())));
      page.on('pageerror', (e) => consoleErrors.push(e.message));
      await page.getByText('Workflow Execution Failed').first().waitFor({ timeout: 30_000 });
      // A closed run offers Reset as its primary action; the dialog lists the reset points (workflow task events).
      // (The header renders the button twice, for wide and narrow layouts; one is visible.)
      await page.locator('[data-testid="workflow-reset-button"]:visible').click();
      const dialog = page.locator('[data-testid="reset-confirmation-modal"]:visible');
      await dialog.getByTestId('workflow-reset-event-id-select-button').click();
      await page.getByRole('option', { name: /^4 - WorkflowTaskCompleted/ }).click();
      await dialog.locator('#reset-reason').fill('retry after the fix');
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-reset-dialog.png'), fullPage: true });
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      // The base run names the new one (describe's workflowExtendedInfo.resetRunId), and the page links it.
      const newRunId = await until(async () => {
        const d = await svc.describeWorkflowExecution({ namespace: 'default', execution: { workflowId, runId } });
        return d.workflowExtendedInfo?.resetRunId || undefined;
      }, 30_000, 'the reset run');
      expect(newRunId).to.not.equal(runId);
      const alert = page.locator('[data-testid="workflow-reset-alert"]:visible');
      await alert.waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-reset-alert.png'), fullPage: true });
      const href = await alert.getByRole('link', { name: 'here' }).getAttribute('href');
      expect(href).to.include(`/workflows/${encodeURIComponent(workflowId)}/${newRunId}/history`);
      // A fresh load of the base run still links the new run (from the server, not the page's memory).
      await page.reload();
      await alert.waitFor({ timeout: 30_000 });
      await alert.getByRole('link', { name: 'here' }).click();
      await page.waitForURL(new RegExp(`/${newRunId}/history`), { timeout: 30_000 });
      // The new run: running, its history continued to the reset point and the reset's WorkflowTaskFailed.
      await page.getByText('Running').first().waitFor({ timeout: 30_000 });
      await page.getByText('Workflow Task Failed').first().waitFor({ timeout: 30_000 });
      const events = (await svc.getWorkflowExecutionHistory({ namespace: 'default', execution: { workflowId, runId: newRunId } })).history?.events ?? [];
      const resetFailure = events.find((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)?.workflowTaskFailedEventAttributes;
      expect(resetFailure?.cause).to.equal(temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW);
      expect(resetFailure?.baseRunId).to.equal(runId);
      expect(resetFailure?.newRunId).to.equal(newRunId);
      expect(resetFailure?.failure?.message).to.match(/retry after the fix/);
      expect(consoleErrors, consoleErrors.join('\n')).to.deep.equal([]);
      expect(failedRequests, failedRequests.join('\n')).to.deep.equal([]);
      await page.context().close();
    });
  });

  describe('a schedule', () => {
    const scheduleId = `billing-month-ui-${Date.now().toString(36)}`;
    after(async () => {
      const { client } = await testTemporal();
      const handle = client.schedule.getHandle(scheduleId);
      const runs = (await handle.describe().catch(() => undefined))?.info.recentActions ?? [];
      await handle.delete().catch(() => undefined);
      for (const r of runs) await client.workflow.getHandle(r.action.workflow.workflowId).terminate('test over').catch(() => undefined);
    });

    it('lists the schedule, opens it with its recent and upcoming runs, and every link from there', async () => {
      const { client } = await testTemporal();
      // The service's billing calendar (docs/api-notes.md "Billing") under a test id, run once now.
      await ensureBillingCalendar({ client, taskQueue: `ui-schedule-${scheduleId}`, scheduleId });
      await client.schedule.getHandle(scheduleId).trigger();
      await until(async () => ((await client.schedule.getHandle(scheduleId).describe()).info.recentActions.length ? true : undefined), 30_000, 'the triggered run');
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${ui.url}/namespaces/default/schedules`);
      await page.getByText(scheduleId).first().waitFor({ timeout: 30_000 });
      // The schedule list fits the window at 1366 and 390 px: the page never scrolls sideways (the list may, in its box).
      for (const width of [1366, 390]) {
        await page.setViewportSize({ width, height: 900 });
        await page.waitForTimeout(100);
        const pageWidth = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
        await page.screenshot({ path: path.join(ARTIFACTS, `temporal-ui-schedules-${width}.png`) });
        expect(pageWidth, `the schedule list at ${width} px`).to.be.at.most(width);
      }
      await page.setViewportSize({ width: 1280, height: 900 });
      await page.goto(`${ui.url}/namespaces/default/schedules/${encodeURIComponent(scheduleId)}`);
      await page.getByText(/Recent Runs/i).first().waitFor({ timeout: 30_000 });
      await page.getByText(/Upcoming Runs/i).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-schedule.png'), fullPage: true });
      await context.close();
      const report = await crawlUi(browser!, {
        origin: ui.url,
        start: [`/namespaces/default/schedules`, `/namespaces/default/schedules/${encodeURIComponent(scheduleId)}`],
        focusWorkflowIds: [],
        log: CRAWL_LOG,
        seen: crawled,
      });
      expect(report.problems, report.problems.join('\n')).to.deep.equal([]);
    });

    it("counts the namespace's schedules on the schedules page (a paused one too, a deleted one no more)", async () => {
      const { client } = await testTemporal();
      const extra = [`${scheduleId}-a`, `${scheduleId}-b`];
      for (const id of extra) {
        await client.schedule.create({
          scheduleId: id,
          spec: { intervals: [{ every: '1 day' }] },
          action: { type: 'startWorkflow', workflowType: 'uiCountTarget', taskQueue: `ui-count-${scheduleId}` },
          state: { paused: id.endsWith('-b') },
        });
      }
      await client.schedule.getHandle(extra[1]).delete();
      // The right count is what ListSchedules lists: every schedule of the namespace, paused or not (the
      // scheduler workflow runs while its schedule exists), never a deleted one.
      const listed: string[] = [];
      for await (const s of client.schedule.list()) listed.push(s.scheduleId);
      expect(listed).to.include(extra[0]);
      expect(listed).to.not.include(extra[1]);
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (m) => void (m.type() === 'error' && consoleErrors.push(m.text())));
      page.on('response', (r) => {
        if (r.url().includes('/api/v1/') && r.status() >= 400) consoleErrors.push(`${r.status()} ${r.url()}`);
      });
      await page.goto(`${ui.url}/namespaces/default/schedules`);
      await page.getByText(extra[0]).first().waitFor({ timeout: 30_000 });
      const label = `${listed.length} Schedule${listed.length === 1 ? '' : 's'}`;
      await page.getByText(new RegExp(`^\\s*${label}\\s*$`)).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-schedules-count.png') });
      expect(consoleErrors, consoleErrors.join('\n')).to.deep.equal([]);
      await client.schedule.getHandle(extra[0]).delete();
      await context.close();
    });

    it('shows a 404 page naming an unknown workflow id instead of redirecting', async () => {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${ui.url}/namespaces/default/workflows/no-such-workflow-${scheduleId}`);
      await page.getByText(`no-such-workflow-${scheduleId}`).first().waitFor({ timeout: 30_000 });
      expect(new URL(page.url()).pathname).to.equal(`/namespaces/default/workflows/no-such-workflow-${scheduleId}`);
      expect(await page.locator('[aria-roledescription="error"]').innerText()).to.include('404');
      await context.close();
    });
  });
});
