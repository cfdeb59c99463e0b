/**
 * The operator console in headless Chromium (docs/operations.md "Operator console"), over seeded data: a call's
 * conversation with tool calls, knowledge, a guardrail decision and a recording; a running campaign with an answered
 * attempt linked to its conversation; a failing webhook delivery retried from the page; a live chat taken over,
 * answered by the member (the person's message arriving over SSE) and handed back; the analytics charts drawn by
 * chart.js. Every page fails the test on a console error, a page error or a failed request, and on an axe-core
 * violation of serious or critical impact; at 390 px no page is wider than the window.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { publishDraft } from '../api/agents-fixtures';
import { createMember } from '../../db/repositories/team';
import { hashPassword } from '../../services/team/passwords';
import { createVoiceCall, linkCallConversation, recordCallRecording } from '../../db/repositories/voiceCalls';
import { newId } from '../../db/ids';
import { until } from '../helpers/wait';

const PASSWORD = 'a long enough password';

/** A page that records what would make it fail: console errors, page errors, failed requests. */
function watched(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // An EventSource closed by the page leaving is not a failure of the page.
    if (!r.url().endsWith('/events')) problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return problems;
}

/** One second of 8 kHz silence as a WAV data URI: the seeded call's recording. */
function silenceWav(): string {
  const samples = 8000;
  const b = Buffer.alloc(44 + samples);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + samples, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28);
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  b.writeUInt32LE(samples, 40);
  b.fill(128, 44);
  return `data:audio/wav;base64,${b.toString('base64')}`;
}

describe('the operator console in headless Chromium', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  let context: BrowserContext;
  let t: TestApi;
  let origin: string;
  let org: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let versionId: string;
  let axeSource = '';
  const seeded = { callConversation: '', campaign: '', campaignConversation: '', endpoint: '', delivery: '' };

  before(async function () {
    browser = await launchChromium(this);
    axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
    t = await startTestApi('consolebrowser');
    origin = new URL(t.api.baseUrl).origin;
    org = await t.org('Harbor Dental');
    await createMember(t.db, org.orgId, { email: 'admin@harbor.example', name: 'Ada Admin', role: 'admin', passwordHash: await hashPassword(PASSWORD) });
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Harbor Dental, how can I help?' } })).body.data.id;
    await publishDraft(t.db, org, agentId, 'v1');
    versionId = (await t.call('GET', `/agents/${agentId}`, { key: org.key })).body.data.publishedVersionId;
    await seed();
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${origin}/login?next=/console`);
    await page.fill('input[name=email]', 'admin@harbor.example');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/console\/conversations$/);
    await page.close();
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
  });

  /** The seeded data: a call with tools and a recording, a running campaign, a failed delivery. */
  async function seed(): Promise<void> {
    const db = t.db;
    const o = org.orgId;
    // A call whose conversation looked an order up, cited the FAQ, redacted a card number and was recorded.
    const conv = (seeded.callConversation = newId('cnv'));
    await db('conversations').insert({ id: conv, org_id: o, agent_id: agentId, channel: 'voice', mode: 'published', version_id: versionId, status: 'ended', end_reason: 'ended_by_user', turn_count: 1, message_count: 3, counterpart: '+12065550142', started_at: new Date(Date.now() - 120_000), ended_at: new Date(Date.now() - 60_000) });
    const at = new Date(Date.now() - 100_000);
    await db('conversation_messages').insert([
      { id: newId('cmsg'), org_id: o, conversation_id: conv, seq: 0, turn: 0, role: 'assistant', content: 'Harbor Dental, how can I help?', created_at: at },
      { id: newId('cmsg'), org_id: o, conversation_id: conv, seq: 1, turn: 1, role: 'user', content: 'Where is my order of whitening strips?', created_at: at },
      { id: newId('cmsg'), org_id: o, conversation_id: conv, seq: 2, turn: 1, role: 'assistant', content: 'It shipped yesterday with UPS.', created_at: at },
    ]);
    await db('conversation_turns').insert({
      org_id: o,
      conversation_id: conv,
      turn: 1,
      receipt: JSON.stringify({
        turn: 1,
        toolCalls: [{ id: 'call_1', skill: 'order_lookup', type: 'http_request', source: 'model', inputs: { order: 'A-17' }, output: { status: 'shipped' }, durationMs: 182 }],
        knowledge: [{ query: 'order shipping', results: [{ chunkId: 'chk_1', score: 0.82, sourceId: 'ks_1', source: 'Shipping FAQ' }], durationMs: 12 }],
        guardrails: [{ rule: 'redactPii', action: 'redacted', excerpt: 'card', stage: 'input' }],
        latency: [{ stage: 'retrieval', ms: 12 }, { stage: 'llm_first_token', ms: 240 }, { stage: 'tool', ms: 182 }, { stage: 'turn', ms: 610 }],
        playbook: null,
      }),
    });
    const call = await createVoiceCall(db, o, { agentId, versionId, provider: 'sandbox', providerCallId: 'CAseedconsole', direction: 'inbound', from: '+12065550142', to: '+12065550100', status: 'completed' });
    await linkCallConversation(db, o, call.id, conv);
    await recordCallRecording(db, o, call.id, { url: silenceWav(), seconds: 1 });
    // A running campaign: one contact answered (its dial's conversation), one still to dial.
    const listId = newId('cl');
    await db('contact_lists').insert({ id: listId, org_id: o, name: 'Recall list', purpose: 'informational', status: 'ready' });
    const contacts = ['+12065550171', '+12065550172'].map((e164, i) => ({ id: newId('ct'), org_id: o, list_id: listId, row_number: i + 1, e164, status: 'accepted' }));
    await db('contacts').insert(contacts);
    const campaign = (seeded.campaign = newId('cmp'));
    await db('campaigns').insert({ id: campaign, org_id: o, name: 'Cleaning reminders', agent_id: agentId, caller_id_number_id: 'pn_seed', caller_id: '+12065550100', list_id: listId, purpose: 'informational', status: 'running', window_start_minutes: 0, window_end_minutes: 1440, days_of_week: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], max_concurrent_calls: 1, max_attempts: 2, retry_delay_minutes: 60, launched_at: new Date() });
    await db('call_attempts').insert([
      { id: newId('att'), org_id: o, campaign_id: campaign, contact_id: contacts[0].id, e164: contacts[0].e164, zones: [], status: 'answered', dials: 1, last_outcome: 'answered', last_duration_seconds: 42, last_dialed_at: new Date() },
      { id: newId('att'), org_id: o, campaign_id: campaign, contact_id: contacts[1].id, e164: contacts[1].e164, zones: [], status: 'pending' },
    ]);
    const dialConv = (seeded.campaignConversation = newId('cnv'));
    await db('conversations').insert({ id: dialConv, org_id: o, agent_id: agentId, channel: 'voice', mode: 'published', version_id: versionId, status: 'ended', end_reason: 'ended_by_user', campaign_id: campaign, counterpart: contacts[0].e164, outcome: 'answered', duration_seconds: 42, started_at: new Date(Date.now() - 30_000), ended_at: new Date() });
    // A webhook endpoint whose test delivery failed three times.
    const ep = await t.call('POST', '/webhooks', { key: org.key, json: { url: 'https://hooks.harbor.example/acp', eventTypes: ['conversation.ended'] } });
    expect(ep.status, ep.text).to.equal(201);
    seeded.endpoint = ep.body.data.id;
    const test = await t.call('POST', `/webhooks/${seeded.endpoint}/test`, { key: org.key });
    expect(test.status, test.text).to.be.oneOf([200, 201, 202]);
    seeded.delivery = test.body.data.id;
    await db('webhook_deliveries').where({ org_id: o, id: seeded.delivery }).update({ status: 'failed', attempt_count: 3, last_error: 'connect ECONNREFUSED' });
    await db('webhook_outbox').where({ org_id: o, delivery_id: seeded.delivery }).delete();
  }

  /** axe-core's serious and critical violations on the page. */
  async function axeViolations(page: Page): Promise<string[]> {
    // Evaluated through the DevTools protocol, which the page's CSP (no inline script) does not govern.
    if (!(await page.evaluate('typeof axe !== "undefined"'))) await page.evaluate(axeSource);
    const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as { violations: { id: string; impact: string; nodes: { target: unknown }[] }[] };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.map((n) => n.target))}`);
  }

  /** Opens a console page, checks it at 1366 and 390 px (axe, no sideways overflow), and returns it with its problem list. */
  async function visit(pathname: string, name: string): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems = watched(page);
    const res = await page.goto(`${origin}${pathname}`);
    expect(res?.status(), pathname).to.equal(200);
    await page.setViewportSize({ width: 390, height: 844 });
    // Charts resize on the ResizeObserver's next callback: wait for the layout to settle, then measure.
    await page.waitForFunction('document.documentElement.scrollWidth <= 390', undefined, { timeout: 3000 }).catch(() => undefined);
    expect(await page.evaluate('document.documentElement.scrollWidth'), `${pathname} at 390 px`).to.be.at.most(390);
    await page.screenshot({ path: path.join(ARTIFACTS, `console-${name}-390.png`), fullPage: true });
    await page.setViewportSize({ width: 1366, height: 900 });
    await page.screenshot({ path: path.join(ARTIFACTS, `console-${name}-1366.png`), fullPage: true });
    return { page, problems };
  }

  /** Fails on the page's problems and serious axe violations, then closes it. */
  async function done(page: Page, problems: string[]): Promise<void> {
    await page.evaluate('void 0');
    const violations = await axeViolations(page);
    expect(problems, 'console errors and failed requests').to.deep.equal([]);
    expect(violations, 'serious axe violations').to.deep.equal([]);
    await page.close();
  }

  it('lists conversations with filters, and shows a call with its receipt, tools, knowledge, guardrails, recording and workflow', async () => {
    const { page, problems } = await visit('/console/conversations', 'conversations');
    expect(await page.locator('main').textContent()).to.include(seeded.callConversation);
    await page.selectOption('select[name=channel]', 'voice');
    await page.fill('input[name=q]', 'whitening');
    await page.click('form.filters button[type=submit]');
    await page.waitForURL(/q=whitening/);
    const rows = page.locator('main tbody tr');
    expect(await rows.count()).to.equal(1);
    await page.click(`a:has-text("${seeded.callConversation}")`);
    await page.waitForURL(new RegExp(`/console/conversations/${seeded.callConversation}$`));
    const main = (await page.locator('main').textContent()) ?? '';
    for (const text of ['Where is my order of whitening strips?', 'order_lookup', 'succeeded', 'Shipping FAQ', 'redactPii', 'llm_first_token 240 ms', 'Recording']) expect(main, text).to.include(text);
    expect(await page.locator('audio').getAttribute('src')).to.match(/^data:audio\/wav;base64,/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-call.png'), fullPage: true });
    await done(page, problems);
  });

  it('shows a running campaign with its progress and attempts, each answered one linked to its conversation', async () => {
    const { page, problems } = await visit(`/console/campaigns/${seeded.campaign}`, 'campaign');
    const main = (await page.locator('main').textContent()) ?? '';
    expect(main).to.include('running');
    expect(main).to.include('1 of 2 settled (50%)');
    await page.click(`a:has-text("${seeded.campaignConversation}")`);
    await page.waitForURL(new RegExp(`/console/conversations/${seeded.campaignConversation}$`));
    await done(page, problems);
  });

  it('retries a failed webhook delivery from the page', async () => {
    const { page, problems } = await visit('/console/webhooks', 'webhooks');
    expect(await page.locator('main').textContent()).to.include('connect ECONNREFUSED');
    await page.click(`button:has-text("Retry ${seeded.delivery}")`);
    await page.locator('.notice').waitFor();
    expect(await page.locator('.notice').textContent()).to.equal(`Delivery ${seeded.delivery} is being retried.`);
    const row = await t.db('webhook_deliveries').where({ org_id: org.orgId, id: seeded.delivery }).first();
    expect(row.status).to.not.equal('failed');
    expect(row.run).to.equal(2);
    await done(page, problems);
  });

  it('follows a live chat, takes it over, answers the person and hands it back', async () => {
    const chat = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id as string;
    const { page, problems } = await visit('/console/live', 'live');
    await page.click(`a:has-text("${chat}")`);
    await page.waitForURL(new RegExp(`/console/live/${chat}$`));
    await page.click('button:has-text("Take over")');
    await page.locator('button:has-text("Hand back to the agent")').waitFor();
    // The person writes: the agent stays silent and the line arrives on the page over SSE.
    const held = await t.call('POST', `/chat/sessions/${chat}/messages`, { key: org.key, json: { content: 'Can a person help me with my bill?' } });
    expect(held.body.data.reply).to.equal(null);
    await page.locator('ol.transcript li.user', { hasText: 'Can a person help me with my bill?' }).waitFor();
    await page.fill('form.control textarea[name=content] >> nth=0', 'Hi, this is Ada from billing. Let me look.');
    await page.click('button:has-text("Send")');
    await page.locator('ol.transcript li.operator', { hasText: 'Hi, this is Ada from billing.' }).waitFor();
    const session = await t.call('GET', `/chat/sessions/${chat}`, { key: org.key });
    expect(session.body.data.messages.map((m: { content: string }) => m.content)).to.include('Hi, this is Ada from billing. Let me look.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-live-taken-over.png'), fullPage: true });
    await page.click('button:has-text("Hand back to the agent")');
    await page.locator('button:has-text("Take over")').waitFor();
    const answered = await t.call('POST', `/chat/sessions/${chat}/messages`, { key: org.key, json: { content: 'Thanks! And your opening hours?' } });
    expect(answered.body.data.reply?.content).to.be.a('string');
    await until(async () => (await page.locator('ol.transcript li.agent').count()) >= 2 || null, 10_000, 'the agent answering on the live page');
    await done(page, problems);
  });

  it('draws the analytics charts with chart.js, and the other pages hold at 390 px', async () => {
    const { page, problems } = await visit('/console/analytics', 'analytics');
    await page.waitForFunction("typeof Chart === 'function' && !!Chart.getChart(document.getElementById('chart-volume'))");
    expect(await page.evaluate("['chart-volume','chart-outcomes','chart-latency','chart-spend'].every((id) => !!Chart.getChart(document.getElementById(id)))")).to.equal(true);
    await done(page, problems);
    for (const [p, name] of [
      ['/console/calls', 'calls'],
      ['/console/campaigns', 'campaigns'],
      ['/console/sms', 'sms'],
      ['/console/agents', 'agents'],
    ]) {
      const v = await visit(p, name);
      await done(v.page, v.problems);
    }
  });
});
