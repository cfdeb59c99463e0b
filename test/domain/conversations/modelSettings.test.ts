/**
 * Model settings and semantic guardrails in the pure domain (docs/api-notes.md "Agents": model settings,
 * "Conversations"): blocked topics in both stored shapes, the classification call (its request, its cache, its
 * fail-closed refusal), a turn's request carrying the version's model settings and a system prompt with the
 * current date and time in the agent's time zone and the channel, and the settings compiled into versions, the
 * diff and the pre-publish report.
 */
import { expect } from 'chai';
import { checkInput, semanticTopics, topicRules } from '../../../domain/conversations/guardrails';
import {
  checkSemanticTopics,
  CLASSIFIER_UNAVAILABLE_REPLY,
  clearVerdictCache,
  parseClassification,
} from '../../../domain/conversations/topicClassifier';
import { describeMoment, systemPrompt } from '../../../domain/conversations/prompt';
import { runTurn, type TurnPorts } from '../../../domain/conversations/runtime';
import { compileDraft, DEFAULT_GUARDRAILS, type CompiledAgent } from '../../../domain/agents/compile';
import { diffSnapshots } from '../../../domain/agents/diff';
import { buildPrepublishReport } from '../../../domain/agents/report';
import type { DraftBundle } from '../../../domain/agents/types';
import type { LlmProvider, LlmRequest } from '../../../domain/conversations/llm';
import { LlmProviderError } from '../../../providers/llm';
import { SandboxLlm } from '../../../providers/llm/sandbox';
import type { Guardrails } from '../../../schemas/types/guardrails';
import { compiledAgent } from '../../helpers/agents';

const agent = (over: Partial<CompiledAgent> = {}): CompiledAgent => compiledAgent({ name: 'Front desk', ...over });

/** The sandbox, recording every request it answers. */
function recording(inner: LlmProvider = new SandboxLlm()): LlmProvider & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  return {
    name: 'recording',
    requests,
    complete: (req) => {
      requests.push(req);
      return inner.complete(req);
    },
    stream: (req) => {
      requests.push(req);
      return inner.stream(req);
    },
  };
}

const NOW = Date.parse('2026-03-10T19:05:00Z');
const portsFor = (llm: LlmProvider): TurnPorts => ({
  llm,
  searchKnowledge: async () => [],
  runSkill: async () => ({ output: null }),
  now: () => performance.now(),
  wallClock: () => NOW,
});
const turn = (a: CompiledAgent, text: string, llm: LlmProvider, channel: 'chat' | 'voice' | 'sms' | 'web' = 'chat', orgId = 'org_a') =>
  runTurn({ id: 'cnv_1', orgId, agentId: 'agt_1', channel, agent: a, variables: {}, playbook: null, turn: 0, history: [], startedAtMs: NOW }, text, portsFor(llm));

const medical: Guardrails = { ...DEFAULT_GUARDRAILS, blockedTopics: ['politics', { topic: 'medical advice', match: 'semantic', description: 'symptoms, diagnoses, medicines' }] };

describe('blocked topics with a match mode', () => {
  it('reads the stored string shape as phrase topics and rules with their defaults', () => {
    expect(topicRules({ blockedTopics: ['politics', { topic: 'pricing' }, { topic: 'medical advice', match: 'semantic', description: '  ' }] })).to.deep.equal([
      { topic: 'politics', match: 'phrase', description: null },
      { topic: 'pricing', match: 'phrase', description: null },
      { topic: 'medical advice', match: 'semantic', description: null },
    ]);
    expect(semanticTopics(medical).map((t) => t.topic)).to.deep.equal(['medical advice']);
  });

  it('matches phrase topics by their words and says why; leaves semantic topics to the model', () => {
    const v = checkInput('Tell me about politics', medical);
    expect(v.decisions).to.deep.equal([{ rule: 'blockedTopics', action: 'refused', excerpt: 'politics', stage: 'input', match: 'phrase', reason: 'the message contains the words "politics"' }]);
    expect(checkInput('I want medical advice', medical).refusal, 'a semantic topic is not matched by its words').to.equal(null);
  });
});

describe('semantic topic classification (domain/conversations/topicClassifier.ts)', () => {
  beforeEach(() => clearVerdictCache());
  const topics = semanticTopics(medical);

  it('sends one JSON-mode request with the topics and their descriptions, and refuses with the reason when a topic applies', async () => {
    const llm = recording();
    const out = await checkSemanticTopics('is it an infection? Should I take amoxicillin?', topics, llm, { model: 'gpt-big', fallbackModel: 'gpt-small', cacheScope: 'org_a' });
    expect(llm.requests).to.have.length(1);
    const req = llm.requests[0];
    expect(req).to.include({ model: 'gpt-big', fallbackModel: 'gpt-small', responseFormat: 'json_object', temperature: 0 });
    expect(req.messages[0].content).to.contain('"medical advice": symptoms, diagnoses, medicines').and.to.contain('JSON');
    expect(req.messages[1]).to.deep.equal({ role: 'user', content: 'is it an infection? Should I take amoxicillin?' });
    expect(out.refusal).to.equal("I'm sorry, I can't help with medical advice. Is there anything else I can do for you?");
    expect(out.decisions[0]).to.include({ rule: 'blockedTopics', action: 'refused', excerpt: 'medical advice', match: 'semantic' });
    expect(out.decisions[0].reason).to.match(/^the model judged the message to be about it: The message mentions "infection"/);
    expect(out.usage.totalTokens).to.be.above(0);
  });

  it('classifies one message once: the same text again is answered from the cache, per organization', async () => {
    const llm = recording();
    const settings = { cacheScope: 'org_a' };
    const first = await checkSemanticTopics('What are your hours?', topics, llm, settings);
    const again = await checkSemanticTopics('What are your hours?', topics, llm, settings);
    expect(first).to.include({ refusal: null, called: true });
    expect(again).to.include({ refusal: null, called: false });
    expect(again.usage.totalTokens).to.equal(0);
    expect(llm.requests).to.have.length(1);
    await checkSemanticTopics('What are your hours?', topics, llm, { cacheScope: 'org_b' });
    expect(llm.requests, 'another organization asks for itself').to.have.length(2);
  });

  it('fails closed when the model is down or its verdict is unreadable, and caches no failure', async () => {
    const down: LlmProvider = {
      name: 'down',
      complete: async () => {
        throw new LlmProviderError('unavailable', 'the LLM answered 503');
      },
      stream: () => {
        throw new Error('not used');
      },
    };
    const out = await checkSemanticTopics('What are your hours?', topics, down, { cacheScope: 'org_a' });
    expect(out.refusal).to.equal(CLASSIFIER_UNAVAILABLE_REPLY);
    expect(out.decisions).to.deep.equal([
      { rule: 'blockedTopics', action: 'refused', excerpt: 'medical advice', stage: 'input', match: 'semantic', reason: 'the model could not be asked (unavailable): refused without a verdict (fail-closed)' },
    ]);
    const garbled: LlmProvider = { name: 'garbled', complete: async () => ({ content: 'sure!', toolCalls: [], finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, model: 'm' }), stream: down.stream };
    const unread = await checkSemanticTopics('What are your hours?', topics, garbled, { cacheScope: 'org_a' });
    expect(unread.refusal).to.equal(CLASSIFIER_UNAVAILABLE_REPLY);
    expect(unread.decisions[0].reason).to.equal("the model's verdict could not be read: refused without a verdict (fail-closed)");
    const llm = recording();
    expect((await checkSemanticTopics('What are your hours?', topics, llm, { cacheScope: 'org_a' })).refusal).to.equal(null);
    expect(llm.requests).to.have.length(1);
  });

  it('reads verdicts leniently on case and strictly on shape', () => {
    expect(parseClassification('{"applies":["Medical Advice","weather"],"reason":"pills"}', topics)).to.deep.equal({ applies: ['medical advice'], reason: 'pills' });
    expect(parseClassification('{"applies":"medical advice"}', topics)).to.equal(null);
    expect(parseClassification('[]', topics)).to.equal(null);
  });
});

describe('a turn with model settings and a semantic guardrail', () => {
  beforeEach(() => clearVerdictCache());

  it("sends the version's model, temperature, max tokens and fallback, and tells the model the date, time, time zone and channel", async () => {
    const llm = recording();
    const a = agent({ model: 'gpt-big', temperature: 0.4, maxTokens: 120, fallbackModel: 'gpt-small', timeZone: 'America/Chicago' });
    await turn(a, 'Are you open right now?', llm, 'voice');
    const req = llm.requests[0];
    expect(req).to.include({ model: 'gpt-big', temperature: 0.4, maxTokens: 120, fallbackModel: 'gpt-small' });
    const system = req.messages[0].content!;
    expect(system).to.contain('It is now Tuesday, March 10, 2026, 14:05 in America/Chicago (UTC-05:00; ISO 8601 2026-03-10T14:05-05:00).');
    expect(system).to.contain('This conversation is a phone call');
    const plain = recording();
    await turn(agent(), 'Hello', plain, 'sms');
    expect(plain.requests[0]).to.not.have.any.keys('model', 'temperature', 'maxTokens', 'fallbackModel');
    expect(plain.requests[0].messages[0].content).to.contain('in UTC (UTC+00:00').and.to.contain('by text message (SMS)');
  });

  it('refuses a message the model judges to be about a semantic topic, with one classification call, and answers others after it', async () => {
    const llm = recording();
    const a = agent({ guardrails: medical });
    const refused = await turn(a, 'is it an infection? Should I take amoxicillin?', llm);
    expect(refused.reply).to.equal("I'm sorry, I can't help with medical advice. Is there anything else I can do for you?");
    expect(llm.requests).to.have.length(1);
    expect(llm.requests[0].responseFormat).to.equal('json_object');
    expect(refused.receipt.guardrails[0]).to.include({ rule: 'blockedTopics', match: 'semantic', excerpt: 'medical advice' });
    expect(refused.receipt.latency.map((l) => l.stage)).to.include('llm_classification');
    expect(refused.usage.totalTokens, 'the classification tokens are the turn’s').to.be.above(0);

    llm.requests.length = 0;
    const answered = await turn(a, 'When are you open on Saturday?', llm);
    expect(llm.requests.map((r) => r.responseFormat ?? 'answer')).to.deep.equal(['json_object', 'answer']);
    expect(answered.reply).to.contain('When are you open on Saturday?');
    expect(answered.receipt.guardrails).to.deep.equal([]);
  });

  it('refuses politely when the classifier is down (fail-closed), recording why', async () => {
    const a = agent({ guardrails: medical, model: 'gpt-big-unavailable' });
    const llm = recording();
    const out = await turn(a, 'What are your hours?', llm);
    expect(out.reply).to.equal(CLASSIFIER_UNAVAILABLE_REPLY);
    expect(llm.requests).to.have.length(1);
    expect(out.receipt.guardrails[0].reason).to.contain('(unavailable)').and.to.contain('fail-closed');
    const withFallback = await turn(agent({ guardrails: medical, model: 'gpt-big-unavailable', fallbackModel: 'gpt-small' }), 'What are your hours?', recording());
    expect(withFallback.reply, 'the fallback model classifies and answers').to.contain('What are your hours?');
  });

  it('describes the moment in any IANA zone, and an unknown zone as UTC', () => {
    expect(describeMoment(NOW, 'Asia/Kolkata')).to.equal('Wednesday, March 11, 2026, 00:35 in Asia/Kolkata (UTC+05:30; ISO 8601 2026-03-11T00:35+05:30)');
    expect(describeMoment(NOW, 'Mars/Base')).to.contain('in UTC');
    expect(systemPrompt(agent({ guardrails: medical }), {}, [])).to.contain('Decline to discuss: politics, medical advice (symptoms, diagnoses, medicines).');
  });
});

describe('model settings in versions, the diff and the pre-publish report', () => {
  const record = (over: Record<string, unknown> = {}) =>
    ({
      id: 'agt_1', orgId: 'org_1', name: 'Front desk', description: null, persona: 'Friendly', instructions: 'Help', greeting: 'Hello!', voicemailMessage: null,
      language: 'en-US', voiceId: 'voice_ava', dtmf: { enabled: false }, variables: [], guardrails: {}, callerVerification: {}, widget: {}, analysis: { fields: [] },
      version: 3, publishedVersionId: null, publishedVersionNumber: null, publishedDraftVersion: null, skills: [], playbooks: [], knowledgeSourceCount: 0,
      createdAt: '2026-11-22T00:00:00.000Z', updatedAt: '2026-11-22T00:00:00.000Z', ...over,
    }) as DraftBundle['agent'];
  const bundle = (over: Record<string, unknown> = {}, models?: DraftBundle['models']): DraftBundle => ({ agent: record(over), skills: [], playbooks: [], knowledge: [], models });
  const models = { default: 'gpt-default', allowed: ['gpt-default', 'gpt-big', 'gpt-small'] };

  it('compiles only the settings that are set, so older versions compare equal', () => {
    const before = compileDraft(bundle({ model: null, temperature: null, maxTokens: null, fallbackModel: null, timeZone: null })).snapshot;
    expect(before).to.not.have.any.keys('model', 'temperature', 'maxTokens', 'fallbackModel', 'timeZone');
    const after = compileDraft(bundle({ model: 'gpt-big', temperature: 0.2, maxTokens: 300, fallbackModel: 'gpt-small', timeZone: 'Europe/Paris' }, models));
    expect(after.errors).to.deep.equal([]);
    expect(after.snapshot).to.include({ model: 'gpt-big', temperature: 0.2, maxTokens: 300, fallbackModel: 'gpt-small', timeZone: 'Europe/Paris' });
    expect(diffSnapshots(before, after.snapshot)).to.deep.equal([
      { field: 'model', after: 'gpt-big', kind: 'added' },
      { field: 'temperature', after: 0.2, kind: 'added' },
      { field: 'maxTokens', after: 300, kind: 'added' },
      { field: 'fallbackModel', after: 'gpt-small', kind: 'added' },
      { field: 'timeZone', after: 'Europe/Paris', kind: 'added' },
    ]);
  });

  it('refuses a model outside the allowlist and an unknown time zone, naming the field; warns on a fallback equal to the model', () => {
    const r = compileDraft(bundle({ model: 'gpt-gone', fallbackModel: 'gpt-gone-too', timeZone: 'Mars/Base' }, models));
    expect(r.errors.map((e) => e.field)).to.deep.equal(['model', 'fallbackModel', 'timeZone']);
    const same = compileDraft(bundle({ fallbackModel: 'gpt-default' }, models));
    expect(same.warnings.map((w) => w.code)).to.include('fallback_same_as_model');
  });

  it('reports the model settings, the blocked topics with their match mode, and the classification call', () => {
    const g = { blockedTopics: ['politics', { topic: 'medical advice', match: 'semantic' }] };
    const rep = buildPrepublishReport(bundle({ model: 'gpt-big', temperature: 0.7, fallbackModel: 'gpt-small', timeZone: 'America/Chicago', guardrails: g }, models));
    expect(rep.modelSettings).to.deep.equal({
      model: 'gpt-big', modelSource: 'agent', fallbackModel: 'gpt-small', temperature: 0.7, maxTokens: null,
      timeZone: 'America/Chicago', timeZoneSource: 'agent', classificationCallsPerTurn: 1,
    });
    expect(rep.blockedTopics).to.deep.equal([
      { topic: 'politics', match: 'phrase', description: null },
      { topic: 'medical advice', match: 'semantic', description: null },
    ]);
    expect(rep.willNotSay).to.include('Will not discuss: medical advice (the model judges every message)');
    expect(rep.willSay.some((s) => s.startsWith('Answers with the model gpt-big, temperature 0.7; falls back to gpt-small'))).to.equal(true);
    expect(rep.warnings.map((w) => w.code)).to.include('semantic_topic_without_description');
    const defaults = buildPrepublishReport(bundle({}, models)).modelSettings;
    expect(defaults).to.include({ model: 'gpt-default', modelSource: 'default', timeZone: 'UTC', timeZoneSource: 'default', classificationCallsPerTurn: 0 });
  });
});
