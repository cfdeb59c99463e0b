/**
 * Agents area request and response types (spec "Agent versions", "Agent lifecycle", the Agents, Voice,
 * Skills, Guardrails, Playbooks and Test rows). The spec leaves agent fields "not shown"; the choices
 * here are documented in docs/api-notes.md. `npm run schemas` generates one JSON Schema per type.
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

/** One skill type of the catalogue (`GET /skill-types`). */
export interface SkillType {
  /** e.g. `http_request`, `book_appointment`. */
  type: string;
  name: string;
  description: string;
  /** JSON Schema (draft-07) of the skill's `config`. */
  configSchema: Record<string, unknown>;
  /** Whether a skill of this type sends data outside the system. */
  sendsData: boolean;
}

/**
 * Request body of `POST /agents/{agentId}/skills`.
 * @additionalProperties false
 */
export interface SkillCreate {
  /** Unique per agent; used by playbooks and in diffs (`skills[<name>]`). @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** A type from `GET /skill-types`. @maxLength 64 */
  type: string;
  /** What the skill does, shown to the model and in the pre-publish report. @maxLength 1000 */
  description?: string | null;
  /** Validated against the type's `configSchema`. */
  config: Record<string, unknown>;
}

/**
 * Request body of `PATCH /agents/{agentId}/skills/{id}`; the type cannot change.
 * @additionalProperties false
 */
export interface SkillPatch {
  /** @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name?: string;
  /** @maxLength 1000 */
  description?: string | null;
  /** Replaces the whole config; validated against the type. */
  config?: Record<string, unknown>;
}

/** A skill: one atomic action of the agent (spec "What the service does"). */
export interface Skill {
  /** `skl_…` */
  id: string;
  agentId: string;
  name: string;
  type: string;
  description: string | null;
  config: Record<string, unknown>;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

/** Whole minutes of a conversation limit (inlined into Guardrails). @asType integer @minimum 1 @maximum 240 */
type ConversationMinutes = number;

/**
 * How a blocked topic is recognised (docs/api-notes.md "Agents": guardrails): `phrase` — the topic's words occur in
 * the message in order, as whole words (no model call); `semantic` — the agent's model judges whether the message
 * is about the topic (one classification call per turn; fail-closed: no verdict, no answer).
 */
export type TopicMatch = 'phrase' | 'semantic';

/**
 * A blocked topic with its match mode and what it covers.
 * @additionalProperties false
 */
export interface BlockedTopicRule {
  /** The topic, e.g. `medical advice`; said in the refusal. @minLength 1 @maxLength 200 */
  topic: string;
  /** Default `phrase`. */
  match?: TopicMatch;
  /** What the topic covers, for the model judging `semantic` topics (e.g. "symptoms, diagnoses, medicines, dosages"). @maxLength 1000 */
  description?: string | null;
}

/** A blocked topic: a plain string is a `phrase` topic (the shape stored before match modes existed). */
export type BlockedTopic = string | BlockedTopicRule;

/**
 * Guardrails of the draft (`GET/PUT /agents/{agentId}/guardrails`); PUT replaces them.
 * @additionalProperties false
 */
export interface Guardrails {
  /** Topics the agent declines to discuss: strings (matched as phrases) or rules with a match mode. @maxItems 100 */
  blockedTopics: BlockedTopic[];
  /** Phrases the agent never says (checked on every reply). @maxItems 100 */
  forbiddenPhrases: string[];
  /** Mask card numbers, SSNs and similar in transcripts and tool arguments. */
  redactPii: boolean;
  /** Replace profanity in replies. */
  profanityFilter: boolean;
  /** Situations that hand the conversation to a person. @maxItems 50 */
  escalateOn: string[];
  /** Longest conversation in minutes; null for no limit. */
  maxConversationMinutes: ConversationMinutes | null;
}

/** How a caller proves who they are before sensitive skills run. */
export type CallerVerificationMethod = 'caller_id' | 'pin' | 'dob_and_zip' | 'sms_otp';

/**
 * When the caller is verified (docs/api-notes.md "Caller verification"): `always` — method `pin` asks for the PIN right
 * after the greeting and every answer is a PIN attempt until it matched; `for_protected_actions` — everything is
 * answered before verification, and the PIN is asked for only when the caller asks for a protected action (a
 * skill in `requiredForSkills`, a `lookup_record` skill, or a playbook marked `requiresVerifiedCaller` or running
 * a protected skill).
 */
export type CallerVerificationRequired = 'always' | 'for_protected_actions';

/**
 * Caller verification of the draft (`GET/PUT /agents/{agentId}/caller-verification`).
 * @additionalProperties false
 */
export interface CallerVerification {
  enabled: boolean;
  /** Required when enabled. */
  method: CallerVerificationMethod | null;
  /** Names of skills that run only for verified callers. @maxItems 100 */
  requiredForSkills: string[];
  /** Failed attempts before the conversation is handed off. @minimum 1 @maximum 10 @asType integer */
  maxAttempts: number;
  /**
   * When verification happens. Omitted on PUT: the stored value is kept; agents created since the field exists
   * default to `for_protected_actions`, agents stored before it keep `always` (docs/api-notes.md "Caller verification").
   */
  required?: CallerVerificationRequired;
  /**
   * Method `pin`: the member of the caller's record `fields` holding the PIN (default `pin`).
   * @pattern ^[A-Za-z][A-Za-z0-9_ -]{0,63}$
   */
  pinField?: string;
}

/**
 * Kind of a playbook node. `escalate` hands the person to a member of the team and ends the playbook and the
 * conversation (`escalated`; docs/api-notes.md "Conversations": escalation).
 */
export type PlaybookNodeType = 'start' | 'ask' | 'say' | 'skill' | 'branch' | 'end' | 'escalate';

/** One node of a playbook graph. Fields used depend on `type`. */
export interface PlaybookNode {
  /** Unique within the graph. @pattern ^[A-Za-z0-9_-]{1,64}$ */
  id: string;
  type: PlaybookNodeType;
  /** `ask`: the question; `say`: the text; `escalate`: what is said first (default "I'll connect you with a member of our team."). @maxLength 2000 */
  prompt?: string;
  /** `ask`: the variable the answer is stored in. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  gathers?: string;
  /** `skill`: the skill name. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  skill?: string;
  /** `skill`: skill input name → conversation variable (default: the variable of the same name). */
  inputs?: Record<string, string>;
  /** `branch`: the variable whose value selects the outgoing edge. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  on?: string;
}

/** A directed edge between two nodes. */
export interface PlaybookEdge {
  /** @maxLength 64 */
  from: string;
  /** @maxLength 64 */
  to: string;
  /** `branch` edges: the value of the branch variable that selects this edge; omitted = default. @maxLength 200 */
  when?: string;
  /**
   * `true` on the one edge a `skill` node follows when its skill fails, times out or is refused (docs/api-notes.md
   * "Agents": playbook graphs). A skill node without one says a short apology and offers a member of the team.
   */
  onError?: boolean;
}

/**
 * A playbook graph (`GET/PUT /agents/{agentId}/playbooks/{id}/graph`); PUT replaces it.
 * @additionalProperties false
 */
export interface PlaybookGraph {
  /** @maxItems 500 */
  nodes: PlaybookNode[];
  /** @maxItems 2000 */
  edges: PlaybookEdge[];
}

/** A phrase that starts a playbook when a message contains it (whole words, case and punctuation ignored). @minLength 1 @maxLength 200 */
type TriggerPhrase = string;

/**
 * Request body of `POST /agents/{agentId}/playbooks`.
 * @additionalProperties false
 */
export interface PlaybookCreate {
  /** Unique per agent. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** What the playbook does (shown to the model with its tool and in the pre-publish report). @maxLength 1000 */
  description?: string | null;
  /**
   * When the agent should start it, in plain words (e.g. "the caller wants to book an appointment"): the model
   * reads it in the playbook's tool `start_playbook_<name>`; the sandbox LLM matches its key words. @maxLength 1000
   */
  whenToUse?: string | null;
  /** Phrases that start it (e.g. "book an appointment"). @maxItems 20 */
  triggerPhrases?: TriggerPhrase[];
  /** Whether it runs only for a verified caller (docs/api-notes.md "Caller verification"; default false). */
  requiresVerifiedCaller?: boolean;
  /** Initial graph; default is a start node followed by an end node. */
  graph?: PlaybookGraph;
}

/**
 * Request body of `PATCH /agents/{agentId}/playbooks/{id}` (updatePlaybook): the members to change (null clears
 * `description` and `whenToUse`); the graph has its own PUT.
 * @additionalProperties false
 */
export interface PlaybookPatch {
  /** @maxLength 1000 */
  description?: string | null;
  /** @maxLength 1000 */
  whenToUse?: string | null;
  /** @maxItems 20 */
  triggerPhrases?: TriggerPhrase[];
  requiresVerifiedCaller?: boolean;
}

/** A playbook: a multi-turn node graph that gathers inputs and drives skills. */
export interface Playbook {
  /** `pbk_…` */
  id: string;
  agentId: string;
  name: string;
  description: string | null;
  /** When the agent should start it (null: only when asked for by name or trigger phrase). */
  whenToUse: string | null;
  triggerPhrases: string[];
  requiresVerifiedCaller: boolean;
  graph: PlaybookGraph;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

/** A voice of the sandbox voice catalogue. */
export interface Voice {
  /** e.g. `voice_ava`. */
  id: string;
  name: string;
  provider: string;
  /** BCP 47 tags the voice speaks. */
  languages: string[];
  gender: 'female' | 'male' | 'neutral';
  accent: string;
  /** Style tags such as `warm`, `calm`, `energetic`. */
  tags: string[];
  /** @format uri */
  previewUrl: string;
}

/**
 * Request body of `POST /voices/search`; every criterion given must match.
 * @additionalProperties false
 */
export interface VoiceSearch {
  /** Words matched against name, accent and tags (case-insensitive). @maxLength 200 */
  query?: string;
  /** BCP 47 tag the voice must speak. @maxLength 35 */
  language?: string;
  gender?: 'female' | 'male' | 'neutral';
  /** All of these tags. @maxItems 10 */
  tags?: string[];
}

/** Page of voices. */
export interface VoicePage {
  items: Voice[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `PUT /agents/{id}/voice`.
 * @additionalProperties false
 */
export interface AgentVoiceSet {
  /** A voice id of `GET /voices` that speaks the agent's language. @maxLength 64 */
  voiceId: string;
}

/**
 * Request body of `POST /agents/{id}/publish` (header `Idempotency-Key` required).
 * @additionalProperties false
 */
export interface PublishRequest {
  /** @maxLength 1000 */
  note?: string | null;
  /**
   * Evaluate the draft with a suite of this agent first (docs/evals.md "Publish gate"): the publish is refused with
   * 409 `evaluation_failed` when the run's pass rate is below `minPassRate`.
   */
  gate?: {
    /** `evs_…` of this agent. @minLength 1 @maxLength 64 */
    suiteId: string;
    /** 0..1. @minimum 0 @maximum 1 */
    minPassRate: number;
  };
}

/** A frozen, immutable version of an agent (spec "Agent versions"). */
export interface AgentVersion {
  /** `ver_…` */
  id: string;
  agentId: string;
  /** Per agent, gapless and monotonic from 1. */
  number: number;
  note: string | null;
  /** Id of the credential that published it (`key_…`). */
  publishedBy: string;
  /** Draft version this snapshot was compiled from. */
  draftVersion: number;
  /** Whether live traffic runs this version now. */
  isPublished: boolean;
  /** SHA-256 (hex) of the canonical snapshot JSON. */
  checksum: string;
  /** @format date-time */
  createdAt: string;
}

/** Page of versions, newest first. */
export interface AgentVersionPage {
  items: AgentVersion[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /agents/{id}/rollback`.
 * @additionalProperties false
 */
export interface RollbackRequest {
  /** An earlier frozen version of this agent (`ver_…`). @maxLength 64 */
  versionId: string;
}

/** One share of a traffic split: a published version of the agent and its percentage of new conversations. */
export interface TrafficSplitEntry {
  /** A frozen (published) version of this agent (`ver_…`). @maxLength 64 */
  versionId: string;
  /** Whole percent of new conversations, 1..100. @asType integer @minimum 1 @maximum 100 */
  percent: number;
}

/**
 * Request body of `PUT /agents/{id}/traffic` (setAgentTraffic; docs/api-notes.md "Traffic splits"): the shares sum
 * to 100, no version twice. `stickiness` `counterpart` (default) keeps a repeat caller, texter, widget visitor or
 * chat customer on one version (a stable hash of the key); `none` picks at random per conversation.
 * @additionalProperties false
 */
export interface TrafficSplitUpdate {
  /** @minItems 1 @maxItems 20 */
  splits: TrafficSplitEntry[];
  stickiness?: 'counterpart' | 'none';
}

/** Response data of `GET`/`PUT /agents/{id}/traffic`: the split new conversations are picked from. */
export interface TrafficSplit {
  agentId: string;
  splits: TrafficSplitEntry[];
  stickiness: 'counterpart' | 'none';
  /** The live published version (what the default split and a reset send 100 % to). */
  publishedVersionId: string;
  /** False: the default (100 % on the live version; no split was set since the last publish or rollback). */
  custom: boolean;
  /** When the split was last set (null: the default). @format date-time */
  updatedAt: string | null;
}

/** One difference between a version and the current draft (spec "Agent versions"). */
export interface DiffEntry {
  /** Readable deep path, e.g. `skills[book_appointment].config.url`. */
  field: string;
  /** Value in the version (absent when added). */
  before?: unknown;
  /** Value in the draft (absent when removed). */
  after?: unknown;
  kind: 'added' | 'removed' | 'changed';
}

/** Diff of a version against the current draft. */
export interface AgentVersionDiff {
  versionId: string;
  versionNumber: number;
  draftVersion: number;
  items: DiffEntry[];
}

/** One skill's outbound data flow. */
export interface DataFlow {
  skill: string;
  type: string;
  /** Where the data goes: a URL host, a phone number, or `caller`. */
  destination: string;
  /** Conversation fields sent. */
  fields: string[];
  /** Whether the skill runs only for verified callers. */
  requiresVerifiedCaller: boolean;
}

/** How a playbook starts, as the pre-publish report lists it. */
export interface PlaybookStart {
  name: string;
  description: string | null;
  /** The tool the model is offered: `start_playbook_<name>`. */
  tool: string;
  whenToUse: string | null;
  triggerPhrases: string[];
  /** One sentence: when it starts (by name, trigger phrases, the model reading `whenToUse`). */
  startsWhen: string;
  /** Variables its `ask` nodes gather, in node order. */
  asks: string[];
  /** Whether the caller is verified before it starts. */
  requiresVerifiedCaller: boolean;
}

/** An action that runs only for a verified caller (docs/api-notes.md "Caller verification"). */
export interface ProtectedAction {
  kind: 'skill' | 'record_lookup' | 'playbook';
  name: string;
  /** Why it is protected, e.g. `listed in requiredForSkills`. */
  reason: string;
}

/**
 * What the model can see of one skill's results, or of the caller lookup of caller verification
 * (docs/security.md "Sensitive record fields").
 */
export interface ModelVisibility {
  /** The skill's name; `caller_verification` for the Records lookup when a conversation starts. */
  skill: string;
  /** The skill type; `caller_verification` for the lookup. */
  type: string;
  /**
   * Paths of the result the model is shown (`matches[].name`, `status`); `(entire output)` when the skill
   * declares no output schema; for the lookup, the conversation variables it sets.
   */
  modelSees: string[];
  /** Sensitive paths the model is never shown (masked nowhere: left out). */
  hidden: string[];
  /** Sensitive inputs filled server-side from the verified caller's record when the skill runs; the model neither sets nor sees them. */
  filledServerSide: string[];
  /** Whether only declared output fields reach the model (an output schema). */
  outputSchema: boolean;
  /** Whether it runs only for a verified caller (for the lookup: whether the record is revealed only after the PIN). */
  requiresVerifiedCaller: boolean;
}

/** A problem that does not block publishing. */
export interface ReportWarning {
  code: string;
  message: string;
  field?: string;
}

/** A blocked topic as the pre-publish report lists it. */
export interface ReportBlockedTopic {
  topic: string;
  match: TopicMatch;
  description: string | null;
}

/** The model settings as the pre-publish report states them. */
export interface ReportModelSettings {
  /** The model the turns run on: the agent's `model`, else the deployment's `LLM_MODEL`. */
  model: string;
  /** `agent`: the agent names it; `default`: the deployment's `LLM_MODEL`. */
  modelSource: 'agent' | 'default';
  /** Asked once when `model` answers 429/5xx or times out; null: none. */
  fallbackModel: string | null;
  /** null: the model's default. */
  temperature: number | null;
  /** null: the model's limit. */
  maxTokens: number | null;
  /** Time zone of the date and time the agent is told. */
  timeZone: string;
  /** `agent`: the agent's `timeZone`; `default`: the organization's (UTC). */
  timeZoneSource: 'agent' | 'default';
  /** Model calls a turn makes besides the answer: one topic classification when a semantic topic is set. */
  classificationCallsPerTurn: number;
}

/** Pre-publish report of the current draft (spec "Agent versions"). */
export interface PrepublishReport {
  agentId: string;
  draftVersion: number;
  /** Statements of what the agent will say (greeting, topics it covers, actions it offers). */
  willSay: string[];
  /** Statements of what the agent will not say (blocked topics, forbidden phrases, redaction). */
  willNotSay: string[];
  /** Which skills send which fields, and where. */
  dataLeavingSystem: DataFlow[];
  /** Per skill and for the caller lookup: which fields the model can see, and whether a verified caller is required. */
  modelVisibility: ModelVisibility[];
  /** Names and descriptions of the active guardrails. */
  activeGuardrails: { name: string; description: string }[];
  /** Every blocked topic with how it is recognised (`phrase` or `semantic`) and what it covers. */
  blockedTopics: ReportBlockedTopic[];
  /** The model settings the version will run with (docs/api-notes.md "Agents": model settings). */
  modelSettings: ReportModelSettings;
  /** The playbooks and when each starts. */
  playbooks: PlaybookStart[];
  /** When callers are verified (null: verification off). */
  callerVerificationRequired: CallerVerificationRequired | null;
  /** What runs only for a verified caller (empty when verification is off). */
  protectedActions: ProtectedAction[];
  knowledgeCoverage: {
    /** Number of sources per status (pending, processing, ready, failed). */
    sourcesByStatus: Record<string, number>;
    totalSources: number;
    /** Chunks indexed across ready sources. */
    chunkCount: number;
  };
  /**
   * Per number the agent answers (docs/voice.md "Phone settings on calls"): business hours and the after-hours action,
   * the recording notice, the escalation destinations and when each is used, the voice and language the carrier gets.
   */
  numbers: ReportNumber[];
  /** Escalation in chat, the widget and SMS (docs/api-notes.md "Conversations": escalation). */
  escalation: ReportEscalation;
  /** Idle timeouts and the SMS reply length (docs/api-notes.md "Conversations": idle timeouts). */
  conversationLimits: ReportConversationLimits;
  /**
   * Per `mcp` skill, its MCP server as it answers now: reachable with the tools it lists (which are allowed, under
   * which name and approval) or unreachable and why (docs/api-notes.md "MCP skills").
   */
  mcpServers: ReportMcpServer[];
  /** Problems that would make a publish answer 400 (the same errors[] publish would answer). */
  blockingErrors: { field: string; message: string }[];
  warnings: ReportWarning[];
}

/** A tool an MCP server lists, as the pre-publish report shows it. */
export interface ReportMcpTool {
  /** Its name on the server. */
  name: string;
  description: string | null;
  /** Named by the skill's allow-list. */
  allowed: boolean;
  /** Its approval policy (null: not allowed). */
  approval: 'auto' | 'verified_caller_only' | 'never' | null;
  /** The name the model is offered it by (null: not offered — not allowed, or `never`). */
  toolName: string | null;
}

/** An `mcp` skill's server in the pre-publish report. */
export interface ReportMcpServer {
  skill: string;
  url: string;
  /** `reachable`: it listed its tools just now; `unreachable`: it could not be reached or refused (see `error`); `not_checked`: not probed. */
  status: 'reachable' | 'unreachable' | 'not_checked';
  /** The transport it answered on. */
  transport: 'streamable_http' | 'sse' | null;
  /** Why it is unreachable (`<code>: <message>`). */
  error: string | null;
  /** Every tool it lists. */
  tools: ReportMcpTool[];
  /** Allow-listed tools it does not list. */
  missingTools: string[];
}

/** An escalation destination as the pre-publish report lists it. */
export interface ReportEscalationDestination {
  /** `esc_…` */
  destinationId: string;
  name: string;
  /** `phone`, `sip`, `email` or `webhook`. */
  kind: string;
  address: string;
  /** When it is used, one sentence each (e.g. "Outside business hours (afterHours: escalation)"). */
  usedWhen: string[];
}

/** What the carrier is told about the agent's speech on one number (docs/voice.md "The agent's voice on the carrier"). */
export interface ReportCarrierSpeech {
  /** Whose markup the number's calls get (`twilio` also for the sandbox carrier). */
  carrier: 'twilio' | 'telnyx';
  /** BCP 47 language of synthesis and recognition. */
  language: string;
  /** The carrier's voice id (e.g. `Joanna-Neural`, `AWS.Polly.Joanna-Neural`); null: the carrier's default voice. */
  voice: string | null;
  ttsProvider: string | null;
  transcriptionProvider: string;
}

/** What a call to one of the agent's numbers gets (pre-publish report). */
export interface ReportNumber {
  /** `num_…` */
  numberId: string;
  e164: string;
  smsEnabled: boolean;
  businessHours: {
    /** IANA time zone of `hours`. */
    timeZone: string;
    /** Weekly opening hours; null: always open. */
    hours: { day: string; open: string; close: string }[] | null;
  };
  /** What a call outside the hours gets. */
  afterHours: 'agent' | 'voicemail' | 'message' | 'escalation';
  /** One sentence: the after-hours action, with its message or destination. */
  afterHoursAction: string;
  /** Spoken before the greeting; null: calls are not recorded. */
  recordingNotice: string | null;
  /** Where a call to this number may be handed to a person, and when. */
  escalation: ReportEscalationDestination[];
  carrierSpeech: ReportCarrierSpeech;
  /** The same facts as sentences. */
  statements: string[];
}

/** Escalation outside calls (pre-publish report). */
export interface ReportEscalation {
  /** Whether the model is offered the `escalate` tool (the organization has an escalation destination). */
  toolOffered: boolean;
  /** Where a chat, widget or SMS escalation goes, in the order they are tried, and when each is used. */
  destinations: ReportEscalationDestination[];
  /** How the person is told they will be reached, per destination kind, one sentence each. */
  statements: string[];
}

/** Idle timeouts and the SMS reply length as the version will run them. */
export interface ReportConversationLimits {
  idleTimeoutSeconds: number;
  smsIdleTimeoutSeconds: number;
  smsMaxSegments: number;
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

/** Page of skills. */
export interface SkillPage {
  items: Skill[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** Page of playbooks. */
export interface PlaybookPage {
  items: Playbook[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** The skill type catalogue. */
export interface SkillTypeList {
  items: SkillType[];
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
