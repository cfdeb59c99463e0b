/**
 * The voice test page in a real browser (docs/voice.md "Voice talk token"): headless Chromium (as the
 * widget's browser test) opens `/api/v1/voice/talk?token=…` with a voice talk token, sees whom it talks to,
 * presses Start, hears the greeting, types a line and sees the streamed answer over the relay's
 * ConversationRelay frames, presses keypad buttons (only where the agent takes keypad input) and hangs up;
 * an invalid or expired link says so before any call. Any console error fails a test. Screenshots go to
 * test-artifacts/. Skipped with a message when no Chromium is installed, except under CI.
 */
import path from 'node:path';
import { expect } from 'chai';
import { type Browser, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { signTalkToken } from '../../api/agents/talkToken';
import { talkTokenSecret } from '../../db/repositories/agentVersions';
import { publishDraft } from '../api/agents-fixtures';

const INVALID = 'This link is invalid or has expired — ask for a new one';

describe('the voice test page in headless Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let t: TestApi | undefined;
  let consoleErrors: string[] = [];

  before(async function () {
    browser = await launchChromium(this);
    t = await startTestApi('voicepage');
  });
  beforeEach(() => {
    consoleErrors = [];
  });
  afterEach(() => {
    expect(consoleErrors, 'console errors').to.deep.equal([]);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** @param initScript run before the page's own script (e.g. to stand in for the Web Speech API) */
  async function open(token: string, initScript?: string): Promise<Page> {
    const page = await browser!.newPage();
    if (initScript) await page.addInitScript(initScript);
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (err) => consoleErrors.push(err.message));
    await page.goto(`${t!.api.baseUrl}/voice/talk?token=${encodeURIComponent(token)}`);
    return page;
  }

  async function talkToken(key: string, agentId: string, json: Record<string, unknown>): Promise<string> {
    return (await t!.call('POST', `/agents/${agentId}/talk-token`, { key, json: { channel: 'voice', ...json } })).body.data.token;
  }

  it('starts a call on Start, talks to the draft agent by typing, shows speech errors, echoes keypad presses and hangs up', async () => {
    const org = await t!.org('Page Co');
    const agentId = (await t!.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', greeting: 'Hello from the draft desk.', dtmf: { enabled: true } } })).body.data.id;
    // A recognizer that fails as one without network access does (Web Speech API's `error` event, code `network`).
    const failingRecognizer = `window.webkitSpeechRecognition = function () { var r = this; r.start = function () { setTimeout(function () { r.onstart(); r.onerror({ error: 'network' }); r.onend(); }, 10); }; r.stop = r.abort = function () {}; }; window.SpeechRecognition = undefined;`;
    const page = await open(await talkToken(org.key, agentId, { draftMode: true }), failingRecognizer);
    await page.locator('#agent').waitFor();
    expect(await page.locator('#agent').textContent()).to.equal('Desk · draft 1');
    // The call does not start on load: no conversation until Start.
    expect(await page.locator('#phase').getAttribute('data-phase')).to.equal('idle');
    expect(await page.locator('#hangup').isDisabled()).to.equal(true);
    expect(await t!.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).first()).to.equal(undefined);
    expect(await page.locator('#keypad').isVisible()).to.equal(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'voice-talk-ready.png') });

    await page.click('#start');
    await page.locator('#log .agent').first().waitFor();
    expect(await page.locator('#log .agent').first().textContent()).to.equal('Hello from the draft desk.');
    await page.waitForFunction("document.getElementById('phase').dataset.phase === 'listening'");
    await page.fill('#line', 'Hello, can you hear me?');
    await page.press('#line', 'Enter');
    await page.locator('#log .agent').nth(1).waitFor();
    await page.waitForFunction("(document.querySelectorAll('#log .agent')[1]?.textContent ?? '').length > 5");
    expect(await page.locator('#log .you').first().textContent()).to.equal('Hello, can you hear me?');
    expect(await page.locator('#status').textContent()).to.equal('Connected');
    await page.click('#mic');
    await page.locator('#speech-error').waitFor();
    // Said in words, never the Web Speech API's raw code.
    expect(await page.locator('#speech-error').textContent()).to.equal('Speech recognition could not reach its service. Type instead.');
    expect(await page.locator('#mic').textContent()).to.equal('Speak');

    // A 3×4 keypad whose presses are echoed.
    const boxes = await page.locator('#keys button').evaluateAll((els) => els.map((el) => el.getBoundingClientRect()).map((r) => [Math.round(r.left), Math.round(r.top)]));
    expect(new Set(boxes.map((b) => b[0])).size).to.equal(3);
    expect(new Set(boxes.map((b) => b[1])).size).to.equal(4);
    for (const k of ['4', '2', '#']) await page.click(`#keys button[data-key="${k}"]`);
    expect(await page.locator('#digits').textContent()).to.equal('42#');
    // The keypad input is the caller's line in the transcript too.
    expect(await page.locator('#log .you').last().textContent()).to.equal('Keypad: 42#');
    // It wears the shared frame: the product's header and the one stylesheet.
    expect(await page.locator('header.brand').textContent()).to.include('Agent Control Plane');
    expect(await page.locator('main.card').evaluate((el) => (globalThis as any).getComputedStyle(el).borderTopLeftRadius)).to.equal('12px');
    await page.screenshot({ path: path.join(ARTIFACTS, 'voice-talk-call.png') });

    await page.click('#hangup');
    await page.waitForFunction("document.getElementById('phase').dataset.phase === 'ended'");
    expect(await page.locator('#status').textContent()).to.match(/^Call ended/);
    expect(await page.locator('#start').isEnabled()).to.equal(true);
    // A new call starts without the last call's speech error.
    await page.click('#start');
    await page.locator('#log .agent').first().waitFor();
    expect(await page.locator('#speech-error').isVisible()).to.equal(false);
    await page.click('#hangup');
    await page.waitForFunction("document.getElementById('phase').dataset.phase === 'ended'");
    const stored = await t!.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).first();
    expect(stored).to.include({ channel: 'voice', mode: 'draft' });
    await page.close();
  });

  it('shows the published version, no keypad when the agent takes no keypad input, and a Speak button that says the browser cannot', async () => {
    const org = await t!.org('Keyless Co');
    const agentId = (await t!.call('POST', '/agents', { key: org.key, json: { name: 'Front', voiceId: 'voice_ava', greeting: 'Front desk.' } })).body.data.id;
    await publishDraft(t!.db, org, agentId, 'pub-1');
    const page = await open(await talkToken(org.key, agentId, {}), 'delete window.webkitSpeechRecognition; delete window.SpeechRecognition;');
    await page.locator('#agent').waitFor();
    expect(await page.locator('#agent').textContent()).to.equal('Front · version 1');
    await page.click('#start');
    await page.locator('#log .agent').first().waitFor();
    expect(await page.locator('#keypad').isVisible()).to.equal(false);
    // Without the Web Speech API the Speak button says so.
    expect(await page.locator('#mic').textContent()).to.equal('Speaking needs a browser with speech recognition');
    expect(await page.locator('#mic').isDisabled()).to.equal(true);
    await page.click('#hangup');
    await page.waitForFunction("document.getElementById('phase').dataset.phase === 'ended'");
    await page.close();
  });

  it('says an invalid or expired link is so before any call starts', async () => {
    const org = await t!.org('Expired Co');
    const agentId = (await t!.call('POST', '/agents', { key: org.key, json: { name: 'Late', voiceId: 'voice_ava' } })).body.data.id;
    const secret = await talkTokenSecret(t!.db, org.orgId);
    const expired = signTalkToken({ v: 1, org: org.orgId, agt: agentId, ver: null, dv: 1, ch: 'voice', exp: Math.floor(Date.now() / 1000) - 60, jti: 'jti_expired' }, secret);
    for (const token of [expired, 'tt_forged.sig', '']) {
      const page = await open(token);
      await page.locator('#invalid').waitFor();
      expect(await page.locator('#invalid').textContent()).to.equal(INVALID);
      expect(await page.locator('#start').isVisible()).to.equal(false);
      if (token === expired) await page.screenshot({ path: path.join(ARTIFACTS, 'voice-talk-invalid.png') });
      await page.close();
    }
    // The info endpoint names nothing for a refused token.
    const res = await fetch(`${t!.api.baseUrl}/voice/talk/info?token=${encodeURIComponent(expired)}`);
    expect(await res.json()).to.deep.equal({ valid: false });
  });
});
