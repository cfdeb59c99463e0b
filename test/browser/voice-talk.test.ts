/**
 * The voice test page in a real browser (docs/voice.md): headless Chromium (as the widget's
 * browser test) opens `/api/v1/voice/talk?token=…` with a draft voice talk token, hears the greeting,
 * types a line and sees the streamed answer, spoken over the relay's ConversationRelay frames. Skipped
 * with a message when no Chromium is installed, except under CI.
 */
import { expect } from 'chai';
import { type Browser } from 'playwright-core';
import { launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';


describe('the voice test page in headless Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let t: TestApi | undefined;

  before(async function () {
    browser = await launchChromium(this);
    t = await startTestApi('voicepage');
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('talks to the draft agent by typing over the relay', async () => {
    const org = await t!.org('Page Co');
    const agentId = (await t!.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', greeting: 'Hello from the draft desk.' } })).body.data.id;
    const token = (await t!.call('POST', `/agents/${agentId}/talk-token`, { key: org.key, json: { draftMode: true, channel: 'voice' } })).body.data.token;
    const page = await browser!.newPage();
    await page.goto(`${t!.api.baseUrl}/voice/talk?token=${encodeURIComponent(token)}`);
    await page.locator('#log .agent').first().waitFor();
    expect(await page.locator('#log .agent').first().textContent()).to.equal('Hello from the draft desk.');
    await page.fill('#line', 'Hello, can you hear me?');
    await page.press('#line', 'Enter');
    await page.locator('#log .agent').nth(1).waitFor();
    await page.waitForFunction("(document.querySelectorAll('#log .agent')[1]?.textContent ?? '').length > 5");
    expect(await page.locator('#log .you').first().textContent()).to.equal('Hello, can you hear me?');
    expect(await page.locator('#status').textContent()).to.equal('Connected');
    // It wears the shared frame: the product's header and the one stylesheet.
    expect(await page.locator('header.brand').textContent()).to.include('Agent Control Plane');
    expect(await page.locator('main.card').evaluate((el) => (globalThis as any).getComputedStyle(el).borderTopLeftRadius)).to.equal('12px');
    const stored = await t!.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).first();
    expect(stored).to.include({ channel: 'voice', mode: 'draft' });
    await page.close();
  });
});
