/**
 * The Responses API driven by the official `openai` npm client, unchanged (docs/api-notes.md "Responses API"): string
 * and item input, `previous_response_id` continuing one conversation, a client function tool round trip, `text.format`
 * `json_schema` validated, the typed streaming events in order, `retrieve`; with the sandbox LLM and with the
 * OpenAI-compatible adapter against a loopback server (what reaches the wire).
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import { publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { answerWith, sendError, startOpenAiStub, type OpenAiStub, type StubHandler } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { countTokens } from '../../providers/llm';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const BOOKING_SCHEMA = { type: 'object', properties: { city: { type: 'string' }, nights: { type: 'integer' } }, required: ['city', 'nights'], additionalProperties: false };

describe('POST /responses with the official openai client (sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let client: OpenAI;
  let agentId: string;

  before(async () => {
    t = await startTestApi('responses', QUICK_CLIENT);
    org = await t.org('Responses');
    client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hi!' } })).body.data.id;
    await publishDraft(t.db, org, agentId, 'v1');
  });
  after(async () => t?.close());

  const messagesOf = async (conversationId: string) =>
    (await t.call('GET', `/chat/sessions/${conversationId}`, { key: org.key })).body.data.messages.map((m: { role: string; content: string | null }) => `${m.role}:${m.content}`);

  it('answers a string input with a response object, its usage, and stores it for retrieve', async () => {
    const res = await client.responses.create({ model: agentId, input: 'Hello there', instructions: 'ignored: the agent decides' });
    expect(res.id).to.match(/^resp_/);
    expect(res.object).to.equal('response');
    expect(res.status).to.equal('completed');
    expect(res.model).to.equal(agentId);
    expect(res.instructions).to.equal(null);
    expect(res.output).to.have.length(1);
    const message = res.output[0] as OpenAI.Responses.ResponseOutputMessage;
    expect(message).to.include({ type: 'message', role: 'assistant', status: 'completed' });
    expect(res.output_text).to.equal('I understand you said: "Hello there". How can I help further?');
    expect(res.usage!.output_tokens).to.equal(countTokens(res.output_text));
    expect(res.usage!.input_tokens).to.be.greaterThan(0);
    expect(res.usage!.total_tokens).to.equal(res.usage!.input_tokens + res.usage!.output_tokens);
    const got = await client.responses.retrieve(res.id);
    expect(got.id).to.equal(res.id);
    expect(got.output_text).to.equal(res.output_text);
    expect(got.usage).to.deep.equal(res.usage);
  });

  it('stores earlier input messages as the opening and continues the conversation with previous_response_id', async () => {
    const first = await client.responses.create({
      model: agentId,
      input: [
        { role: 'system', content: 'ignored' },
        { role: 'user', content: 'My name is Ada' },
        { role: 'assistant', content: 'Nice to meet you, Ada.' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What can you do?' }] },
      ],
    });
    const conversationId = (first as unknown as { conversation: { id: string } }).conversation.id;
    expect(conversationId).to.match(/^cnv_/);
    // The previous output echoed back (as clients often do) is not stored twice.
    const second = await client.responses.create({ model: agentId, previous_response_id: first.id, input: [first.output[0] as OpenAI.Responses.ResponseOutputMessage, { role: 'user', content: 'And on weekends?' }] });
    expect(second.previous_response_id).to.equal(first.id);
    expect((second as unknown as { conversation: { id: string } }).conversation.id).to.equal(conversationId);
    expect(await messagesOf(conversationId)).to.deep.equal([
      'user:My name is Ada',
      'assistant:Nice to meet you, Ada.',
      'user:What can you do?',
      `assistant:${first.output_text}`,
      'user:And on weekends?',
      `assistant:${second.output_text}`,
    ]);
    // Only the latest response of a conversation continues it.
    const stale = await client.responses.create({ model: agentId, previous_response_id: first.id, input: 'again' }).catch((e: unknown) => e);
    expect((stale as InstanceType<typeof OpenAI.APIError>).status).to.equal(409);
  });

  it('returns a client function call unrun, and continues from its function_call_output', async () => {
    const asked = await client.responses.create({ model: agentId, input: 'Please get weather for city: Paris', tools: [WEATHER_TOOL] });
    expect(asked.status).to.equal('completed');
    expect(asked.output).to.have.length(1);
    const call = asked.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).to.include({ type: 'function_call', name: 'get_weather', status: 'completed' });
    expect(call.call_id).to.match(/^call_/);
    expect(JSON.parse(call.arguments)).to.deep.equal({ city: 'Paris' });
    expect(asked.output_text).to.equal('');

    // A continuation that leaves the call unanswered is refused, naming the field.
    const missing = await t.call('POST', '/responses', { key: org.key, json: { model: agentId, previous_response_id: asked.id, input: 'hello?' } });
    expect(missing.status).to.equal(400);
    expect(missing.text).to.contain('function_call_output for call_id');

    const answered = await client.responses.create({
      model: agentId,
      previous_response_id: asked.id,
      tools: [WEATHER_TOOL],
      input: [call, { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ temperature: 21, sky: 'sunny' }) }],
    });
    expect(answered.status).to.equal('completed');
    expect(answered.output_text).to.equal('All done. The temperature is 21 and the sky is sunny.');
    const conversationId = (answered as unknown as { conversation: { id: string } }).conversation.id;
    const stored = (await t.call('GET', `/chat/sessions/${conversationId}`, { key: org.key })).body.data.messages;
    expect(stored.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
  });

  it('answers text.format json_schema with JSON that matches the schema, and fails a response whose answer does not', async () => {
    const format = { type: 'json_schema' as const, name: 'booking', schema: BOOKING_SCHEMA, strict: true };
    const res = await client.responses.create({ model: agentId, input: 'Book a room, city: Oslo, nights: 3', text: { format } });
    expect(res.status).to.equal('completed');
    expect(JSON.parse(res.output_text)).to.deep.equal({ city: 'Oslo', nights: 3 });
    const partial = await client.responses.create({ model: agentId, input: 'Book a room in city: Oslo', text: { format } });
    expect(partial.status).to.equal('failed');
    expect(partial.error!.message).to.match(/does not match the JSON Schema of text.format booking/);
  });

  it('answers an answer cut by max_output_tokens as incomplete', async () => {
    const res = await client.responses.create({ model: agentId, input: 'Tell me everything about your opening hours', max_output_tokens: 3 });
    expect(res.status).to.equal('incomplete');
    expect(res.incomplete_details).to.deep.equal({ reason: 'max_output_tokens' });
    expect(res.usage!.output_tokens).to.equal(3);
    expect(res.output[0]).to.include({ type: 'message', status: 'incomplete' });
  });

  it('streams the typed events in order, each with its sequence number, adding up to the stored response', async () => {
    const stream = client.responses.stream({ model: agentId, input: 'Tell me about your service' });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    const final = await stream.finalResponse();
    expect(events.map((e) => e.sequence_number)).to.deep.equal(events.map((_e, i) => i));
    const types = events.map((e) => e.type).filter((type, i, all) => type !== 'response.output_text.delta' || all[i - 1] !== type);
    expect(types).to.deep.equal([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const deltas = events.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === 'response.output_text.delta');
    expect(deltas.length).to.be.greaterThan(3);
    expect(deltas.map((d) => d.delta).join('')).to.equal(final.output_text);
    expect((await client.responses.retrieve(final.id)).output_text).to.equal(final.output_text);
  });

  it('streams a client function call as function_call_arguments events', async () => {
    const stream = await client.responses.create({ model: agentId, input: 'get_weather city: Rome', tools: [WEATHER_TOOL], stream: true });
    const types: string[] = [];
    let done: OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent | undefined;
    let completed: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.function_call_arguments.done') done = e;
      if (e.type === 'response.completed') completed = e.response;
    }
    expect(types).to.deep.equal([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(done).to.include({ name: 'get_weather', arguments: '{"city":"Rome"}' });
    expect(completed!.output[0]).to.include({ type: 'function_call', name: 'get_weather' });
  });

  it('refuses bad input naming the field, and answers 404 for an unknown or foreign previous_response_id', async () => {
    const refuse = async (json: Record<string, unknown>, field: string) => {
      const res = await t.call('POST', '/responses', { key: org.key, json });
      expect(res.status, res.text).to.equal(400);
      expect(res.text).to.contain(field);
    };
    await refuse({ model: agentId, input: [{ type: 'function_call_output', call_id: 'call_x', output: '{}' }] }, 'input[0]');
    await refuse({ model: agentId, input: 'hi', tools: [{ type: 'web_search' }] }, 'tools[0].type');
    await refuse({ model: agentId, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] }] }, 'input[0].content[0].type');
    await refuse({ model: agentId, input: 'hi', text: { format: { type: 'json_schema', name: 'x' } } }, 'text.format.schema');
    await refuse({ model: agentId, input: 'hi', background: true }, 'background');
    await refuse({ input: 'hi' }, 'model');
    await refuse({ model: agentId, input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'string' } }] }, 'tools[0].parameters');
    await refuse({ model: agentId, input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema: { type: 'nope' } } } }, 'text.format.schema');
    await refuse({ model: agentId, input: 'hi', tool_choice: { type: 'function', name: 'not_offered' } }, 'tool_choice');
    // A client schema with an `$id` is compiled per request, never kept (a second one with the same id is no clash).
    for (let i = 0; i < 2; i++) {
      const ok = await t.call('POST', '/responses', { key: org.key, json: { model: agentId, input: 'name: Ada', text: { format: { type: 'json_schema', name: 'x', schema: { $id: 'https://example.test/x', type: 'object', properties: { name: { type: 'string' } } } } } } });
      expect(ok.status, ok.text).to.equal(200);
      expect(JSON.parse(ok.body.output[0].content[0].text)).to.deep.equal({ name: 'Ada' });
    }

    const unknown = await client.responses.create({ model: agentId, previous_response_id: 'resp_0000000000000000', input: 'hi' }).catch((e: unknown) => e);
    expect((unknown as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
    const mine = await client.responses.create({ model: agentId, input: 'hi' });
    const other = await t.org('Other');
    const foreign = new OpenAI({ apiKey: other.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    expect(((await foreign.responses.create({ model: agentId, previous_response_id: mine.id, input: 'hi' }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
    expect(((await foreign.responses.retrieve(mine.id).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
  });
});

describe('POST /responses on the OpenAI-compatible adapter', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };
  let handler: StubHandler = answerWith({ content: 'Hello from upstream' });
  let client: OpenAI;
  let agentId: string;

  before(async () => {
    stub = await startOpenAiStub((req, res) => handler(req, res));
    t = await startTestApi('responsesupstream', QUICK_CLIENT, { providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 0 }) } });
    org = await t.org('Upstream');
    client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Concierge', voiceId: 'voice_ava', instructions: 'Keep answers short.' } })).body.data.id;
    await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json: { name: 'hang_up', type: 'end_call', description: 'Ends the conversation', config: { closingLine: 'Bye now.' } } });
    await publishDraft(t.db, org, agentId, 'u1');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });

  it("offers the client's function beside the agent's skill, returns its call, and sends the output back as a tool message", async () => {
    handler = answerWith((body: { messages: { role: string }[] }) =>
      body.messages.some((m) => m.role === 'tool') ? { content: 'It is sunny in Paris.' } : { toolCalls: [{ id: 'call_up1', name: 'get_weather', arguments: '{"city":"Paris"}' }] },
    );
    stub.requests.length = 0;
    const asked = await client.responses.create({ model: agentId, input: 'Weather in Paris?', tools: [WEATHER_TOOL], tool_choice: 'required', temperature: 0.2, max_output_tokens: 50 });
    // The turn's own requests: a conversation's background analysis may reach the stub meanwhile.
    const turnRequests = () => stub.requests.filter((r) => (r.body.messages as { content?: unknown }[] | undefined)?.some((m) => m.content === 'Weather in Paris?'));
    const sent = turnRequests()[0].body;
    expect(sent).to.deep.include({ temperature: 0.2, max_tokens: 50 });
    expect(asked).to.deep.include({ temperature: 0.2, max_output_tokens: 50, tool_choice: 'required' });
    expect(sent.tools.map((x: { function: { name: string } }) => x.function.name)).to.deep.equal(['hang_up', 'get_weather']);
    expect(sent.tools[1].function.parameters).to.deep.equal(WEATHER_TOOL.parameters);
    expect(sent.tool_choice).to.equal('required');
    expect(sent.messages[0].content).to.contain('Keep answers short.');
    expect(sent.messages[sent.messages.length - 1]).to.deep.equal({ role: 'user', content: 'Weather in Paris?' });
    expect(turnRequests()).to.have.length(1);
    expect(asked.output).to.have.length(1);
    expect(asked.output[0]).to.include({ type: 'function_call', call_id: 'call_up1', name: 'get_weather', arguments: '{"city":"Paris"}' });

    stub.requests.length = 0;
    const answered = await client.responses.create({ model: agentId, previous_response_id: asked.id, tools: [WEATHER_TOOL], input: [{ type: 'function_call_output', call_id: 'call_up1', output: '{"sky":"sunny"}' }] });
    expect(answered.output_text).to.equal('It is sunny in Paris.');
    const [followUp] = turnRequests();
    const wire = followUp.body.messages;
    expect(wire.slice(-3)).to.deep.equal([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_up1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_up1', content: '{"sky":"sunny"}' },
    ]);
    expect(followUp.body.tool_choice).to.equal(undefined);
    expect(answered.usage).to.deep.include({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
  });

  it("runs the agent's own skill server-side: no function_call reaches the client", async () => {
    handler = answerWith((body: { messages: { role: string }[] }) => (body.messages.some((m) => m.role === 'tool') ? { content: 'unused' } : { toolCalls: [{ id: 'call_hang', name: 'hang_up', arguments: '{}' }] }));
    const res = await client.responses.create({ model: agentId, input: 'That is all, thanks', tools: [WEATHER_TOOL] });
    expect(res.output.map((o) => o.type)).to.deep.equal(['message']);
    expect(res.output_text).to.equal('Bye now.');
  });

  it('sends text.format json_schema as response_format and validates the answer', async () => {
    handler = answerWith({ content: '{"city":"Oslo","nights":3}' });
    stub.requests.length = 0;
    const res = await client.responses.create({ model: agentId, input: 'Two nights? No, three in Oslo.', text: { format: { type: 'json_schema', name: 'booking', schema: BOOKING_SCHEMA, strict: true } } });
    // The turn's own request (a background request — a conversation's analysis — may reach the stub meanwhile).
    const turn = stub.requests.find((r) => (r.body.messages as { content?: unknown }[] | undefined)?.some((m) => m.content === 'Two nights? No, three in Oslo.'));
    expect(turn?.body.response_format).to.deep.equal({ type: 'json_schema', json_schema: { name: 'booking', schema: BOOKING_SCHEMA, strict: true } });
    expect(res.status).to.equal('completed');
    expect(JSON.parse(res.output_text)).to.deep.equal({ city: 'Oslo', nights: 3 });
    handler = answerWith({ content: '{"city":"Oslo"}' });
    const bad = await client.responses.create({ model: agentId, input: 'Oslo', text: { format: { type: 'json_schema', name: 'booking', schema: BOOKING_SCHEMA } } });
    expect(bad.status).to.equal('failed');
    expect(bad.error!.message).to.contain("must have required property 'nights'");
  });

  it('answers a model failure with 502, or mid-stream with response.failed, storing nothing', async () => {
    handler = (_req, res) => sendError(res, 500, { message: 'boom', type: 'server_error' });
    const failed = await client.responses.create({ model: agentId, input: 'Hello?' }).catch((e: unknown) => e);
    expect((failed as InstanceType<typeof OpenAI.APIError>).status).to.equal(502);
    const stream = await client.responses.create({ model: agentId, input: 'Hello?', stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const e of stream) events.push(e);
    expect(events.map((e) => e.type)).to.deep.equal(['response.created', 'response.in_progress', 'response.failed']);
    const last = events[2] as OpenAI.Responses.ResponseFailedEvent;
    expect(last.response.status).to.equal('failed');
    expect(last.response.error!.message).to.match(/language model/);
    const id = (events[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    expect(((await client.responses.retrieve(id).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
  });
});
