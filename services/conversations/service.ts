/**
 * Conversations as a service (docs/api-notes.md "Conversations"; spec "Agent lifecycle" rules 1–2, "Events"): starts
 * a conversation pinned to a published version — the one asked for, else the one the agent's traffic split picks
 * (services/agents/traffic.ts) — or to the draft compiled now, runs turns through the
 * pure runtime (domain/conversations/runtime.ts) with Postgres retrieval, the LLM provider and the skills,
 * and stores each turn — messages verbatim, receipt, token counts, usage entries and the events
 * `conversation.started`, `message.created`, `conversation.ended`, `conversation.escalated` — in one transaction;
 * ends the conversations left idle (`sweepIdleConversations`). Shared by the chat
 * routes, `/chat/completions`, the widget and the simulation activity.
 */
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import type { Db } from '../../db';
import { loadDraftBundle } from '../../db/repositories/agents';
import { liveAgentTraffic } from '../../db/repositories/traffic';
import { getVersion, versionIdByNumber } from '../../db/repositories/agentVersions';
import { retrieveKnowledge } from '../knowledge/retrieval';
import type { EmbeddingsProvider } from '../../providers/embeddings';
import type { KnowledgeIndexes } from '../knowledge/lexicalIndex';
import type { UsageInput } from '../../db/repositories/usage';
import type { AuditRecord } from '../../db/repositories/auditLogs';
import { amountFor, feeOf, PRICES } from '../../domain/billing/prices';
import {
  createConversation,
  endConversation,
  endIdleConversations,
  getConversation,
  recentMessages,
  saveTurns,
  type SavedTurn,
  type TurnWrite,
  toLlmMessage,
  type ConversationRecord,
  type OnConversationChange,
} from '../../db/repositories/conversations';
import { compileDraft, type CompiledAgent } from '../../domain/agents/compile';
import { ApiError, notFound } from '../../domain/errors';
import type { LlmMessage, LlmProvider, LlmUsage } from '../../domain/conversations/llm';
import { conversationVariables } from '../../domain/conversations/prompt';
import { greetingFor, runTurn, type EndReason, type TurnEvent, type TurnOptions, type TurnPorts, type TurnResult } from '../../domain/conversations/runtime';
import { checkedEvents, emitEvents, type EventOf } from '../../events/emit';
import type { ConversationChannel, ConversationMessage, TurnReceipt } from '../../schemas/types/chat';
import type { SkillHttpClient } from '../../providers/http/request';
import { createSkillRunner } from './skills';
import { remoteToolsOf } from './mcp';
import type { McpProvider } from '../../providers/mcp';
import { modelFacingLlm } from './boundary';
import { pinChecker, verifyCallerAtStart } from './callerVerification';
import { callerIdentity, pinPrompt, verificationRequired } from '../../domain/conversations/callerVerification';
import { newId } from '../../db/ids';
import { analyzeAfterEnd, type AnalysisDeps } from './analysis';
import { addStats, emptyStats, GroupCommit, type GroupCommitStats } from '../../db/groupCommit';
import { DEFAULT_CONVERSATION_LIMITS, SHORTEST_IDLE_TIMEOUT_SECONDS } from '../../domain/conversations/limits';
import { contactOf, summarizeForEscalation } from '../../domain/conversations/escalation';
import { escalationRouteFor } from './escalation';
import { pickFromTraffic } from '../agents/traffic';
import type { TrafficSplitRule } from '../../domain/agents/traffic';
import { conversationTurns } from '../../metrics';
import { heldTurn } from './control';
import { SpanStatusCode } from '@opentelemetry/api';
import { countTurn, describeTurn, runTurnIn, tracer } from './turnTelemetry';
import { conversationWithHistory, holdWindow } from './history';

/** Messages of history handed to each turn. */
export const HISTORY_MESSAGES = 30;

/** Usage entries a conversation writes (docs/api-notes.md "Billing": prices; domain/billing/prices.ts, US cents). */
export const CONVERSATION_FEES = {
  /** One agent reply. */
  message: feeOf(PRICES.conversationMessage),
  /** LLM tokens of a turn or an analysis (quantity = tokens); included in the message price on the sandbox plan. */
  tokens: feeOf(PRICES.llmTokens),
} as const;

/**
 * The usage entry of a model call's tokens (`llm_tokens`, quantity = total tokens; docs/api-notes.md "Billing"), its
 * details the call's prompt and completion tokens and model besides `details`; none for zero tokens.
 * @param dedupeKey one charge per call (e.g. `conversation:<id>:turn:<n>:tokens`)
 */
export function tokenCharge(usage: LlmUsage, model: string | null, dedupeKey: string, details: Record<string, unknown>): UsageInput | undefined {
  if (usage.totalTokens <= 0) return undefined;
  return {
    ...CONVERSATION_FEES.tokens,
    amountCents: amountFor(PRICES.llmTokens.unitPriceCents, usage.totalTokens),
    quantity: usage.totalTokens,
    dedupeKey,
    details: { ...details, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens, model },
  };
}

/** What the service needs. */
export interface ConversationDeps {
  db: Db;
  llm: LlmProvider;
  http: SkillHttpClient;
  /** The MCP client of `mcp` skills (providers/mcp); absent: the process's shared one. */
  mcp?: McpProvider;
  temporal?: { client: Client; taskQueue: string };
  /** Where semantic guardrail decisions are logged (pino-like; docs/api-notes.md "Conversations"); absent: not logged. */
  log?: { info: (obj: object, msg: string) => void; warn: (obj: object, msg: string) => void };
  /** Embeddings of knowledge retrieval; absent: the configured provider (services/knowledge/retrieval.ts). */
  embeddings?: EmbeddingsProvider;
  /** In-process full-text indexes of knowledge retrieval (services/knowledge/lexicalIndex.ts); absent: Postgres ranks. */
  indexes?: KnowledgeIndexes;
}

/** Compiled versions are immutable: cached by organization, agent and version id, one read shared by the turns that miss at once. */
const versionCache = new Map<string, Promise<CompiledAgent>>();
const VERSION_CACHE_MAX = 1000;

/** A published version's compiled configuration (cached, above). @throws ApiError 404 `version_not_found` */
function compiledVersion(db: Db, orgId: string, agentId: string, versionId: string): Promise<CompiledAgent> {
  const key = `${orgId}:${agentId}:${versionId}`;
  const hit = versionCache.get(key);
  if (hit) return hit;
  const read = getVersion(db, orgId, agentId, versionId).then((v) => (v ? (v.snapshot as CompiledAgent) : Promise.reject(notFound('Agent version', 'version_not_found'))));
  if (versionCache.size >= VERSION_CACHE_MAX) versionCache.delete(versionCache.keys().next().value as string);
  versionCache.set(key, read);
  // A failed read is not kept: the next turn reads again.
  read.catch(() => versionCache.get(key) === read && versionCache.delete(key));
  return read;
}

/** The compiled configuration a conversation is pinned to. @throws ApiError 404 when its version vanished */
export async function pinnedAgent(db: Db, c: ConversationRecord): Promise<CompiledAgent> {
  return c.mode === 'draft' ? (c.draftSnapshot as CompiledAgent) : compiledVersion(db, c.orgId, c.agentId, c.versionId!);
}

/** The events of a stored change: `message.created` per user and agent message, `conversation.ended` when it ended. */
export function changeEvents(c: ConversationRecord, messages: readonly ConversationMessage[]): EventOf[] {
  const events: EventOf[] = [];
  for (const m of messages) {
    if ((m.role === 'user' || m.role === 'assistant') && m.content) {
      events.push({
        type: 'message.created',
        data: { conversationId: c.id, messageId: m.id, agentId: c.agentId, channel: c.channel, role: m.role, content: m.content, turn: m.turn, createdAt: m.createdAt },
      });
    }
  }
  if (c.status === 'ended' && c.endedAt) {
    events.push({
      type: 'conversation.ended',
      data: {
        conversationId: c.id,
        agentId: c.agentId,
        channel: c.channel,
        endReason: c.endReason ?? 'ended_by_api',
        messageCount: c.messageCount,
        totalTokens: c.promptTokens + c.completionTokens,
        startedAt: c.startedAt,
        endedAt: c.endedAt,
      },
    });
  }
  return events;
}

/** Emits a stored change's events in its transaction (one round trip). */
const onChange: OnConversationChange = async (trx, { conversation, messages }) => {
  await emitEvents(trx, conversation.orgId, changeEvents(conversation, messages));
};

/** How a conversation starts. */
export interface StartRequest {
  /** A chosen conversation id (simulations). */
  id?: string;
  agentId: string;
  channel: ConversationChannel;
  draftMode?: boolean;
  /** Pin a given published version instead of the current one (`/chat/completions` with `@vN`). */
  versionNumber?: number;
  /** Pin this published version id (a call's relay reference names the version its webhook answered with). */
  versionId?: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string | number | boolean | null>;
  keyId: string | null;
  simulation?: boolean;
  /** Skill name → canned output (simulations and evaluations; docs/evals.md "Skill stubs"); `simulation` implies `{}`. */
  skillStubs?: Record<string, unknown>;
  /** Store no greeting, and these earlier messages instead (`/chat/completions`). */
  seed?: LlmMessage[];
  /**
   * The other party's number on `voice` and `sms` (a call's caller, an outbound call's callee, E.164):
   * the caller identity of caller verification, stored as `caller_phone` (docs/api-notes.md "Caller verification").
   */
  counterpart?: string;
  /**
   * The stickiness key of the agent's traffic split when no version is pinned (docs/api-notes.md "Traffic splits"):
   * a chat `customerId`, a widget visitor id, a `/chat/completions` `user`; absent: `counterpart`; neither: a random pick.
   */
  stickinessKey?: string | null;
  /** With `versionId`: the traffic split that version was picked from (a call's), recorded on the conversation. */
  trafficSplit?: TrafficSplitRule | null;
  /** An outbound call (a campaign's, `POST /calls`): opened as docs/voice.md "Outbound first line" says. */
  outbound?: boolean;
  /**
   * The agent's published version and stored split as the caller read them a moment ago (db/repositories/traffic.ts
   * `liveAgentTraffic`'s answer; undefined inside: no such agent), so the start does not read them again: an inbound
   * text's sender read carries them (db/repositories/smsConversations.ts).
   */
  traffic?: { read: Awaited<ReturnType<typeof liveAgentTraffic>> };
}

/**
 * The agent whose `greeting` opens a conversation: the widget's greeting on the `web` channel (docs/api-notes.md
 * "Widget"); on an outbound call the `outboundGreeting` (else the greeting), none when the callee speaks first.
 */
function openingAgent(agent: CompiledAgent, req: Pick<StartRequest, 'channel' | 'outbound'>): CompiledAgent {
  if (req.channel === 'web' && agent.widget?.greeting) return { ...agent, greeting: agent.widget.greeting };
  if (!req.outbound) return agent;
  return agent.outboundFirstMessageMode === 'wait_for_callee' ? { ...agent, greeting: null } : { ...agent, greeting: agent.outboundGreeting ?? agent.greeting };
}

/**
 * Starts a conversation and stores its greeting.
 * @throws ApiError 404 `agent_not_found` (also another organization's agent), 409 `no_published_version`
 *   (never published and not draft mode; spec "Agent lifecycle" rule 2), 404 `version_not_found`
 */
export async function startConversation(
  db: Db,
  orgId: string,
  req: StartRequest,
): Promise<{ conversation: ConversationRecord; greeting: ConversationMessage | null; agent: CompiledAgent; pinPrompt: string | null }> {
  const record = req.traffic ? req.traffic.read : await liveAgentTraffic(db, orgId, req.agentId);
  if (!record) throw new ApiError(404, 'agent_not_found', 'Agent not found', { errors: [{ field: 'agentId', message: 'no agent with this id in this organization' }] });
  let agent: CompiledAgent;
  let versionId: string | null = null;
  let trafficSplit: TrafficSplitRule | null = null;
  let draftVersion: number | null = null;
  if (req.draftMode) {
    const bundle = await loadDraftBundle(db, orgId, req.agentId);
    if (!bundle) throw notFound('Agent', 'agent_not_found');
    agent = compileDraft(bundle).snapshot;
    draftVersion = bundle.agent.version;
  } else if (req.versionNumber !== undefined) {
    const id = await versionIdByNumber(db, orgId, req.agentId, req.versionNumber);
    if (!id) throw new ApiError(404, 'version_not_found', `The agent has no version ${req.versionNumber}`, { errors: [{ field: 'model', message: 'names no version of this agent' }] });
    versionId = id;
  } else if (req.versionId !== undefined) {
    versionId = req.versionId;
    trafficSplit = req.trafficSplit ?? null;
  } else if (!record.publishedVersionId) {
    throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or start a draft-mode session with draftMode: true');
  } else if (req.simulation) {
    // A simulation tests the live version (its skill stubs were checked against it), never a share of the split.
    versionId = record.publishedVersionId;
  } else {
    // No explicit pin: the agent's traffic split picks the version (services/agents/traffic.ts).
    const picked = pickFromTraffic(record, req.agentId, req.stickinessKey ?? req.counterpart);
    if (!picked) throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or start a draft-mode session with draftMode: true');
    versionId = picked.versionId;
    trafficSplit = picked.split;
  }
  if (versionId) {
    agent = await compiledVersion(db, orgId, req.agentId, versionId);
  }
  const conversationId = req.id ?? newId('cnv');
  const identity = callerIdentity(req.channel, req.counterpart, req.variables ?? {});
  const vars = await verifyCallerAtStart(db, orgId, conversationId, agent!, identity, {
    ...conversationVariables(agent!, req.variables ?? {}),
    ...(identity.phone && req.counterpart ? { caller_phone: identity.phone } : {}),
  });
  // Method `pin` with `required: always`: the opening asks for the PIN after the greeting; with
  // `for_protected_actions` it is asked for only with a protected action (docs/api-notes.md "Caller verification").
  const askPin = vars.caller_verification === 'pin_required' && verificationRequired(agent!.callerVerification) === 'always' && !req.seed ? pinPrompt(req.channel) : null;
  const opening = greetingFor(openingAgent(agent!, req), vars);
  const { conversation, greeting } = await createConversation(
    db,
    orgId,
    {
      id: conversationId,
      agentId: req.agentId,
      channel: req.channel,
      mode: req.draftMode ? 'draft' : 'published',
      versionId,
      trafficSplit,
      draftVersion,
      draftSnapshot: req.draftMode ? agent! : null,
      simulation: req.simulation,
      skillStubs: req.skillStubs ?? (req.simulation ? {} : null),
      variables: vars,
      metadata: req.metadata ?? {},
      keyId: req.keyId,
      // The widget's greeting override applies on the `web` channel (docs/api-notes.md "Widget").
      greeting: req.seed ? null : [opening, askPin].filter(Boolean).join(' ') || null,
      seed: req.seed,
      counterpart: req.channel === 'voice' || req.channel === 'sms' ? (req.counterpart ?? null) : null,
    },
    // `conversation.started` and `message.created` per opening message, built by the statement from the rows it stored.
    { events: true },
  );
  // The tools of its MCP servers are listed as it starts, in the background (./mcp.ts: the first turn then finds them cached).
  if (agent!.skills.some((s) => s.type === 'mcp')) void remoteToolsOf({ db }, orgId, agent!.skills).catch(() => undefined);
  return { conversation, greeting, agent: agent!, pinPrompt: askPin };
}

/**
 * The conversation or 404 `conversation_not_found` (also another organization's).
 * @param channels the channels the caller may reach (chat routes: `chat` and `web`)
 * @param opts.withHistory also read the recent messages a turn needs, in the same query (sendMessage uses them)
 */
export async function requireConversation(
  db: Db,
  orgId: string,
  id: string,
  channels?: readonly ConversationChannel[],
  opts: { withHistory?: boolean } = {},
): Promise<ConversationRecord & { recent?: ConversationMessage[] }> {
  const valid = /^cnv_[A-Za-z0-9]{8,40}$/.test(id);
  const c = !valid ? undefined : opts.withHistory ? await conversationWithHistory(db, orgId, id, HISTORY_MESSAGES) : await getConversation(db, orgId, id);
  if (!c || (channels && !channels.includes(c.channel))) throw notFound('Conversation', 'conversation_not_found');
  return c;
}

/** Maps an LLM provider failure (providers/llm/errors.ts) to the API's problem; anything else is rethrown. */
export function llmProblem(err: unknown): ApiError | undefined {
  const e = err as { name?: string; kind?: string; message?: string; retryAfterSeconds?: number };
  if (e?.name !== 'LlmProviderError') return undefined;
  if (e.kind === 'rate_limited') {
    return new ApiError(503, 'llm_rate_limited', 'The language model is rate-limited; nothing was stored, send the message again', {
      headers: { 'Retry-After': String(e.retryAfterSeconds ?? 30) },
    });
  }
  if (e.kind === 'unavailable' || e.kind === 'timeout') return new ApiError(502, 'llm_unavailable', `The language model did not answer (${e.kind}); nothing was stored, send the message again`);
  return new ApiError(502, 'llm_error', `The language model refused the request: ${e.message ?? 'error'}`);
}

/** The outcome of a stored turn. */
export interface StoredTurnOutcome {
  conversation: ConversationRecord;
  messages: ConversationMessage[];
  reply: ConversationMessage | null;
  receipt: TurnReceipt;
  result: TurnResult;
  /**
   * The conversation's last HISTORY_MESSAGES messages after this turn, oldest first: what the next turn reads
   * when its caller is the conversation's only writer and keeps them (the voice relay), saving a round trip.
   */
  recent: ConversationMessage[];
  /** True when the `audit` entry given to sendMessage was stored with the turn, in its statement. */
  auditStored?: boolean;
}

/** The ports of one conversation's turns. */
export function turnPorts(deps: ConversationDeps, c: ConversationRecord, agent: CompiledAgent): TurnPorts {
  const sourceIds = agent.knowledge.map((k) => k.id);
  return {
    // Sensitive record fields are never tool parameters the model fills (./boundary.ts, docs/security.md "Sensitive record fields").
    llm: modelFacingLlm(deps.db, c.orgId, deps.llm),
    // Hybrid retrieval over the recent user turns (services/knowledge/retrieval.ts; docs/knowledge.md "Retrieval").
    searchKnowledge: async (query, limit, earlierUserTurns) =>
      (await retrieveKnowledge({ db: deps.db, embeddings: deps.embeddings, log: deps.log, indexes: deps.indexes }, c.orgId, c.agentId, { text: query, earlierUserTurns }, limit, sourceIds)).map((h) => ({ ...h, source: { ...h.source } })),
    // Simulations and evaluations run on stubs, never a real endpoint (docs/evals.md "Skill stubs").
    runSkill: createSkillRunner({ ...deps, stubs: c.skillStubs ?? (c.simulation ? {} : null) }),
    now: () => performance.now(),
    wallClock: () => Date.now(),
    checkPin: pinChecker(deps.db, c.orgId, c.id, agent, c.variables),
    escalationRoute: () => escalationRouteFor(deps.db, c.orgId, c.channel, c.variables),
    // The tools of the agent's MCP servers (./mcp.ts; cached per server for a minute), when it has `mcp` skills.
    ...(agent.skills.some((s) => s.type === 'mcp') ? { remoteTools: () => remoteToolsOf(deps, c.orgId, agent.skills) } : {}),
  };
}

/**
 * `conversation.escalated` of a turn that escalated (docs/api-notes.md "Conversations": escalation): the destination
 * the turn named to the person (null: the organization has none), why, and the summary for the person taking it —
 * the person's last lines of the history the turn read and of the turn itself. Voice conversations too (their call
 * is then transferred, with `call.transferred`: docs/voice.md "Escalation").
 */
function escalatedEvent(c: ConversationRecord, result: TurnResult, history: readonly ConversationMessage[]): EventOf | null {
  if (result.end !== 'escalated' || !result.escalation) return null;
  const { reason, route } = result.escalation;
  const lines = [...history, ...result.messages].filter((m) => m.role === 'user' && m.content).map((m) => m.content!);
  const d = route?.destination ?? null;
  return {
    type: 'conversation.escalated',
    data: {
      conversationId: c.id,
      agentId: c.agentId,
      channel: c.channel,
      destinationId: d?.id ?? null,
      destination: d ? { kind: d.kind, address: d.address } : null,
      reason,
      summary: summarizeForEscalation(lines, route?.phone ?? contactOf(c.variables).phone),
    },
  };
}

/**
 * Runs and stores one user turn.
 * @param text the user's message; null: none (a Responses API turn answering `opts.toolOutputs`)
 * @param emit receives the turn's streamed events (deltas, tool calls, guardrail decisions)
 * @param opts client tools, their outputs and a response format (Responses API; domain/conversations/runtime.ts `TurnOptions`)
 * @param audit the request's audit entry, stored in the turn's statement (one commit; the outcome's `auditStored`)
 * While the conversation is taken over (`takenOverBy`), the message is stored without an answer (./control.ts `heldTurn`).
 * @throws ApiError 409 `conversation_ended`; 409 `conversation_busy` (another turn of this conversation
 *   was stored while this one ran: nothing of this turn is stored); 502/503 from the LLM (llmProblem)
 */
export async function sendMessage(
  deps: ConversationDeps,
  c: ConversationRecord & { recent?: ConversationMessage[] },
  text: string | null,
  emit?: (e: TurnEvent) => void,
  opts: TurnOptions = {},
  audit?: AuditRecord,
): Promise<StoredTurnOutcome> {
  if (c.status !== 'active') throw new ApiError(409, 'conversation_ended', `The conversation ended (${c.endReason ?? 'ended'}); start a new one`);
  // Taken over by a member (docs/api-notes.md "Live control"): the message is stored and the model does not answer.
  if (c.takenOverBy && text !== null) return heldTurn(deps, c, text);
  const agent = await pinnedAgent(deps.db, c);
  const before = c.recent ?? (await recentMessages(deps.db, c.orgId, c.id, HISTORY_MESSAGES));
  const history = before.map(toLlmMessage);
  let result: TurnResult;
  const span = tracer.startSpan('conversation.turn');
  describeTurn(span, c, text);
  try {
    result = await runTurnIn(span, () => runTurn(
      {
        id: c.id,
        orgId: c.orgId,
        agentId: c.agentId,
        channel: c.channel,
        agent,
        variables: c.variables,
        playbook: c.playbook,
        turn: c.turnCount,
        history,
        startedAtMs: Date.parse(c.startedAt),
      },
      text,
      turnPorts(deps, c, agent),
      emit,
      opts,
    ));
  } catch (err) {
    conversationTurns.inc({ channel: c.channel, outcome: 'error' });
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.name ?? 'error' });
    span.end();
    throw llmProblem(err) ?? err;
  }
  describeTurn(span, c, text, result);
  span.end();
  countTurn(c.channel, result.receipt.latency);
  logSemanticDecisions(deps, c, result.receipt);
  const charges = turnCharges(c, result);
  const stored = await storeTurn(deps.db, {
    c,
    turn: {
      messages: result.messages,
      receipt: result.receipt,
      promptTokens: result.usage.promptTokens,
      completionTokens: result.usage.completionTokens,
      model: result.model,
      variables: result.variables,
      playbook: result.playbook,
      end: result.end,
      stats: {
        toolCalls: result.receipt.toolCalls.length,
        toolCallsOk: result.receipt.toolCalls.filter((t) => !t.error).length,
        guardrailTriggers: result.receipt.guardrails.length,
        knowledgeLookups: result.receipt.knowledge.length,
        knowledgeHits: result.receipt.knowledge.filter((k) => k.results.length > 0).length,
        costCents: charges.reduce((sum, e) => sum + e.amountCents, 0),
      },
    },
    // The events and the charged usage join the turn's statement (db/repositories/conversations.ts saveTurns).
    effects: {
      events: (change) => {
        const escalated = change.conversation.status === 'ended' ? escalatedEvent(c, result, before) : null;
        return checkedEvents([...changeEvents(change.conversation, change.messages), ...(escalated ? [escalated] : [])]);
      },
      usage: charges,
    },
    audit,
  });
  if (stored === 'conflict') {
    const now = await getConversation(deps.db, c.orgId, c.id);
    if (now?.status === 'ended') throw new ApiError(409, 'conversation_ended', `The conversation ended (${now.endReason ?? 'ended'}); start a new one`);
    throw new ApiError(409, 'conversation_busy', 'Another message of this conversation was answered meanwhile; send this one again');
  }
  // A turn that ended the conversation (end_call, transfer, a guardrail) is analysed like any other end, in the
  // background of this process without holding the reply back (a caller on the line waits for the relay's `end`);
  // analyzeAfterEnd never rejects.
  if (stored.conversation.status === 'ended') void analyzeAfterEnd({ db: deps.db, llm: deps.llm }, stored.conversation);
  const reply = [...stored.messages].reverse().find((m) => m.role === 'assistant' && m.content !== null && !m.toolCalls) ?? null;
  const recent = [...before, ...stored.messages].slice(-HISTORY_MESSAGES);
  holdWindow(stored.conversation, recent);
  return { conversation: stored.conversation, messages: stored.messages, reply, receipt: result.receipt, result, recent, auditStored: audit !== undefined };
}

/**
 * Logs the decisions of semantic topic guardrails (domain/conversations/topicClassifier.ts): a topic the model judged
 * to apply at info, a refusal without a verdict (fail-closed: the classifier failed) at warn. The receipt keeps them too.
 */
function logSemanticDecisions(deps: ConversationDeps, c: ConversationRecord, receipt: TurnReceipt): void {
  for (const d of receipt.guardrails) {
    if (d.match !== 'semantic' || !deps.log) continue;
    const at = { orgId: c.orgId, conversationId: c.id, agentId: c.agentId, turn: receipt.turn, guardrail: d };
    if (d.reason?.includes('fail-closed')) deps.log.warn(at, 'semantic guardrail refused the turn without a verdict (fail-closed)');
    else deps.log.info(at, 'semantic guardrail refused the turn');
  }
}

/** Per database handle and organization, the group commit of its turns (db/groupCommit.ts). */
const turnWriters = new WeakMap<Db, Map<string, GroupCommit<TurnWrite, SavedTurn>>>();

/**
 * Stores a turn together with the other turns of its organization that are ready meanwhile: one statement
 * and one commit for all of them (db/repositories/conversations.ts `saveTurns`), so concurrent sessions of an
 * organization do not queue one by one on its wallet row. When a batch fails, its turns are stored one by one,
 * so only the turn at fault fails.
 * @returns the stored turn, or `conflict` (see saveTurns)
 * @throws what storing this turn alone threw
 */
export function storeTurn(db: Db, write: TurnWrite): Promise<SavedTurn> {
  const orgId = write.c.orgId;
  let perOrg = turnWriters.get(db);
  if (!perOrg) turnWriters.set(db, (perOrg = new Map()));
  let writer = perOrg.get(orgId);
  if (!writer) perOrg.set(orgId, (writer = new GroupCommit((batch) => saveTurns(db, orgId, batch), 200, { isolateFailures: true })));
  return writer.submit(write);
}

/** The turn batches `db` wrote so far, all organizations together (the chat benchmark's figures). */
export function turnBatchStats(db: Db): GroupCommitStats {
  const sum = emptyStats();
  for (const w of turnWriters.get(db)?.values() ?? []) addStats(sum, w.stats);
  return sum;
}

/** Usage entries of a turn: one agent reply, and its tokens (deduplicated per conversation and turn). */
function turnCharges(c: ConversationRecord, result: TurnResult): UsageInput[] {
  const turn = result.receipt.turn;
  const entries: UsageInput[] = [];
  if (result.reply) {
    entries.push({ ...CONVERSATION_FEES.message, dedupeKey: `conversation:${c.id}:turn:${turn}:message`, details: { conversationId: c.id, agentId: c.agentId, channel: c.channel } });
  }
  const tokens = tokenCharge(result.usage, result.model, `conversation:${c.id}:turn:${turn}:tokens`, { conversationId: c.id, agentId: c.agentId });
  if (tokens) entries.push(tokens);
  return entries;
}

/**
 * Ends a conversation (idempotent: an ended one is returned unchanged), then analyses it once when `analysis`
 * is given (./analysis.ts `analyzeAfterEnd`: never throws, so the end never fails on it).
 * @param reason e.g. `ended_by_user`, `ended_by_api`
 */
export async function finishConversation(db: Db, c: ConversationRecord, reason: EndReason, analysis?: AnalysisDeps): Promise<ConversationRecord> {
  const ended = (await endConversation(db, c.orgId, c.id, reason, onChange)) ?? c;
  if (analysis) await analyzeAfterEnd(analysis, ended);
  return ended;
}

/** Conversations the idle sweep ends per statement. */
export const IDLE_SWEEP_BATCH = 200;
/** Analyses the idle sweep runs (or workflows it starts) at once. */
const IDLE_ANALYSIS_CONCURRENCY = 4;

/**
 * One batch of the idle sweep (docs/api-notes.md "Conversations": idle timeouts): ends up to `limit` open chat,
 * widget and SMS conversations silent for longer than their agent's idle timeout with `endReason: idle` and
 * `conversation.ended` in one transaction (db/repositories/conversations.ts `endIdleConversations`: SKIP LOCKED, so
 * every process may sweep), then has each analysed once (./analysis.ts `analyzeAfterEnd`: the
 * `conversation-analysis/{id}` workflow when `analysis.temporal` is given, else inline), a few at a time.
 * @param opts.now the time the timeouts are measured to, ms since the epoch or a Date (default: now)
 * @returns the conversations this call ended (fewer than `limit`: no more were due)
 */
export async function sweepIdleConversations(analysis: AnalysisDeps, opts: { now?: number | Date; limit?: number } = {}): Promise<ConversationRecord[]> {
  const ended = await endIdleConversations(
    analysis.db,
    {
      now: new Date(opts.now ?? Date.now()),
      limit: opts.limit ?? IDLE_SWEEP_BATCH,
      shortestTimeoutSeconds: SHORTEST_IDLE_TIMEOUT_SECONDS,
      defaults: { chatSeconds: DEFAULT_CONVERSATION_LIMITS.idleTimeoutSeconds, smsSeconds: DEFAULT_CONVERSATION_LIMITS.smsIdleTimeoutSeconds },
    },
    async (trx, rows) => {
      const byOrg = new Map<string, ConversationRecord[]>();
      for (const c of rows) byOrg.set(c.orgId, [...(byOrg.get(c.orgId) ?? []), c]);
      for (const [orgId, list] of byOrg) await emitEvents(trx, orgId, list.flatMap((c) => changeEvents(c, [])));
    },
  );
  for (let i = 0; i < ended.length; i += IDLE_ANALYSIS_CONCURRENCY) {
    await Promise.all(ended.slice(i, i + IDLE_ANALYSIS_CONCURRENCY).map((c) => analyzeAfterEnd(analysis, c)));
  }
  return ended;
}
