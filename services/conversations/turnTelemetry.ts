/**
 * What a conversation turn tells the operators (docs/operations.md "Observability"): its `conversation.turn` span
 * and the turn metrics, for services/conversations/service.ts.
 */
import { context, trace, type Span } from '@opentelemetry/api';
import type { ConversationRecord } from '../../db/repositories/conversations';
import type { TurnResult } from '../../domain/conversations/runtime';
import { conversationFirstToken, conversationTurnDuration, conversationTurns } from '../../metrics';

/** The tracer of the turn spans. */
export const tracer = trace.getTracer('agent-control-plane');

/**
 * The `conversation.turn` span's attributes: agent, version, channel, mode and each latency stage (ms); the
 * message text and reply only with `OTEL_RECORD_CONTENT=true` (never a phone number or text by default).
 */
export function describeTurn(span: Span, c: ConversationRecord, text: string | null, result?: TurnResult): void {
  if (!span.isRecording()) return;
  span.setAttributes({ 'acp.agent_id': c.agentId, 'acp.agent_version_id': c.versionId ?? 'draft', 'acp.channel': c.channel, 'acp.conversation_id': c.id, 'acp.conversation_mode': c.mode });
  if (!result) return;
  span.setAttribute('acp.turn', result.receipt.turn);
  for (const l of result.receipt.latency) if (!l.detail) span.setAttribute(`acp.latency.${l.stage}_ms`, l.ms);
  span.setAttribute('acp.tool_calls', result.receipt.toolCalls.length);
  if (process.env.OTEL_RECORD_CONTENT === 'true') {
    if (text !== null) span.setAttribute('acp.message', text);
    if (result.reply) span.setAttribute('acp.reply', typeof result.reply === 'string' ? result.reply : JSON.stringify(result.reply));
  }
}

/** Runs `fn` with `span` active (its LLM and SQL spans are its children); a no-op span when tracing is off. */
export function runTurnIn<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  if (!span.isRecording()) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Counts a turn that ran, with its latency stages (the receipt's `turn` and `llm_first_token`, in ms). */
export function countTurn(channel: string, latency: Array<{ stage: string; ms: number }>): void {
  conversationTurns.inc({ channel, outcome: 'ok' });
  for (const l of latency) {
    if (l.stage === 'turn') conversationTurnDuration.observe({ channel }, l.ms / 1000);
    else if (l.stage === 'llm_first_token') conversationFirstToken.observe({ channel }, l.ms / 1000);
  }
}

