/**
 * The first stages of a turn (domain/conversations/turn/admit.ts): the message admitted for storage, the client's
 * tool outputs first, and the duration limit.
 */
import { expect } from 'chai';
import { limitDuration, TIME_LIMIT_REPLY } from '../../../../domain/conversations/turn/admit';
import { DEFAULT_GUARDRAILS } from '../../../../domain/agents/compile';
import { begin, clinic, conversationOf, ended, portsOf, streamed, went } from './turn';

describe('turn stages: admit and the duration limit', () => {
  it('stores the message with card numbers and SSNs redacted, recording and streaming the decision', () => {
    const agent = clinic({ guardrails: { ...DEFAULT_GUARDRAILS, redactPii: true } });
    const { state, events } = begin(conversationOf(agent, { turn: 4 }), 'my card is 4111 1111 1111 1111', portsOf());
    expect(state.stored).to.equal('my card is [card ending 1111]');
    expect(state.messages).to.deep.equal([{ role: 'user', content: 'my card is [card ending 1111]' }]);
    expect(state.receipt.turn).to.equal(5);
    expect(state.receipt.guardrails).to.deep.equal([{ rule: 'redactPii', action: 'redacted', excerpt: 'card_number', stage: 'input' }]);
    expect(events).to.deep.equal([{ type: 'guardrail', data: state.receipt.guardrails[0] }]);
    expect(state).to.include({ end: null, resume: null, lead: null, guardModel: null });
  });

  it('keeps the message as sent with redaction off, and copies the variables rather than sharing them', () => {
    const variables = { name: 'Ada' };
    const agent = clinic({ guardrails: { ...DEFAULT_GUARDRAILS, redactPii: false } });
    const { state, events } = begin(conversationOf(agent, { variables }), 'card 4111 1111 1111 1111', portsOf());
    expect(state.stored).to.equal('card 4111 1111 1111 1111');
    expect(events).to.deep.equal([]);
    expect(state.vars).to.deep.equal({ name: 'Ada' });
    expect(state.vars).to.not.equal(variables);
  });

  it("puts the client's tool outputs before the message, and stores no user message when there is none", () => {
    const opts = { toolOutputs: [{ callId: 'call_1', name: 'get_weather', output: '{"c":21}' }] };
    const withText = begin(conversationOf(clinic()), 'thanks', portsOf(), opts);
    expect(withText.turn.prior).to.deep.equal([{ role: 'tool', toolCallId: 'call_1', name: 'get_weather', content: '{"c":21}' }]);
    expect(withText.state.messages.map((m) => m.role)).to.deep.equal(['tool', 'user']);
    const without = begin(conversationOf(clinic()), null, portsOf(), opts);
    expect(without.state.messages.map((m) => m.role)).to.deep.equal(['tool']);
    expect(without.state.stored).to.equal('');
  });

  it('ends a conversation past maxConversationMinutes with the time-limit line said, and lets one within it go on', () => {
    const agent = clinic({ guardrails: { ...DEFAULT_GUARDRAILS, maxConversationMinutes: 10 } });
    const ports = portsOf({ wallClock: () => Date.parse('2026-11-29T10:11:00Z') });
    const late = begin(conversationOf(agent, { startedAtMs: Date.parse('2026-11-29T10:00:00Z') }), 'hello', ports);
    const end = ended(limitDuration(late.turn, late.state));
    expect(end).to.include({ reply: TIME_LIMIT_REPLY, playbook: null, model: null });
    expect(end.state.end).to.equal('max_duration');
    expect(end.state.receipt.guardrails).to.deep.equal([{ rule: 'maxConversationMinutes', action: 'ended', excerpt: '10 minutes', stage: 'input' }]);
    expect(late.events[0].type).to.equal('guardrail');
    expect(streamed(late.events)).to.equal(TIME_LIMIT_REPLY);

    const inTime = begin(conversationOf(agent, { startedAtMs: Date.parse('2026-11-29T10:05:00Z') }), 'hello', ports);
    expect(went(limitDuration(inTime.turn, inTime.state))).to.equal(inTime.state);
    const unlimited = begin(conversationOf(clinic(), { startedAtMs: 0 }), 'hello', ports);
    expect(went(limitDuration(unlimited.turn, unlimited.state))).to.equal(unlimited.state);
  });
});
