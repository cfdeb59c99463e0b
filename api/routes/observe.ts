/**
 * Observe handlers (spec "Observe" rows, "Scope rules" 1 and 4; docs/api-notes.md "Observe"): the conversations of
 * every channel, their transcripts and receipts, and analytics. Finding a conversation needs
 * `analytics:read`; reading it needs `calls:read` — with only `analytics:read` a transcript is empty
 * (`redacted: true`), and a receipt is refused (403).
 */
import type { AppContext, Handler } from '../context';
import { orgOf, pageParams, paged } from '../http';
import { notFound, validationError, type FieldError } from '../../domain/errors';
import { analytics, analyticsByVersion, conversationReceipts, getConversationSummary, listConversations, transcriptMessages, type ConversationFilters } from '../../db/repositories/observe';
import { requireAgent } from '../agents/http';
import { getAnalysis } from '../../db/repositories/conversationAnalyses';
import type { ConversationReceipt, ConversationTranscript } from '../../schemas/types/observe';

const CHANNELS = ['chat', 'web', 'sms', 'voice'] as const;
const ID = /^[A-Za-z0-9_-]{1,200}$/;

function one(ctx: AppContext, name: string): string | undefined {
  const v = ctx.query[name];
  return Array.isArray(v) ? v[0] : v;
}

function dateParam(ctx: AppContext, name: string, errors: FieldError[]): string | undefined {
  const v = one(ctx, name);
  if (v === undefined) return undefined;
  if (Number.isNaN(Date.parse(v)) || !/^\d{4}-\d{2}-\d{2}/.test(v)) {
    errors.push({ field: name, message: 'must be an ISO 8601 date or date-time' });
    return undefined;
  }
  return new Date(v).toISOString();
}

/**
 * GET /conversations (listConversations, analytics:read): every conversation of the organization, newest
 * first. Filters: `agentId`, `versionId` (the published version it ran on), `channel` (chat, web, sms, voice), `status` (active, ended), `campaignId`,
 * `simulation` (true/false), `from`/`to` (start time, ISO 8601), `outcome` (the call's or the analysis's) and `q`
 * (words a message contains); cursor pagination.
 */
export const listConversationsHandler: Handler = async (ctx, { db }) => {
  const errors: FieldError[] = [];
  const f: ConversationFilters = {};
  const channel = one(ctx, 'channel');
  if (channel !== undefined) (CHANNELS as readonly string[]).includes(channel) ? (f.channel = channel as ConversationFilters['channel']) : errors.push({ field: 'channel', message: `must be one of ${CHANNELS.join(', ')}` });
  const status = one(ctx, 'status');
  if (status !== undefined) status === 'active' || status === 'ended' ? (f.status = status) : errors.push({ field: 'status', message: 'must be active or ended' });
  for (const k of ['agentId', 'campaignId', 'versionId'] as const) {
    const v = one(ctx, k);
    if (v !== undefined) ID.test(v) ? (f[k] = v) : errors.push({ field: k, message: 'must be an id' });
  }
  const outcome = one(ctx, 'outcome');
  if (outcome !== undefined) /^[A-Za-z0-9_ -]{1,100}$/.test(outcome) ? (f.outcome = outcome) : errors.push({ field: 'outcome', message: 'must be an outcome name (letters, digits, _ - and spaces, at most 100)' });
  const q = one(ctx, 'q');
  if (q !== undefined && q.trim()) q.length <= 200 ? (f.q = q.trim()) : errors.push({ field: 'q', message: 'must be at most 200 characters' });
  const sim = one(ctx, 'simulation');
  if (sim !== undefined) sim === 'true' || sim === 'false' ? (f.simulation = sim === 'true') : errors.push({ field: 'simulation', message: 'must be true or false' });
  f.from = dateParam(ctx, 'from', errors);
  f.to = dateParam(ctx, 'to', errors);
  if (f.from && f.to && f.from >= f.to) errors.push({ field: 'to', message: 'must be after from' });
  const page = pageParams(ctx);
  if (errors.length) throw validationError(errors);
  return { data: await paged(() => listConversations(db, orgOf(ctx), f, page)) };
};

async function requireSummary(ctx: AppContext, db: Parameters<Handler>[1]['db']) {
  const id = String(ctx.params.id);
  const c = ID.test(id) ? await getConversationSummary(db, orgOf(ctx), id) : undefined;
  if (!c) throw notFound('Conversation', 'conversation_not_found');
  return c;
}

/**
 * GET /conversations/{id}/transcript (getTranscript; calls:read, or analytics:read for an empty one): every
 * user and agent message verbatim, in order, with speaker, time, channel and SMS attachment ids.
 */
export const getTranscript: Handler = async (ctx, { db }) => {
  const c = await requireSummary(ctx, db);
  const full = ctx.state.auth!.scopes.has('calls:read');
  const data: ConversationTranscript = {
    conversation: c,
    redacted: !full,
    messages: full ? await transcriptMessages(db, orgOf(ctx), c) : [],
    // The whole analysis quotes the conversation: shown with the transcript only (spec "Scope rules" 4).
    analysis: full && c.analysis ? ((await getAnalysis(db, orgOf(ctx), c.id)) ?? null) : null,
  };
  return { data };
};

/** GET /conversations/{id}/receipt (getReceipt, calls:read): tool calls, knowledge lookups, guardrail decisions and latency samples per turn. */
export const getReceipt: Handler = async (ctx, { db }) => {
  const c = await requireSummary(ctx, db);
  const data: ConversationReceipt = { conversation: c, turns: await conversationReceipts(db, orgOf(ctx), c) };
  return { data };
};

/** `from`/`to` (default: the last 30 days) and `timeZone` (IANA, default UTC) of an analytics request. */
function analyticsRange(ctx: AppContext): { from: string; to: string; timeZone: string } {
  const errors: FieldError[] = [];
  const to = dateParam(ctx, 'to', errors) ?? new Date().toISOString();
  const from = dateParam(ctx, 'from', errors) ?? new Date(Date.parse(to) - 30 * 86_400_000).toISOString();
  const timeZone = one(ctx, 'timeZone') ?? 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    errors.push({ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' });
  }
  if (from >= to) errors.push({ field: 'to', message: 'must be after from' });
  else if (Date.parse(to) - Date.parse(from) > 366 * 86_400_000) errors.push({ field: 'from', message: 'the range is at most 366 days' });
  if (errors.length) throw validationError(errors);
  return { from, to, timeZone };
}

/** GET /analytics/overview (analytics:read): the organization's analytics over `from`/`to` in `timeZone`. */
export const getAnalyticsOverview: Handler = async (ctx, { db }) => ({ data: await analytics(db, orgOf(ctx), analyticsRange(ctx)) });

/**
 * GET /agents/{agentId}/analytics (analytics:read): one agent's analytics; with `groupBy=version`, also its figures
 * per published version (`versions`; docs/api-notes.md "Traffic splits"). 404 `agent_not_found`; 400 naming `groupBy`.
 */
export const getAgentAnalytics: Handler = async (ctx, { db }) => {
  const groupBy = one(ctx, 'groupBy');
  if (groupBy !== undefined && groupBy !== 'version') throw validationError([{ field: 'groupBy', message: 'must be version' }]);
  const range = analyticsRange(ctx);
  const agent = await requireAgent(db, orgOf(ctx), String(ctx.params.agentId));
  const data = await analytics(db, orgOf(ctx), { ...range, agentId: agent.id });
  if (groupBy === 'version') data.versions = await analyticsByVersion(db, orgOf(ctx), { agentId: agent.id, from: range.from, to: range.to });
  return { data };
};

/** Handlers of this area by operationId. */
export const handlers = { listConversations: listConversationsHandler, getTranscript, getReceipt, getAnalyticsOverview, getAgentAnalytics };

/** Schemas of this area's operations. */
export const routeSchemas = {
  getTranscript: { responseSchema: 'ConversationTranscript' },
  getReceipt: { responseSchema: 'ConversationReceipt' },
  getAnalyticsOverview: { responseSchema: 'Analytics' },
  getAgentAnalytics: { responseSchema: 'Analytics' },
};
