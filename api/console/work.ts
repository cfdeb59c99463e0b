/**
 * The console's pages of the organization's work (docs/operations.md "Operator console"): calls, campaigns (progress,
 * attempts with outcome and their conversations), the 10DLC registration with its status timeline, texts, webhook
 * endpoints with their deliveries (retry a delivery, replay events since a time), agents (versions, traffic split,
 * evaluation runs) and analytics drawn with chart.js.
 */
import type { AppContext, AppDeps } from '../context';
import type { Member } from '../../db/repositories/team';
import type { Call } from '../../schemas/types/calls';
import type { Campaign, CallAttempt } from '../../schemas/types/outbound';
import type { ConversationSummary, Analytics } from '../../schemas/types/observe';
import type { SmsRegistration } from '../../schemas/types/sms';
import type { WebhookDelivery, WebhookEndpoint } from '../../schemas/types/webhooks';
import type { AgentVersion, TrafficSplit } from '../../schemas/types/versions';
import type { EvalRun, EvalSuite } from '../../schemas/types/evals';
import { agentNames, listTexts, registrationTimeline } from '../../db/repositories/console';
import { callOperation, may } from './operations';
import { actionButton, badge, consolePage, esc, facts, idLink, pager, table, when, type Viewer } from './render';
import { hidden } from '../oauth/forms';
import { ApiError } from '../../domain/errors';

function one(ctx: AppContext, name: string): string | undefined {
  const v = ctx.query[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

const convLink = (id: string | null | undefined) => idLink(id, id ? `/console/conversations/${encodeURIComponent(id)}` : undefined);

/** GET /console/calls */
export async function callsPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  const cursor = one(ctx, 'cursor');
  const { data } = await callOperation<{ items: Call[]; nextCursor: string | null }>(ctx, deps, member, 'listCalls', { query: { cursor, limit: '50' } });
  const rows = data.items.map((c) => [
    idLink(c.id),
    esc(c.direction),
    esc(c.source),
    esc(`${c.from} → ${c.to}`),
    badge(c.status),
    esc(c.outcome ?? c.failureReason ?? '—'),
    c.durationSeconds === null ? '—' : `${c.durationSeconds} s`,
    c.recording ? 'yes' : '—',
    convLink(c.conversationId),
    when(c.createdAt),
  ]);
  consolePage(ctx, v, '/console/calls', 'Calls', table(['Call', 'Direction', 'Source', 'Numbers', 'Status', 'Outcome', 'Length', 'Recording', 'Conversation', 'Created'], rows, 'No calls yet.') + pager('/console/calls', {}, data.nextCursor));
}

/** GET /console/campaigns */
export async function campaignsPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  const { data } = await callOperation<{ items: Campaign[] }>(ctx, deps, member, 'listCampaigns', { query: { limit: '100' } });
  const rows = data.items.map((c) => [idLink(c.id, `/console/campaigns/${encodeURIComponent(c.id)}`), esc(c.name), badge(c.status), progress(c), String(c.counters.dials), when(c.launchedAt)]);
  consolePage(ctx, v, '/console/campaigns', 'Campaigns', table(['Campaign', 'Name', 'Status', 'Progress', 'Dials', 'Launched'], rows, 'No campaigns yet.'));
}

/** A campaign's progress: contacts settled out of all, as a bar and in words. */
function progress(c: Campaign): string {
  const k = c.counters;
  const done = k.total - k.pending - k.dialing;
  const pct = k.total ? Math.round((done / k.total) * 100) : 0;
  return `<div class="progress" role="progressbar" aria-label="Progress of ${esc(c.name)}" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${pct}"><span class="w${Math.round(pct / 5) * 5}"></span></div><span class="muted">${done} of ${k.total} settled (${pct}%)</span>`;
}

/** GET /console/campaigns/{id}: counters, attempts with outcome and the conversation of each answered dial. */
export async function campaignPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, id: string): Promise<void> {
  const { data: c } = await callOperation<Campaign>(ctx, deps, member, 'getCampaign', { params: { id } });
  const { data: attempts } = await callOperation<{ items: CallAttempt[]; nextCursor: string | null }>(ctx, deps, member, 'listCampaignAttempts', { params: { id }, query: { limit: '200', cursor: one(ctx, 'cursor') } });
  // Each dial is a `voice` conversation with the campaign and the contact's number (docs/api-notes.md "Observe").
  const convs = may(member, 'listConversations') ? (await callOperation<{ items: ConversationSummary[] }>(ctx, deps, member, 'listConversations', { query: { campaignId: c.id, limit: '200' } })).data.items : [];
  const byNumber = new Map<string, string>();
  for (const x of convs) if (x.counterpart && !byNumber.has(x.counterpart)) byNumber.set(x.counterpart, x.id);
  const k = c.counters;
  let body = facts([
    ['Status', badge(c.status)],
    ['Progress', progress(c)],
    ['Answered', String(k.answered)],
    ['Voicemail', String(k.voicemail)],
    ['No answer / busy', `${k.noAnswer} / ${k.busy}`],
    ['Failed / cancelled', `${k.failed} / ${k.cancelled}`],
    ['Workflow', c.temporalUiUrl ? `<a href="${esc(c.temporalUiUrl)}" rel="noopener" target="_blank">Open in the Temporal UI</a>` : '<span class="muted">none</span>'],
  ]);
  body += `<h2>Attempts</h2>${table(
    ['Number', 'Status', 'Dials', 'Last outcome', 'Length', 'Last dialed', 'Conversation'],
    attempts.items.map((a) => [esc(a.e164), badge(a.status), String(a.dials), esc(a.lastOutcome ?? '—'), a.lastDurationSeconds === null ? '—' : `${a.lastDurationSeconds} s`, when(a.lastDialedAt), convLink(byNumber.get(a.e164))]),
    'No attempts yet.',
  )}${pager(`/console/campaigns/${encodeURIComponent(c.id)}`, {}, attempts.nextCursor)}`;
  consolePage(ctx, v, '/console/campaigns', `Campaign ${c.name}`, body);
}

/** GET /console/sms: the 10DLC registration and its status timeline, then the texts, newest first. */
export async function smsPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  // An organization that never started a registration has none (the API's 404).
  const reg = await callOperation<SmsRegistration>(ctx, deps, member, 'getSMSRegistration').then(
    (r) => r.data,
    (err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    },
  );
  const timeline = await registrationTimeline(deps.db, member.orgId);
  const before = one(ctx, 'before');
  const [at, id] = before ? before.split('|') : [];
  const texts = await listTexts(deps.db, member.orgId, 50, at && id && !Number.isNaN(Date.parse(at)) ? { at, id } : undefined);
  let body = `<h2>10DLC registration</h2>${
    reg
      ? facts([
          ['Status', badge(reg.status)],
          ['Brand', esc(reg.displayName ?? reg.legalName ?? '—')],
          ['Use case', esc(reg.useCase ?? '—')],
          ['Carrier status', esc(reg.providerStatus ?? '—')],
          ['Last error', esc(reg.lastError ?? '—')],
        ])
      : '<p class="muted">No 10DLC registration yet.</p>'
  }`;
  body += `<h2>Status timeline</h2>${timeline.length ? `<ol class="timeline">${timeline.map((s) => `<li>${when(s.at)} ${badge(s.status)}${s.detail ? ` <span class="muted">${esc(s.detail)}</span>` : ''}</li>`).join('')}</ol>` : '<p class="muted">No status change yet.</p>'}`;
  body += `<h2>Texts</h2>${table(
    ['Direction', 'From', 'To', 'Text', 'Status', 'Conversation', 'At'],
    texts.map((t) => [esc(t.direction), esc(t.from), esc(t.to), esc(t.body), badge(t.status), convLink(t.conversationId), when(t.createdAt)]),
    'No texts yet.',
  )}`;
  const last = texts[texts.length - 1];
  if (texts.length === 50 && last) body += `<p class="pager"><a href="/console/sms?before=${encodeURIComponent(`${last.createdAt}|${last.id}`)}">Older texts →</a></p>`;
  consolePage(ctx, v, '/console/sms', 'Texts and 10DLC', body);
}

/** GET /console/webhooks: endpoints, each with its latest deliveries, a retry per failed delivery and a replay form. */
export async function webhooksPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, notice?: string): Promise<void> {
  const { data } = await callOperation<{ items: WebhookEndpoint[] } | WebhookEndpoint[]>(ctx, deps, member, 'listWebhooks');
  const endpoints = Array.isArray(data) ? data : data.items;
  let body = notice ? `<p class="notice" role="status">${esc(notice)}</p>` : '';
  if (!endpoints.length) body += '<p class="muted">No webhook endpoints.</p>';
  for (const e of endpoints) {
    const { data: d } = await callOperation<{ items: WebhookDelivery[] }>(ctx, deps, member, 'listWebhookDeliveries', { params: { id: e.id }, query: { limit: '25' } });
    body += `<h2>${esc(e.url)}</h2>${facts([
      ['Endpoint', idLink(e.id)],
      ['State', e.enabled ? badge('enabled') : `${badge('disabled')} ${esc(e.disabledReason ?? '')}`],
      ['Events', esc(e.eventTypes.join(', ') || 'every event')],
      ['Failing since', when(e.failingSince)],
    ])}`;
    body += table(
      ['Delivery', 'Event', 'Status', 'Attempts', 'Last answer', 'Updated', ''],
      d.items.map((x) => [
        idLink(x.id),
        esc(x.eventType),
        badge(x.status),
        String(x.attemptCount),
        esc(x.lastStatusCode !== null ? String(x.lastStatusCode) : (x.lastError ?? '—')),
        when(x.updatedAt),
        x.status !== 'succeeded' && x.status !== 'pending' ? actionButton(`/console/webhooks/${encodeURIComponent(e.id)}/deliveries/${encodeURIComponent(x.id)}/retry`, v.csrf, `Retry ${x.id}`) : '',
      ]),
      'No deliveries yet.',
    );
    body += `<form class="filters" method="post" action="/console/webhooks/${esc(encodeURIComponent(e.id))}/replay">${hidden('csrf', v.csrf)}<label>Replay events since (UTC) <input type="datetime-local" name="since" required></label><button type="submit" class="secondary">Replay</button></form>`;
  }
  consolePage(ctx, v, '/console/webhooks', 'Webhooks', body);
}

/** GET /console/agents: each agent with its versions, traffic split and evaluation runs. */
export async function agentsPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  const names = await agentNames(deps.db, member.orgId);
  const { data } = await callOperation<{ items: { id: string; name: string; publishedVersionId: string | null }[] }>(ctx, deps, member, 'listAgents', { query: { limit: '100' } });
  let body = data.items.length ? '' : '<p class="muted">No agents yet.</p>';
  for (const a of data.items) {
    const versions = (await callOperation<{ items: AgentVersion[] }>(ctx, deps, member, 'listAgentVersions', { params: { id: a.id }, query: { limit: '10' } })).data.items;
    const traffic = a.publishedVersionId ? (await callOperation<TrafficSplit>(ctx, deps, member, 'getAgentTraffic', { params: { id: a.id } })).data : null;
    const suites = (await callOperation<{ items: EvalSuite[] }>(ctx, deps, member, 'listEvalSuites', { params: { id: a.id } })).data.items;
    const runs: (EvalRun & { suite: string })[] = [];
    for (const s of suites.slice(0, 5)) {
      for (const r of (await callOperation<{ items: EvalRun[] }>(ctx, deps, member, 'listEvalRuns', { params: { id: s.id }, query: { limit: '5' } })).data.items) runs.push({ ...r, suite: s.name });
    }
    const number = new Map(versions.map((x) => [x.id, x.number]));
    body += `<h2>${esc(names.get(a.id) ?? a.name)}</h2>`;
    body += table(['Version', 'Note', 'Published', 'Live'], versions.map((x) => [`v${x.number}`, esc(x.note ?? '—'), when((x as AgentVersion & { createdAt?: string }).createdAt), x.isPublished ? badge('published') : '']), 'Never published.');
    if (traffic) body += `<p>Traffic: ${traffic.splits.map((s) => `${esc(number.has(s.versionId) ? `v${number.get(s.versionId)}` : s.versionId)} ${s.percent}%`).join(' · ')} <span class="muted">(${traffic.custom ? 'split' : 'all on the live version'}, sticky per ${esc(traffic.stickiness)})</span></p>`;
    if (runs.length) {
      body += table(
        ['Evaluation run', 'Suite', 'Status', 'Pass rate', 'Flaky', 'At'],
        runs.map((r) => [idLink(r.id), esc(r.suite), badge(r.status), r.passRate === null ? '—' : `${Math.round(r.passRate * 100)}% (${r.passed}/${r.total})`, esc(r.flaky.join(', ') || '—'), when(r.createdAt)]),
      );
    }
  }
  consolePage(ctx, v, '/console/agents', 'Agents', body);
}

/** GET /console/analytics: volume, outcomes, latency percentiles per stage and spend, drawn by chart.js from JSON in the page. */
export async function analyticsPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, latency: { stage: string; p50: number; p95: number; p99: number }[], outcomes: { outcome: string; n: number }[]): Promise<void> {
  const { data } = await callOperation<Analytics>(ctx, deps, member, 'getAnalyticsOverview', { query: { from: one(ctx, 'from'), to: one(ctx, 'to') } });
  const chartData = {
    labels: data.series.map((s) => s.start.slice(0, data.bucket === 'hour' ? 13 : 10)),
    volume: data.series.map((s) => s.conversations),
    spend: data.series.map((s) => s.costCents / 100),
    outcomes,
    latency,
  };
  const t = data.totals;
  let body = facts([
    ['Conversations', String(t.conversations)],
    ['Containment', t.containmentRate === null ? '—' : `${Math.round(t.containmentRate * 100)}%`],
    ['Tool success', t.toolCallSuccessRate === null ? '—' : `${Math.round(t.toolCallSuccessRate * 100)}%`],
    ['Spend', `$${(t.costCents / 100).toFixed(2)}`],
  ]);
  // Data for the console script as JSON (type application/json is never executed, so the strict CSP allows it).
  body += `<script type="application/json" id="chart-data">${JSON.stringify(chartData).replace(/</g, '\\u003c')}</script>`;
  for (const [id, title] of [
    ['chart-volume', 'Conversations'],
    ['chart-outcomes', 'Outcomes'],
    ['chart-latency', 'Latency percentiles by stage (ms)'],
    ['chart-spend', 'Spend (USD)'],
  ]) {
    body += `<h2 id="${id}-title">${esc(title)}</h2><div class="chart"><canvas id="${id}" role="img" aria-labelledby="${id}-title"></canvas></div>`;
  }
  consolePage(ctx, v, '/console/analytics', 'Analytics', body, { charts: true });
}
