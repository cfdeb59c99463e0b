/**
 * How long a conversation may stay silent and how long an SMS reply may be (docs/api-notes.md "Conversations":
 * idle timeouts; docs/sms.md "Agents answer texts"): agent fields compiled into every version. A chat or widget
 * conversation nobody wrote in for `idleTimeoutSeconds`, or an SMS conversation for `smsIdleTimeoutSeconds`,
 * ends `idle`; voice conversations end with their call. Pure.
 */
import type { ConversationChannel } from '../../schemas/types/chat';

/** The agent's conversation limits (schemas/types/agents.ts `Agent`). */
export interface ConversationLimits {
  /** Seconds of silence before a chat or widget conversation ends `idle`. */
  idleTimeoutSeconds: number;
  /** Seconds of silence before an SMS conversation ends `idle`. */
  smsIdleTimeoutSeconds: number;
  /** Most segments of one SMS reply (3GPP TS 23.040 concatenated segments); a longer reply is cut at a sentence. */
  smsMaxSegments: number;
}

/** The limits of an agent that names none (and of versions published before the fields existed). */
export const DEFAULT_CONVERSATION_LIMITS: Readonly<ConversationLimits> = Object.freeze({
  idleTimeoutSeconds: 1800,
  smsIdleTimeoutSeconds: 86_400,
  smsMaxSegments: 3,
});

/**
 * Accepted ranges, inclusive (the JSON Schema of `AgentCreate` states the same; a value outside answers 400
 * naming the field): a chat idle timeout of 1 minute to 1 day, an SMS one of 5 minutes to 30 days, 1–10 segments.
 */
export const CONVERSATION_LIMIT_RANGES = {
  idleTimeoutSeconds: { min: 60, max: 86_400 },
  smsIdleTimeoutSeconds: { min: 300, max: 2_592_000 },
  smsMaxSegments: { min: 1, max: 10 },
} as const;

/** The shortest idle timeout of any channel, seconds: no open conversation younger than this is looked at. */
export const SHORTEST_IDLE_TIMEOUT_SECONDS = CONVERSATION_LIMIT_RANGES.idleTimeoutSeconds.min;

/** A compiled agent's limits with the defaults for members it lacks (a version published before they existed). */
export function conversationLimits(agent: Partial<ConversationLimits> | null | undefined): ConversationLimits {
  return {
    idleTimeoutSeconds: agent?.idleTimeoutSeconds ?? DEFAULT_CONVERSATION_LIMITS.idleTimeoutSeconds,
    smsIdleTimeoutSeconds: agent?.smsIdleTimeoutSeconds ?? DEFAULT_CONVERSATION_LIMITS.smsIdleTimeoutSeconds,
    smsMaxSegments: agent?.smsMaxSegments ?? DEFAULT_CONVERSATION_LIMITS.smsMaxSegments,
  };
}

/** Seconds of silence after which a conversation of `channel` ends `idle`; null for voice (a call ends with its call). */
export function idleTimeoutFor(channel: ConversationChannel, limits: ConversationLimits): number | null {
  if (channel === 'sms') return limits.smsIdleTimeoutSeconds;
  if (channel === 'chat' || channel === 'web') return limits.idleTimeoutSeconds;
  return null;
}

/** "30 minutes", "1 day", "90 seconds": a duration in seconds in words, for the pre-publish report. */
export function durationWords(seconds: number): string {
  const units: [number, string][] = [
    [86_400, 'day'],
    [3600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units) if (seconds % size === 0 && seconds >= size) return `${seconds / size} ${name}${seconds / size === 1 ? '' : 's'}`;
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
}
