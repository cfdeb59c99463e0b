/**
 * Wire types of the Observe group (spec "Observe" rows, "Scope rules" 1 and 4; docs/api-notes.md "Observe"):
 * conversations on every channel, transcripts, receipts and analytics.
 */
import type { TurnReceipt } from './chat';

/** One conversation of any channel: a chat, widget or simulated conversation, an SMS thread or a call. */
export interface ConversationSummary {
  /** `cnv_…` (chat, web, voice) or `smt_…` (an SMS thread: the texts between one of our numbers and one counterpart). */
  id: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  agentId: string | null;
  /** SMS threads stay `active`. */
  status: 'active' | 'ended';
  /** A test conversation of `POST /agents/{agentId}/simulate`. */
  simulation: boolean;
  /** @format date-time */
  startedAt: string;
  /** When it ended (for an SMS thread: its last text). @format date-time */
  endedAt: string | null;
  durationSeconds: number | null;
  messageCount: number;
  /** Calls of an outbound campaign. */
  campaignId: string | null;
  /** The other party's number (calls, SMS threads). */
  counterpart: string | null;
  /** Calls: `completed`, `voicemail`, `busy`, `no_answer`, `failed`. */
  outcome: string | null;
  endReason: string | null;
  versionId: string | null;
  /**
   * The traffic split the version was picked from (docs/api-notes.md "Traffic splits"); null when the version was
   * pinned explicitly (a talk token, `@vN`, a draft) and for SMS threads and calls recorded without a conversation.
   */
  trafficSplit?: { splits: { versionId: string; percent: number }[]; stickiness: 'counterpart' | 'none' } | null;
  totalTokens: number;
  /** The post-conversation analysis at a glance; null until it ran (and always for SMS threads). */
  analysis: ConversationAnalysisBrief | null;
}

/** Outcome and sentiment of a conversation's analysis (the whole analysis is in the transcript). */
export interface ConversationAnalysisBrief {
  status: 'running' | 'completed' | 'failed';
  /** `resolved`, `transferred`, `abandoned` or `unresolved`. */
  outcome: string | null;
  sentiment: 'positive' | 'neutral' | 'negative' | null;
}

/** The post-conversation analysis of an ended conversation (docs/api-notes.md "Conversation analysis"). */
export interface ConversationAnalysis extends ConversationAnalysisBrief {
  summary: string | null;
  /** Extracted values by the agent's field names; invalid values are left out and named in `notes`. */
  fields: Record<string, string | number | boolean>;
  notes: string[];
  /** Why a failed analysis failed. */
  error: string | null;
  /** The model that answered. */
  model: string | null;
  /** @format date-time */
  analyzedAt: string | null;
}

/** One message of a transcript, verbatim. */
export interface TranscriptMessage {
  id: string;
  /**
   * `user` (chat/widget caller), `agent`, `contact` (the other party of an SMS thread), or `operator`: a member who
   * took the conversation over or said a line on a call (docs/api-notes.md "Live control").
   */
  speaker: 'user' | 'agent' | 'contact' | 'operator';
  text: string;
  /** @format date-time */
  at: string;
  channel: 'chat' | 'web' | 'sms' | 'voice';
  /** SMS attachment ids (`med_…`). */
  attachmentIds: string[];
}

/** Response data of `GET /conversations/{id}/transcript`. */
export interface ConversationTranscript {
  conversation: ConversationSummary;
  /**
   * True when the caller holds `analytics:read` but not `calls:read`: the conversation is listed, its
   * transcript is empty (spec "Scope rules" 4).
   */
  redacted: boolean;
  messages: TranscriptMessage[];
  /** The whole post-conversation analysis; null until it ran, and when redacted (it is read from the transcript). */
  analysis: ConversationAnalysis | null;
}

/** Response data of `GET /conversations/{id}/receipt`: one receipt per turn (none for SMS threads and calls). */
export interface ConversationReceipt {
  conversation: ConversationSummary;
  turns: TurnReceipt[];
}

/** Analytics of one period bucket (a day, or an hour for ranges up to 48 hours) or of the whole range. */
export interface AnalyticsFigures {
  conversations: number;
  /** User and agent messages. */
  messages: number;
  /** Of ended conversations, seconds. */
  averageDurationSeconds: number | null;
  p95DurationSeconds: number | null;
  /** Share of ended conversations that ended without a transfer or escalation (0..1). */
  containmentRate: number | null;
  toolCalls: number;
  /** Share of tool calls that did not fail (0..1). */
  toolCallSuccessRate: number | null;
  guardrailTriggers: number;
  /** Share of knowledge lookups that found at least one chunk (0..1). */
  knowledgeHitRate: number | null;
  llmTokens: number;
  /** Usage charged for the conversations' messages and tokens, US cents. */
  costCents: number;
}

/** Response data of `GET /analytics/overview` and `GET /agents/{agentId}/analytics`. */
export interface Analytics {
  agentId: string | null;
  /** @format date-time */
  from: string;
  /** @format date-time */
  to: string;
  /** IANA time zone of the buckets. */
  timeZone: string;
  bucket: 'day' | 'hour';
  totals: AnalyticsFigures;
  series: ({ start: string } & AnalyticsFigures)[];
  /**
   * With `groupBy=version` (an agent's analytics): the figures per published version the conversations ran on, most
   * conversations first (docs/api-notes.md "Traffic splits"); absent otherwise.
   */
  versions?: ({ versionId: string; versionNumber: number } & AnalyticsFigures)[];
}
