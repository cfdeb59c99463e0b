/**
 * Model settings on the wire and the fallback model (docs/api-notes.md "Agents": model settings, "Sandbox LLM"): the
 * OpenAI-compatible adapter against the loopback chat-completions server (test/helpers/llm.ts) sends the model,
 * temperature and max tokens, and asks the fallback model once after a 429, a 5xx or a timeout of the first —
 * never after another 4xx, nor once a stream has started; the sandbox cuts answers at `maxTokens`, fails by its
 * documented model names and falls back the same way, and classifies semantic topics by key words.
 */
import { expect } from 'chai';
import { LlmProviderError, type LlmStreamEvent } from '../../providers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { SandboxLlm, sandboxModelFailure } from '../../providers/llm/sandbox';
import { sandboxClassification } from '../../providers/llm/sandboxJudging';
import { answerWith, sendError, sendSse, startOpenAiStub, type OpenAiStub, collect, failure } from '../helpers/llm';

const hi = [{ role: 'user' as const, content: 'hi' }];

describe('LLM model settings and the fallback model (docs/api-notes.md "Agents": model settings)', () => {
  let stub: OpenAiStub | undefined;
  afterEach(async () => {
    await stub?.close();
    stub = undefined;
  });

  const llmFor = (s: OpenAiStub, timeoutMs = 5000) => new OpenAiLlm({ baseUrl: s.baseUrl, apiKey: 'sk-test', model: 'gpt-default', timeoutMs, maxRetries: 1 });

  it('sends model, temperature and max_tokens on the wire, streaming or not', async () => {
    stub = await startOpenAiStub(answerWith({ content: 'ok' }));
    const llm = llmFor(stub);
    await llm.complete({ messages: hi, model: 'gpt-big', temperature: 1.3, maxTokens: 77 });
    await collect(llm.stream({ messages: hi, model: 'gpt-big', temperature: 0, maxTokens: 5 }));
    expect(stub.requests[0].body).to.include({ model: 'gpt-big', temperature: 1.3, max_tokens: 77 });
    expect(stub.requests[1].body).to.include({ model: 'gpt-big', temperature: 0, max_tokens: 5, stream: true });
  });

  for (const status of [429, 500]) {
    it(`asks the fallback model once after a ${status} from the first, without retrying the first`, async () => {
      const ok = answerWith({ content: 'from the fallback' });
      stub = await startOpenAiStub((req, res) => (req.body.model === 'gpt-big' ? sendError(res, status, { message: 'no' }) : ok(req, res)));
      const llm = llmFor(stub);
      const res = await llm.complete({ messages: hi, model: 'gpt-big', fallbackModel: 'gpt-small', temperature: 0.5, maxTokens: 40 });
      expect(res).to.include({ content: 'from the fallback', model: 'gpt-small' });
      expect(stub.requests.map((r) => r.body.model)).to.deep.equal(['gpt-big', 'gpt-small']);
      expect(stub.requests[1].body).to.include({ temperature: 0.5, max_tokens: 40 });

      stub.requests.length = 0;
      const events = await collect(llm.stream({ messages: hi, model: 'gpt-big', fallbackModel: 'gpt-small' }));
      const done = events.find((e) => e.type === 'done');
      expect(done && done.type === 'done' && done.response).to.include({ content: 'from the fallback', model: 'gpt-small' });
      expect(stub.requests.map((r) => r.body.model)).to.deep.equal(['gpt-big', 'gpt-small']);
    });
  }

  it('falls back when the first model does not answer in time', async () => {
    const ok = answerWith({ content: 'quick one' });
    stub = await startOpenAiStub((req, res) => {
      if (req.body.model !== 'gpt-slow') ok(req, res);
      // gpt-slow never answers
    });
    const llm = llmFor(stub, 200);
    const res = await llm.complete({ messages: hi, model: 'gpt-slow', fallbackModel: 'gpt-small' });
    expect(res.model).to.equal('gpt-small');
    const events = await collect(llm.stream({ messages: hi, model: 'gpt-slow', fallbackModel: 'gpt-small' }));
    expect(events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content).join('')).to.equal('quick one');
  });

  it('does not fall back after another 4xx, when both fail, or once a stream has started', async () => {
    let mode: 'bad' | 'down' | 'cut' = 'bad';
    stub = await startOpenAiStub((req, res) => {
      if (mode === 'bad') return sendError(res, 400, { message: 'bad messages' });
      if (mode === 'down') return sendError(res, 503, { message: 'down' });
      sendSse(res, [{ id: 'x', object: 'chat.completion.chunk', created: 1, model: req.body.model, choices: [{ index: 0, delta: { content: 'Hal' }, finish_reason: null }] }], { done: false });
    });
    const llm = llmFor(stub);
    const bad = await failure(llm.complete({ messages: hi, model: 'gpt-big', fallbackModel: 'gpt-small' }));
    expect(bad).to.include({ kind: 'bad_request' });
    expect(stub.requests).to.have.length(1);

    mode = 'down';
    stub.requests.length = 0;
    const down = await failure(llm.complete({ messages: hi, model: 'gpt-big', fallbackModel: 'gpt-small' }));
    expect(down).to.be.instanceOf(LlmProviderError);
    expect(down).to.include({ kind: 'unavailable', status: 503 });
    // The first model once (the fallback is its retry), the fallback with the adapter's one retry.
    expect(stub.requests.map((r) => r.body.model)).to.deep.equal(['gpt-big', 'gpt-small', 'gpt-small']);

    mode = 'cut';
    stub.requests.length = 0;
    const cut = await failure(collect(llm.stream({ messages: hi, model: 'gpt-big', fallbackModel: 'gpt-small' })));
    expect(cut).to.include({ kind: 'unavailable' });
    expect(stub.requests.map((r) => r.body.model)).to.deep.equal(['gpt-big']);
  });
});

describe('sandbox LLM: model settings, failing models and topic classification (docs/api-notes.md "Sandbox LLM")', () => {
  const sandbox = new SandboxLlm();

  it('cuts an answer at maxTokens and names the model it was asked for', async () => {
    const whole = await sandbox.complete({ messages: [{ role: 'user', content: 'Tell me everything about your opening hours please' }] });
    const cut = await sandbox.complete({ messages: [{ role: 'user', content: 'Tell me everything about your opening hours please' }], maxTokens: 3, model: 'gpt-big' });
    expect(whole.finishReason).to.equal('stop');
    expect(cut).to.include({ finishReason: 'length', model: 'gpt-big' });
    expect(cut.usage.completionTokens).to.equal(3);
    expect(whole.content!.startsWith(cut.content!)).to.equal(true);
  });

  it('fails by model name and answers from the fallback model instead', async () => {
    expect(sandboxModelFailure('gpt-big-rate-limited')).to.equal('rate_limited');
    expect(sandboxModelFailure('gpt-big-unavailable')).to.equal('unavailable');
    expect(sandboxModelFailure('gpt-big-timeout')).to.equal('timeout');
    expect(sandboxModelFailure('gpt-big')).to.equal(null);
    const err = await failure(sandbox.complete({ messages: hi, model: 'gpt-big-rate-limited' }));
    expect(err).to.be.instanceOf(LlmProviderError);
    expect(err).to.include({ kind: 'rate_limited', status: 429 });
    for (const model of ['gpt-big-rate-limited', 'gpt-big-unavailable', 'gpt-big-timeout']) {
      const res = await sandbox.complete({ messages: hi, model, fallbackModel: 'gpt-small' });
      expect(res.model).to.equal('gpt-small');
    }
    const both = await failure(sandbox.complete({ messages: hi, model: 'a-unavailable', fallbackModel: 'b-unavailable' }));
    expect(both).to.include({ kind: 'unavailable' });
  });

  it('classifies a message by the key words of the topic, its description and the vocabulary the topic names', async () => {
    const medical = { topic: 'medical advice', description: null };
    const legal = { topic: 'legal questions', description: 'lawsuits and contracts' };
    expect(sandboxClassification({ message: 'is it an infection? Should I take amoxicillin?', topics: [medical, legal] }).applies).to.deep.equal(['medical advice']);
    for (const m of ['What dosage of ibuprofen is safe?', 'Can you diagnose this rash?', 'I need a prescription refill']) {
      expect(sandboxClassification({ message: m, topics: [medical] }).applies, m).to.deep.equal(['medical advice']);
    }
    for (const m of ['When are you open on Saturday?', 'Can I get some advice on parking?', 'Do you take Delta Dental?']) {
      expect(sandboxClassification({ message: m, topics: [medical, legal] }).applies, m).to.deep.equal([]);
    }
    expect(sandboxClassification({ message: 'Should I sue my landlord?', topics: [medical, legal] }).applies).to.deep.equal(['legal questions']);
    expect(sandboxClassification({ message: 'about my contracts', topics: [legal] }).applies, 'description words count').to.deep.equal(['legal questions']);
    const verdict = sandboxClassification({ message: 'is it an infection?', topics: [medical] });
    expect(verdict.reason).to.equal('The message mentions "infection", which is about medical advice.');
    // As a classification request: JSON mode, one JSON object.
    const res = await sandbox.complete({
      messages: [{ role: 'user', content: 'is it an infection?' }],
      responseFormat: 'json_object',
      hints: { classification: { message: 'is it an infection?', topics: [medical] } },
    });
    expect(JSON.parse(res.content!)).to.deep.equal(verdict);
  });
});
