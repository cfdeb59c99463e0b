/**
 * The operator console at `/console` (docs/operations.md "Operator console"): server-rendered pages for the members
 * signed in at `/login` (api/oauth/session.ts), of their organization only. Every page reads through the API's own
 * operations as the member, with the scopes of the member's role (./operations.ts): viewers read; owners, admins and
 * developers also act (step into a live conversation, retry a delivery, replay events). Forms carry the session's
 * CSRF token; a refusal is a styled page with the API's status (403, 404, 409). The console's script (the live
 * transcript over SSE and the charts) is a bundle of `console/src/console.ts` served from this origin, as are its
 * stylesheet and chart.js's UMD build.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AppContext, AppDeps } from '../context';
import { ApiError } from '../../domain/errors';
import { currentSession } from '../oauth/session';
import { checkCsrf, field, readForm } from '../oauth/forms';
import { getOrganization } from '../../db/repositories/organizations';
import type { Member } from '../../db/repositories/team';
import { latencyPercentiles, outcomeCounts } from '../../db/repositories/console';
import { openLiveStream } from '../../services/conversations/live';
import { CONSOLE_ASSETS, CONSOLE_CSS, consolePage, esc, type Viewer } from './render';
import { conversationList, conversationPage, liveList, livePage } from './conversations';
import { agentsPage, analyticsPage, callsPage, campaignPage, campaignsPage, smsPage, webhooksPage } from './work';
import { callOperation, may } from './operations';
import { consoleBundle } from './bundle';

type Page = (ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, id: string) => Promise<void>;

/** GET pages: a path pattern and its page (the captured id, if any, is its last argument). */
const PAGES: [RegExp, Page][] = [
  [/^\/console\/?$/, async (ctx) => ctx.redirect('/console/conversations')],
  [/^\/console\/conversations$/, (ctx, d, m, v) => conversationList(ctx, d, m, v)],
  [/^\/console\/conversations\/([^/]+)$/, conversationPage],
  [/^\/console\/live$/, (ctx, d, m, v) => liveList(ctx, d, m, v)],
  [/^\/console\/live\/([^/]+)$/, (ctx, d, m, v, id) => livePage(ctx, d, m, v, id)],
  [/^\/console\/calls$/, (ctx, d, m, v) => callsPage(ctx, d, m, v)],
  [/^\/console\/campaigns$/, (ctx, d, m, v) => campaignsPage(ctx, d, m, v)],
  [/^\/console\/campaigns\/([^/]+)$/, campaignPage],
  [/^\/console\/sms$/, (ctx, d, m, v) => smsPage(ctx, d, m, v)],
  [/^\/console\/webhooks$/, (ctx, d, m, v) => webhooksPage(ctx, d, m, v)],
  [/^\/console\/agents$/, (ctx, d, m, v) => agentsPage(ctx, d, m, v)],
  [/^\/console\/analytics$/, analytics],
];

const CHART_JS = path.join(path.dirname(require.resolve('chart.js')), 'chart.umd.js');

/** Builds the middleware; paths outside `/console` pass through. */
export function consolePages(deps: AppDeps): (ctx: AppContext, next: () => Promise<unknown>) => unknown {
  return (ctx, next) => (ctx.path === '/console' || ctx.path.startsWith('/console/') ? serve(ctx, deps) : next());
}

async function serve(ctx: AppContext, deps: AppDeps): Promise<void> {
  if (ctx.path.startsWith('/console/assets/')) return asset(ctx);
  const current = await currentSession(ctx, deps);
  if (!current) {
    // Signed out (or the session ended): sign in, then come back here.
    ctx.status = 303;
    ctx.redirect(`/login?next=${encodeURIComponent(ctx.method === 'GET' ? ctx.originalUrl : '/console')}`);
    return;
  }
  const { member, session } = current;
  const v: Viewer = { organization: (await getOrganization(deps.db, member.orgId))?.name ?? '', email: member.email, role: member.role, csrf: session.csrfToken };
  try {
    if (ctx.method === 'POST') return await submit(ctx, deps, member, v, session.csrfToken);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new ApiError(405, 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`, { headers: { Allow: 'GET' } });
    const events = /^\/console\/live\/([^/]+)\/events$/.exec(ctx.path);
    if (events) return await liveEvents(ctx, deps, member, decode(events[1]));
    for (const [re, page] of PAGES) {
      const m = re.exec(ctx.path);
      if (m) return await page(ctx, deps, member, v, m[1] ? decode(m[1]) : '');
    }
    throw new ApiError(404, 'route_not_found', `There is no console page at ${ctx.path}`);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status >= 500) throw err;
    refusal(ctx, v, err);
  }
}

/** A path segment decoded; a malformed escape (`%zz`) is a page that does not exist, never a 500. */
function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(404, 'route_not_found', 'There is no console page at this address');
  }
}

/** A refusal as a console page: what the API answered, in words. */
function refusal(ctx: AppContext, v: Viewer, err: ApiError): void {
  const title = err.status === 403 ? 'Not allowed' : err.status === 404 ? 'Not found' : err.status === 409 ? 'Not possible now' : 'Not accepted';
  const detail = err.status === 403 && err.code === 'insufficient_scope' ? `Your role (${v.role}) may not do this. ${err.message}.` : err.message;
  const fields = err.errors?.length ? `<ul>${err.errors.map((e) => `<li><strong>${esc(e.field)}</strong>: ${esc(e.message)}</li>`).join('')}</ul>` : '';
  consolePage(ctx, v, '', title, `<p class="error" role="alert">${esc(detail)}</p>${fields}<p><a href="/console/conversations">Back to the console</a></p>`, { status: err.status });
}

/** POST: a control on a live conversation, a delivery's retry, a replay. CSRF-checked, then the API operation. */
async function submit(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, csrf: string): Promise<void> {
  const form = await readForm(ctx);
  checkCsrf(form, csrf);
  const control = /^\/console\/live\/([^/]+)\/control$/.exec(ctx.path);
  if (control) {
    const id = decode(control[1]);
    const body: Record<string, string> = { action: field(form, 'action') };
    if (field(form, 'content')) body.content = field(form, 'content');
    if (field(form, 'to')) body.to = field(form, 'to');
    try {
      await callOperation(ctx, deps, member, 'controlConversation', { params: { id }, body });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 404) throw err;
      // The live page again, with the refusal on top and its status (403 for a viewer, 409 once it ended).
      return livePage(ctx, deps, member, v, id, { status: err.status, message: err.status === 403 ? `Your role (${member.role}) may watch but not step in.` : err.message });
    }
    ctx.status = 303;
    ctx.redirect(`/console/live/${encodeURIComponent(id)}`);
    return;
  }
  const retry = /^\/console\/webhooks\/([^/]+)\/deliveries\/([^/]+)\/retry$/.exec(ctx.path);
  if (retry) {
    await callOperation(ctx, deps, member, 'retryWebhookDelivery', { params: { id: decode(retry[1]), deliveryId: decode(retry[2]) } });
    return webhooksPage(ctx, deps, member, v, `Delivery ${decode(retry[2])} is being retried.`);
  }
  const replay = /^\/console\/webhooks\/([^/]+)\/replay$/.exec(ctx.path);
  if (replay) {
    const since = field(form, 'since');
    const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(since) ? `${since}:00Z` : since;
    await callOperation(ctx, deps, member, 'replayWebhook', { params: { id: decode(replay[1]) }, body: { since: iso } });
    return webhooksPage(ctx, deps, member, v, `Events since ${iso} are being replayed.`);
  }
  throw new ApiError(404, 'route_not_found', `There is no console form at ${ctx.path}`);
}

/** GET /console/live/{id}/events: the live stream (services/conversations/live.ts) while the session lasts. */
async function liveEvents(ctx: AppContext, deps: AppDeps, member: Member, id: string): Promise<void> {
  if (!may(member, 'streamConversation')) throw new ApiError(403, 'insufficient_scope', 'Your role may not follow conversations (calls:read)');
  const stream = await openLiveStream(deps.db, member.orgId, id, {
    // The stream ends with the sign-in session (signed out elsewhere, expired).
    stillAllowed: async () => !!(await currentSession(ctx, deps)),
    onError: (err) => ctx.state.log.warn({ err }, 'console live stream failed'),
  });
  ctx.req.socket.setNoDelay(true);
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.type = 'text/event-stream; charset=utf-8';
  ctx.body = stream;
}

/** GET /console/analytics: the last 30 days unless `from`/`to` say otherwise. */
async function analytics(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  const to = new Date().toISOString();
  const from = new Date(Date.now() - 30 * 86_400_000).toISOString();
  if (!may(member, 'getAnalyticsOverview')) throw new ApiError(403, 'insufficient_scope', 'Your role may not read analytics');
  const [latency, outcomes] = await Promise.all([latencyPercentiles(deps.db, member.orgId, from, to), outcomeCounts(deps.db, member.orgId, from, to)]);
  return analyticsPage(ctx, deps, member, v, latency, outcomes);
}

/** The console's static assets. */
async function asset(ctx: AppContext): Promise<void> {
  const types: Record<string, [string, () => Promise<string> | string]> = {
    [CONSOLE_ASSETS.css]: ['text/css; charset=utf-8', () => CONSOLE_CSS],
    [CONSOLE_ASSETS.js]: ['text/javascript; charset=utf-8', () => consoleBundle()],
    [CONSOLE_ASSETS.chart]: ['text/javascript; charset=utf-8', () => fs.promises.readFile(CHART_JS, 'utf8')],
  };
  const hit = types[ctx.path];
  if (!hit || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) throw new ApiError(404, 'route_not_found', `No asset ${ctx.path}`);
  ctx.type = hit[0];
  ctx.set('Cache-Control', 'public, max-age=300');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = await hit[1]();
}
