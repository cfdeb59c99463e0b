/**
 * Agents area request and response types (spec "Agent versions", "Agent lifecycle", the Agents, Voice,
 * Skills, Guardrails, Playbooks and Test rows). The spec leaves agent fields "not shown"; the choices
 * here are documented in the README's API notes. `npm run schemas` generates one JSON Schema per type.
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
 * One value the post-conversation analysis extracts from a transcript (README "Conversation analysis").
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
   * What a campaign call leaves on an answering machine after the beep, then hangs up (README "Voicemail");
   * `{{variables}}` are filled as in the greeting. Null: a machine is only the `voicemail` outcome.
   * @minLength 1 @maxLength 1000
   */
  voicemailMessage?: string | null;
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
  /** Extraction fields of the post-conversation analysis (README "Conversation analysis"). */
  analysis?: AnalysisSettings;
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

/** An agent: its draft plus a pointer to the published version. `ETag` carries `version`. */
export interface Agent {
  /** `agt_…` */
  id: string;
  name: string;
  description: string | null;
  persona: string | null;
  instructions: string | null;
  greeting: string | null;
  /** Left on an answering machine by campaign calls (README "Voicemail"); null: none. */
  voicemailMessage: string | null;
  language: string;
  voiceId: string | null;
  dtmf: DtmfSettings;
  variables: AgentVariable[];
  analysis: AnalysisSettings;
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
 * Guardrails of the draft (`GET/PUT /agents/{agentId}/guardrails`); PUT replaces them.
 * @additionalProperties false
 */
export interface Guardrails {
  /** Topics the agent declines to discuss. @maxItems 100 */
  blockedTopics: string[];
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
   * Method `pin`: the member of the caller's record `fields` holding the PIN (default `pin`).
   * @pattern ^[A-Za-z][A-Za-z0-9_ -]{0,63}$
   */
  pinField?: string;
}

/** Kind of a playbook node. */
export type PlaybookNodeType = 'start' | 'ask' | 'say' | 'skill' | 'branch' | 'end';

/** One node of a playbook graph. Fields used depend on `type`. */
export interface PlaybookNode {
  /** Unique within the graph. @pattern ^[A-Za-z0-9_-]{1,64}$ */
  id: string;
  type: PlaybookNodeType;
  /** `ask`: the question; `say`: the text. @maxLength 2000 */
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

/**
 * Request body of `POST /agents/{agentId}/playbooks`.
 * @additionalProperties false
 */
export interface PlaybookCreate {
  /** Unique per agent. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** When the agent should run it. @maxLength 1000 */
  description?: string | null;
  /** Initial graph; default is a start node followed by an end node. */
  graph?: PlaybookGraph;
}

/** A playbook: a multi-turn node graph that gathers inputs and drives skills. */
export interface Playbook {
  /** `pbk_…` */
  id: string;
  agentId: string;
  name: string;
  description: string | null;
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

/** A problem that does not block publishing. */
export interface ReportWarning {
  code: string;
  message: string;
  field?: string;
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
  /** Names and descriptions of the active guardrails. */
  activeGuardrails: { name: string; description: string }[];
  knowledgeCoverage: {
    /** Number of sources per status (pending, processing, ready, failed). */
    sourcesByStatus: Record<string, number>;
    totalSources: number;
    /** Chunks indexed across ready sources. */
    chunkCount: number;
  };
  /** Problems that would make a publish answer 400 (the same errors[] publish would answer). */
  blockingErrors: { field: string; message: string }[];
  warnings: ReportWarning[];
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
 * Widget settings of the draft (`GET/PUT /agents/{agentId}/widget`; README "Widget"): how the embeddable
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
}
