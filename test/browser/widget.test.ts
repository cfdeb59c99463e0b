/**
 * The widget in a real browser (docs/api-notes.md "Widget", "Voice in the widget"): headless Chromium (Debian's
 * `chromium`, installed by `.ci/run`; `CHROMIUM_PATH` names another; a fake microphone through
 * `--use-fake-ui-for-media-stream --use-fake-device-for-media-stream`) driven by `playwright-core` loads a page on
 * an allowed origin that embeds `/widget.js` with one script tag, opens the launcher with the keyboard, asks a
 * question and sees the typing indicator and a disabled Send while the answer streams (the sandbox LLM streams
 * tokens apart), the answer quoting the knowledge source with its link clickable and safe, keeps the conversation
 * across a reload and a navigation, and talks to the agent by voice through the ConversationRelay endpoint (the
 * Web Speech API stood in for by the test: recognized utterances in, spoken answers recorded). A page on a
 * refused origin gets no launcher and the site owner a console warning. axe-core finds no serious or critical
 * accessibility violation on the open widget, with messages, and in a voice call. Any console error or failed
 * request fails a test. Screenshots are saved under `test-artifacts/`. Without a browser the test is skipped with
 * a message — except under CI, where a missing browser fails it.
 */
import { expect } from 'chai';
import { until } from '../helpers/wait';
import { publishDraft } from '../api/agents-fixtures';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { createKnowledgeActivities } from '../../activities/knowledge';
import { createSource } from '../../db/repositories/knowledge';
import { SandboxLlm } from '../../providers/llm/sandbox';
import { createLogger } from '../../runtime';
import { ingestInline } from '../helpers/knowledge';

const W = '[data-acp-widget]';

/**
 * Stands in for the Web Speech API (https://wicg.github.io/speech-api/), which needs a speech service headless
 * Chromium lacks: `__say(text)` makes the listening recognizer hear `text` (false while none listens);
 * `__spoken` records what speechSynthesis was asked to say, each utterance ending 20 ms later.
 */
const FAKE_SPEECH = `
window.__spoken = [];
window.__listening = null;
window.webkitSpeechRecognition = function () {
  var r = this;
  r.start = function () { window.__listening = r; };
  r.stop = r.abort = function () { if (window.__listening === r) { window.__listening = null; setTimeout(function () { r.onend && r.onend(); }, 0); } };
};
window.SpeechRecognition = undefined;
window.__say = function (text) {
  var r = window.__listening;
  if (!r) return false;
  window.__listening = null;
  r.onresult({ results: [[{ transcript: text }]] });
  r.onend && r.onend();
  return true;
};
speechSynthesis.speak = function (u) { window.__spoken.push(u.text); setTimeout(function () { u.onend && u.onend(); }, 20); };
`;

/** What a tab reported: console errors and warnings, page errors and failed requests. */
interface Watched {
  page: Page;
  errors: string[];
  warnings: string[];
  failed: string[];
}

describe('the widget in headless Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let t: TestApi;
  let site: { port: number; close(): Promise<void> };
  let orgId = '';
  let agentId = '';
  let orgKey = '';
  let axeSource = '';
  const contexts: BrowserContext[] = [];
  const watched: Watched[] = [];

  before(async function () {
    browser = await launchChromium(this, ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream']);
    // Tokens 40 ms apart: an answer streams long enough (a second or more) to see the typing indicator and the disabled Send.
    t = await startTestApi('widgetbrowser', {}, { providers: { llm: new SandboxLlm({ tokenDelayMs: 40 }) } });
    const org = await t.org('Browser Co');
    orgId = org.orgId;
    orgKey = org.key;
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Clinic', voiceId: 'voice_ava', greeting: 'Hello! Ask me anything about the clinic.' } })).body.data.id;
    const text = 'The clinic is open Monday to Friday from 8am to 6pm. Saturday visits are by appointment. Book a visit online at https://clinic.example/book today.';
    const source = await createSource(t.db, org.orgId, { agentId, kind: 'text', name: 'Opening hours', text }, async () => undefined);
    const acts = createKnowledgeActivities({ db: t.db, config: t.config, logger: createLogger('silent') });
    const ref = { orgId: org.orgId, sourceId: source.id };
    expect((await ingestInline(acts, ref)).status).to.equal('ready');
    const out = await publishDraft(t.db, org, agentId, 'b1');
    expect(out.kind).to.equal('published');
    const apiOrigin = t.api.baseUrl.replace(/\/api\/v1$/, '');
    const html = (title: string) => `<!doctype html><html lang="en"><head><title>${title}</title></head><body><main><h1>Sunrise Clinic</h1><p><a href="/visit">Visiting</a></p></main>
      <script src="${apiOrigin}/widget.js" data-publishable-key="__KEY__" async></script></body></html>`;
    // The page server starts first, to learn its port; the key then allows exactly http://127.0.0.1:<port>
    // (http://localhost:<port> is another origin: the refusal test uses it).
    let key = '';
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(html(req.url === '/visit' ? 'Visiting' : 'Clinic').replace('__KEY__', key));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    site = { port, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
    const created = await t.call('POST', '/publishable-keys', { key: org.key, json: { name: 'site', agentId, allowedOrigins: [`http://127.0.0.1:${port}`] } });
    expect(created.status, created.text).to.equal(201);
    key = created.body.data.key;
    axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterEach(async () => {
    const seen = watched.splice(0);
    for (const c of contexts.splice(0)) await c.close();
    for (const w of seen) {
      expect(w.errors, 'console errors').to.deep.equal([]);
      expect(w.failed, 'failed requests').to.deep.equal([]);
    }
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await t?.close();
  });

  /** A new tab (in a fresh context unless given one) whose console errors, warnings and failed requests are kept. */
  async function tab(context?: BrowserContext, initScript?: string): Promise<Watched> {
    if (!context) contexts.push((context = await browser!.newContext()));
    if (initScript) await context.addInitScript(initScript);
    const page = await context.newPage();
    const w: Watched = { page, errors: [], warnings: [], failed: [] };
    page.on('console', (m) => {
      if (m.type() === 'error') w.errors.push(m.text());
      if (m.type() === 'warning') w.warnings.push(m.text());
    });
    page.on('pageerror', (e) => w.errors.push(e.message));
    page.on('requestfailed', (r) => w.failed.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
    watched.push(w);
    return w;
  }

  /** axe-core's serious and critical violations on the page (the widget's shadow tree included). */
  async function axeViolations(page: Page): Promise<string[]> {
    if (!(await page.evaluate('typeof axe !== "undefined"'))) await page.addScriptTag({ content: axeSource });
    const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string; nodes: { target: unknown }[] }[] };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  }

  async function ask(page: Page, question: string): Promise<void> {
    const input = page.locator(`${W} input`);
    await input.fill(question);
    await input.press('Enter');
  }

  it('opens from the keyboard, shows typing and a disabled Send while the answer streams, and is labelled for screen readers', async () => {
    const { page } = await tab();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    const launcher = page.locator(`${W} .launcher`);
    await launcher.waitFor();
    await launcher.focus();
    await page.keyboard.press('Enter');
    const panel = page.locator(`${W} .panel`);
    expect(await panel.getAttribute('role')).to.equal('dialog');
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    expect(await page.locator(`${W} label[for="acp-input"]`).textContent()).to.equal('Your message');
    expect(await page.locator(`${W} .log`).getAttribute('aria-live')).to.equal('polite');
    const input = page.locator(`${W} input`);
    expect(await input.getAttribute('placeholder')).to.equal('Type your message…');
    // Each message carries its time; the focus ring wears the brand colour.
    const greetingTime = await page.locator(`${W} .msg.agent time`).first().getAttribute('datetime');
    expect(Date.now() - Date.parse(greetingTime!)).to.be.within(0, 60_000);
    expect(await input.evaluate((el) => (globalThis as any).getComputedStyle(el).outlineColor)).to.equal('rgb(31, 79, 209)');
    expect(await axeViolations(page), 'axe on the open widget').to.deep.equal([]);

    await ask(page, 'When is the clinic open on Monday?');
    const typing = page.locator(`${W} .typing`);
    await typing.waitFor();
    const send = page.locator(`${W} form button`);
    expect(await send.isDisabled()).to.equal(true);
    // What the visitor types meanwhile is kept, not sent and not dropped.
    await input.fill('And on Saturday?');
    await input.press('Enter');
    // Seen at one instant in the page: the answer has begun streaming, the indicator still shows, Send is still off.
    await page.waitForFunction(`(() => { const r = document.querySelector('${W}').shadowRoot;
      return r.querySelectorAll('.msg.agent').length === 2 && !!r.querySelector('.typing') && r.querySelector('form button').disabled; })()`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'widget-typing.png') });
    const answer = page.locator(`${W} .msg.agent`, { hasText: '8am to 6pm' });
    await answer.waitFor({ timeout: 30_000 });
    await typing.waitFor({ state: 'detached' });
    expect(await send.isEnabled()).to.equal(true);
    expect(await input.inputValue()).to.equal('And on Saturday?');
    expect(await page.locator(`${W} .msg.user`).count()).to.equal(1);
    expect(await answer.textContent()).to.not.contain('(source:');
    expect(await axeViolations(page), 'axe with messages').to.deep.equal([]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'widget-answer.png') });
    await page.keyboard.press('Escape');
    expect(await panel.isHidden()).to.equal(true);
  });

  it("shows the lines of a team member who took the conversation over (docs/api-notes.md \"Live control\"), and the agent's again once handed back", async () => {
    const { page } = await tab();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.locator(`${W} .launcher`).click();
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    const conv = await until(async () => (await t.db('conversations').where({ org_id: orgId, channel: 'web' }).orderBy('started_at', 'desc').first()) ?? null, 10_000, 'the widget session');
    const control = (json: Record<string, unknown>) => t.call('POST', `/conversations/${conv.id}/control`, { key: orgKey, json });
    expect((await control({ action: 'take_over' })).status).to.equal(200);
    await ask(page, 'Can I talk to a person about my bill?');
    await page.locator(`${W} .typing`).waitFor({ state: 'detached' });
    expect(await page.locator(`${W} .msg.agent`).count(), 'the agent does not answer').to.equal(1);
    expect((await control({ action: 'say', content: 'Hi, Sam from the front desk here.' })).status).to.equal(200);
    await page.locator(`${W} .msg.agent`, { hasText: 'Hi, Sam from the front desk here.' }).waitFor({ timeout: 10_000 });
    expect((await control({ action: 'hand_back' })).status).to.equal(200);
    await ask(page, 'When is the clinic open on Monday?');
    await page.locator(`${W} .msg.agent`, { hasText: 'Monday' }).waitFor({ timeout: 20_000 });
    expect(await page.locator(`${W} .msg.agent`, { hasText: 'Hi, Sam from the front desk here.' }).count(), 'shown once').to.equal(1);
  });

  it('makes http(s) links clickable and opening apart, and never renders message text as HTML', async () => {
    const { page } = await tab();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.locator(`${W} .launcher`).click();
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    await ask(page, 'How do I book a visit online?');
    const link = page.locator(`${W} .msg.agent a`);
    await link.waitFor({ timeout: 30_000 });
    expect(await link.getAttribute('href')).to.equal('https://clinic.example/book');
    expect(await link.getAttribute('rel')).to.equal('noopener noreferrer');
    expect(await link.getAttribute('target')).to.equal('_blank');
    await page.locator(`${W} form button:not([disabled])`).waitFor();
    await ask(page, 'See <img src=x onerror="window.__pwned=1"> javascript:alert(1) and https://example.com/a?b=1.');
    const mine = page.locator(`${W} .msg.user`).nth(1);
    await mine.waitFor();
    expect(await mine.locator('img').count()).to.equal(0);
    expect(await mine.textContent()).to.contain('<img src=x onerror="window.__pwned=1">');
    expect(await mine.locator('a').evaluateAll((as) => as.map((a) => (a as unknown as { href: string }).href))).to.deep.equal(['https://example.com/a?b=1']);
    expect(await page.evaluate('window.__pwned')).to.equal(undefined);
    await page.locator(`${W} form button:not([disabled])`).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'widget-links.png') });
  });

  it('keeps the conversation across a reload and a navigation in the same tab, and starts afresh in a new tab', async () => {
    const { page } = await tab();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.locator(`${W} .launcher`).click();
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    await ask(page, 'Are Saturday visits possible?');
    await page.locator(`${W} .msg.agent`).nth(1).waitFor();
    await page.locator(`${W} form button:not([disabled])`).waitFor({ timeout: 30_000 });
    const before = await page.locator(`${W} .msg .body`).allTextContents();
    const sessionId = await page.evaluate(() => Object.values((globalThis as any).sessionStorage as Record<string, string>).map((v) => JSON.parse(v).id)[0]);
    expect(sessionId).to.match(/^cnv_/);

    await page.reload();
    await page.locator(`${W} .msg.user`, { hasText: 'Are Saturday visits possible?' }).waitFor();
    expect(await page.locator(`${W} .panel`).isVisible(), 'the panel stays open').to.equal(true);
    expect(await page.locator(`${W} .msg .body`).allTextContents()).to.deep.equal(before);
    await page.click('a[href="/visit"]');
    await page.waitForURL(/\/visit$/);
    await page.locator(`${W} .msg.user`, { hasText: 'Are Saturday visits possible?' }).waitFor();
    await ask(page, 'Thanks!');
    await page.locator(`${W} .msg.user`, { hasText: 'Thanks!' }).waitFor();
    await page.locator(`${W} form button:not([disabled])`).waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'widget-after-navigation.png') });
    const messages = await t.db('conversation_messages').where({ org_id: orgId, conversation_id: sessionId, role: 'user' }).orderBy('seq');
    expect(messages.map((m: { content: string }) => m.content)).to.deep.equal(['Are Saturday visits possible?', 'Thanks!']);

    // A new tab of the same browser: a new conversation, the same visitor (the traffic split's stickiness key).
    const fresh = await tab(page.context());
    await fresh.page.goto(`http://127.0.0.1:${site.port}/`);
    await fresh.page.locator(`${W} .launcher`).click();
    await fresh.page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    expect(await fresh.page.locator(`${W} .msg.user`).count()).to.equal(0);
    const visitor = (p: typeof page) => p.evaluate(() => (globalThis as any).localStorage.getItem('acp-widget-visitor') as string | null);
    expect(await visitor(page)).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await visitor(fresh.page)).to.equal(await visitor(page));
  });

  it('talks to the agent by voice through the relay: call states, spoken answers, typed lines and hang-up', async () => {
    const w = await tab(undefined, FAKE_SPEECH);
    const { page } = w;
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.locator(`${W} .launcher`).click();
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    const voice = page.locator(`${W} .voice`);
    await voice.waitFor();
    expect(await voice.getAttribute('aria-label')).to.equal('Start a voice call');
    const phase = page.locator(`${W} .phase`);
    await voice.click();
    // The greeting is shown and spoken, then the call listens.
    await page.waitForFunction('window.__spoken.length >= 1');
    expect(await page.evaluate('window.__spoken[0]')).to.equal('Hello! Ask me anything about the clinic.');
    await page.waitForFunction(`document.querySelector('${W}').shadowRoot.querySelector('.phase').dataset.phase === 'listening'`);
    expect(await phase.textContent()).to.equal('Listening');
    expect(await phase.getAttribute('role')).to.equal('status');
    await page.waitForFunction("window.__say('When is the clinic open on Monday?')");
    await page.locator(`${W} .msg.user`, { hasText: 'When is the clinic open on Monday?' }).waitFor();
    await page.waitForFunction(`document.querySelector('${W}').shadowRoot.querySelector('.phase').dataset.phase === 'speaking'`);
    await page.waitForFunction('window.__spoken.length >= 2', undefined, { timeout: 30_000 });
    expect(await page.evaluate('window.__spoken[1]')).to.contain('8am to 6pm');
    // A typed line goes through the call too.
    await page.waitForFunction(`document.querySelector('${W}').shadowRoot.querySelector('.phase').dataset.phase === 'listening'`);
    await ask(page, 'And on Saturday?');
    await page.waitForFunction('window.__spoken.length >= 3', undefined, { timeout: 30_000 });
    expect(await axeViolations(page), 'axe in a voice call').to.deep.equal([]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'widget-voice-call.png') });
    await page.locator(`${W} .hangup`).click();
    await page.waitForFunction(`document.querySelector('${W}').shadowRoot.querySelector('.phase').dataset.phase === 'ended'`);
    expect(await phase.textContent()).to.equal('Call ended');
    await page.locator(`${W} .msg.info`, { hasText: 'Voice call ended' }).waitFor();
    expect(await voice.isEnabled()).to.equal(true);
    const call = await t.db('conversations').where({ org_id: orgId, agent_id: agentId, channel: 'voice' }).first();
    expect(call.metadata).to.include({ origin: `http://127.0.0.1:${site.port}` });
    expect(call.metadata.widgetSessionId).to.match(/^cnv_/);
    expect(w.warnings).to.deep.equal([]);
  });

  it('says a speech recognition error once in words and stops listening, so the visitor types instead', async () => {
    // A recognizer with no microphone behind it (Web Speech API error \`audio-capture\`), counting its starts.
    const failing = `window.__starts = 0; window.webkitSpeechRecognition = function () { var r = this; r.start = function () { window.__starts++; setTimeout(function () { r.onerror && r.onerror({ error: 'audio-capture' }); r.onend && r.onend(); }, 5); }; r.stop = r.abort = function () {}; }; window.SpeechRecognition = undefined; speechSynthesis.speak = function (u) { setTimeout(function () { u.onend && u.onend(); }, 20); };`;
    const { page } = await tab(undefined, failing);
    // Playwright's fake clock: time runs on its own until the test moves it on (no real wait below).
    await page.clock.install();
    await page.goto(`http://127.0.0.1:${site.port}/`);
    await page.locator(`${W} .launcher`).click();
    await page.locator(`${W} .msg.agent`, { hasText: 'Ask me anything' }).waitFor();
    await page.locator(`${W} .voice`).click();
    await page.locator(`${W} .msg.notice`, { hasText: 'No microphone was found' }).waitFor();
    // The call's greeting arrives (said, then the call waits for the visitor).
    await until(async () => ((await page.locator(`${W} .msg.agent`).count()) >= 2) || null, 10_000, 'the greeting of the call');
    // Eight seconds of what used to be a restart every 250 ms (32 restarts): nothing more is tried, and it is said once.
    await page.clock.runFor(8000);
    expect(await page.evaluate('window.__starts')).to.equal(1);
    expect(await page.locator(`${W} .msg.notice`, { hasText: 'No microphone was found' }).count()).to.equal(1);
    expect(await page.locator(`${W} .phase`).textContent()).to.equal('Type to talk');
    expect(await page.locator(`${W}`).evaluate((el) => (el as any).shadowRoot.textContent)).to.not.include('audio-capture');
    await page.locator(`${W} .hangup`).click();
  });

  it('shows no launcher on a page whose origin the key does not allow, and warns the site owner in the console', async () => {
    const w = await tab();
    const warned = w.page.waitForEvent('console', { predicate: (m) => m.type() === 'warning' });
    // Same server, reached as localhost: another origin than the one the key allows.
    await w.page.goto(`http://localhost:${site.port}/`);
    await warned;
    expect(w.warnings.join('\n')).to.contain(`http://localhost:${site.port} is not an allowed origin of this publishable key`);
    expect(await w.page.locator(W).count()).to.equal(0);
    expect(await w.page.getByText('This website is not allowed').count()).to.equal(0);
    await w.page.screenshot({ path: path.join(ARTIFACTS, 'widget-refused.png') });
  });
});
