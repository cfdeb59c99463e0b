/**
 * The OpenAI-compatible LLM adapter (providers/llm/openai.ts) against a loopback server speaking the
 * chat-completions wire format (test/helpers/llm.ts): the request body it sends, the answer and stream it reads
 * (tool calls streamed in pieces, the usage chunk), and upstream failures surfacing as LlmProviderError.
 */
import { expect } from 'chai';
import { createLlm, LlmProviderError, type LlmMessage, type LlmStreamEvent, type LlmTool } from '../../providers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { analysisMessages, parseAnalysis } from '../../domain/conversations/analysis';
import { answerWith, sendError, sendSse, startOpenAiStub, type OpenAiStub, collect, failure } from '../helpers/llm';

const weather: LlmTool = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const conversation: LlmMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Weather in Paris?', name: 'jane' },
  { role: 'assistant', content: null, toolCalls: [{ id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
  { role: 'tool', content: '{"tempC":21}', toolCallId: 'call_a' },
];

describe('OpenAI-compatible LLM adapter (docs/configuration.md: LLM_*)', () => {
  let stub: OpenAiStub | undefined;
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
  });

  const llmFor = (s: OpenAiStub, extra: Record<string, string> = {}) =>
    createLlm({ LLM_PROVIDER: 'openai', LLM_BASE_URL: s.baseUrl, LLM_API_KEY: 'sk-test-123', LLM_MODEL: 'gpt-test', ...extra });

  it('sends messages, tools and options in the wire format and reads the answer', async () => {
    stub = await startOpenAiStub(answerWith({ content: 'It is 21°C in Paris.', usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }, model: 'gpt-test-2026' }));
    const llm = llmFor(stub);
    expect(llm.name).to.equal('openai');
    const res = await llm.complete({ messages: conversation, tools: [weather], temperature: 0.2, maxTokens: 64 });
    expect(res).to.deep.equal({
      content: 'It is 21°C in Paris.',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 40, completionTokens: 9, totalTokens: 49 },
      model: 'gpt-test-2026',
    });
    expect(stub.requests).to.have.length(1);
    const [req] = stub.requests;
    expect(req.method).to.equal('POST');
    expect(req.path).to.equal('/v1/chat/completions');
    expect(req.headers.authorization).to.equal('Bearer sk-test-123');
    expect(req.body).to.deep.equal({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris?', name: 'jane' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', content: '{"tempC":21}', tool_call_id: 'call_a' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weather.parameters } }],
      temperature: 0.2,
      max_tokens: 64,
      stream: false,
    });
  });

  it('asks for JSON mode with response_format, and the analysis reads its answer (docs/api-notes.md "Conversation analysis")', async () => {
    const answer = { summary: 'Booked a cleaning.', outcome: 'resolved', sentiment: 'positive', fields: { appointment_date: '2026-02-30', visit: 'cleaning' } };
    stub = await startOpenAiStub(answerWith({ content: JSON.stringify(answer) }));
    const fields = [
      { name: 'appointment_date', type: 'date' as const },
      { name: 'visit', type: 'enum' as const, values: ['cleaning', 'checkup'] },
    ];
    const req = { transcript: [{ speaker: 'user' as const, text: 'A cleaning on Feb 30 please' }], fields, endReason: 'ended_by_user' };
    const res = await llmFor(stub).complete({ messages: analysisMessages(req), hints: { analysis: req }, temperature: 0, responseFormat: 'json_object' });
    const body = stub.requests[0].body as Record<string, any>;
    expect(body.response_format).to.deep.equal({ type: 'json_object' });
    expect(body).to.not.have.property('hints');
    expect(body.messages[1]).to.deep.equal({ role: 'user', content: 'User: A cleaning on Feb 30 please' });
    expect(body.messages[0].content).to.include('JSON');
    expect(parseAnalysis(res.content, fields)).to.deep.equal({
      summary: 'Booked a cleaning.',
      outcome: 'resolved',
      sentiment: 'positive',
      fields: { visit: 'cleaning' },
      notes: ['appointment_date: dropped "2026-02-30" (not a YYYY-MM-DD date)'],
    });
  });

  it("uses the request's model over LLM_MODEL, and maps tool calls of the answer", async () => {
    stub = await startOpenAiStub(answerWith({ content: null, toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] }));
    const res = await llmFor(stub).complete({ model: 'gpt-other', messages: [{ role: 'user', content: 'Oslo?' }], tools: [weather] });
    expect(stub.requests[0].body.model).to.equal('gpt-other');
    expect(res).to.deep.include({ content: null, finishReason: 'tool_calls', model: 'gpt-other' });
    expect(res.toolCalls).to.deep.equal([{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
  });

  it('counts usage locally when the server reports none', async () => {
    stub = await startOpenAiStub(answerWith({ content: 'ok', usage: null }));
    const res = await llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] });
    // 3 priming + (3 + "user" 1 + "hi" 1); "ok" is 1 token.
    expect(res.usage).to.deep.equal({ promptTokens: 8, completionTokens: 1, totalTokens: 9 });
  });

  it('streams text deltas as they come, accumulates tool calls sent in pieces, and takes usage from the usage chunk', async () => {
    const args0 = '{"city":"Paris","unit":"celsius"}';
    const args1 = '{"city":"Lyon"}';
    stub = await startOpenAiStub(
      answerWith({
        content: 'Let me check both cities.',
        toolCalls: [
          { id: 'call_p', name: 'get_weather', arguments: args0 },
          { id: 'call_l', name: 'get_weather', arguments: args1 },
        ],
        usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 },
      }),
    );
    const events = await collect(llmFor(stub).stream({ messages: conversation.slice(0, 2), tools: [weather] }));
    const body = stub.requests[0].body;
    expect(body).to.deep.include({ model: 'gpt-test', stream: true, stream_options: { include_usage: true } });
    expect(body.tools).to.have.length(1);
    const deltas = events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    expect(deltas).to.deep.equal(['Let ', 'me ', 'check ', 'both ', 'cities.']);
    expect(events.map((e) => e.type)).to.deep.equal([...deltas.map(() => 'delta'), 'tool_call', 'tool_call', 'done']);
    const calls = events.filter((e) => e.type === 'tool_call').map((e) => (e as { call: unknown }).call);
    expect(calls).to.deep.equal([
      { id: 'call_p', name: 'get_weather', arguments: args0 },
      { id: 'call_l', name: 'get_weather', arguments: args1 },
    ]);
    const done = (events[events.length - 1] as Extract<LlmStreamEvent, { type: 'done' }>).response;
    expect(done).to.deep.equal({
      content: 'Let me check both cities.',
      toolCalls: calls,
      finishReason: 'tool_calls',
      usage: { promptTokens: 30, completionTokens: 20, totalTokens: 50 },
      model: 'gpt-test',
    });
  });

  it('answers an upstream 429 at once as rate_limited with its Retry-After (no retry, no wait)', async () => {
    stub = await startOpenAiStub((req, res) => sendError(res, 429, { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' }, { 'retry-after': '7' }));
    const llm = llmFor(stub);
    const started = Date.now();
    const err = await failure(llm.complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).to.be.instanceOf(LlmProviderError);
    expect(err).to.include({ kind: 'rate_limited', status: 429, retryAfterSeconds: 7, retryable: true });
    expect(stub.requests).to.have.length(1);
    expect(Date.now() - started).to.be.below(2000);
    const streamErr = await failure(collect(llm.stream({ messages: [{ role: 'user', content: 'hi' }] })));
    expect(streamErr).to.include({ kind: 'rate_limited', retryAfterSeconds: 7 });
  });

  it('retries an upstream 500 once, then answers unavailable', async () => {
    stub = await startOpenAiStub((req, res) => sendError(res, 500, { message: 'The server had an error' }));
    const err = await failure(llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).to.be.instanceOf(LlmProviderError);
    expect(err).to.include({ kind: 'unavailable', status: 500 });
    expect(stub.requests).to.have.length(2);
  });

  it('succeeds when the one retry after a 503 does', async () => {
    let n = 0;
    const ok = answerWith({ content: 'second time lucky' });
    stub = await startOpenAiStub((req, res) => (n++ === 0 ? sendError(res, 503, { message: 'overloaded' }, { 'retry-after-ms': '10' }) : ok(req, res)));
    const res = await llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] });
    expect(res.content).to.equal('second time lucky');
    expect(stub.requests).to.have.length(2);
  });

  it('does not wait out a long Retry-After on a 503: one request, unavailable at once', async () => {
    stub = await startOpenAiStub((req, res) => sendError(res, 503, { message: 'down for maintenance' }, { 'retry-after': '120' }));
    const started = Date.now();
    const err = await failure(llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).to.include({ kind: 'unavailable', status: 503 });
    expect(stub.requests).to.have.length(1);
    expect(Date.now() - started).to.be.below(2000);
  });

  it('answers unavailable when a stream is cut before its finish_reason', async () => {
    stub = await startOpenAiStub((req, res) =>
      sendSse(res, [{ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hal' }, finish_reason: null }] }], { done: false }),
    );
    const err = await failure(collect(llmFor(stub).stream({ messages: [{ role: 'user', content: 'hi' }] })));
    expect(err).to.be.instanceOf(LlmProviderError);
    expect(err).to.include({ kind: 'unavailable' });
  });

  it('maps 401 to auth and 400 to bad_request, without retrying', async () => {
    let status = 401;
    stub = await startOpenAiStub((req, res) => sendError(res, status, { message: status === 401 ? 'Incorrect API key provided' : "Invalid 'messages'" }));
    const auth = await failure(llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(auth).to.include({ kind: 'auth', status: 401, retryable: false });
    status = 400;
    const bad = await failure(llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(bad).to.include({ kind: 'bad_request', status: 400 });
    expect(stub.requests).to.have.length(2);
  });

  it('refuses a tool message without toolCallId as bad_request before sending anything', async () => {
    stub = await startOpenAiStub();
    const err = await failure(llmFor(stub).complete({ messages: [{ role: 'tool', content: '{}' }] }));
    expect(err).to.include({ kind: 'bad_request' });
    expect(stub.requests).to.have.length(0);
  });

  it('answers timeout when the server does not answer within LLM_TIMEOUT_MS, and when a stream stalls', async () => {
    stub = await startOpenAiStub((req, res) => {
      if (req.body?.stream) sendSse(res, [{ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }] }], { done: false, end: false });
      // otherwise: never answer
    });
    const llm = new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'k', model: 'm', timeoutMs: 200, maxRetries: 0 });
    const err = await failure(llm.complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).to.be.instanceOf(LlmProviderError);
    expect(err).to.include({ kind: 'timeout' });
    const seen: string[] = [];
    const streamErr = await failure(
      (async () => {
        for await (const ev of llm.stream({ messages: [{ role: 'user', content: 'hi' }] })) if (ev.type === 'delta') seen.push(ev.content);
      })(),
    );
    expect(seen).to.deep.equal(['Hel']);
    expect(streamErr).to.be.instanceOf(LlmProviderError);
    expect(streamErr).to.include({ kind: 'timeout' });
  });

  it('answers unavailable when nothing listens at LLM_BASE_URL', async () => {
    const gone = await startOpenAiStub();
    const baseUrl = gone.baseUrl;
    await gone.close();
    const llm = new OpenAiLlm({ baseUrl, apiKey: 'k', model: 'm', maxRetries: 0 });
    const err = await failure(llm.complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).to.include({ kind: 'unavailable' });
    expect((err as LlmProviderError).status).to.equal(undefined);
  });

  it("stops a stream when the caller aborts, rejecting with the signal's reason", async () => {
    stub = await startOpenAiStub((req, res) => {
      sendSse(res, [{ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'one ' }, finish_reason: null }] }], { done: false, end: false });
    });
    const controller = new AbortController();
    const err = await failure(
      (async () => {
        for await (const ev of llmFor(stub).stream({ messages: [{ role: 'user', content: 'hi' }], signal: controller.signal })) {
          if (ev.type === 'delta') controller.abort();
        }
      })(),
    );
    expect(err).to.not.be.instanceOf(LlmProviderError);
    expect((err as Error).name).to.equal('AbortError');
    const pre = new AbortController();
    pre.abort(new Error('hung up'));
    expect(await failure(llmFor(stub).complete({ messages: [{ role: 'user', content: 'hi' }], signal: pre.signal }))).to.have.property('message', 'hung up');
  });
});
