/** The pre-publish report of an agent's draft (spec "Agent versions"; `GET /agents/{id}/prepublish-report`). `npm run schemas` generates one JSON Schema per type. */
import type { CallerVerificationRequired, TopicMatch } from './guardrails';

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
