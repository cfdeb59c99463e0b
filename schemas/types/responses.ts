/**
 * The OpenAI-compatible Responses API (docs/api-notes.md "Responses API"; OpenAI API reference "Responses"): the
 * request body of `POST /responses`. Items are checked field by field by the handler
 * (services/conversations/responses.ts), so a bad one is refused naming its path (`input[2].call_id`).
 */

/**
 * One input item: a message (`role` + `content` as text or `input_text` parts; `type` `message` or absent), a
 * `function_call_output` answering a client function call of the previous response, or an echo of that
 * `function_call` (ignored).
 * Other fields (an echoed item's `id`, `status`) are accepted.
 */
export interface ResponseInputItem {
  type?: 'message' | 'function_call_output' | 'function_call';
  role?: 'user' | 'assistant' | 'system' | 'developer';
  /** @maxLength 100000 */
  content?: string | ResponseContentPart[];
  call_id?: string;
  /** JSON text (or text) the client's function returned. @maxLength 100000 */
  output?: string | ResponseContentPart[];
  name?: string;
  arguments?: string;
  [key: string]: unknown;
}

/** A content part: `input_text` (`output_text` and `text` read the same); other types are refused by the handler, naming them. */
export interface ResponseContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/**
 * A client function tool: the model may call it; the call is returned as a `function_call` output item and
 * nothing runs server-side. Other tool types are refused by the handler, naming them.
 */
export interface ResponseFunctionTool {
  type: string;
  /** Checked by the handler (`^[a-zA-Z0-9_-]{1,64}$`), naming the tool. */
  name?: string;
  /** @maxLength 2000 */
  description?: string | null;
  parameters?: { [key: string]: unknown } | null;
  strict?: boolean | null;
  [key: string]: unknown;
}

/**
 * `text.format`: plain text, or a JSON Schema the answer must match (validated).
 */
export interface ResponseTextFormat {
  type: 'text' | 'json_schema' | 'json_object';
  /** Checked by the handler (`^[a-zA-Z0-9_-]{1,64}$`). */
  name?: string;
  schema?: { [key: string]: unknown };
  description?: string;
  strict?: boolean | null;
  [key: string]: unknown;
}

/**
 * Request body of `POST /responses` (createResponse): the OpenAI request shape. `model` names the agent as in
 * chat completions (`agt_…`, `agt_…@draft`, `agt_…@v3`); it may be left out when `previous_response_id` is given.
 * `temperature`, `top_p`, `max_output_tokens` (capped by the agent's own limit) and `parallel_tool_calls` reach the
 * model; other OpenAI request fields are accepted and ignored (`instructions`: the agent's prompt rules; `user`, `store`,
 * any other field).
 */
export interface ResponseCreate {
  /** @pattern ^agt_[A-Za-z0-9]{8,40}(@(draft|v[0-9]{1,9}))?$ */
  model?: string;
  /** Text (one user message), or input items. */
  input: string | ResponseInputItem[];
  /** Ignored: the agent's prompt rules. */
  instructions?: string | null;
  /** @pattern ^resp_[A-Za-z0-9]{8,40}$ */
  previous_response_id?: string | null;
  stream?: boolean | null;
  /** @maxItems 64 */
  tools?: ResponseFunctionTool[];
  tool_choice?: string | { type: string; name?: string };
  text?: { format?: ResponseTextFormat; verbosity?: string | null };
  /** Conversation variables on the first response of a conversation (an extension); echoed. @maxProperties 50 */
  metadata?: { [key: string]: string } | null;
  background?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  parallel_tool_calls?: boolean | null;
  store?: boolean | null;
  user?: string;
  [key: string]: unknown;
}
