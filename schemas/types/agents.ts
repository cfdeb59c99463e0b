/**
 * Agents area request and response types: the agent itself, its widget and test-session token (spec "Agent
 * lifecycle", the Agents and Test rows). The spec leaves agent fields "not shown"; the choices here are documented
 * in docs/api-notes.md. Skills, guardrails, playbooks, voices, versions and the pre-publish report have files of
 * their own. `npm run schemas` generates one JSON Schema per type.
 */

/** DTMF keypad input on voice calls (spec: configured on the agent, no endpoint of its own). */
export interface DtmfSettings {
  /** Whether callers may answer with the keypad. */
  enabled: boolean;
  /** Milliseconds to wait for the next digit before the input is complete. @minimum 500 @maximum 10000 @asType integer */
  interDigitTimeoutMs?: number;
  /** Key that ends input early (`#` or `*`), or null for none. */
  terminator?: '#' | '*' | null;
  /** Most digits accepted in one input. @minimum 1 @maximum 32 @asType integer */
  maxDigits?: number;
}

/** A conversation variable the agent knows from the start (e.g. the caller's account tier). */
export interface AgentVariable {
  /** Identifier used in prompts and playbooks as `{{name}}`. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** @maxLength 500 */
  description?: string;
  /** Value used when the conversation does not supply one. @maxLength 1000 */
  defaultValue?: string | null;
}

/**
 * One value the post-conversation analysis extracts from a transcript (docs/api-notes.md "Conversation analysis").
 * @additionalProperties false
 */
export interface AnalysisField {
  /** Key of the value in `analysis.fields`; unique per agent. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** `date` is an ISO 8601 calendar date (`YYYY-MM-DD`); `enum` takes one of `values`. */
  type: 'string' | 'number' | 'boolean' | 'date' | 'enum';
  /** What the value means, shown to the model. @maxLength 500 */
  description?: string;
  /** The allowed values of an `enum` field (required for it, refused on other types). @minItems 1 @maxItems 50 */
  values?: string[];
}

/**
 * What the post-conversation analysis extracts besides its summary, outcome and sentiment.
 * @additionalProperties false
 */
export interface AnalysisSettings {
  /** @maxItems 30 */
  fields: AnalysisField[];
}

/** Most completion tokens of one answer (inlined into AgentCreate). @asType integer @minimum 1 @maximum 32768 */
type AnswerTokens = number;

/**
 * Request body of `POST /agents` (createAgent).
 * @additionalProperties false
 */
export interface AgentCreate {
  /** Unique per organization (case-insensitive); a duplicate answers 409 `duplicate_name`. @minLength 1 @maxLength 100 */
  name: string;
  /** @maxLength 500 */
  description?: string | null;
  /** Who the agent is: tone, role, company it speaks for. @maxLength 4000 */
  persona?: string | null;
  /** What the agent must do and how (system instructions). @maxLength 20000 */
  instructions?: string | null;
  /** First sentence spoken or written to a caller. @maxLength 1000 */
  greeting?: string | null;
  /**
   * What a campaign call leaves on an answering machine after the beep, then hangs up (docs/voice.md "Voicemail");
   * `{{variables}}` are filled as in the greeting. Null: a machine is only the `voicemail` outcome.
   * @minLength 1 @maxLength 1000
   */
  voicemailMessage?: string | null;
  /**
   * First line of an outbound call — a campaign's or one placed by `POST /calls` — once the callee answers
   * (docs/voice.md "Outbound first line"); `{{variables}}` are filled as in the greeting. Null: the `greeting`.
   * @minLength 1 @maxLength 1000
   */
  outboundGreeting?: string | null;
  /**
   * Who opens an outbound call: `agent_speaks_first` (the agent says `outboundGreeting`, else `greeting`; the default)
   * or `wait_for_callee` (the agent says nothing until the callee has spoken).
   */
  outboundFirstMessageMode?: OutboundFirstMessageMode;
  /**
   * BCP 47 tag of the conversation language (default `en-US`); a well-formed tag the plan's speech engine
   * does not support answers 422 `unsupported_language`. @pattern ^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?$
   */
  language?: string;
  /** Voice id from `GET /voices`; null uses the language's default voice. @maxLength 64 */
  voiceId?: string | null;
  dtmf?: DtmfSettings;
  /** @maxItems 100 */
  variables?: AgentVariable[];
  /** Extraction fields of the post-conversation analysis (docs/api-notes.md "Conversation analysis"). */
  analysis?: AnalysisSettings;
  /**
   * Seconds without a message after which a chat or widget conversation ends `idle` (docs/api-notes.md
   * "Conversations": idle timeouts; default 1,800). @asType integer @minimum 60 @maximum 86400
   */
  idleTimeoutSeconds?: number;
  /**
   * Seconds without a text after which an SMS conversation ends `idle` (docs/sms.md "Agents answer texts"; default
   * 86,400). @asType integer @minimum 300 @maximum 2592000
   */
  smsIdleTimeoutSeconds?: number;
  /** Most segments of one SMS reply, cut at a sentence (docs/sms.md; default 3). @asType integer @minimum 1 @maximum 10 */
  smsMaxSegments?: number;
  /**
   * Chat model of the agent's turns (docs/api-notes.md "Agents": model settings): one of the deployment's `LLM_MODELS`
   * (another → 400 naming `model`). Null: the deployment's `LLM_MODEL`. @minLength 1 @maxLength 200
   */
  model?: string | null;
  /** Sampling temperature of the agent's answers, 0–2; null: the model's default. @minimum 0 @maximum 2 */
  temperature?: number | null;
  /** Most tokens of one answer (an answer is cut there); null: the model's own limit. */
  maxTokens?: AnswerTokens | null;
  /**
   * Model asked once, for the same request, when `model` answers 429 or 5xx or does not answer in time; one of
   * `LLM_MODELS` (another → 400 naming `fallbackModel`). Null: none. @minLength 1 @maxLength 200
   */
  fallbackModel?: string | null;
  /**
   * IANA time zone of the current date and time the agent is told (e.g. `America/Chicago`; unknown → 400 naming
   * `timeZone`). Null: the organization's time zone, UTC while organizations have none. @minLength 1 @maxLength 64
   */
  timeZone?: string | null;
}

/**
 * Request body of `PATCH /agents/{id}` (updateAgent): the fields to change (merge patch; null clears).
 * Requires `If-Match: "<version>"`.
 * @additionalProperties false
 */
export type AgentPatch = Partial<AgentCreate>;

/** What is attached to the agent's draft. */
export interface AgentAttachments {
  /** Skills by name. */
  skills: { id: string; name: string; type: string }[];
  /** Playbooks by name. */
  playbooks: { id: string; name: string }[];
  /** Number of knowledge sources (any status). */
  knowledgeSources: number;
  /** Names of the guardrails that are active. */
  guardrails: string[];
  /** Whether caller verification is enabled. */
  callerVerification: boolean;
}

/** Who opens an outbound call (docs/voice.md "Outbound first line"): the agent with its line, or the callee. */
export type OutboundFirstMessageMode = 'agent_speaks_first' | 'wait_for_callee';

/** An agent: its draft plus a pointer to the published version. `ETag` carries `version`. */
export interface Agent {
  /** `agt_…` */
  id: string;
  name: string;
  description: string | null;
  persona: string | null;
  instructions: string | null;
  greeting: string | null;
  /** Left on an answering machine by campaign calls (docs/voice.md "Voicemail"); null: none. */
  voicemailMessage: string | null;
  /** First line of an outbound call; null: the greeting (docs/voice.md "Outbound first line"). */
  outboundGreeting: string | null;
  outboundFirstMessageMode: OutboundFirstMessageMode;
  language: string;
  voiceId: string | null;
  dtmf: DtmfSettings;
  variables: AgentVariable[];
  analysis: AnalysisSettings;
  /** Seconds of silence before a chat or widget conversation ends `idle` (docs/api-notes.md "Conversations"). */
  idleTimeoutSeconds: number;
  /** Seconds of silence before an SMS conversation ends `idle` (docs/sms.md "Agents answer texts"). */
  smsIdleTimeoutSeconds: number;
  /** Most segments of one SMS reply. */
  smsMaxSegments: number;
  /** Chat model (docs/api-notes.md "Agents": model settings); null: the deployment's `LLM_MODEL`. */
  model: string | null;
  /** 0–2; null: the model's default. */
  temperature: number | null;
  /** Most tokens of one answer; null: the model's limit. */
  maxTokens: number | null;
  /** Asked once when `model` answers 429/5xx or times out; null: none. */
  fallbackModel: string | null;
  /** IANA time zone of the date and time in the prompt; null: the organization's (UTC). */
  timeZone: string | null;
  attachments: AgentAttachments;
  /** Draft version: starts at 1, +1 on every edit of the draft or its parts. */
  version: number;
  /** The frozen version live traffic runs (`ver_…`), null before the first publish. */
  publishedVersionId: string | null;
  publishedVersionNumber: number | null;
  /** True when the draft changed since the published version was compiled (or nothing is published). */
  hasUnpublishedChanges: boolean;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}


/**
 * Request body of `POST /agents/{agentId}/talk-token`.
 * @additionalProperties false
 */
export interface TalkTokenRequest {
  /** Talk to the current draft instead of the published version. */
  draftMode?: boolean;
  /** Lifetime in seconds (default 300). @minimum 30 @maximum 3600 @asType integer */
  ttlSeconds?: number;
  /** Default `voice`. */
  channel?: 'voice' | 'chat';
}

/** A short-lived signed token for one test session. */
export interface TalkToken {
  token: string;
  agentId: string;
  /** The frozen version the session runs; null in draft mode. */
  versionId: string | null;
  /** The draft version in draft mode, else null. */
  draftVersion: number | null;
  mode: 'published' | 'draft';
  channel: 'voice' | 'chat';
  /** @format date-time */
  expiresAt: string;
}

/** Page of agents. */
export interface AgentPage {
  items: Agent[];
  nextCursor: string | null;
  hasMore: boolean;
}


/**
 * Widget settings of the draft (`GET/PUT /agents/{agentId}/widget`; docs/api-notes.md "Widget"): how the embeddable
 * chat widget looks. PUT replaces them as an edit of the draft; publishing freezes them with the version.
 * @additionalProperties false
 */
export interface WidgetSettings {
  /** A disabled widget refuses new sessions (403 `widget_disabled`). */
  enabled: boolean;
  /** Panel title. @minLength 1 @maxLength 60 */
  title: string;
  /** Said instead of the agent's greeting in the widget; null keeps the agent's. @maxLength 1000 */
  greeting: string | null;
  /** Launcher and header colour, `#rrggbb`. @pattern ^#[0-9a-fA-F]{6}$ */
  primaryColor: string;
  /** Text colour on the primary colour, `#rrggbb`. @pattern ^#[0-9a-fA-F]{6}$ */
  textColor: string;
  position: 'bottom-right' | 'bottom-left';
  /** Label of the launcher button. @minLength 1 @maxLength 40 */
  launcherText: string;
  /**
   * Offer a voice call in the widget (docs/api-notes.md "Voice in the widget"); absent means true. Offered only
   * where the published version has a voice.
   */
  voice?: boolean;
}
