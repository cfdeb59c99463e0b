/**
 * Model settings per agent and semantic guardrails over HTTP on the sandbox LLM (docs/api-notes.md "Agents": model
 * settings and guardrails, "Conversations", "Sandbox LLM"): `model` from the deployment's LLM_MODELS, `temperature`,
 * `maxTokens`, `fallbackModel` and `timeZone` set with PATCH, refused with 400 naming the field, versioned, diffed
 * and reported; a turn sends them to the model with the date, time, time zone and channel in the system prompt;
 * a `semantic` blocked topic is judged by one classification call per turn and fails closed.
 */
import { expect } from 'chai';
import { publishDraft } from './agents-fixtures';
import { QUICK_CLIENT, startTestApi, type TestApi } from '../helpers/api';
import { SandboxLlm } from '../../providers/llm/sandbox';
import type { LlmProvider, LlmRequest } from '../../domain/conversations/llm';
import { CLASSIFIER_UNAVAILABLE_REPLY, clearVerdictCache } from '../../domain/conversations/topicClassifier';

/** The sandbox LLM, recording every request. */
function recordingSandbox(): LlmProvider & { requests: LlmRequest[] } {
  const inner = new SandboxLlm();
  const requests: LlmRequest[] = [];
  return {
    name: 'sandbox',
    requests,
    complete: (req) => (requests.push(req), inner.complete(req)),
    stream: (req) => (requests.push(req), inner.stream(req)),
  };
}

const MEDICAL = { topic: 'medical advice', match: 'semantic', description: 'symptoms, diagnoses, medicines and their dosage' };
const guardrails = (blockedTopics: unknown[]) => ({ blockedTopics, forbiddenPhrases: [], redactPii: true, profanityFilter: true, escalateOn: [], maxConversationMinutes: null });

describe('agent model settings and semantic guardrails (sandbox LLM)', () => {
  let t: TestApi;
  let org: { orgId: string; key: string; keyId: string };
  const llm = recordingSandbox();

  before(async () => {
    t = await startTestApi('modelsettings', { ...QUICK_CLIENT, llmModel: 'gpt-4o-mini', llmModels: ['gpt-4o-mini', 'gpt-big', 'gpt-small', 'gpt-big-unavailable'] }, { providers: { llm } });
    org = await t.org('Model settings');
  });
  after(async () => {
    await t?.close();
  });
  beforeEach(() => clearVerdictCache());

  const newAgent = async (extra: Record<string, unknown> = {}) => {
    const r = await t.call('POST', '/agents', { key: org.key, json: { name: `Front desk ${Math.random().toString(36).slice(2, 8)}`, voiceId: 'voice_ava', greeting: 'Hello!', instructions: 'Help callers.', ...extra } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data as { id: string; version: number };
  };
  const patch = (id: string, version: number, json: unknown) => t.call('PATCH', `/agents/${id}`, { key: org.key, json, headers: { 'if-match': `"${version}"` } });
  const say = async (sessionId: string, content: string) => {
    const r = await t.call('POST', `/chat/sessions/${sessionId}/messages`, { key: org.key, json: { content } });
    expect(r.status, r.text).to.equal(200);
    return r.body.data;
  };
  const session = async (agentId: string) => {
    const r = await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } });
    expect(r.status, r.text).to.equal(201);
    return r.body.data.session.id as string;
  };

  it('sets and clears the model settings with PATCH, versions them, and shows them in the diff and the pre-publish report', async () => {
    const a = await newAgent();
    const fresh = (await t.call('GET', `/agents/${a.id}`, { key: org.key })).body.data;
    expect(fresh).to.include({ model: null, temperature: null, maxTokens: null, fallbackModel: null, timeZone: null });
    const set = await patch(a.id, a.version, { model: 'gpt-big', temperature: 0.3, maxTokens: 400, fallbackModel: 'gpt-small', timeZone: 'America/Chicago' });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.data).to.include({ model: 'gpt-big', temperature: 0.3, maxTokens: 400, fallbackModel: 'gpt-small', timeZone: 'America/Chicago' });
    const published = await publishDraft(t.db, org, a.id, 'ms-1');
    expect(published.kind).to.equal('published');
    const versionId = (published as { version: { id: string } }).version.id;

    const changed = await patch(a.id, set.body.data.version, { temperature: 1.1, fallbackModel: null });
    expect(changed.body.data).to.include({ temperature: 1.1, fallbackModel: null, model: 'gpt-big' });
    const diff = (await t.call('GET', `/agents/${a.id}/versions/${versionId}/diff`, { key: org.key })).body.data.items;
    expect(diff).to.deep.include({ field: 'temperature', before: 0.3, after: 1.1, kind: 'changed' });
    expect(diff).to.deep.include({ field: 'fallbackModel', before: 'gpt-small', kind: 'removed' });

    expect((await t.call('PUT', `/agents/${a.id}/guardrails`, { key: org.key, json: guardrails(['politics', MEDICAL]) })).status).to.equal(200);
    const rep = (await t.call('GET', `/agents/${a.id}/prepublish-report`, { key: org.key })).body.data;
    expect(rep.modelSettings).to.deep.equal({
      model: 'gpt-big', modelSource: 'agent', fallbackModel: null, temperature: 1.1, maxTokens: 400,
      timeZone: 'America/Chicago', timeZoneSource: 'agent', classificationCallsPerTurn: 1,
    });
    expect(rep.blockedTopics).to.deep.equal([
      { topic: 'politics', match: 'phrase', description: null },
      { topic: 'medical advice', match: 'semantic', description: MEDICAL.description },
    ]);
    expect(rep.activeGuardrails.find((g: { name: string }) => g.name === 'blockedTopics').description).to.equal('Declines to discuss: politics (by phrase), medical advice (judged by the model)');
    expect(rep.blockingErrors).to.deep.equal([]);
    const guard = (await t.call('GET', `/agents/${a.id}/guardrails`, { key: org.key })).body.data;
    expect(guard.blockedTopics, 'the stored shapes are answered as given').to.deep.equal(['politics', MEDICAL]);
  });

  it('refuses a model outside LLM_MODELS, a temperature of 3, maxTokens 0, an unknown time zone and match "fuzzy" with 400 naming the field', async () => {
    const a = await newAgent();
    const cases: [unknown, string][] = [
      [{ model: 'gpt-not-allowed' }, 'model'],
      [{ fallbackModel: 'gpt-not-allowed' }, 'fallbackModel'],
      [{ temperature: 3 }, 'temperature'],
      [{ maxTokens: 0 }, 'maxTokens'],
      [{ maxTokens: 2.5 }, 'maxTokens'],
      [{ timeZone: 'Mars/Base' }, 'timeZone'],
    ];
    for (const [body, field] of cases) {
      const r = await patch(a.id, a.version, body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.headers.get('content-type')).to.match(/application\/problem\+json/);
      expect(r.body.code).to.equal('validation_error');
      expect(r.body.errors.map((e: { field: string }) => e.field), JSON.stringify(body)).to.include(field);
    }
    const created = await t.call('POST', '/agents', { key: org.key, json: { name: 'Refused model', model: 'gpt-5-secret' } });
    expect(created.status).to.equal(400);
    expect(created.body.errors).to.deep.equal([{ field: 'model', message: '"gpt-5-secret" is not a model of this deployment (LLM_MODELS: gpt-4o-mini, gpt-big, gpt-small, gpt-big-unavailable)' }]);
    const fuzzy = await t.call('PUT', `/agents/${a.id}/guardrails`, { key: org.key, json: guardrails([{ topic: 'medical advice', match: 'fuzzy' }]) });
    expect(fuzzy.status).to.equal(400);
    expect(fuzzy.body.code).to.equal('validation_error');
    expect(fuzzy.body.errors).to.deep.include({ field: 'blockedTopics.0.match', message: 'must be one of: phrase, semantic' });
    const unchanged = (await t.call('GET', `/agents/${a.id}`, { key: org.key })).body.data;
    expect(unchanged.version, 'nothing was stored').to.equal(a.version);
  });

  it('sends the model settings to the model, with the date, time, time zone and channel in the system prompt, and cuts the answer at maxTokens', async () => {
    const a = await newAgent({ model: 'gpt-big', temperature: 0.2, maxTokens: 4, timeZone: 'Asia/Tokyo' });
    await publishDraft(t.db, org, a.id, 'ms-2');
    const id = await session(a.id);
    llm.requests.length = 0;
    const turn = await say(id, 'Are you open right now?');
    const req = llm.requests[0];
    expect(req).to.include({ model: 'gpt-big', temperature: 0.2, maxTokens: 4 });
    const system = req.messages[0].content!;
    const today = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', weekday: 'long' }).format(new Date());
    expect(system).to.match(new RegExp(`It is now ${today}, .* in Asia/Tokyo \\(UTC\\+09:00; ISO 8601 \\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}\\+09:00\\)\\.`));
    expect(system).to.contain('This conversation is a chat.');
    // The sandbox's generic reply, cut at 4 tokens.
    expect(turn.reply.content).to.equal('I understand you said');
    expect(turn.session.usage.completionTokens).to.equal(4);
  });

  it('refuses a medical question by the model’s judgement, one classification call per turn, and answers the others', async () => {
    const a = await newAgent();
    await t.call('PUT', `/agents/${a.id}/guardrails`, { key: org.key, json: guardrails([MEDICAL]) });
    await publishDraft(t.db, org, a.id, 'ms-3');
    const id = await session(a.id);
    llm.requests.length = 0;
    const refused = await say(id, 'is it an infection? Should I take amoxicillin?');
    expect(refused.reply.content).to.equal("I'm sorry, I can't help with medical advice. Is there anything else I can do for you?");
    expect(llm.requests.map((r) => r.responseFormat ?? 'answer')).to.deep.equal(['json_object']);
    expect(refused.receipt.guardrails).to.deep.equal([
      {
        rule: 'blockedTopics',
        action: 'refused',
        excerpt: 'medical advice',
        stage: 'input',
        match: 'semantic',
        reason: 'the model judged the message to be about it: The message mentions "infection", which is about medical advice.',
      },
    ]);
    llm.requests.length = 0;
    const answered = await say(id, 'When are you open on Saturday?');
    expect(answered.reply.content).to.contain('When are you open on Saturday?');
    expect(llm.requests.map((r) => r.responseFormat ?? 'answer')).to.deep.equal(['json_object', 'answer']);
    const receipts = (await t.call('GET', `/conversations/${id}/receipt`, { key: org.key })).body.data.turns;
    expect(receipts[0].guardrails[0].reason).to.contain('infection');
  });

  it('fails closed when the model cannot classify, and classifies and answers on the fallback model when there is one', async () => {
    const a = await newAgent({ model: 'gpt-big-unavailable' });
    await t.call('PUT', `/agents/${a.id}/guardrails`, { key: org.key, json: guardrails([MEDICAL]) });
    await publishDraft(t.db, org, a.id, 'ms-4');
    const id = await session(a.id);
    const closed = await say(id, 'What are your hours?');
    expect(closed.reply.content).to.equal(CLASSIFIER_UNAVAILABLE_REPLY);
    expect(closed.receipt.guardrails[0]).to.include({ rule: 'blockedTopics', action: 'refused', match: 'semantic' });
    expect(closed.receipt.guardrails[0].reason).to.equal('the model could not be asked (unavailable): refused without a verdict (fail-closed)');

    const b = await newAgent({ model: 'gpt-big-unavailable', fallbackModel: 'gpt-small' });
    await t.call('PUT', `/agents/${b.id}/guardrails`, { key: org.key, json: guardrails([MEDICAL]) });
    await publishDraft(t.db, org, b.id, 'ms-5');
    const id2 = await session(b.id);
    const ok = await say(id2, 'What are your hours?');
    expect(ok.reply.content).to.contain('What are your hours?');
    expect(ok.receipt.guardrails).to.deep.equal([]);
  });
});
