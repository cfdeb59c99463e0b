/**
 * The voice test page in a real browser (README "Voice calls"): headless Chromium (as the widget's
 * browser test) opens `/api/v1/voice/talk?token=…` with a draft voice talk token, hears the greeting,
 * types a line and sees the streamed answer, spoken over the relay's ConversationRelay frames. Skipped
 * with a message when no Chromium is installed, except under CI.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { startTestApi, type TestApi } from '../helpers/api';

function findChromium(): string | undefined {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  return candidates.find((p): p is string => !!p && fs.existsSync(p));
}

describe('the voice test page in headless Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let t: TestApi | undefined;

  before(async function () {
    const executablePath = findChromium();
    if (!executablePath) {
      if (process.env.CI) throw new Error('No Chromium found; set CHROMIUM_PATH');
      console.warn('    (skipped: no Chromium found; install Debian\'s chromium or set CHROMIUM_PATH)');
      this.skip();
    }
    browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
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
    const stored = await t!.db('conversations').where({ org_id: org.orgId, agent_id: agentId }).first();
    expect(stored).to.include({ channel: 'voice', mode: 'draft' });
    await page.close();
  });
});
