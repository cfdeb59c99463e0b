/**
 * Wire types of the Chat and Test groups (spec "Chat" and "Test" rows; docs/api-notes.md "Conversations"): chat
 * sessions, their messages and receipts, and the OpenAI-compatible `/chat/completions` (OpenAI API
 * reference "Chat Completions").
 */
import type { WidgetSettings } from './agents';

/** Channel of a conversation. */
export type ConversationChannel = 'chat' | 'web' | 'sms' | 'voice';

/**
 * Request body of `POST /chat/sessions` (createChatSession).
 * @additionalProperties false
 */
export interface ChatSessionCreate {
  /** The agent to talk to (`agt_…`). @pattern ^agt_[A-Za-z0-9]{8,40}$ */
  agentId: string;
  /** Talk to the current draft (compiled now) instead of the published version. */
  draftMode?: boolean;
  /**
   * Values of conversation variables (`{{name}}` in persona, instructions, greeting and playbooks); they
   * override the agent's defaults. @maxProperties 50
   */
  variables?: { [name: string]: string };
  /** Free-form labels kept with the conversation (at most 50 keys). @maxProperties 50 */
  metadata?: { [key: string]: string | number | boolean | null };
  /**
   * Your id of the person chatting: the stickiness key of the agent's traffic split, so one customer stays on one
   * version (docs/api-notes.md "Traffic splits"). @minLength 1 @maxLength 200
   */
  customerId?: string;
}

/** One stored message of a conversation, verbatim. */
export interface ConversationMessage {
  /** `cmsg_…` */
  id: string;
  /**
   * `system`: a line a member added to the model's context (docs/api-notes.md "Live control"); with `name`
   * `operator:<actor>`, an `assistant` message is one a member wrote while the conversation was taken over.
   */
  role: 'user' | 'assistant' | 'tool' | 'system';
  content: string | null;
  /** Turn number (0 is the greeting). */
  turn: number;
  /** Tool calls the assistant made in this message. */
  toolCalls?: { id: string; name: string; arguments: string }[];
  /** For `tool` messages: the call answered and the skill's name. */
  toolCallId?: string;
  name?: string;
  /** @format date-time */
  createdAt: string;
}

/** A chat session (a conversation on the `chat` or `web` channel). */
export interface ChatSession {
  /** `cnv_…`: also the conversation id. */
  id: string;
  agentId: string;
  channel: ConversationChannel;
  /** `published` (pinned to `versionId`) or `draft` (the draft compiled at start). */
  mode: 'published' | 'draft';
  versionId: string | null;
  draftVersion: number | null;
  status: 'active' | 'ended';
  /** Why it ended: `ended_by_user`, `end_call`, `transferred`, `escalated`, `max_duration`, `ended_by_api`. */
  endReason: string | null;
  variables: { [name: string]: string };
  metadata: { [key: string]: string | number | boolean | null };
  /** The running playbook and the node it waits on, if any. */
  playbook: { name: string; node: string | null } | null;
  messageCount: number;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  /** @format date-time */
  startedAt: string;
  /** @format date-time */
  endedAt: string | null;
}

/** Response data of `POST /chat/sessions`: the session and its greeting (null when the agent has none). */
export interface ChatSessionStarted {
  session: ChatSession;
  greeting: ConversationMessage | null;
}

/**
 * Request body of `POST /chat/widget/sessions` (createWidgetSession); optional.
 * @additionalProperties false
 */
export interface WidgetSessionCreate {
  /**
   * A stable id of the browser's visitor: the stickiness key of the agent's traffic split, so a returning visitor
   * stays on one version (docs/api-notes.md "Traffic splits"). @minLength 1 @maxLength 200
   */
  visitorId?: string;
}

/** Response data of `POST /chat/widget/sessions` (docs/api-notes.md "Widget"). */
export interface WidgetSessionStarted {
  session: ChatSession;
  greeting: ConversationMessage | null;
  /** Bearer token for this session's `messages` and `GET` calls only, from the same origin. */
  sessionToken: string;
  /** @format date-time */
  expiresAt: string;
  /** The widget settings of the published version. */
  widget: WidgetSettings;
  /**
   * Whether the widget offers a voice call (the published version has a usable voice): its widget voice
   * token comes from `POST /chat/widget/sessions/{id}/voice-token`.
   */
  voice: boolean;
}

/**
 * Response data of `POST /chat/widget/sessions/{id}/voice-token` (docs/api-notes.md "Voice in the widget"): a
 * short-lived widget voice token for the ConversationRelay endpoint, from this session's page origin only.
 */
export interface WidgetVoiceToken {
  /** `wvt_…`: pass as `?token=` on the relay URL. */
  token: string;
  /** The relay WebSocket URL, token included (`wss://…/api/v1/voice/relay?token=…`). */
  relayUrl: string;
  /** The agent the call talks to (`agt_…`). */
  agentId: string;
  /** Its published version the call runs (`ver_…`). */
  versionId: string;
  /** When the token stops opening calls (a call already open keeps going). @format date-time */
  expiresAt: string;
}

/**
 * Response data of `GET /chat/sessions/{id}`: the session and every message, verbatim, in order; tool
 * messages and tool calls only for a key with `calls:read` (a widget session token sees neither, nor the
 * session's variables and metadata).
 */
export interface ChatSessionDetail {
  session: ChatSession;
  messages: ConversationMessage[];
}

/**
 * Request body of `POST /chat/sessions/{id}/messages` (sendChatMessage).
 * @additionalProperties false
 */
export interface ChatMessageCreate {
  /** What the user says. @minLength 1 @maxLength 10000 */
  content: string;
}

/** A tool call of a turn's receipt. */
export interface ReceiptToolCall {
  id: string;
  skill: string;
  type: string;
  /** The tool of the skill's MCP server that was called (`mcp` skills: docs/api-notes.md "MCP skills"). */
  tool?: string;
  /** `model` (a tool call of the model) or `playbook` (a skill node). */
  source: 'model' | 'playbook';
  inputs: { [name: string]: string };
  output?: unknown;
  error?: string;
  durationMs: number;
}

/** One turn's receipt (spec "Observe": tool calls, knowledge lookups, guardrail decisions, latency samples). */
export interface TurnReceipt {
  turn: number;
  toolCalls: ReceiptToolCall[];
  knowledge: { query: string; results: { chunkId: string; score: number; sourceId: string; source: string }[]; durationMs: number }[];
  /**
   * Guardrail decisions: which rule fired (`rule`, and `excerpt`: the topic or phrase), what it did, on which side
   * of the turn, how a blocked topic was recognised (`match`) and why (`reason`, ≤ 300 characters: the phrase found,
   * the model's verdict, or a classifier that failed and the turn refused, fail-closed).
   */
  guardrails: {
    rule: string;
    action: 'refused' | 'escalated' | 'replaced' | 'redacted' | 'ended';
    excerpt: string;
    stage: 'input' | 'output';
    match?: 'phrase' | 'semantic';
    reason?: string;
  }[];
  /**
   * Latency samples in ms by stage: retrieval, llm_first_token, llm_total, tool, turn, and llm_classification (the
   * call judging a message against semantic blocked topics; absent when none is set or the verdict was cached).
   */
  latency: { stage: 'retrieval' | 'llm_first_token' | 'llm_total' | 'llm_classification' | 'tool' | 'turn'; ms: number; detail?: string }[];
  /**
   * The playbook this turn ran: the nodes walked in order (the node answered first); `skipped`, `say` nodes left
   * unsaid because a placeholder had no value; `exited`, the person left it ("never mind", "cancel", "stop").
   */
  playbook: { name: string; nodes: string[]; skipped?: string[]; exited?: boolean } | null;
  /**
   * `mcp` skills whose server could not list its tools for this turn (`<code>: <message>`): their tools were not
   * offered and the agent answered without them (docs/api-notes.md "MCP skills"). Absent when none failed.
   */
  unavailableSkills?: { skill: string; error: string }[];
}

/**
 * Response data of `POST /chat/sessions/{id}/messages` (JSON form). Without `calls:read` (and always for a
 * widget session token) `messages` holds only the user's and the agent's text, and there is no `receipt`.
 */
export interface ChatTurn {
  session: ChatSession;
  /** The messages this turn stored, in order: the user's, tool exchanges, the reply. */
  messages: ConversationMessage[];
  /** The reply as said (after output guardrails). */
  reply: ConversationMessage | null;
  /** The turn's receipt: only for a key with `calls:read` (spec "Scope rules" 1; docs/security.md "Public sessions"). */
  receipt?: TurnReceipt;
}

/** Tokens of a chat completion's answer (inlined). @asType integer @minimum 1 */
type CompletionTokens = number;
/** Choices asked of a chat completion (inlined). @asType integer @minimum 1 @maximum 128 */
type ChoiceCount = number;
/** A sampling seed (inlined). @asType integer */
type Seed = number;
/** Log probabilities per token (inlined). @asType integer @minimum 0 @maximum 20 */
type TopLogprobs = number;

/**
 * Request body of `POST /chat/completions` (createChatCompletion): every request parameter of OpenAI's API reference
 * "Chat Completions" — create, and no other (an unknown one answers 400 as OpenAI does). `model` names the agent:
 * `agt_…` (published version), `agt_…@draft` or `agt_…@v3` (a version number). Which parameters are honoured,
 * passed to the upstream model or refused: docs/api-notes.md "OpenAI compatibility".
 */
export interface ChatCompletionCreate {
  /**
   * `agt_…`, `agt_…@draft` or `agt_…@vN`; any other value is a model that does not exist: 404 `model_not_found` (as OpenAI answers).
   * @minLength 1
   * @maxLength 200
   */
  model: string;
  /** @minItems 1 @maxItems 200 */
  messages: ChatCompletionMessage[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; include_obfuscation?: boolean } | null;
  /** @minimum 0 @maximum 2 */
  temperature?: number | null;
  /** @minimum 0 @maximum 1 */
  top_p?: number | null;
  /** Deprecated by OpenAI for `max_completion_tokens`; both cap the answer (and the agent's `maxTokens` caps both). */
  max_tokens?: CompletionTokens | null;
  max_completion_tokens?: CompletionTokens | null;
  /** Only 1. */
  n?: ChoiceCount | null;
  /** Up to 4 sequences. */
  stop?: string | string[] | null;
  seed?: Seed | null;
  /** @minimum -2 @maximum 2 */
  presence_penalty?: number | null;
  /** @minimum -2 @maximum 2 */
  frequency_penalty?: number | null;
  /** Token id → bias in -100..100. */
  logit_bias?: { [token: string]: number } | null;
  logprobs?: boolean | null;
  top_logprobs?: TopLogprobs | null;
  response_format?: ChatCompletionResponseFormat;
  /** @maxItems 128 */
  tools?: ChatCompletionTool[];
  tool_choice?: ChatCompletionToolChoice;
  parallel_tool_calls?: boolean;
  /** Deprecated by OpenAI for `tools` (refused). */
  functions?: { [key: string]: unknown }[];
  /** Deprecated by OpenAI for `tool_choice` (refused). */
  function_call?: string | { [key: string]: unknown };
  /** Stored on the conversation. @maxLength 512 */
  user?: string;
  /** Stored on the conversation. @maxLength 512 */
  safety_identifier?: string;
  /**
   * Stored on the conversation; keys that are variable names (`^[a-z][a-z0-9_]{0,63}$`) also set conversation
   * variables. OpenAI's limits: 16 pairs, keys ≤ 64 and values ≤ 512 characters. @maxProperties 16
   */
  metadata?: { [key: string]: string } | null;
  store?: boolean | null;
  service_tier?: string | null;
  reasoning_effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | null;
  verbosity?: 'low' | 'medium' | 'high' | null;
  prompt_cache_key?: string;
  prompt_cache_retention?: string | null;
  prediction?: { [key: string]: unknown } | null;
  modalities?: string[] | null;
  audio?: { [key: string]: unknown } | null;
  web_search_options?: { [key: string]: unknown };
}

/** `response_format` of a chat completion (OpenAI API reference "Structured Outputs", "JSON mode"). */
export type ChatCompletionResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      json_schema: {
        /** @pattern ^[a-zA-Z0-9_-]{1,64}$ */
        name: string;
        description?: string;
        schema?: { [key: string]: unknown };
        strict?: boolean | null;
      };
    };

/** A tool of a chat completion request: a function the client runs (OpenAI API reference "Function calling"). */
export interface ChatCompletionTool {
  /** `custom` tools are refused. */
  type: 'function' | 'custom';
  function?: {
    /** @pattern ^[a-zA-Z0-9_-]{1,64}$ */
    name: string;
    /** @maxLength 4096 */
    description?: string;
    parameters?: { [key: string]: unknown };
    strict?: boolean | null;
  };
  custom?: { [key: string]: unknown };
}

/** `tool_choice` of a chat completion request. */
export type ChatCompletionToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }
  | { type: 'allowed_tools'; allowed_tools: { mode: 'auto' | 'required'; tools: { [key: string]: unknown }[] } }
  | { type: 'custom'; custom: { name: string } };

/** One OpenAI chat message (content as text or content parts). */
export interface ChatCompletionMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  /** @maxLength 100000 */
  content?: string | null | ChatCompletionContentPart[];
  name?: string;
  tool_call_id?: string;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
  refusal?: string | null;
  audio?: { id: string } | null;
  function_call?: { name: string; arguments: string } | null;
  /** Echoed back by clients from an earlier answer; ignored. */
  annotations?: { [key: string]: unknown }[];
}

/** A part of a message's content: text is read; other kinds (images, audio, files) are refused by the handler. */
export interface ChatCompletionContentPart {
  type: 'text' | 'refusal' | 'image_url' | 'input_audio' | 'file';
  /** @maxLength 100000 */
  text?: string;
  refusal?: string;
  image_url?: { [key: string]: unknown };
  input_audio?: { [key: string]: unknown };
  file?: { [key: string]: unknown };
}

/** One model of `GET /models` (OpenAI API reference "Models"): an agent (`agt_…`), its draft (`@draft`) or a version (`@vN`). */
export interface OpenAiModel {
  id: string;
  object: 'model';
  /** Unix seconds: when the agent was created (the version published, for `@vN`). */
  created: number;
  /** The organization id. */
  owned_by: string;
}

/**
 * A failure on the OpenAI-compatible operations (OpenAI API reference "Error codes"; docs/api-notes.md "OpenAI
 * compatibility"): the status and `code` a problem would have, `type` OpenAI's for the status.
 */
export interface OpenAiError {
  error: {
    message: string;
    type: 'invalid_request_error' | 'authentication_error' | 'permission_error' | 'rate_limit_error' | 'server_error';
    param: string | null;
    code: string;
  };
}

/** `GET /models` (OpenAI's list shape, not the envelope). */
export interface OpenAiModelList {
  object: 'list';
  data: OpenAiModel[];
}

/** One expectation of a simulation, evaluated on the whole conversation. */
export type SimulationExpectation =
  | { type: 'mentions'; /** @minLength 1 @maxLength 500 */ text: string }
  | { type: 'doesNotMention'; /** @minLength 1 @maxLength 500 */ text: string }
  | { type: 'callsSkill'; /** @pattern ^[a-z][a-z0-9_]{0,63}$ */ skill: string }
  | { type: 'reachesPlaybookNode'; /** @maxLength 64 */ playbook?: string; /** @minLength 1 @maxLength 64 */ node: string };

/**
 * Request body of `POST /agents/{agentId}/simulate` (simulateAgent): a scripted list of caller turns, or a
 * simulated caller (persona + goal, played by the LLM provider) for up to `maxTurns` turns.
 * @additionalProperties false
 */
export interface SimulationRequest {
  /** Simulate against the draft (compiled now) instead of the published version. */
  draftMode?: boolean;
  /** Caller messages, in order. @minItems 1 @maxItems 50 */
  script?: string[];
  /** A simulated caller instead of a script. */
  caller?: {
    /** Who the caller is. @minLength 1 @maxLength 2000 */
    persona: string;
    /** What the caller wants; also the caller's first message. @minLength 1 @maxLength 2000 */
    goal: string;
    /** Caller turns at most (default 6). @minimum 1 @maximum 20 */
    maxTurns?: number;
  };
  /** Conversation variables. @maxProperties 50 */
  variables?: { [name: string]: string };
  /** @maxItems 50 */
  expectations?: SimulationExpectation[];
  /**
   * Skill name → the output it answers with instead of running (docs/evals.md "Skill stubs"): a simulation never
   * calls a real skill endpoint, so an agent with HTTP skills needs a stub for each. @maxProperties 50
   */
  skillStubs?: { [skill: string]: unknown };
}

/** The verdict on one expectation, with the evidence. */
export interface ExpectationResult {
  expectation: SimulationExpectation;
  passed: boolean;
  /** What decided it: the reply or tool call that matched, or why none did. */
  evidence: string;
  /** Turn of the evidence, when one turn decided it. */
  turn: number | null;
}

/** A simulation (`sim_…`): the conversation it ran and, once completed, the verdicts. */
export interface Simulation {
  id: string;
  agentId: string;
  /** The simulated conversation (`cnv_…`, marked `simulation`); null until it started. */
  conversationId: string | null;
  mode: 'published' | 'draft';
  status: 'running' | 'completed' | 'failed';
  /** Caller turns run so far. */
  turns: number;
  /** Every expectation passed (null until completed; true when there are none). */
  passed: boolean | null;
  results: ExpectationResult[];
  /** Why it failed (status `failed`). */
  error: string | null;
  /** The messages of the conversation, verbatim (on completion). */
  transcript: ConversationMessage[];
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  completedAt: string | null;
}
