/**
 * Model settings and semantic guardrails on the OpenAI-compatible adapter, against the loopback server speaking
 * chat completions (test/helpers/llm.ts; docs/api-notes.md "Agents": model settings, "Conversations"): the agent's
 * model, temperature and max tokens reach the wire; the fallback model answers after a 429 or a 500 of the first;
 * the system prompt carries the date, time and time zone; a semantic guardrail sends one classification request in
 * JSON mode and refuses when the model says the topic applies, and refuses when the classifier is down.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { answerWith, sendError, startOpenAiStub, type OpenAiStub, type StubHandler } from '../helpers/llm';
import { OpenAiLlm } from '../../providers/llm/openai';
import { CLASSIFIER_UNAVAILABLE_REPLY, clearVerdictCache } from '../../domain/conversations/topicClassifier';

describe('agent model settings and semantic guardrails on the OpenAI-compatible adapter', () => {
  let t: TestApi;
  let stub: OpenAiStub;
  let org: { orgId: string; key: string; keyId: string };
  let handler: StubHandler = answerWith({ content: 'Hello from upstream' });
  let n = 0;

  before(async () => {
    stub = await startOpenAiStub((req, res) => handler(req, res));
    t = await startTestApi('modelupstream', { ...QUICK_CLIENT, llmModel: 'gpt-test', llmModels: ['gpt-test', 'gpt-big', 'gpt-small'] }, {
      providers: { llm: new OpenAiLlm({ baseUrl: stub.baseUrl, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000, maxRetries: 1 }) },
    });
    org = await t.org('Upstream settings');
  });
  after(async () => {
    await t?.close();
    await stub?.close();
  });
  beforeEach(() => {
    clearVerdictCache();
    stub.requests.length = 0;
  });

  /** A published agent with these fields (and guardrails), and a chat session on it. */
  const sessionOn = async (fields: Record<string, unknown>, blockedTopics: unknown[] = []) => {
    const a = (await t.call('POST', '/agents', { key: org.key, json: { name: `Upstream ${++n}`, voiceId: 'voice_ava', instructions: 'Keep answers short.', ...fields } })).body.data;
    expect(a?.id, 'agent created').to.be.a('string');
    if (blockedTopics.length) {
      const g = await t.call('PUT', `/agents/${a.id}/guardrails`, { key: org.key, json: { blockedTopics, forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null } });
      expect(g.status, g.text).to.equal(200);
    }
    expect((await publishDraft(t.db, org, a.id, `up-${n}`)).kind).to.equal('published');
    const s = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId: a.id } });
    stub.requests.length = 0;
    return s.body.data.session.id as string;
  };
  const say = (id: string, content: string) => t.call('POST', `/chat/sessions/${id}/messages`, { key: org.key, json: { content } });

  it("sends the agent's model, temperature and max tokens, and the date, time and time zone in the system prompt", async () => {
    handler = answerWith({ content: 'We open at nine.' });
    const id = await sessionOn({ model: 'gpt-big', temperature: 0.25, maxTokens: 256, timeZone: 'Europe/Berlin' });
    const res = await say(id, 'Are you open right now?');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal('We open at nine.');
    expect(stub.requests).to.have.length(1);
    const sent = stub.requests[0].body;
    expect(sent).to.include({ model: 'gpt-big', temperature: 0.25, max_tokens: 256, stream: true });
    const system = sent.messages[0];
    expect(system.role).to.equal('system');
    expect(system.content).to.match(/It is now \w+day, \w+ \d{1,2}, \d{4}, \d{2}:\d{2} in Europe\/Berlin \(UTC\+0[12]:00; ISO 8601 \d{4}-\d{2}-\d{2}T\d{2}:\d{2}\+0[12]:00\)\./);
    expect(system.content).to.contain('This conversation is a chat.');
  });

  it('leaves temperature and max tokens to the model and uses LLM_MODEL when the agent names none', async () => {
    handler = answerWith({ content: 'ok' });
    const id = await sessionOn({});
    await say(id, 'Hi');
    expect(stub.requests[0].body.model).to.equal('gpt-test');
    expect(stub.requests[0].body).to.not.have.any.keys('temperature', 'max_tokens');
    expect(stub.requests[0].body.messages[0].content).to.contain(' in UTC (UTC+00:00; ISO 8601 ');
  });

  for (const status of [429, 500]) {
    it(`answers from the fallback model after a ${status} from the first`, async () => {
      const ok = answerWith({ content: 'The fallback speaking.' });
      handler = (req, res) => (req.body.model === 'gpt-big' ? sendError(res, status, { message: 'no' }) : ok(req, res));
      const id = await sessionOn({ model: 'gpt-big', fallbackModel: 'gpt-small', temperature: 0.5 });
      const res = await say(id, 'Hello?');
      expect(res.status, res.text).to.equal(200);
      expect(res.body.data.reply.content).to.equal('The fallback speaking.');
      expect(stub.requests.map((r) => r.body.model)).to.deep.equal(['gpt-big', 'gpt-small']);
      expect(stub.requests[1].body.temperature).to.equal(0.5);
    });
  }

  it('sends one classification request in JSON mode for a semantic topic, and refuses when the model says it applies', async () => {
    handler = answerWith((body: { response_format?: { type: string } }) =>
      body.response_format?.type === 'json_object' ? { content: '{"applies":["medical advice"],"reason":"Asks whether to take an antibiotic."}' } : { content: 'unused' },
    );
    const id = await sessionOn({ model: 'gpt-big' }, [{ topic: 'medical advice', match: 'semantic', description: 'symptoms, diagnoses, medicines' }]);
    const res = await say(id, 'is it an infection? Should I take amoxicillin?');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal("I'm sorry, I can't help with medical advice. Is there anything else I can do for you?");
    expect(stub.requests).to.have.length(1);
    const sent = stub.requests[0].body;
    expect(sent.response_format).to.deep.equal({ type: 'json_object' });
    expect(sent).to.include({ model: 'gpt-big', temperature: 0, stream: false });
    expect(sent.messages[0].content).to.contain('"medical advice": symptoms, diagnoses, medicines');
    expect(sent.messages[1]).to.deep.equal({ role: 'user', content: 'is it an infection? Should I take amoxicillin?' });
    expect(res.body.data.receipt.guardrails[0]).to.deep.include({
      rule: 'blockedTopics',
      match: 'semantic',
      reason: 'the model judged the message to be about it: Asks whether to take an antibiotic.',
    });

    // A message the model says is about none: classified, then answered.
    handler = answerWith((body: { response_format?: { type: string } }) =>
      body.response_format?.type === 'json_object' ? { content: '{"applies":[],"reason":"About opening hours."}' } : { content: 'We open at nine.' },
    );
    stub.requests.length = 0;
    const fine = await say(id, 'When do you open?');
    expect(fine.body.data.reply.content).to.equal('We open at nine.');
    expect(stub.requests.map((r) => (r.body.response_format ? 'classify' : 'answer'))).to.deep.equal(['classify', 'answer']);
  });

  it('refuses the turn when the classifier is down (fail-closed), storing the refusal and why', async () => {
    handler = (_req, res) => sendError(res, 500, { message: 'boom', type: 'server_error' });
    const id = await sessionOn({}, [{ topic: 'medical advice', match: 'semantic' }]);
    const res = await say(id, 'What are your hours?');
    expect(res.status, res.text).to.equal(200);
    expect(res.body.data.reply.content).to.equal(CLASSIFIER_UNAVAILABLE_REPLY);
    expect(stub.requests.every((r) => r.body.response_format?.type === 'json_object'), 'no answer was asked for').to.equal(true);
    expect(res.body.data.receipt.guardrails[0].reason).to.equal('the model could not be asked (unavailable): refused without a verdict (fail-closed)');
    const transcript = (await t.call('GET', `/conversations/${id}/transcript`, { key: org.key })).body.data;
    expect(transcript.messages.map((m: { text: string }) => m.text)).to.include(CLASSIFIER_UNAVAILABLE_REPLY);
  });
});
