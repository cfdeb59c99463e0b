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
 * query from the Queries tab, and lists its dials in flight on the Pending Activities tab. Screenshots land in `test-artifacts/`. The UI is built
 * once per change of its inputs (scripts/build-ui.ts); without a browser the test is skipped with a
 * message, except under CI.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { serverNow, skipTime, testDevServer, testTemporal } from '../helpers/temporal';
import { until } from '../helpers/wait';
import { createSmsActivities } from '../../activities/sms';
import { stopSandboxDispatchers } from '../../providers/carrier/sandbox';
import { serveWebUi, webUiVersion, type WebUiServer } from '../../devserver/http/ui';
import { ensureUiBuilt, UI_BUILD_DIR } from '../../scripts/build-ui';
import { COMPLETE_BRAND } from '../api/sms-fixtures';
import { phone, untilLocal, useDialerEnv } from '../api/outbound-fixtures';
import { workflowIds } from '../../temporal.config';



describe('the Temporal Web UI in headless Chromium', function () {
  this.timeout(300_000);
  let browser: Browser | undefined;
  let ui: WebUiServer;
  const failedRequests: string[] = [];

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
      // Noon in New York (every number below is in 212), and dials that stay in flight for ten minutes.
      await skipTime(untilLocal('America/New_York', 12, 0, await serverNow()));
      await env.startWorker(600_000);
      const numbers = [phone('212', 500), phone('212', 501), phone('212', 502)];
      const list = await env.importList(dialer.key, ['phone', ...numbers].join('\n'));
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
      expect(failedRequests, failedRequests.join('\n')).to.deep.equal([]);
      await page.context().close();
    });
  });
});
