/**
 * `POST /chat/completions` driven by the official `openai` npm client, unchanged (docs/api-notes.md "Conversations"):
 * non-streamed and streamed answers with usage, `@draft` and `@vN` pins, problems surfaced by the client
 * as errors with their status, and the conversation each request records.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import OpenAI from 'openai';
import { startTestApi, type TestApi } from '../helpers/api';
import { countTokens } from '../../providers/llm';

describe('POST /chat/completions with the official openai client', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  let client: OpenAI;
  let agentId: string;

  const publish = (id: string, k: string) =>
    publishDraft(t.db, org, id, k);

  before(async () => {
    t = await startTestApi('chatcompletions');
    org = await t.org('Completions');
    client = new OpenAI({ apiKey: org.key, baseURL: t.api.baseUrl, maxRetries: 0 });
    const created = await t.call('POST', '/agents', { key: org.key, json: { name: 'Front desk', voiceId: 'voice_ava', greeting: 'Hi!' } });
    agentId = created.body.data.id;
    await t.call('PUT', `/agents/${agentId}/guardrails`, { key: org.key, json: { blockedTopics: ['politics'], forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null } });
    await publish(agentId, 'v1');
  });
  after(async () => t?.close());

  it('answers a chat.completion with usage, and records the request as a conversation', async () => {
    const res = await client.chat.completions.create({
      model: agentId,
      messages: [
        { role: 'system', content: 'ignored: the agent decides' },
        { role: 'user', content: 'Hello there' },
        { role: 'assistant', content: 'Hi! How can I help?' },
        { role: 'user', content: 'Can we talk about politics?' },
      ],
    });
    expect(res.object).to.equal('chat.completion');
    expect(res.model).to.equal(agentId);
    expect(res.choices).to.have.length(1);
    expect(res.choices[0].finish_reason).to.equal('stop');
    expect(res.choices[0].message.role).to.equal('assistant');
    expect(res.choices[0].message.content).to.match(/can't help with politics/);
    expect(res.id).to.match(/^chatcmpl-cnv_/);
    const conversationId = res.id.slice('chatcmpl-'.length);
    const stored = await t.call('GET', `/chat/sessions/${conversationId}`, { key: org.key });
    expect(stored.body.data.session).to.include({ status: 'ended', endReason: 'ended_by_api' });
    expect(stored.body.data.messages.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).to.deep.equal([
      'user:Hello there',
      'assistant:Hi! How can I help?',
      'user:Can we talk about politics?',
      `assistant:${res.choices[0].message.content}`,
    ]);
  });

  it('reports token usage counted by the tokenizer for a model answer', async () => {
    const res = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'What can you do for me?' }] });
    const u = res.usage!;
    expect(u.completion_tokens).to.equal(countTokens(res.choices[0].message.content ?? ''));
    expect(u.prompt_tokens).to.be.greaterThan(0);
    expect(u.total_tokens).to.equal(u.prompt_tokens + u.completion_tokens);
  });

  it('streams chat.completion.chunk deltas that add up to the answer, with a usage chunk, ending at [DONE]', async () => {
    const stream = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'Tell me about your service' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let chunks = 0;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).to.equal('chat.completion.chunk');
      chunks++;
      if (chunk.choices[0]) {
        text += chunk.choices[0].delta.content ?? '';
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).to.be.greaterThan(3);
    expect(text.length).to.be.greaterThan(0);
    expect(finish).to.equal('stop');
    expect(usage!.completion_tokens).to.equal(countTokens(text));
  });

  it('pins @draft and @vN, and the client raises problems as errors with their status', async () => {
    const draft = await client.chat.completions.create({ model: `${agentId}@draft`, messages: [{ role: 'user', content: 'hello' }] });
    expect(draft.system_fingerprint).to.match(/^draft-/);
    const v1 = await client.chat.completions.create({ model: `${agentId}@v1`, messages: [{ role: 'user', content: 'hello' }] });
    expect(v1.system_fingerprint).to.match(/^ver_/);
    const missing = await client.chat.completions.create({ model: `${agentId}@v9`, messages: [{ role: 'user', content: 'hello' }] }).catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(OpenAI.APIError);
    expect((missing as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
    const bad = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] }).catch((e: unknown) => e);
    // A model that names no agent is unknown, as OpenAI answers it: 404 model_not_found.
    expect((bad as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
    expect((bad as InstanceType<typeof OpenAI.APIError>).code).to.equal('model_not_found');
    const other = await t.org('Other');
    const foreign = await new OpenAI({ apiKey: other.key, baseURL: t.api.baseUrl, maxRetries: 0 }).chat.completions
      .create({ model: agentId, messages: [{ role: 'user', content: 'hello' }] })
      .catch((e: unknown) => e);
    expect((foreign as InstanceType<typeof OpenAI.APIError>).status).to.equal(404);
    const unauth = await new OpenAI({ apiKey: 'nope', baseURL: t.api.baseUrl, maxRetries: 0 }).chat.completions
      .create({ model: agentId, messages: [{ role: 'user', content: 'hello' }] })
      .catch((e: unknown) => e);
    expect((unauth as InstanceType<typeof OpenAI.APIError>).status).to.equal(401);
  });
});
