/**
 * The pure conversation runtime (domain/conversations): guardrails, playbooks as a state machine and a turn
 * over ports — here the real sandbox model and a scripted one that splits a forbidden phrase across deltas.
 */
import { expect } from 'chai';
import { checkInput, checkOutput, mentions, redactPii } from '../../../domain/conversations/guardrails';
import { answerPlaybook, playbookFor, startPlaybook } from '../../../domain/conversations/playbook';
import { runTurn, type TurnContext, type TurnEvent, type TurnPorts } from '../../../domain/conversations/runtime';
import { DEFAULT_GUARDRAILS, type CompiledAgent } from '../../../domain/agents/compile';
import type { LlmProvider, LlmStreamEvent } from '../../../domain/conversations/llm';
import type { PlaybookGraph } from '../../../schemas/types/playbooks';
import { chain } from '../../api/agents-fixtures';
import { createLlm } from '../../../providers/llm';
import { compiledAgent } from '../../helpers/agents';

const agent = (over: Partial<CompiledAgent> = {}): CompiledAgent => compiledAgent({ ...over });

const ctx = (a: CompiledAgent, over: Partial<TurnContext> = {}): TurnContext => ({
  id: 'cnv_test0000',
  orgId: 'org_test',
  agentId: 'agt_test0000',
  channel: 'chat',
  agent: a,
  variables: {},
  playbook: null,
  turn: 0,
  history: [],
  startedAtMs: Date.now(),
  ...over,
});

const ports = (llm: LlmProvider): TurnPorts => ({
  llm,
  searchKnowledge: async () => [],
  runSkill: async () => ({ output: { ok: true } }),
  now: () => performance.now(),
  wallClock: () => Date.now(),
});

/** A model that streams fixed pieces. */
const scripted = (pieces: string[]): LlmProvider => ({
  name: 'scripted',
  complete: async () => {
    throw new Error('not used');
  },
  async *stream(): AsyncIterable<LlmStreamEvent> {
    for (const p of pieces) yield { type: 'delta', content: p };
    const content = pieces.join('');
    yield { type: 'done', response: { content, toolCalls: [], finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, model: 'scripted' } };
  },
});

describe('conversation runtime (pure)', () => {
  it('matches guardrail phrases as whole words, case- and punctuation-insensitively', () => {
    expect(mentions('What about PRICING?', 'pricing')).to.equal(true);
    expect(mentions('repricing soon', 'pricing')).to.equal(false);
    expect(mentions('I want a lawyer now', 'a lawyer')).to.equal(true);
    const g = { ...DEFAULT_GUARDRAILS, blockedTopics: ['politics'], escalateOn: ['lawyer'] };
    expect(checkInput('tell me about politics', g).refusal).to.match(/politics/);
    expect(checkInput('get me a lawyer', g)).to.include({ escalate: true });
    expect(checkInput('hello', g).decisions).to.deep.equal([]);
  });

  it('rewrites forbidden phrases and masks profanity in output, and redacts only Luhn-valid card numbers and SSNs', () => {
    const out = checkOutput('This is a Guaranteed  Cure, damn it', { ...DEFAULT_GUARDRAILS, forbiddenPhrases: ['guaranteed cure'] });
    expect(out.text).to.equal('This is a […], d*** it');
    expect(out.decisions.map((d) => d.rule)).to.deep.equal(['forbiddenPhrases', 'profanityFilter']);
    expect(redactPii('card 4111-1111-1111-1111 and ssn 123-45-6789').text).to.equal('card [card ending 1111] and ssn [ssn]');
    expect(redactPii('order 1234567890123').kinds, 'not a Luhn-valid number').to.deep.equal([]);
  });

  it('walks a playbook: start → ask (waits) → answer → branch by value → say → end', () => {
    const graph: PlaybookGraph = {
      nodes: [
        { id: 'start', type: 'start' },
        { id: 'ask_kind', type: 'ask', prompt: 'New or existing patient?', gathers: 'kind' },
        { id: 'route', type: 'branch', on: 'kind' },
        { id: 'welcome', type: 'say', prompt: 'Welcome aboard!' },
        { id: 'back', type: 'say', prompt: 'Welcome back, {{kind}} patient.' },
        { id: 'end', type: 'end' },
      ],
      edges: [...chain('start', 'ask_kind', 'route'), { from: 'route', to: 'welcome', when: 'new' }, ...chain('route', 'back'), ...chain('welcome', 'end'), ...chain('back', 'end')],
    };
    expect(playbookFor('I need patient intake', [{ name: 'patient_intake', graph }])).to.equal('patient_intake');
    const s = startPlaybook(graph, 'patient_intake', {});
    expect(s.steps).to.deep.equal([{ type: 'ask', node: 'ask_kind', text: 'New or existing patient?', gathers: 'kind' }]);
    const a = answerPlaybook(graph, s.state!, ' New ', {});
    expect(a.gathered).to.deep.equal({ kind: 'New' });
    expect(a.steps.map((x) => x.node)).to.deep.equal(['welcome', 'end']);
    expect(a.state).to.equal(null);
    const b = answerPlaybook(graph, s.state!, 'existing', {});
    expect(b.steps[0]).to.deep.equal({ type: 'say', node: 'back', text: 'Welcome back, existing patient.' });
  });

  it('catches a forbidden phrase split across streamed deltas: no delta ever carries it', async () => {
    const a = agent({ guardrails: { ...DEFAULT_GUARDRAILS, forbiddenPhrases: ['secret code'] } });
    const events: TurnEvent[] = [];
    const res = await runTurn(ctx(a), 'hi', ports(scripted(['The sec', 'ret co', 'de is 42.'])), (e) => events.push(e));
    const streamed = events.filter((e) => e.type === 'message.delta').map((e) => (e as { data: { content: string } }).data.content).join('');
    expect(streamed).to.equal('The […] is 42.');
    expect(res.reply).to.equal(streamed);
    expect(res.receipt.guardrails[0]).to.include({ rule: 'forbiddenPhrases', action: 'replaced', stage: 'output' });
  });

  it('ends the conversation when it runs past maxConversationMinutes, without calling the model', async () => {
    const a = agent({ guardrails: { ...DEFAULT_GUARDRAILS, maxConversationMinutes: 1 } });
    const res = await runTurn(ctx(a, { startedAtMs: Date.now() - 120_000 }), 'still there?', ports(scripted(['never'])));
    expect(res.end).to.equal('max_duration');
    expect(res.model).to.equal(null);
    expect(res.receipt.guardrails[0]).to.include({ rule: 'maxConversationMinutes', action: 'ended' });
  });

  it('offers skills to the sandbox model as tools and runs the call it makes', async () => {
    const a = agent({ skills: [{ name: 'lookup_order', type: 'http_request', description: 'Order lookup', config: { url: 'https://x.example/o', method: 'GET', inputs: [{ name: 'order_id' }] } }] });
    const calls: unknown[] = [];
    const p = ports(createLlm({}));
    p.runSkill = async (call) => {
      calls.push(call.args);
      return { output: { status: 'shipped' } };
    };
    const res = await runTurn(ctx(a), 'please lookup order order_id: 7', p);
    expect(calls).to.deep.equal([{ order_id: '7' }]);
    expect(res.receipt.toolCalls[0]).to.include({ skill: 'lookup_order', source: 'model' });
    expect(res.reply).to.contain('shipped');
    expect(res.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
  });

  it('offers escalate only with a destination; an escalated widget turn says how the person will be reached', async () => {
    const seen: string[][] = [];
    const recording = (llm: LlmProvider): LlmProvider => ({
      ...llm,
      name: llm.name,
      stream: (req) => {
        seen.push((req.tools ?? []).map((x) => x.name));
        return llm.stream(req);
      },
    });
    const without = await runTurn(ctx(agent(), { channel: 'web' }), 'I need to speak to a person', ports(recording(createLlm({}))));
    expect(seen[0]).to.deep.equal([]);
    expect(without.end).to.equal(null);
    const p = ports(recording(createLlm({})));
    p.escalationRoute = async () => ({ destination: { id: 'esc_1', kind: 'phone', address: '+14155550100' }, phone: '+12125550100', email: null });
    const res = await runTurn(ctx(agent(), { channel: 'web' }), 'I need to speak to a person', p);
    expect(seen[1]).to.deep.equal(['escalate']);
    expect(res).to.include({ end: 'escalated', reply: "I'll connect you with a member of our team. A member of our team will call you at +12125550100." });
    expect(res.escalation).to.deep.equal({ reason: 'escalate_tool', route: { destination: { id: 'esc_1', kind: 'phone', address: '+14155550100' }, phone: '+12125550100', email: null } });
    // On a call the line is spoken alone: the caller is transferred.
    const voice = await runTurn(ctx(agent(), { channel: 'voice' }), 'get me a human', p);
    expect(voice).to.include({ end: 'escalated', reply: "I'll connect you with a member of our team." });
  });
});
