/**
 * One ConversationRelay session (docs/voice.md; Twilio "ConversationRelay WebSocket messages",
 * Telnyx "ConversationRelay WebSocket channel"): the voice channel runs the conversation runtime turn by
 * turn, exactly as chat does, with the carrier doing speech recognition and synthesis.
 *
 * - `setup` opens a conversation (channel `voice`) on the version the relay reference pins (or the talk
 *   token's draft), linked to its call, with the caller's number as the identity caller verification
 *   looks up in Records; when the markup did not speak the greeting, the relay sends it, and a PIN
 *   request of caller verification follows the greeting either way.
 * - a final `prompt` runs one turn (turns of one call run one after another) and streams the reply as
 *   `text` tokens, ending with `last: true`.
 * - `interrupt` stops the rest of the reply and rewrites the stored agent line to what the caller heard.
 * - `dtmf` digits are gathered per the agent's keypad settings (domain/voice/dtmf.ts) into one input,
 *   answered like a spoken message (a playbook gathers a PIN or a menu choice with it).
 * - a turn ending the conversation sends `end` — with `handoffData` naming the destination on a
 *   transfer of a carrier call (a browser talk-token session gets `end` alone) — and closes the socket.
 * - the socket closing without an end closes the conversation (`ended_by_user`).
 * - with tracing on (docs/operations.md "Observability"), the session is one `voice.call` span from the socket's
 *   opening to the hang-up — continuing the trace context the relay was opened with (the carrier webhook's or
 *   the talk page's) — and every step runs inside it (`context.with`: a call spans many socket messages, none
 *   of which carries the context), so each `conversation.turn` with its LLM, knowledge, skill and provider
 *   spans is its child. The post-call analysis after a hang-up is its own trace, linked to the call's span.
 *
 * Transport-agnostic: the API wires it to a `ws` socket (api/voice/relay.ts).
 */
import type { ConversationMessage } from '../../schemas/types/chat';
import type { Logger } from 'pino';
import type { ConversationRecord } from '../../db/repositories/conversations';
import { linkCallConversation, truncateLastAgentLine } from '../../db/repositories/voiceCalls';
import type { CompiledAgent } from '../../domain/agents/compile';
import { DigitGatherer } from '../../domain/voice/dtmf';
import { heardPart, parseCarrierFrame, type RelayFrame, type SetupFrame } from '../../domain/voice/frames';
import { finishConversation, sendMessage, startConversation, type ConversationDeps } from '../conversations/service';
import type { TurnResult } from '../../domain/conversations/runtime';
import { ApiError } from '../../domain/errors';
import { callTrafficSplit } from '../../db/repositories/traffic';
import { analyzeAfterEnd } from '../conversations/analysis';
import { registerLiveCall, unregisterLiveCall, type LiveCall } from './liveCalls';
import { operatorName, storeMessages } from '../conversations/control';
import type { QueuedControl } from '../../db/repositories/conversationControls';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span } from '@opentelemetry/api';

/** What a relay socket was opened for (a verified relay reference or voice talk token). */
export interface RelayGrant {
  orgId: string;
  agentId: string;
  /** Published version to pin, or null for a draft-mode session (talk token). */
  versionId: string | null;
  /** The call (`call_…`), or null for a browser test session. */
  callId: string | null;
  /** Whether the relay sends the greeting itself. */
  speakGreeting: boolean;
  /** The talk token's id, recorded as the conversation's credential. */
  keyId: string | null;
  /** The campaign of an outbound campaign call. */
  campaignId: string | null;
  /** The carrier of the call (`twilio`, `telnyx`, `sandbox`), or `talk_page` for a browser test session (absent: `carrier` / `browser` on the span). */
  provider?: string;
  /** The W3C `traceparent` the relay reference carried (the carrier webhook's trace), if any. */
  traceparent?: string;
  /** A call placed by `POST /calls`: the conversation variables and labels it was placed with. */
  variables?: Record<string, string>;
  metadata?: Record<string, string | number | boolean | null>;
}

/** The socket as the session sees it. */
export interface RelayTransport {
  send(frame: RelayFrame): void;
  /** Closes with a WebSocket close code and reason (RFC 6455 §7.4). */
  close(code: number, reason: string): void;
}

/** Called when the session's conversation ends or the socket closes (the call workflow listens). */
export interface RelayHooks {
  onConversation?(grant: RelayGrant, conversationId: string): void;
  onClosed?(grant: RelayGrant, conversationId: string | null): void;
  /**
   * A call's turn ended in a transfer or an escalation: the `end` frame carries the handoff for carriers that
   * transfer by markup; a carrier driven by commands (Telnyx Call Control) is told here.
   */
  onHandoff?(grant: RelayGrant, handoff: { reason: string; destination: string | null; conversationId: string | null }): void;
}

/** WebSocket close codes the relay uses (RFC 6455 §7.4.1). */
export const CLOSE = { normal: 1000, invalid: 1007, policy: 1008, internal: 1011 } as const;

const tracer = trace.getTracer('agent-control-plane');

/**
 * The `voice.call` span's opening attributes (docs/operations.md "Observability"): organization, agent, version
 * (`draft` for a draft session), channel, carrier, call and campaign ids — never a phone number.
 */
function callAttributes(g: RelayGrant): Attributes {
  return {
    'acp.org_id': g.orgId,
    'acp.agent_id': g.agentId,
    'acp.agent_version_id': g.versionId ?? 'draft',
    'acp.channel': 'voice',
    'acp.voice.provider': g.provider ?? (g.callId ? 'carrier' : 'browser'),
    ...(g.callId ? { 'acp.call_id': g.callId } : {}),
    ...(g.campaignId ? { 'acp.campaign_id': g.campaignId } : {}),
  };
}

interface Line {
  said: string;
  /** What the carrier reported heard when interrupted, else null. */
  cut: string | null;
}

/** One relay socket's conversation. */
export class RelaySession {
  private conversation: (ConversationRecord & { recent?: ConversationMessage[] }) | null = null;
  private agent: CompiledAgent | null = null;
  private queue: Promise<void> = Promise.resolve();
  private line: Line | null = null;
  /** The last agent line sent whole (for an interrupt arriving after it was sent). */
  private lastSaid = '';
  private digits: DigitGatherer | null = null;
  private digitTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private ended = false;
  /** The `voice.call` span (a no-op span when tracing is off) and the context every step runs in. */
  private readonly span: Span;
  private readonly ctx: Context;
  private turns = 0;
  private endReason: string | null = null;
  /** This session in the registry of live calls (./liveCalls.ts): how a member's controls reach it. */
  private readonly live: LiveCall;

  /**
   * @param parent the trace context the relay was opened with (W3C Trace Context: the upgrade request's
   *   `traceparent`, or the carrier webhook's carried by the relay reference); ROOT_CONTEXT starts a new trace
   */
  constructor(
    private readonly deps: ConversationDeps,
    private readonly grant: RelayGrant,
    private readonly transport: RelayTransport,
    private readonly log: Logger,
    private readonly hooks: RelayHooks = {},
    parent: Context = ROOT_CONTEXT,
  ) {
    this.span = tracer.startSpan('voice.call', { kind: SpanKind.SERVER, attributes: callAttributes(grant) }, parent);
    this.ctx = trace.setSpan(parent, this.span);
    this.live = { orgId: grant.orgId, apply: (c) => this.control(c) };
  }

  /** The conversation id once `setup` opened it. */
  get conversationId(): string | null {
    return this.conversation?.id ?? null;
  }

  /** Handles one text frame, inside the call's trace context; a malformed frame closes the socket with the reason. */
  receive(text: string): void {
    context.with(this.ctx, () => this.handle(text));
  }

  private handle(text: string): void {
    if (this.closed || this.ended) return;
    const frame = parseCarrierFrame(text);
    if ('error' in frame) return this.fail(CLOSE.invalid, frame.error);
    if (frame.type !== 'setup' && !this.conversation && frame.type !== 'error') {
      // A frame before setup is a protocol error, unless setup is still being handled (queued below).
      if (!this.setupSeen) return this.fail(CLOSE.policy, `${frame.type} before setup`);
    }
    switch (frame.type) {
      case 'setup':
        if (this.setupSeen) return this.fail(CLOSE.policy, 'setup sent twice');
        this.setupSeen = true;
        return this.enqueue(() => this.setup(frame));
      case 'prompt':
        if (frame.last && frame.voicePrompt.trim()) this.enqueue(() => this.turn(frame.voicePrompt.trim()));
        return;
      case 'dtmf':
        return this.digit(frame.digit);
      case 'interrupt':
        return this.interrupt(frame.utteranceUntilInterrupt);
      case 'error':
        this.log.warn({ conversationId: this.conversationId, description: frame.description }, 'relay: carrier reported an error');
        return;
    }
  }

  private setupSeen = false;

  /**
   * The socket closed (either side): the conversation ends once the running turn is stored, which ends the
   * `voice.call` span; a conversation the caller hung up on is then analysed (its own trace, linked to the call).
   */
  socketClosed(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.digitTimer) clearTimeout(this.digitTimer);
    if (this.conversation) unregisterLiveCall(this.conversation.id, this.live);
    this.queue = context.with(this.ctx, () => this.queue.then(async () => {
      let hungUp: ConversationRecord | null = null;
      try {
        if (this.conversation && this.conversation.status === 'active') {
          this.conversation = hungUp = await finishConversation(this.deps.db, this.conversation, 'ended_by_user');
        }
        this.hooks.onClosed?.(this.grant, this.conversationId);
      } finally {
        this.endCall();
      }
      if (hungUp) await this.postCall(hungUp);
    })).catch((err) => this.log.error({ err, conversationId: this.conversationId }, 'relay: closing the conversation failed'));
  }

  /** Ends the `voice.call` span with the call's turn count and how it ended. */
  private endCall(): void {
    if (!this.span.isRecording()) return;
    this.span.setAttributes({ 'acp.voice.turns': this.turns, 'acp.voice.end_reason': this.endReason ?? this.conversation?.endReason ?? 'ended_by_user' });
    this.span.end();
  }

  /** The post-call analysis of a hung-up conversation: a trace of its own (`voice.call.post_call`) linked to the call. */
  private postCall(c: ConversationRecord): Promise<void> {
    const analyse = () => analyzeAfterEnd({ db: this.deps.db, llm: this.deps.llm, log: this.log }, c);
    // The call's span has ended (no longer recording): whether it was traced is in its sampled flag.
    if (!(this.span.spanContext().traceFlags & TraceFlags.SAMPLED)) return context.with(ROOT_CONTEXT, analyse);
    return tracer.startActiveSpan(
      'voice.call.post_call',
      { root: true, links: [{ context: this.span.spanContext() }], attributes: { 'acp.org_id': c.orgId, 'acp.agent_id': c.agentId, 'acp.conversation_id': c.id, ...(this.grant.callId ? { 'acp.call_id': this.grant.callId } : {}) } },
      (span) => analyse().finally(() => span.end()),
    );
  }

  /** Resolves when every queued step is done (tests, shutdown). */
  idle(): Promise<void> {
    return this.queue;
  }

  private enqueue(step: () => Promise<void>): void {
    this.queue = this.queue.then(() => context.with(this.ctx, step)).catch((err) => {
      this.log.error({ err, conversationId: this.conversationId }, 'relay: session step failed');
      this.fail(CLOSE.internal, 'internal error');
    });
  }

  private send(frame: RelayFrame): void {
    if (!this.closed) this.transport.send(frame);
  }

  private fail(code: number, reason: string): void {
    if (this.closed) return;
    this.endReason = `closed_${code}`;
    // The close code only: a malformed frame's reason may quote the frame.
    if (code !== CLOSE.normal) this.span.setStatus({ code: SpanStatusCode.ERROR, message: `closed ${code}` });
    this.transport.close(code, reason.slice(0, 120));
    this.socketClosed();
  }

  private async setup(frame: SetupFrame): Promise<void> {
    const g = this.grant;
    let started: Awaited<ReturnType<typeof startConversation>>;
    try {
      started = await startConversation(this.deps.db, g.orgId, {
        agentId: g.agentId,
        channel: 'voice',
        ...(g.versionId ? { versionId: g.versionId } : { draftMode: true }),
        // The split the call's version was picked from, recorded on its conversation (services/agents/traffic.ts).
        ...(g.versionId && g.callId ? { trafficSplit: await callTrafficSplit(this.deps.db, g.orgId, g.callId) } : {}),
        keyId: g.keyId,
        // A campaign call or one placed by POST /calls (the relay speaks its opening): the outbound first line.
        outbound: !!g.callId && g.speakGreeting,
        // The caller identity of caller verification: the caller, or the callee of an outbound call.
        counterpart: frame.direction?.startsWith('outbound') ? frame.to : frame.from,
        ...(g.variables ? { variables: g.variables } : {}),
        // The call's own facts win over labels a call placed by POST /calls brought.
        metadata: { ...g.metadata, callId: g.callId, campaignId: g.campaignId, callSid: frame.callSid, sessionId: frame.sessionId, from: frame.from, to: frame.to, direction: frame.direction ?? null },
      });
    } catch (err) {
      // The agent or its version is gone (or never was this organization's): the reason is its problem code.
      if (err instanceof ApiError) return this.fail(CLOSE.policy, err.code);
      throw err;
    }
    const { conversation, greeting, agent, pinPrompt } = started;
    this.conversation = conversation;
    if (this.span.isRecording()) {
      this.span.setAttributes({ 'acp.conversation_id': conversation.id, 'acp.agent_version_id': conversation.versionId ?? 'draft', 'acp.conversation_mode': conversation.mode });
      if (frame.direction) this.span.setAttribute('acp.voice.direction', frame.direction);
      // The numbers identify people: recorded only when asked to (docs/operations.md "Observability").
      if (process.env.OTEL_RECORD_CONTENT === 'true') this.span.setAttributes({ 'acp.voice.from': frame.from ?? '', 'acp.voice.to': frame.to ?? '' });
    }
    this.agent = agent;
    this.digits = new DigitGatherer(agent.dtmf);
    if (g.callId) await linkCallConversation(this.deps.db, g.orgId, g.callId, conversation.id);
    registerLiveCall(conversation.id, this.live);
    this.hooks.onConversation?.(g, conversation.id);
    if (greeting?.content) {
      this.lastSaid = greeting.content;
      if (g.speakGreeting) this.send({ type: 'text', token: greeting.content, last: true });
      // The markup spoke only the agent's greeting: the PIN request of caller verification follows it.
      else if (pinPrompt) this.send({ type: 'text', token: pinPrompt, last: true });
    }
  }

  private async turn(text: string): Promise<void> {
    if (!this.conversation || this.conversation.status !== 'active' || this.ended) return;
    const line: Line = { said: '', cut: null };
    this.line = line;
    this.turns++;
    let result: TurnResult;
    try {
      const out = await sendMessage(this.deps, this.conversation, text, (e) => {
        if (e.type !== 'message.delta' || line.cut !== null) return;
        line.said += e.data.content;
        this.send({ type: 'text', token: e.data.content, last: false });
      });
      // The relay is its conversation's only writer: the next turn reads its history from here.
      this.conversation = { ...out.conversation, recent: out.recent };
      result = out.result;
    } catch (err) {
      this.line = null;
      this.log.warn({ err, conversationId: this.conversationId }, 'relay: turn failed');
      const sorry = 'Sorry, I could not answer that just now. Could you say it again?';
      this.send({ type: 'text', token: sorry, last: true });
      return;
    } finally {
      this.line = null;
    }
    // Every turn's tokens end with `last: true`, an interrupted one too (with no more words after the cut).
    this.send({ type: 'text', token: '', last: true });
    if (line.cut !== null) {
      await this.truncate(heardPart(result.reply, line.cut));
      this.lastSaid = '';
    } else this.lastSaid = result.reply;
    if (result.end) this.end(result);
  }

  /** Sends `end` (with `handoffData` on a transfer) and closes the socket. */
  private end(result: TurnResult): void {
    this.ended = true;
    this.endReason = result.end ?? 'ended';
    const frame: RelayFrame = { type: 'end' };
    // The carrier acts on handoffData; a browser talk-token session (no call) is a public counterpart and
    // gets the end of the stream only (docs/security.md "Public sessions").
    if (this.grant.callId && (result.end === 'transferred' || result.end === 'escalated')) {
      const transfer = result.receipt.toolCalls.find((t) => t.type === 'transfer_call' && !t.error);
      const destination = (transfer?.output as { to?: string } | undefined)?.to ?? null;
      frame.handoffData = JSON.stringify({ reason: result.end, destination, conversationId: this.conversationId, callId: this.grant.callId });
      this.hooks.onHandoff?.(this.grant, { reason: result.end, destination, conversationId: this.conversationId });
    }
    this.send(frame);
    this.transport.close(CLOSE.normal, result.end ?? 'ended');
    this.socketClosed();
  }

  /**
   * A member's control (docs/api-notes.md "Live control"), run in turn with the caller's turns: `say` speaks the line
   * and stores it as the member's; `add_message` stores a `system` line the model reads from the next turn; `transfer`
   * ends with `handoffData` naming the destination (as the agent's transfer does); `end` hangs up.
   */
  control(c: QueuedControl): Promise<void> {
    return new Promise<void>((resolve) => {
      this.enqueue(async () => {
        try {
          await this.applyControl(c);
        } finally {
          resolve();
        }
      });
    });
  }

  private async applyControl(c: QueuedControl): Promise<void> {
    const conv = this.conversation;
    if (!conv || conv.status !== 'active' || this.ended || this.closed) return;
    if (c.action === 'say' || c.action === 'add_message') {
      if (c.action === 'say') this.send({ type: 'text', token: c.content ?? '', last: true });
      const stored = await storeMessages(this.deps, conv, [{ role: c.action === 'say' ? 'assistant' : 'system', content: c.content, name: operatorName(c.actor) }]);
      this.conversation = { ...stored.conversation, recent: [...(conv.recent ?? []), ...stored.messages].slice(-30) };
      if (c.action === 'say') this.lastSaid = c.content ?? '';
      return;
    }
    this.ended = true;
    this.endReason = c.action === 'transfer' ? 'transferred' : 'ended_by_api';
    const frame: RelayFrame = { type: 'end' };
    if (c.action === 'transfer' && this.grant.callId) {
      frame.handoffData = JSON.stringify({ reason: 'transferred', destination: c.destination, conversationId: conv.id, callId: this.grant.callId });
      this.hooks.onHandoff?.(this.grant, { reason: 'transferred', destination: c.destination, conversationId: conv.id });
    }
    // Analysed once, like every end (docs/api-notes.md "Conversation analysis").
    this.conversation = await finishConversation(this.deps.db, conv, c.action === 'transfer' ? 'transferred' : 'ended_by_api', { db: this.deps.db, llm: this.deps.llm, log: this.log });
    this.send(frame);
    this.transport.close(CLOSE.normal, this.endReason);
    this.socketClosed();
  }

  private interrupt(utterance: string): void {
    if (this.line) {
      this.line.cut = utterance;
      return;
    }
    const said = this.lastSaid;
    this.lastSaid = '';
    if (!said) return;
    this.enqueue(async () => {
      if (this.conversation) await this.truncate(heardPart(said, utterance));
    });
  }

  /** Stores only what the caller heard of the agent's last line, in the database and in the kept history. */
  private async truncate(heard: string): Promise<void> {
    if (!this.conversation) return;
    const id = await truncateLastAgentLine(this.deps.db, this.grant.orgId, this.conversation.id, heard);
    const kept = this.conversation.recent?.find((m) => m.id === id);
    if (kept) kept.content = heard;
  }

  private digit(d: string): void {
    if (!this.digits) {
      // Keypad input before setup finished: wait for it.
      this.enqueue(async () => this.digit(d));
      return;
    }
    if (this.digitTimer) clearTimeout(this.digitTimer);
    this.digitTimer = null;
    const outcome = this.digits.push(d);
    if ('complete' in outcome) {
      if (outcome.complete) this.enqueue(() => this.turn(outcome.complete));
    } else if ('waitMs' in outcome) {
      this.digitTimer = setTimeout(() => {
        this.digitTimer = null;
        const input = this.digits?.timeout();
        if (input) this.enqueue(() => this.turn(input));
      }, outcome.waitMs);
      this.digitTimer.unref();
    }
  }
}
