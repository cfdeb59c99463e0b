/**
 * The widget in a real browser (docs/api-notes.md "Widget"): headless Chromium (Debian's `chromium`, installed by
 * `.ci/run`; `CHROMIUM_PATH` names another) driven by `playwright-core` loads a page on an allowed origin
 * that embeds `/widget.js` with one script tag, opens the launcher with the keyboard, asks a question and
 * sees the streamed answer quoting the knowledge source; a page on a refused origin sees the refusal.
 * Screenshots are saved under `test-artifacts/`. Without a browser the test is skipped with a message —
 * except under CI, where a missing browser fails it.
 */
import { expect } from 'chai';
import { publishDraft } from '../api/agents-fixtures';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { type Browser } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createSource } from '../../db/repositories/knowledge';
import { createLogger } from '../../runtime';



describe('the widget in headless Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let t: TestApi;
  let page: { port: number; close(): Promise<void> };
  let pk = '';

  before(async function () {
    browser = await launchChromium(this);
    t = await startTestApi('widgetbrowser');
    const org = await t.org('Browser Co');
    const agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Clinic', voiceId: 'voice_ava', greeting: 'Hello! Ask me anything about the clinic.' } })).body.data.id;
    const source = await createSource(t.db, org.orgId, { agentId, kind: 'text', name: 'Opening hours', text: 'The clinic is open Monday to Friday from 8am to 6pm. Saturday visits are by appointment.' }, async () => undefined);
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: source.id };
    await acts.startKnowledgeIngestion(ref);
    await acts.extractKnowledgeSource(ref);
    await acts.indexKnowledgeSource(ref);
    const out = await publishDraft(t.db, org, agentId, 'b1');
    expect(out.kind).to.equal('published');
    const apiOrigin = t.api.baseUrl.replace(/\/api\/v1$/, '');
    const html = `<!doctype html><html lang="en"><head><title>Clinic</title></head><body><h1>Sunrise Clinic</h1>
      <script src="${apiOrigin}/widget.js" data-publishable-key="__KEY__" async></script></body></html>`;
    // The page server starts first, to learn its port; the key then allows exactly http://127.0.0.1:<port>
    // (http://localhost:<port> is another origin: the refusal test uses it).
    let served = html;
    const server = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(served);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    page = { port, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
    const key = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'site', agentId, allowedOrigins: [`http://127.0.0.1:${port}`] } });
    expect(key.status, key.text).to.equal(201);
    pk = key.body.data.key;
    served = html.replace('__KEY__', pk);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await page?.close();
    await t?.close();
  });

  it('opens from the keyboard, streams the answer with its knowledge source, and is labelled for screen readers', async () => {
    const context = await browser!.newContext();
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(`http://127.0.0.1:${page.port}/`);
    const launcher = tab.locator('[data-acp-widget] .launcher');
    await launcher.waitFor();
    await launcher.focus();
    await tab.keyboard.press('Enter');
    const panel = tab.locator('[data-acp-widget] .panel');
    expect(await panel.getAttribute('role')).to.equal('dialog');
    await tab.locator('[data-acp-widget] .msg.agent', { hasText: 'Ask me anything' }).waitFor();
    expect(await tab.locator('[data-acp-widget] label[for="acp-input"]').textContent()).to.equal('Your message');
    expect(await tab.locator('[data-acp-widget] .log').getAttribute('aria-live')).to.equal('polite');
    const input = tab.locator('[data-acp-widget] input');
    await input.fill('When is the clinic open on Monday?');
    await input.press('Enter');
    const answer = tab.locator('[data-acp-widget] .msg.agent', { hasText: '8am to 6pm' });
    await answer.waitFor({ timeout: 30_000 });
    expect(await answer.textContent()).to.not.contain('(source:');
    await tab.screenshot({ path: path.join(ARTIFACTS, 'widget-answer.png') });
    await tab.keyboard.press('Escape');
    expect(await panel.isHidden()).to.equal(true);
    expect(errors).to.deep.equal([]);
    await context.close();
  });

  it('shows the refusal on a page whose origin the key does not allow', async () => {
    const context = await browser!.newContext();
    const tab = await context.newPage();
    // Same server, reached as localhost: another origin than the one the key allows.
    await tab.goto(`http://localhost:${page.port}/`);
    await tab.locator('[data-acp-widget] .launcher').click();
    const notice = tab.locator('[data-acp-widget] .notice');
    await notice.waitFor();
    expect(await notice.textContent()).to.equal('This website is not allowed to use this chat.');
    expect(await tab.locator('[data-acp-widget] input').isDisabled()).to.equal(true);
    await tab.screenshot({ path: path.join(ARTIFACTS, 'widget-refused.png') });
    await context.close();
  });
});
