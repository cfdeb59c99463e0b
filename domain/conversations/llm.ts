/**
 * The chat-model port of the conversation runtime: OpenAI chat-completions semantics (messages, tools and
 * tool calls, streamed deltas, token usage — OpenAI API reference "Chat Completions"), stated here so the
 * pure runtime and every LLM adapter (providers/llm) share one shape.
 */
import type { AnalysisRequest } from './analysis';

/** Author of a message, as in the chat-completions API. */
export type LlmRole = 'system' | 'user' | 'assistant' | 'tool';

/** A function call the model asks for. `arguments` is JSON text (the model's, so possibly malformed). */
export interface LlmToolCall {
  /** The model's id of the call; the `tool` message answering it repeats it as `toolCallId`. */
  id: string;
  /** The tool's name, as in `LlmTool.name`. */
  name: string;
  /** JSON text of an object, e.g. `{"email":"a@b.co"}`. */
  arguments: string;
}

/** One message of the conversation. */
export interface LlmMessage {
  role: LlmRole;
  /** Text; null for an assistant message that only calls tools. */
  content: string | null;
  /** Calls an assistant message made. */
  toolCalls?: LlmToolCall[];
  /** For role `tool`: the id of the call this message answers. */
  toolCallId?: string;
  /** Optional author name (chat-completions `name`). */
  name?: string;
}

/** A function the model may call (chat-completions `tools[].function`). */
export interface LlmTool {
  /** `^[a-zA-Z0-9_-]{1,64}$` upstream. */
  name: string;
  description: string;
  /** JSON Schema of the arguments object (`{type: 'object', properties, required}`). */
  parameters: Record<string, unknown>;
}

/** Tokens used by one request, as the upstream reports them (the sandbox counts with `gpt-tokenizer`). */
export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * What the conversation runtime hands the sandbox so it can answer like a model following the agent's
 * instructions (docs/api-notes.md "Sandbox LLM"); real adapters ignore it. Precedence: refusal, say, greeting (no user turn
 * yet), tool result, tool call (a named tool, then a playbook by trigger phrase or `whenToUse`), ask, knowledge, generic.
 */
export interface SandboxHints {
  /** Said verbatim when the conversation has no user message yet. */
  greeting?: string;
  /** The agent's IANA time zone: the sandbox says the dates and times of tool results in it (default UTC). */
  timeZone?: string;
  /** Retrieved knowledge, best first; the sandbox answers with the sentences matching the question best. `score` in 0..1. */
  knowledge?: { text: string; source: string; score: number }[];
  /**
   * The playbooks offered as tools (`tool` is its `start_playbook_<name>` tool): the sandbox calls the tool when
   * the user's message contains a trigger phrase or shares the key words of `whenToUse` (docs/api-notes.md "Sandbox LLM").
   */
  playbooks?: { tool: string; name: string; triggerPhrases: string[]; whenToUse: string | null }[];
  /** The question the current playbook node gathers next: said verbatim. */
  ask?: string;
  /** A guardrail blocked the turn: this refusal is said verbatim. */
  refusal?: string;
  /** A playbook `say` node: said verbatim. */
  say?: string;
  /** A post-conversation analysis is asked for: the sandbox answers its JSON from this transcript (docs/api-notes.md "Sandbox LLM"). */
  analysis?: AnalysisRequest;
  /**
   * A semantic topic guardrail asks whether `message` is about any of `topics` (./topicClassifier.ts): the sandbox
   * answers `{"applies": [...], "reason": "..."}` by key words (docs/api-notes.md "Sandbox LLM").
   */
  classification?: { message: string; topics: { topic: string; description: string | null }[] };
}

/** A `response_format` of type `json_schema` (OpenAI API reference "Structured Outputs"). */
export interface LlmJsonSchemaFormat {
  type: 'json_schema';
  /** `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  description?: string;
  /** JSON Schema of the answer object. */
  schema: Record<string, unknown>;
  strict?: boolean;
}

/** One chat-completions request. */
export interface LlmRequest {
  /** Model name; default LLM_MODEL (openai) or `sandbox`. */
  model?: string;
  /**
   * Model asked once, with the same request, when `model` answers 429 or 5xx or does not answer in time, before
   * any of its answer arrived (docs/api-notes.md "Agents": model settings). The answer's `model` tells which answered.
   */
  fallbackModel?: string;
  messages: LlmMessage[];
  tools?: LlmTool[];
  /** 0..2 upstream. */
  temperature?: number;
  /** Upper bound of completion tokens. */
  maxTokens?: number;
  /**
   * `json_object`: the answer must be one JSON object (chat-completions `response_format`, "JSON mode");
   * `json_schema`: one JSON object conforming to `schema` ("Structured Outputs"; `strict` asks the upstream to enforce it).
   */
  responseFormat?: 'json_object' | LlmJsonSchemaFormat;
  /** Nucleus sampling, 0..1 (chat-completions `top_p`). */
  topP?: number;
  /** Up to 4 sequences where the answer stops, the sequence itself left out (chat-completions `stop`). */
  stop?: string[];
  /** Best-effort determinism (chat-completions `seed`). */
  seed?: number;
  /** -2..2 (chat-completions `presence_penalty`). */
  presencePenalty?: number;
  /** -2..2 (chat-completions `frequency_penalty`). */
  frequencyPenalty?: number;
  /** Token id (as text) → bias -100..100 (chat-completions `logit_bias`). */
  logitBias?: Record<string, number>;
  /** Which tool the model must or may call (chat-completions `tool_choice`); only sent with `tools`. */
  toolChoice?: 'none' | 'auto' | 'required' | { name: string };
  /** Whether several calls may come in one answer (chat-completions `parallel_tool_calls`); only sent with `tools`. */
  parallelToolCalls?: boolean;
  /** `low` | `medium` | `high` … for reasoning models (chat-completions `reasoning_effort`), passed on as given. */
  reasoningEffort?: string;
  /** Only the sandbox reads these. */
  hints?: SandboxHints;
  /** Aborts the request; the promise or stream rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** One complete answer. */
export interface LlmResponse {
  /** Text; null when the model only called tools. */
  content: string | null;
  /** Calls the model asks for (empty when none). */
  toolCalls: LlmToolCall[];
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter';
  usage: LlmUsage;
  /** The model that answered. */
  model: string;
}

/**
 * What `stream` yields, in order: `delta` pieces of text (their concatenation is the final `content`), then one
 * `tool_call` per complete call, then exactly one `done` with the whole response.
 */
export type LlmStreamEvent =
  | { type: 'delta'; content: string }
  | { type: 'tool_call'; call: LlmToolCall }
  | { type: 'done'; response: LlmResponse };

/** A chat-completions model. */
export interface LlmProvider {
  /** `sandbox` or `openai`. */
  readonly name: string;
  /** One answer. @throws LlmProviderError; the signal's reason when aborted */
  complete(req: LlmRequest): Promise<LlmResponse>;
  /** The same answer as events (`LlmStreamEvent`). @throws LlmProviderError; the signal's reason when aborted */
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent>;
}
