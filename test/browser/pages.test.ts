/**
 * The pages around the API in a real browser (docs/api-notes.md "Reference, landing page and index";
 * docs/team-and-oauth.md "Pages"): headless Chromium opens `/docs` (Scalar's API reference, served from
 * this origin: it renders an operation with its request schema, and its search finds an operation, while
 * no request leaves loopback), the landing page `/`, and the sign-in, consent and invitation pages (the
 * shared stylesheet is applied, the product and organization are named, Allow is the primary action, and
 * after joining the sign-in page says the password is set with the address filled in). Every page fails
 * the test on a console error, a page error or a failed request. Screenshots go to `test-artifacts/`.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ARTIFACTS, launchChromium } from '../helpers/chromium';
import { startTestApi, type TestApi } from '../helpers/api';
import { SandboxMailer } from '../../providers/mailer/sandbox';
import { createMember } from '../../db/repositories/team';
import { hashPassword } from '../../services/team/passwords';

const PASSWORD = 'a long enough password';

/** A page that records what would make it fail: console errors, page errors, failed requests, and every URL it asked for. */
function watched(page: Page): { problems: string[]; urls: string[] } {
  const problems: string[] = [];
  const urls: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  page.on('request', (r) => urls.push(r.url()));
  return { problems, urls };
}

/** The computed value of a CSS property of the first element matching `selector`. */
function style(page: Page, selector: string, property: string): Promise<string> {
  // Runs in the page (this project's tsconfig has no DOM types).
  return page.locator(selector).first().evaluate((el, p) => (globalThis as any).getComputedStyle(el).getPropertyValue(p), property);
}

describe('the pages around the API in headless Chromium', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  let t: TestApi;
  let origin: string;
  const mailer = new SandboxMailer();
  let org: { orgId: string; key: string };

  before(async function () {
    browser = await launchChromium(this);
    t = await startTestApi('pagesbrowser', {}, { providers: { mailer } });
    origin = new URL(t.api.baseUrl).origin;
    org = await t.org('Bright Dental');
    await createMember(t.db, org.orgId, { email: 'owner@bright.example', name: 'Olivia Owner', role: 'owner', passwordHash: await hashPassword(PASSWORD) });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh browser context at 1280 × 800, the width the pages were checked at. */
  async function open(): Promise<{ context: BrowserContext; page: Page; seen: ReturnType<typeof watched> }> {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    return { context, page, seen: watched(page) };
  }

  it('renders the API reference offline: an operation with its request schema, and search finds an operation', async () => {
    const { context, page, seen } = await open();
    // Anything not on loopback would be a CDN, font or telemetry call: refuse it, and record it.
    const outside: string[] = [];
    await context.route(/.*/, (route) => {
      const host = new URL(route.request().url()).hostname;
      if (host === '127.0.0.1' || host === 'localhost' || route.request().url().startsWith('data:')) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    await page.goto(`${origin}/docs`);
    // The sidebar lists operations by tag; open "Create an agent".
    const heading = page.getByRole('heading', { name: 'Create an agent' });
    await page.getByText('Agents', { exact: true }).first().waitFor({ timeout: 60_000 });
    await page.goto(`${origin}/docs#tag/agents/POST/agents`);
    await heading.first().waitFor({ timeout: 30_000 });
    await heading.first().scrollIntoViewIfNeeded();
    // Its request body schema: AgentCreate's fields, with the example.
    const section = page.locator('section', { has: heading.first() }).first();
    await section.getByText('instructions', { exact: true }).first().waitFor();
    expect(await section.textContent()).to.include('Unique per organization');
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-operation.png') });
    // Search (the sidebar's search, also Ctrl+K): finds "Publish the draft as a new frozen version".
    await page.keyboard.press('Control+k');
    const search = page.getByRole('combobox').or(page.getByPlaceholder(/search/i)).first();
    await search.waitFor();
    await search.fill('publish the draft');
    const hit = page.getByRole('option', { name: /Publish the draft/ }).first();
    await hit.waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-search.png') });
    // The webhook events are there too, each with its payload schema.
    await page.keyboard.press('Escape');
    await page.getByRole('button', { name: 'Open Group - Webhook events' }).click();
    await page.getByRole('link', { name: 'agent.published' }).first().click();
    const event = page.getByRole('heading', { name: 'agent.published' }).first();
    await event.waitFor();
    const payload = page.locator('section', { has: event }).first();
    await payload.getByText('AgentPublishedEventData').first().waitFor();
    expect(await payload.innerText()).to.include('webhook-signature').and.include('publishedAt');
    await event.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-webhook.png') });
    expect(outside).to.deep.equal([]);
    expect(seen.urls.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).to.deep.equal([]);
    expect(seen.problems).to.deep.equal([]);
    await context.close();
  });

  it('shows a styled landing page at / with its links and the favicon', async () => {
    const { context, page, seen } = await open();
    await page.goto(`${origin}/`);
    expect(await page.locator('header.brand').textContent()).to.include('Agent Control Plane');
    expect(await page.locator('.links a').allTextContents()).to.include.members(['API reference', 'OpenAPI document', 'Health']);
    expect(await style(page, 'body', 'background-color')).to.equal('rgb(245, 246, 250)');
    expect(await style(page, 'main.card', 'border-top-left-radius')).to.equal('12px');
    const icon = await page.request.get(`${origin}/favicon.ico`);
    expect(icon.headers()['content-type']).to.equal('image/svg+xml');
    expect(seen.urls).to.include(`${origin}/assets/site.css`).and.include(`${origin}/favicon.svg`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'landing.png') });
    expect(seen.problems).to.deep.equal([]);
    await context.close();
  });

  it('styles the sign-in and consent pages, names the organization and the scopes, with Allow as the primary action', async () => {
    // The app: a loopback redirect URI (RFC 8252 §7.3), so nothing leaves the machine.
    const app = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>callback</title>'));
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    const client = await t.call('POST', '/oauth-clients', {
      key: org.key,
      json: { name: 'Acme Sync', redirectUris: [callback], scopes: ['agents:read', 'agents:write'] },
    });
    expect(client.status, client.text).to.equal(201);
    const { context, page, seen } = await open();
    const verifier = crypto.randomBytes(32).toString('base64url');
    const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
    const authorize = `/oauth/authorize?response_type=code&client_id=${client.body.data.id}&redirect_uri=${encodeURIComponent(callback)}&scope=${encodeURIComponent('agents:read agents:write')}&state=xyz&code_challenge=${challenge}&code_challenge_method=S256`;
    await page.goto(`${origin}${authorize}`);
    expect(new URL(page.url()).pathname).to.equal('/login');
    // The sign-in page knows which organization the app belongs to.
    expect(await page.locator('header.brand').textContent()).to.include('Agent Control Plane').and.include('Bright Dental');
    expect(await style(page, 'button.primary', 'background-color')).to.equal('rgb(59, 75, 216)');
    expect(await page.locator('#forgot').textContent()).to.include('owner or admin');
    await page.screenshot({ path: path.join(ARTIFACTS, 'login.png') });
    await page.fill('input[name=email]', 'owner@bright.example');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/oauth\/authorize/);
    const main = await page.locator('main').textContent();
    expect(main).to.include('Acme Sync').and.include('Bright Dental');
    expect((await page.locator('.scopes label').allTextContents()).map((l) => l.trim())).to.deep.equal(['See your agents agents:read', 'Create, change and delete your agents agents:write']);
    const allow = page.locator('button[value=allow]');
    expect(await style(page, 'button[value=allow]', 'background-color')).to.equal('rgb(59, 75, 216)');
    expect(await style(page, 'button[value=deny]', 'background-color')).to.not.equal('rgb(59, 75, 216)');
    await page.screenshot({ path: path.join(ARTIFACTS, 'consent.png') });
    await allow.click();
    await page.waitForURL(/\/callback\?code=.*state=xyz/);
    expect(seen.problems).to.deep.equal([]);
    await context.close();
    app.closeAllConnections();
    await new Promise((r) => app.close(r));
  });

  it('styles the invitation page with the organization and inviter, then signs in with the address filled in', async () => {
    const invited = await t.call('POST', '/team/invitations', { key: org.key, json: { email: 'new@bright.example', role: 'developer' } });
    expect(invited.status, invited.text).to.equal(201);
    const link = new URL(/https?:\/\/\S+\/invitations\/accept\?token=\S+/.exec(mailer.sent.at(-1)!.text)![0]);
    const { context, page, seen } = await open();
    await page.goto(`${origin}${link.pathname}${link.search}`);
    expect(await page.locator('h1').textContent()).to.equal('Join Bright Dental');
    expect(await page.locator('header.brand').textContent()).to.include('Bright Dental');
    expect(await page.locator('main p').first().textContent()).to.equal('An owner invited new@bright.example to join Bright Dental as developer. Set a password (at least 12 characters) to accept.');
    expect(await style(page, 'main.card', 'border-top-left-radius')).to.equal('12px');
    expect(await style(page, 'button.primary', 'background-color')).to.equal('rgb(59, 75, 216)');
    await page.screenshot({ path: path.join(ARTIFACTS, 'invitation.png') });
    await page.fill('input[name=name]', 'Nina New');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/login\?joined=1/);
    expect(await page.locator('.notice').textContent()).to.include('Your password is set');
    expect(await page.inputValue('input[name=email]')).to.equal('new@bright.example');
    expect(await page.locator('header.brand').textContent()).to.include('Bright Dental');
    await page.screenshot({ path: path.join(ARTIFACTS, 'joined-login.png') });
    await page.fill('input[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/login$/);
    expect(await page.locator('main').textContent()).to.include('Signed in as new@bright.example');
    expect(seen.problems).to.deep.equal([]);
    await context.close();
    // A used link answers the error page, in the same frame.
    const { context: other, page: error } = await open();
    const gone = await error.goto(`${origin}${link.pathname}${link.search}`);
    expect(gone!.status()).to.equal(410);
    expect(await error.locator('h1').textContent()).to.equal('Invitation not valid');
    expect(await error.locator('header.brand').textContent()).to.include('Agent Control Plane');
    expect(await style(error, 'main.card', 'border-top-left-radius')).to.equal('12px');
    await other.close();
  });
});
