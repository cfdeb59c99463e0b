/**
 * OpenAI compatibility that real clients rely on (docs/api-notes.md "OpenAI compatibility"), driven by the official
 * `openai` client and the Vercel AI SDK's OpenAI-compatible provider against the real server: every documented
 * chat-completions parameter accepted (unknown ones refused as OpenAI refuses them), `stop`, token limits and
 * `response_format` honoured, client function tools returned as tool calls (streamed as OpenAI streams them) and
 * continued with their results, errors in OpenAI's shape on the OpenAI routes only, and `GET /models`. The parameters
 * passed to the upstream model are checked on the wire of a loopback OpenAI-compatible server.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { answerWith, sendError, startOpenAiStub, type OpenAiStub, type StubHandler } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { countTokens } from '../../providers/llm';

type ApiErr = InstanceType<typeof OpenAI.APIError>;
const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe('OpenAI compatibility on the sandbox model', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let client: OpenAI;
  let agentId: string;
  let unpublished: string;

  before(async () => {
    t = await startTestApi('openaicompat', QUICK_CLIENT);
    org = await t.org('Compat');
    client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hi!', maxTokens: 40 } })).body.data.id;
    expect((await publishDraft(t.db, org, agentId, 'v1')).kind).to.equal('published');
    unpublished = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Draft only', voiceId: 'voice_ava' } })).body.data.id;
  });
  after(async () => t?.close());

  const conversationOf = async (completionId: string) => t.db('conversations').where({ id: completionId.slice('chatcmpl-'.length) }).first();

  it('accepts every documented parameter, honours stop and the token limit, and stores user and metadata on the conversation', async () => {
    const res = await client.chat.completions.create({
      model: agentId,
      messages: [{ role: 'developer', content: 'ignored' }, { role: 'user', content: 'hello there friend' }],
      temperature: 0.2,
      top_p: 0.9,
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.1,
      logit_bias: { '1000': -5 },
      stop: ['friend'],
      n: 1,
      max_completion_tokens: 100,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [weatherTool],
      response_format: { type: 'text' },
      store: false,
      service_tier: 'auto',
      prompt_cache_key: 'k1',
      safety_identifier: 'hash-1',
      reasoning_effort: 'low',
      verbosity: 'low',
      modalities: ['text'],
      logprobs: false,
      user: 'user-42',
      metadata: { order_id: 'A12', 'Customer Ref': 'x-9' },
      stream_options: null,
    });
    expect(res.choices[0].message.content).to.equal('I understand you said: "hello there ');
    expect(res.choices[0].finish_reason).to.equal('stop');
    const row = await conversationOf(res.id);
    expect(row.metadata).to.deep.include({ api: 'chat.completions', user: 'user-42', safety_identifier: 'hash-1', 'metadata.order_id': 'A12', 'metadata.Customer Ref': 'x-9' });
    expect(row.variables).to.include({ order_id: 'A12' });

    const cut = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'tell me a long story please' }], max_tokens: 3 });
    expect(countTokens(cut.choices[0].message.content ?? '')).to.equal(3);
    expect(cut.choices[0].finish_reason).to.equal('length');
    expect(cut.usage!.completion_tokens).to.equal(3);
    // The agent's maxTokens (40) caps a larger request.
    const capped = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'x '.repeat(120) }], max_tokens: 500 });
    expect(capped.usage!.completion_tokens).to.equal(40);
  });

  it('refuses an unknown parameter and n > 1 as OpenAI does, so APIError.message says what is wrong', async () => {
    const unknown = (await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hi' }], foo: 1 } as never).catch((e: unknown) => e)) as ApiErr;
    expect(unknown).to.be.instanceOf(OpenAI.BadRequestError);
    expect(unknown.message).to.equal('400 Unrecognized request argument supplied: foo');
    expect(unknown.error).to.deep.equal({ message: 'Unrecognized request argument supplied: foo', type: 'invalid_request_error', param: 'foo', code: 'validation_error' });
    expect(unknown.code).to.equal('validation_error');
    expect(unknown.type).to.equal('invalid_request_error');
    const many = (await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hi' }], n: 2 }).catch((e: unknown) => e)) as ApiErr;
    expect(many.status).to.equal(400);
    expect(many.message).to.equal('400 n: only one choice is generated; send 1 or omit it');
    expect(many.param).to.equal('n');
    const logprobs = (await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hi' }], logprobs: true }).catch((e: unknown) => e)) as ApiErr;
    expect(logprobs.message).to.match(/^400 logprobs: log probabilities are not available/);
  });

  it('answers errors in OpenAI shape with the spec code and type on the OpenAI routes, problem+json elsewhere', async () => {
    const draftOnly = (await client.chat.completions.create({ model: unpublished, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as ApiErr;
    expect(draftOnly).to.be.instanceOf(OpenAI.ConflictError);
    expect(draftOnly.code).to.equal('no_published_version');
    expect(draftOnly.type).to.equal('invalid_request_error');
    expect(draftOnly.message).to.match(/^409 .*publish/i);
    const missing = (await client.chat.completions.create({ model: `${agentId}@v9`, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as ApiErr;
    expect(missing).to.be.instanceOf(OpenAI.NotFoundError);
    expect(missing.param).to.equal('model');
    expect(missing.code).to.equal('model_not_found');
    for (const model of ['gpt-4o', 'agt_NoSuchAgent123']) {
      const unknown = (await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as ApiErr;
      expect(unknown, model).to.be.instanceOf(OpenAI.NotFoundError);
      expect(unknown.status).to.equal(404);
      expect(unknown).to.include({ code: 'model_not_found', type: 'invalid_request_error', param: 'model' });
      expect(unknown.message).to.contain(`The model '${model}' does not exist`);
    }
    const unauth = (await new OpenAI({ apiKey: 'nope', baseURL: t.api.baseUrl, maxRetries: 0 }).models.list().catch((e: unknown) => e)) as ApiErr;
    expect(unauth).to.be.instanceOf(OpenAI.AuthenticationError);
    expect(unauth.type).to.equal('authentication_error');
    expect(unauth.message).to.not.contain('no body');
    const readOnly = await t.org('Compat read-only', ['agents:read']);
    const forbidden = (await new OpenAI({ apiKey: readOnly.key, baseURL: t.api.baseUrl, maxRetries: 0 }).models.list().catch((e: unknown) => e)) as ApiErr;
    expect(forbidden.status).to.equal(403);
    expect(forbidden.type).to.equal('permission_error');
    expect(forbidden.code).to.equal('insufficient_scope');
    const limited = await t.org('Compat limited', undefined, { rateLimitPoints: 1, rateLimitWindowSeconds: 60 });
    const limitedClient = new OpenAI({ apiKey: limited.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    await limitedClient.models.list();
    const slow = (await limitedClient.models.list().catch((e: unknown) => e)) as ApiErr;
    expect(slow).to.be.instanceOf(OpenAI.RateLimitError);
    expect(slow.type).to.equal('rate_limit_error');
    expect(slow.code).to.equal('rate_limited');
    expect(slow.headers?.get('retry-after')).to.match(/^\d+$/);
    const raw = await t.call('POST', '/chat/completions', { key: org.key, json: { model: agentId } });
    expect(raw.headers.get('content-type')).to.match(/^application\/json/);
    expect(raw.body.error).to.include({ type: 'invalid_request_error', code: 'validation_error', param: 'messages' });
    const elsewhere = await t.call('GET', '/agents/agt_doesnotexist1', { key: org.key });
    expect(elsewhere.headers.get('content-type')).to.match(/application\/problem\+json/);
    expect(elsewhere.body.code).to.be.a('string');
  });

  it('validates response_format json_schema with ajv and answers json_object as one object', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' }, nights: { type: 'integer' } }, required: ['city', 'nights'], additionalProperties: false };
    const ok = await client.chat.completions.create({
      model: agentId,
      messages: [{ role: 'user', content: 'Book city: Paris, nights: 3' }],
      response_format: { type: 'json_schema', json_schema: { name: 'booking', schema, strict: true } },
    });
    expect(JSON.parse(ok.choices[0].message.content!)).to.deep.equal({ city: 'Paris', nights: 3 });
    const bad = (await client.chat.completions
      .create({ model: agentId, messages: [{ role: 'user', content: 'Book city: Paris' }], response_format: { type: 'json_schema', json_schema: { name: 'booking', schema, strict: true } } })
      .catch((e: unknown) => e)) as ApiErr;
    expect(bad.status).to.equal(502);
    expect(bad.code).to.equal('response_format_unmet');
    expect(bad.message).to.contain("must have required property 'nights'");
    const obj = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hello' }], response_format: { type: 'json_object' } });
    expect(JSON.parse(obj.choices[0].message.content!)).to.have.property('answer').that.is.a('string');
  });

  it('returns a call of a client tool unexecuted, then continues the same conversation with the tool result', async () => {
    const first = await client.chat.completions.create({ model: agentId, tools: [weatherTool], messages: [{ role: 'user', content: 'What is the get weather for city: Oslo?' }] });
    const choice = first.choices[0];
    expect(choice.finish_reason).to.equal('tool_calls');
    const call = choice.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).to.equal('get_weather');
    expect(JSON.parse(call.function.arguments)).to.deep.equal({ city: 'Oslo' });
    expect(call.id).to.equal(`call_${first.id.slice('chatcmpl-'.length)}_0`);
    expect((await conversationOf(first.id)).status).to.equal('active');
    const second = await client.chat.completions.create({
      model: agentId,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'What is the get weather for city: Oslo?' },
        choice.message,
        { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ forecast: 'sunny', celsius: 21 }) },
      ],
    });
    expect(second.id).to.equal(first.id);
    expect(second.choices[0].finish_reason).to.equal('stop');
    expect(second.choices[0].message.content).to.contain('sunny').and.to.contain('21');
    const row = await conversationOf(second.id);
    expect(row).to.include({ status: 'ended', end_reason: 'ended_by_api' });
    const stored = await t.call('GET', `/chat/sessions/${row.id}`, { key: org.key });
    expect(stored.body.data.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
  });

  it('refuses tool results this service did not ask for, for another agent, or for an ended conversation', async () => {
    const stray = (await client.chat.completions
      .create({ model: agentId, messages: [{ role: 'user', content: 'hi' }, { role: 'tool', tool_call_id: 'call_abc', content: 'x' }] })
      .catch((e: unknown) => e)) as ApiErr;
    expect(stray.status).to.equal(400);
    expect(stray.param).to.equal('messages[1].tool_call_id');
    const first = await client.chat.completions.create({ model: agentId, tools: [weatherTool], messages: [{ role: 'user', content: 'get weather city: Bern' }] });
    const call = first.choices[0].message.tool_calls![0];
    const history: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'get weather city: Bern' }, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'rain' }];
    const wrongAgent = (await client.chat.completions.create({ model: unpublished, messages: history }).catch((e: unknown) => e)) as ApiErr;
    expect(wrongAgent.param).to.equal('model');
    await client.chat.completions.create({ model: agentId, messages: history });
    const again = (await client.chat.completions.create({ model: agentId, messages: history }).catch((e: unknown) => e)) as ApiErr;
    expect(again.status).to.equal(409);
    expect(again.code).to.equal('conversation_ended');
  });

  it('honours tool_choice: none calls nothing, a named function is called', async () => {
    const none = await client.chat.completions.create({ model: agentId, tools: [weatherTool], tool_choice: 'none', messages: [{ role: 'user', content: 'get weather in Rome' }] });
    expect(none.choices[0].finish_reason).to.equal('stop');
    const named = await client.chat.completions.create({ model: agentId, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'get_weather' } }, messages: [{ role: 'user', content: 'city: Rome' }] });
    expect(named.choices[0].finish_reason).to.equal('tool_calls');
    const wrong = (await client.chat.completions
      .create({ model: agentId, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } }, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)) as ApiErr;
    expect(wrong.param).to.equal('tool_choice.function.name');
  });

  it('streams tool calls as OpenAI does (index, id and name, then argument pieces) and a final usage chunk', async () => {
    const stream = await client.chat.completions.create({
      model: agentId,
      tools: [weatherTool],
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'get_weather city: "Rio de Janeiro, Brazil"' }],
    });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.tool_calls) deltas.push(...chunk.choices[0].delta.tool_calls);
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finish).to.equal('tool_calls');
    expect(deltas[0]).to.include({ index: 0, type: 'function' });
    expect(deltas[0].id).to.match(/^call_cnv_/);
    expect(deltas[0].function).to.deep.equal({ name: 'get_weather', arguments: '' });
    expect(deltas.length).to.be.greaterThan(2);
    expect(deltas.slice(1).every((d) => d.id === undefined && d.index === 0)).to.equal(true);
    expect(JSON.parse(deltas.map((d) => d.function?.arguments ?? '').join(''))).to.deep.equal({ city: 'Rio de Janeiro, Brazil' });
    expect(usage!.total_tokens).to.be.greaterThan(0);

    const bad = await client.chat.completions.create({
      model: agentId,
      stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', required: ['city'] } } },
      messages: [{ role: 'user', content: 'nothing here' }],
    });
    const err = (await (async () => {
      for await (const _ of bad) void _;
    })().catch((e: unknown) => e)) as ApiErr;
    expect(err).to.be.instanceOf(OpenAI.APIError);
    expect(err.message).to.contain('response_format');
  });

  it('lists the agents as models and retrieves one, 404 in OpenAI shape for an unknown id', async () => {
    const list = await client.models.list();
    const ids = list.data.map((m) => m.id);
    expect(ids).to.include.members([agentId, `${agentId}@draft`, `${agentId}@v1`, `${unpublished}@draft`]);
    expect(ids).to.not.include(unpublished);
    for (const m of list.data) expect(m).to.include({ object: 'model', owned_by: org.orgId }).and.to.have.property('created').that.is.a('number');
    const one = await client.models.retrieve(`${agentId}@v1`);
    expect(one).to.include({ id: `${agentId}@v1`, object: 'model', owned_by: org.orgId });
    const other = await t.org('Compat other');
    const foreign = (await new OpenAI({ apiKey: other.key, baseURL: t.api.baseUrl, maxRetries: 0 }).models.retrieve(agentId).catch((e: unknown) => e)) as ApiErr;
    expect(foreign).to.be.instanceOf(OpenAI.NotFoundError);
    expect(foreign.code).to.equal('model_not_found');
    expect(foreign.message).to.match(/^404 The model 'agt_\w+' does not exist/);
    const gone = (await client.models.retrieve(`${agentId}@v7`).catch((e: unknown) => e)) as ApiErr;
    expect(gone.status).to.equal(404);
  });

  describe('with the Vercel AI SDK OpenAI-compatible provider', () => {
    const provider = () => createOpenAICompatible({ name: 'agents', baseURL: t.api.baseUrl, apiKey: org.key, includeUsage: true });

    it('generates and streams text', async () => {
      const out = await generateText({ model: provider()(agentId), prompt: 'hello from the ai sdk', temperature: 0.3, maxRetries: 0 });
      expect(out.text).to.equal('I understand you said: "hello from the ai sdk". How can I help further?');
      expect(out.finishReason).to.equal('stop');
      expect(out.usage.outputTokens).to.equal(countTokens(out.text));
      const streamed = streamText({ model: provider()(agentId), prompt: 'hello again', maxRetries: 0 });
      let text = '';
      for await (const piece of streamed.textStream) text += piece;
      expect(text).to.equal('I understand you said: "hello again". How can I help further?');
      expect((await streamed.usage).outputTokens).to.be.greaterThan(0);
    });

    it('calls a client tool, which the SDK runs, and the conversation continues with its result', async () => {
      let ran: unknown;
      const out = await generateText({
        model: provider()(agentId),
        prompt: 'get_weather city: Lima',
        tools: {
          get_weather: tool({
            description: 'The weather in a city',
            inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: async (input) => {
              ran = input;
              return { forecast: 'foggy' };
            },
          }),
        },
        stopWhen: () => false,
        maxRetries: 0,
      });
      expect(ran).to.deep.equal({ city: 'Lima' });
      expect(out.steps[0].finishReason).to.equal('tool-calls');
      expect(out.text).to.contain('foggy');
    });

    it('streams a client tool call the SDK assembles', async () => {
      const streamed = streamText({
        model: provider()(agentId),
        prompt: 'get_weather city: Quito',
        tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }) }) },
        maxRetries: 0,
      });
      const calls = await streamed.toolCalls;
      expect(calls.map((c) => [c.toolName, c.input])).to.deep.equal([['get_weather', { city: 'Quito' }]]);
      expect(await streamed.finishReason).to.equal('tool-calls');
    });

    it('surfaces an error message from the OpenAI error shape', async () => {
      const err = (await generateText({ model: provider()(unpublished), prompt: 'hi', maxRetries: 0 }).catch((e: unknown) => e)) as Error;
      expect(err.message).to.match(/publish/i);
    });
  });
});

describe('OpenAI compatibility: what reaches the upstream model', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };
  let client: OpenAI;
  let handler: StubHandler = answerWith({ content: 'Hello from upstream' });
  let agentId: string;

  before(async () => {
    stub = await startOpenAiStub((req, res) => handler(req, res));
    t = await startTestApi('openaicompatup', QUICK_CLIENT, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Upstream compat');
    client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Concierge', voiceId: 'voice_ava', maxTokens: 64 } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'hang_up', type: 'end_call', description: 'Ends the conversation', config: { closingLine: 'Bye now.' } } });
    const book = { name: 'book_visit', type: 'book_appointment', description: 'Books a visit', config: { url: 'https://cal.example.com/book', durationMinutes: 30, timeZone: 'America/Chicago' } };
    expect((await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: book })).status).to.equal(201);
    expect((await publishDraft(t.db, org, agentId, 'u1')).kind).to.equal('published');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it('passes sampling, stop, seed, penalties, logit_bias, the capped token limit, tools, tool_choice and response_format on the wire', async () => {
    handler = answerWith({ content: '{"city":"Oslo"}' });
    stub.requests.length = 0;
    const res = await client.chat.completions.create({
      model: agentId,
      messages: [{ role: 'user', content: 'Where?' }],
      temperature: 0.3,
      top_p: 0.8,
      stop: 'END',
      seed: 11,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      logit_bias: { '50256': -100 },
      max_completion_tokens: 500,
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true } },
    });
    expect(JSON.parse(res.choices[0].message.content!)).to.deep.equal({ city: 'Oslo' });
    const sent = stub.requests[0].body;
    expect(sent).to.deep.include({
      temperature: 0.3,
      top_p: 0.8,
      stop: ['END'],
      seed: 11,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      logit_bias: { '50256': -100 },
      max_tokens: 64,
      parallel_tool_calls: false,
      reasoning_effort: 'low',
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(sent.response_format).to.deep.equal({
      type: 'json_schema',
      json_schema: { name: 'place', schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: true },
    });
    expect(sent.tools.map((x: { function: { name: string } }) => x.function.name)).to.deep.equal(['book_visit', 'hang_up', 'get_weather']);
  });

  it('runs a skill called beside a client tool and returns only the client call, then continues with both results', async () => {
    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool' && body.messages[body.messages.length - 1].role === 'tool' && body.messages.filter((x) => x.role === 'tool').length === 2)
        ? { content: 'Booked, and it will be sunny.' }
        : {
            toolCalls: [
              { id: 'call_b', name: 'book_visit', arguments: '{"start_time":"2026-12-01T10:00:00Z"}' },
              { id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}' },
            ],
          },
    );
    stub.requests.length = 0;
    const first = await client.chat.completions.create({ model: agentId, tools: [weatherTool], messages: [{ role: 'user', content: 'Book me and tell me the weather' }] });
    const calls = first.choices[0].message.tool_calls as OpenAI.ChatCompletionMessageFunctionToolCall[];
    expect(calls.map((c) => c.function.name)).to.deep.equal(['get_weather']);
    const second = await client.chat.completions.create({
      model: agentId,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Book me and tell me the weather' }, first.choices[0].message, { role: 'tool', tool_call_id: calls[0].id, content: 'sunny' }],
    });
    expect(second.choices[0].message.content).to.equal('Booked, and it will be sunny.');
    const wire = stub.requests[stub.requests.length - 1].body.messages;
    expect(wire.slice(-3).map((m: { role: string; tool_call_id?: string }) => `${m.role}:${m.tool_call_id ?? ''}`)).to.deep.equal(['assistant:', 'tool:call_b', 'tool:call_w']);
    expect(wire[wire.length - 1].content).to.equal('sunny');
  });

  it('answers an upstream failure as a server_error, in a stream too', async () => {
    handler = (_req, res) => sendError(res, 500, { message: 'boom', type: 'server_error' });
    const down = (await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)) as ApiErr;
    expect(down).to.be.instanceOf(OpenAI.InternalServerError);
    expect(down.status).to.equal(502);
    expect(down.error).to.include({ type: 'server_error', code: 'llm_unavailable' });
    const stream = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'hi' }], stream: true });
    const err = (await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e)) as ApiErr;
    expect(err).to.be.instanceOf(OpenAI.APIError);
    expect(err.error).to.include({ type: 'server_error', code: 'llm_unavailable' });
  });

  it('returns an upstream call of a client tool and keeps a skill server-side', async () => {
    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool') ? { content: 'It is sunny in Oslo.' } : { toolCalls: [{ id: 'call_up_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
    );
    stub.requests.length = 0;
    const first = await client.chat.completions.create({ model: agentId, tools: [weatherTool], tool_choice: 'required', messages: [{ role: 'user', content: 'Weather?' }] });
    expect(stub.requests[0].body.tool_choice).to.equal('required');
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function).to.deep.equal({ name: 'get_weather', arguments: '{"city":"Oslo"}' });
    const second = await client.chat.completions.create({
      model: agentId,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'Weather?' }, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
    });
    expect(second.choices[0].message.content).to.equal('It is sunny in Oslo.');
    const wire = stub.requests[1].body.messages;
    expect(wire.slice(-2)).to.deep.equal([
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_up_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_up_1', content: 'sunny' },
    ]);

    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool') ? { content: 'unused' } : { toolCalls: [{ id: 'call_2', name: 'hang_up', arguments: '{}' }] },
    );
    const skill = await client.chat.completions.create({ model: agentId, tools: [weatherTool], messages: [{ role: 'user', content: 'bye' }] });
    expect(skill.choices[0].finish_reason).to.equal('stop');
    expect(skill.choices[0].message.tool_calls).to.equal(undefined);
    expect(skill.choices[0].message.content).to.equal('Bye now.');
  });
});
