/**
 * Input guardrails as a stage (domain/conversations/turn/guardInput.ts): phrase rules, `escalateOn`, and semantic
 * topics judged by one classification call whose tokens the turn carries.
 */
import { expect } from 'chai';
import { guardInput } from '../../../../domain/conversations/turn/guardInput';
import { DEFAULT_GUARDRAILS } from '../../../../domain/agents/compile';
import type { EscalationRoute } from '../../../../domain/conversations/escalation';
import { begin, clinic, conversationOf, ended, portsOf, scriptedModel, streamed, went } from './turn';

const guarded = (over = {}) => clinic({ guardrails: { ...DEFAULT_GUARDRAILS, blockedTopics: ['politics'], escalateOn: ['lawyer'], ...over } });

describe('turn stages: guard input', () => {
  it('ends with the refusal of a blocked topic, its decision recorded, the playbook left as it was', async () => {
    const running = { playbook: 'book_appointment', node: 'ask_name' };
    const { turn, state, events } = begin(conversationOf(guarded(), { playbook: running }), 'what about politics?', portsOf());
    const end = ended(await guardInput(turn, state));
    expect(end.reply).to.match(/politics/);
    expect(end.playbook).to.equal(running);
    expect(end.state.end).to.equal(null);
    expect(end.state.receipt.guardrails.map((d) => d.rule)).to.deep.equal(['blockedTopics']);
    expect(events[0].type).to.equal('guardrail');
    expect(streamed(events)).to.equal(end.reply);
  });

  it('escalates on an escalateOn phrase, saying how the person will be reached', async () => {
    const route: EscalationRoute = { destination: { id: 'esc_1', kind: 'email', address: 'desk@clinic.example' }, phone: null, email: 'ada@example.com' };
    const { turn, state } = begin(conversationOf(guarded()), 'get me a lawyer', portsOf({ escalationRoute: async () => route }));
    const end = ended(await guardInput(turn, state));
    expect(end.state.end).to.equal('escalated');
    expect(end.state.escalation).to.deep.equal({ reason: 'escalateOn', route });
    expect(end.reply).to.contain('ada@example.com');
  });

  it('goes on with the same state for an allowed message, a resumed action, or no message', async () => {
    const ok = begin(conversationOf(guarded()), 'When are you open?', portsOf());
    expect(went(await guardInput(ok.turn, ok.state))).to.equal(ok.state);
    const resumed = begin(conversationOf(guarded()), 'politics', portsOf());
    const state = { ...resumed.state, resume: 'skill:book_visit' };
    expect(went(await guardInput(resumed.turn, state))).to.equal(state);
    const none = begin(conversationOf(guarded()), null, portsOf());
    expect(went(await guardInput(none.turn, none.state))).to.equal(none.state);
  });

  it('judges semantic topics with one classification call: a refusal ends the turn, and its tokens and model go on with the state', async () => {
    const semantic = guarded({ blockedTopics: [{ topic: 'medical advice', match: 'semantic' }] });
    const refusing = scriptedModel([{ content: '{"applies":["medical advice"],"reason":"asks for a diagnosis"}' }]);
    const asked = begin(conversationOf(semantic, { orgId: 'org_stage_refuse' }), 'Is this rash serious?', portsOf({ llm: refusing }));
    const end = ended(await guardInput(asked.turn, asked.state));
    expect(refusing.requests).to.have.length(1);
    expect(end.reply).to.match(/medical advice/);
    expect(end.state.guardUsage.totalTokens).to.equal(15);
    expect(end.state.guardModel).to.equal('scripted-1');
    expect(end.state.receipt.latency.map((l) => l.stage)).to.deep.equal(['llm_classification']);

    const allowing = scriptedModel([{ content: '{"applies":[],"reason":"opening hours"}' }]);
    const fine = begin(conversationOf(semantic, { orgId: 'org_stage_allow' }), 'When are you open on Saturday?', portsOf({ llm: allowing }));
    const next = went(await guardInput(fine.turn, fine.state));
    expect(next.guardUsage.totalTokens).to.equal(15);
    expect(next.guardModel).to.equal('scripted-1');
  });
});
