/**
 * A loopback server that speaks OpenAI's chat-completions wire format (OpenAI API reference "Chat Completions" and
 * "Streaming"), for tests of the OpenAI-compatible LLM adapter and of anything built on it. It records every
 * request (method, path, headers, parsed JSON body); `answerWith` builds the usual handler: a `chat.completion`
 * object, or with `stream: true` Server-Sent Events — `data: {chunk}` lines, text in word pieces, tool-call
 * arguments in pieces of a few characters, a usage chunk (empty `choices`) when `stream_options.include_usage`,
 * then `data: [DONE]`.
 */
import type { LlmStreamEvent } from '../../domain/conversations/llm';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stub received. */
export interface StubRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The JSON body, parsed (undefined when empty or not JSON). */
  body: any;
}

/** Answers one request; it owns `res`. */
export type StubHandler = (req: StubRequest, res: http.ServerResponse) => void | Promise<void>;

/** A running stub. */
export interface OpenAiStub {
  /** What to put in LLM_BASE_URL: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** Every request received, in order. */
  requests: StubRequest[];
  /** Stops the server, dropping open connections. */
  close(): Promise<void>;
}

/** Starts the stub on 127.0.0.1 and a free port; `handler` answers every request (default: `answerWith({content: 'ok'})`). */
export async function startOpenAiStub(handler: StubHandler = answerWith({ content: 'ok' })): Promise<OpenAiStub> {
  const requests: StubRequest[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const recorded: StubRequest = { method: req.method ?? 'GET', path: (req.url ?? '').split('?')[0], headers: req.headers, body };
      requests.push(recorded);
      Promise.resolve(handler(recorded, res)).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err), type: 'stub_error' } }));
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** What the stub's model answers. */
export interface StubAnswer {
  content?: string | null;
  toolCalls?: { id: string; name: string; arguments: string }[];
  /** Default `tool_calls` when there are calls, else `stop`. */
  finishReason?: string;
  /** Wire usage; omitted with `usage: null`. Default `{prompt_tokens: 11, completion_tokens: 7, total_tokens: 18}`. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /** Default: the request's model. */
  model?: string;
}

/** A handler answering `POST /v1/chat/completions` with `answer` (or what it computes from the body); 404 elsewhere. */
export function answerWith(answer: StubAnswer | ((body: any) => StubAnswer)): StubHandler {
  return (req, res) => {
    if (req.method !== 'POST' || req.path !== '/v1/chat/completions') {
      sendError(res, 404, { message: `no route ${req.method} ${req.path}`, type: 'invalid_request_error' });
      return;
    }
    const a = typeof answer === 'function' ? answer(req.body) : answer;
    const model = a.model ?? req.body?.model ?? 'stub-model';
    const calls = a.toolCalls ?? [];
    const finish = a.finishReason ?? (calls.length ? 'tool_calls' : 'stop');
    const usage = a.usage === null ? undefined : (a.usage ?? { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    if (!req.body?.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-stub',
          object: 'chat.completion',
          created: 1_700_000_000,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: a.content ?? null,
                refusal: null,
                ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
              },
              finish_reason: finish,
              logprobs: null,
            },
          ],
          ...(usage ? { usage } : {}),
        }),
      );
      return;
    }
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
      id: 'chatcmpl-stub',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model,
      choices,
      ...extra,
    });
    const events: unknown[] = [chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])];
    for (const piece of (a.content ?? '').match(/\S+\s*|\s+/g) ?? []) {
      events.push(chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
    }
    calls.forEach((c, index) => {
      events.push(chunk([{ index: 0, delta: { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, finish_reason: null }]));
      for (let i = 0; i < c.arguments.length; i += 5) {
        events.push(chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: c.arguments.slice(i, i + 5) } }] }, finish_reason: null }]));
      }
    });
    events.push(chunk([{ index: 0, delta: {}, finish_reason: finish }]));
    if (usage && req.body?.stream_options?.include_usage) events.push(chunk([], { usage }));
    sendSse(res, events);
  };
}

/** Writes `events` as SSE `data:` lines, then `data: [DONE]`, and ends the response. */
export function sendSse(res: http.ServerResponse, events: unknown[], opts: { done?: boolean; end?: boolean } = {}): void {
  if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`data: ${JSON.stringify(e)}\n\n`);
  if (opts.done ?? true) res.write('data: [DONE]\n\n');
  if (opts.end ?? true) res.end();
}

/** Answers an OpenAI-style error body `{error: {message, type, code}}` with `status` and extra headers. */
export function sendError(res: http.ServerResponse, status: number, error: { message: string; type?: string; code?: string }, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: { type: 'api_error', code: null, param: null, ...error } }));
}

/** Every event of a model stream, in order. */
export async function collect(stream: AsyncIterable<LlmStreamEvent>): Promise<LlmStreamEvent[]> {
  const out: LlmStreamEvent[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

/** What `p` rejected with. @throws when it resolves */
export async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}
