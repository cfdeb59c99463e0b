/**
 * The console's conversation pages (docs/operations.md "Operator console"): the list with its filters, one
 * conversation (transcript, each turn's receipt, the analysis and its revisions, the recording, its workflow in the
 * Temporal UI), the conversations in progress, and the live page that follows one over SSE with the controls of
 * `POST /conversations/{id}/control` (docs/api-notes.md "Live control").
 */
import type { AppContext, AppDeps } from '../context';
import type { Member } from '../../db/repositories/team';
import type { ConversationSummary, ConversationTranscript, ConversationReceipt, TranscriptMessage } from '../../schemas/types/observe';
import type { TurnReceipt } from '../../schemas/types/chat';
import type { AnalysisRevision } from '../../schemas/types/analysis';
import { agentNames, callOfConversation } from '../../db/repositories/console';
import { liveConversations } from '../../db/repositories/conversationControls';
import { getConversation } from '../../db/repositories/conversations';
import { ApiError } from '../../domain/errors';
import { workflowUiUrl } from '../http';
import { workflowIds } from '../../temporal.config';
import { callOperation, may } from './operations';
import { badge, consolePage, esc, facts, idLink, pager, table, when, type Viewer } from './render';
import { hidden } from '../oauth/forms';

/** The list's filters, as query parameters of both the page and `GET /conversations`. */
const FILTERS = ['channel', 'agentId', 'versionId', 'outcome', 'from', 'to', 'q', 'status'] as const;

function one(ctx: AppContext, name: string): string | undefined {
  const v = ctx.query[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

/** A `<input type="datetime-local">` value as ISO 8601 UTC (the form's times are UTC). */
function asIso(v: string | undefined): string | undefined {
  if (!v) return undefined;
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(v) ? `${v}:00Z` : v;
}

/** GET /console/conversations: the list with filters (channel, agent, version, outcome, time, text search). */
export async function conversationList(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  const query: Record<string, string | undefined> = {};
  for (const k of FILTERS) query[k] = one(ctx, k);
  const cursor = one(ctx, 'cursor');
  const names = await agentNames(deps.db, member.orgId);
  const { data } = await callOperation<{ items: ConversationSummary[]; nextCursor: string | null }>(ctx, deps, member, 'listConversations', {
    query: { ...query, from: asIso(query.from), to: asIso(query.to), cursor, simulation: 'false', limit: '50' },
  });
  const opt = (value: string, label: string, current?: string) => `<option value="${esc(value)}"${current === value ? ' selected' : ''}>${esc(label)}</option>`;
  const filters = `<form class="filters" method="get" action="/console/conversations" role="search">
<label>Channel <select name="channel">${opt('', 'Any')}${['chat', 'web', 'sms', 'voice'].map((c) => opt(c, c === 'web' ? 'widget' : c, query.channel)).join('')}</select></label>
<label>Agent <select name="agentId">${opt('', 'Any')}${[...names].map(([id, name]) => opt(id, name, query.agentId)).join('')}</select></label>
<label>Version id <input type="text" name="versionId" value="${esc(query.versionId ?? '')}" size="12"></label>
<label>Outcome <input type="text" name="outcome" value="${esc(query.outcome ?? '')}" size="12"></label>
<label>From (UTC) <input type="datetime-local" name="from" value="${esc(query.from ?? '')}"></label>
<label>To (UTC) <input type="datetime-local" name="to" value="${esc(query.to ?? '')}"></label>
<label>Text <input type="search" name="q" value="${esc(query.q ?? '')}" size="14"></label>
<button type="submit" class="primary">Filter</button></form>`;
  const rows = data.items.map((c) => [
    idLink(c.id, `/console/conversations/${encodeURIComponent(c.id)}`),
    esc(c.channel === 'web' ? 'widget' : c.channel),
    esc((c.agentId && names.get(c.agentId)) ?? c.agentId ?? '—'),
    badge(c.status),
    esc(c.outcome ?? c.analysis?.outcome ?? '—'),
    String(c.messageCount),
    when(c.startedAt),
  ]);
  consolePage(ctx, v, '/console/conversations', 'Conversations', filters + table(['Conversation', 'Channel', 'Agent', 'Status', 'Outcome', 'Messages', 'Started'], rows, 'No conversation matches these filters.') + pager('/console/conversations', query, data.nextCursor));
}

/** Transcript lines as a list, each marked with who spoke. */
export function transcriptHtml(messages: TranscriptMessage[]): string {
  const who: Record<TranscriptMessage['speaker'], string> = { user: 'Person', contact: 'Contact', agent: 'Agent', operator: 'Team member' };
  return `<ol class="transcript" aria-live="polite">${messages.map((m) => `<li class="${m.speaker}" data-seq="${esc(m.id)}"><span class="who">${who[m.speaker]} · ${when(m.at)}</span>${esc(m.text)}</li>`).join('')}</ol>`;
}

/** One turn's receipt: latency by stage, tools called with outcome, knowledge cited, guardrail decisions. */
function receiptHtml(r: TurnReceipt): string {
  const latency = r.latency.map((l) => `${esc(l.stage)} ${l.ms} ms${l.detail ? ` (${esc(l.detail)})` : ''}`).join(', ') || '—';
  const tools = r.toolCalls.map((t) => `${esc(t.tool ?? t.skill)} ${t.error ? badge('failed') + ` <span class="muted">${esc(t.error)}</span>` : badge('succeeded')} <span class="muted">${t.durationMs} ms</span>`).join('<br>') || '—';
  const knowledge = r.knowledge.map((k) => `“${esc(k.query)}” → ${k.results.map((x) => esc(x.source)).join(', ') || 'nothing found'}`).join('<br>') || '—';
  const guardrails = r.guardrails.map((g) => `${esc(g.rule)}: ${badge(g.action)} (${esc(g.stage)})`).join('<br>') || '—';
  return [String(r.turn), latency, tools, knowledge, guardrails].join('\u0000');
}

/** GET /console/conversations/{id}: one conversation and everything recorded about it. */
export async function conversationPage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, id: string): Promise<void> {
  const { data: t } = await callOperation<ConversationTranscript>(ctx, deps, member, 'getTranscript', { params: { id } });
  const c = t.conversation;
  const names = await agentNames(deps.db, member.orgId);
  const receipts = may(member, 'getReceipt') ? (await callOperation<ConversationReceipt>(ctx, deps, member, 'getReceipt', { params: { id } })).data.turns : [];
  const revisions = may(member, 'listAnalysisRevisions') && !c.id.startsWith('smt_') ? (await callOperation<{ items: AnalysisRevision[] }>(ctx, deps, member, 'listAnalysisRevisions', { params: { id } })).data.items : [];
  const call = c.channel === 'voice' ? await callOfConversation(deps.db, member.orgId, c.id) : undefined;
  const workflow = call ? workflowUiUrl(deps, workflowIds.voiceCall(call.id)) : c.analysis ? workflowUiUrl(deps, workflowIds.conversationAnalysis(c.id)) : undefined;
  let body = facts([
    ['Channel', esc(c.channel === 'web' ? 'widget' : c.channel)],
    ['Agent', esc((c.agentId && names.get(c.agentId)) ?? c.agentId ?? '—')],
    ['Version', idLink(c.versionId)],
    ['Status', `${badge(c.status)}${c.endReason ? ` <span class="muted">${esc(c.endReason)}</span>` : ''}`],
    ['Started', when(c.startedAt)],
    ['Ended', when(c.endedAt)],
    ['Duration', c.durationSeconds === null ? '—' : `${c.durationSeconds} s`],
    ['Counterpart', esc(c.counterpart ?? '—')],
    ['Outcome', esc(c.outcome ?? c.analysis?.outcome ?? '—')],
    ['Tokens', String(c.totalTokens)],
    ['Workflow', workflow ? `<a href="${esc(workflow)}" rel="noopener" target="_blank">Open in the Temporal UI</a>` : '<span class="muted">none</span>'],
  ]);
  // SMS threads (`smt_…`, texts no agent conversation holds) have no live stream or controls.
  if (c.status === 'active' && c.id.startsWith('cnv_') && may(member, 'streamConversation')) body += `<p><a href="/console/live/${encodeURIComponent(c.id)}">Follow it live →</a></p>`;
  if (call?.recordingUrl) {
    body += `<h2>Recording</h2><audio controls preload="none" src="${esc(call.recordingUrl)}"></audio>${call.recordingSeconds ? `<p class="muted">${call.recordingSeconds} s</p>` : ''}`;
  }
  body += `<h2>Transcript</h2>${t.redacted ? '<p class="muted">Your role may not read transcripts.</p>' : t.messages.length ? transcriptHtml(t.messages) : '<p class="muted">No messages.</p>'}`;
  if (receipts.length) {
    body += `<h2>Turns</h2>${table(['Turn', 'Latency by stage', 'Tools called', 'Knowledge cited', 'Guardrails'], receipts.map((r) => receiptHtml(r).split('\u0000')))}`;
  }
  const a = t.analysis;
  body += '<h2>Analysis</h2>';
  body += a
    ? facts([
        ['Status', badge(a.status)],
        ['Summary', esc(a.summary ?? '—')],
        ['Outcome', esc(a.outcome ?? '—')],
        ['Sentiment', esc(a.sentiment ?? '—')],
        ...Object.entries(a.fields ?? {}).map(([k, val]) => [k, esc(String(val))] as [string, string]),
      ])
    : '<p class="muted">Not analysed.</p>';
  if (revisions.length) {
    body += `<h2>Analysis revisions</h2>${table(
      ['Revision', 'Trigger', 'Status', 'Outcome', 'Summary', 'At'],
      revisions.map((r) => [String(r.revision), esc(r.trigger), badge(r.status), esc(r.outcome ?? '—'), esc(r.summary ?? r.error ?? '—'), when(r.createdAt)]),
    )}`;
  }
  consolePage(ctx, v, '/console/conversations', `Conversation ${c.id}`, body);
}

/** GET /console/live: the conversations in progress on every channel. */
export async function liveList(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer): Promise<void> {
  // The scope the live stream needs (calls:read): a role without it is refused as the API refuses it.
  if (!may(member, 'streamConversation')) throw new ApiError(403, 'insufficient_scope', 'Your role may not follow conversations (calls:read)');
  const rows = (await liveConversations(deps.db, member.orgId)).map((c) => [
    idLink(c.id, `/console/live/${encodeURIComponent(c.id)}`),
    esc(c.channel === 'web' ? 'widget' : c.channel),
    esc(c.agentName ?? c.agentId),
    esc(c.counterpart ?? '—'),
    c.takenOverBy ? `${badge('taken over')} <code>${esc(c.takenOverBy)}</code>` : badge('agent'),
    String(c.messageCount),
    when(c.lastActivityAt),
  ]);
  consolePage(ctx, v, '/console/live', 'Live conversations', table(['Conversation', 'Channel', 'Agent', 'Counterpart', 'Answering', 'Messages', 'Last activity'], rows, 'No conversation is in progress.') + '<p class="muted">Reload to see new ones.</p>');
}

/** The control forms a member's role may use on a conversation in progress. */
function controlForms(id: string, channel: string, takenOverBy: string | null, csrf: string): string {
  const action = `/console/live/${encodeURIComponent(id)}/control`;
  const form = (act: string, label: string, inner = '', cls = 'secondary') =>
    `<form class="control" method="post" action="${esc(action)}">${hidden('csrf', csrf)}${hidden('action', act)}${inner}<button type="submit" class="${cls}">${esc(label)}</button></form>`;
  const text = (name: string, label: string) => `<label>${esc(label)} <textarea name="${name}" required maxlength="2000"></textarea></label>`;
  if (channel === 'voice') {
    return `<div class="controls">${form('say', 'Say it', text('content', 'A line the caller hears'), 'primary')}${form('add_message', 'Add to context', text('content', "A message for the model's context"))}${form(
      'transfer',
      'Transfer',
      `<label>To (E.164 or sip:) <input type="text" name="to" required pattern="^(\\+[1-9][0-9]{6,14}|sips?:\\S{3,200})$"></label>`,
    )}${form('end', 'End the call')}</div>`;
  }
  const takeover = takenOverBy ? form('hand_back', 'Hand back to the agent', '', 'primary') : form('take_over', 'Take over', '', 'primary');
  return `<div class="controls">${takeover}${takenOverBy ? form('say', 'Send', text('content', 'Your message to the person'), 'primary') : ''}${form('add_message', 'Add to context', text('content', "A message for the model's context"))}${form('end', 'End the conversation')}</div>`;
}

/** GET /console/live/{id}: the transcript so far, followed over SSE by the console script, and the controls. */
export async function livePage(ctx: AppContext, deps: AppDeps, member: Member, v: Viewer, id: string, error?: { status: number; message: string }): Promise<void> {
  if (!id.startsWith('cnv_')) throw new ApiError(404, 'conversation_not_found', 'Only agent conversations can be followed live');
  const { data: t } = await callOperation<ConversationTranscript>(ctx, deps, member, 'getTranscript', { params: { id } });
  const c = t.conversation;
  const takenOverBy = c.id.startsWith('cnv_') ? ((await getConversation(deps.db, member.orgId, c.id))?.takenOverBy ?? null) : null;
  const canAct = may(member, 'controlConversation');
  let body = error ? `<p class="error" role="alert">${esc(error.message)}</p>` : '';
  body += `<p id="live-state" role="status" data-live="/console/live/${esc(encodeURIComponent(c.id))}/events">${badge(c.status)} ${takenOverBy ? `Taken over by <code>${esc(takenOverBy)}</code>` : 'The agent is answering.'}</p>`;
  body += transcriptHtml(t.messages);
  if (c.status === 'active' && canAct) body += `<h2>Step in</h2>${controlForms(c.id, c.channel, takenOverBy, v.csrf)}`;
  else if (!canAct) body += '<p class="muted">Your role may watch; owners, admins and developers may step in.</p>';
  body += `<p><a href="/console/conversations/${encodeURIComponent(c.id)}">Everything about this conversation →</a></p>`;
  consolePage(ctx, v, '/console/live', `Live: ${c.id}`, body, { status: error?.status, scripts: c.status === 'active' });
}
