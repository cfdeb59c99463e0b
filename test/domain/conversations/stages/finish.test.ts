/**
 * The last stage (domain/conversations/turn/finish.ts): the result a turn hands its caller, however it ended.
 */
import { expect } from 'chai';
import { finish } from '../../../../domain/conversations/turn/finish';
import { ZERO_USAGE } from '../../../../domain/conversations/turn/state';
import { begin, clinic, conversationOf, portsOf } from './turn';

describe('turn stages: finish', () => {
  it('stores the reply, closes the receipt with the turn latency and adds the classification call to the usage', () => {
    const { turn, state } = begin(conversationOf(clinic(), { variables: { name: 'Ada' } }), 'hello', portsOf());
    const guarded = { ...state, guardUsage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 }, guardModel: 'classifier-1' };
    const result = finish(turn, { state: guarded, reply: 'Hi Ada.', playbook: null, usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 }, model: null });
    expect(result.messages).to.deep.equal([{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'Hi Ada.' }]);
    expect(result.usage).to.deep.equal({ promptTokens: 13, completionTokens: 6, totalTokens: 19 });
    expect(result.model).to.equal('classifier-1');
    expect(result.variables).to.deep.equal({ name: 'Ada' });
    expect(result.receipt.latency.map((l) => l.stage)).to.deep.equal(['turn']);
    expect(result).to.not.have.any.keys('escalation', 'finishReason', 'clientCalls');
    expect(Object.keys(result)).to.deep.equal(['messages', 'reply', 'receipt', 'usage', 'model', 'variables', 'playbook', 'end']);
  });

  it('keeps where an escalation goes only when the conversation ends escalated, and stores no empty reply', () => {
    const escalation = { reason: 'escalateOn' as const, route: null };
    const { turn, state } = begin(conversationOf(clinic()), 'hello', portsOf());
    const escalated = finish(turn, { state: { ...state, end: 'escalated', escalation }, reply: '', playbook: null, usage: ZERO_USAGE, model: null });
    expect(escalated.escalation).to.deep.equal(escalation);
    expect(escalated.messages).to.deep.equal([{ role: 'user', content: 'hello' }]);
    const again = begin(conversationOf(clinic()), 'hello', portsOf());
    const overridden = finish(again.turn, { state: { ...again.state, end: 'end_call', escalation }, reply: 'Bye.', playbook: null, usage: ZERO_USAGE, model: 'm' });
    expect(overridden).to.not.have.property('escalation');
    expect(overridden.end).to.equal('end_call');
  });

  it("ends with client calls without storing the reply again, and keeps the model's finish reason", () => {
    const { turn, state } = begin(conversationOf(clinic()), 'weather?', portsOf());
    const calls = [{ id: 'c1', name: 'get_weather', arguments: '{}' }];
    state.messages.push({ role: 'assistant', content: 'Checking.', toolCalls: calls });
    const result = finish(turn, { state, reply: 'Checking.', playbook: null, usage: ZERO_USAGE, model: 'm', clientCalls: calls, finishReason: 'tool_calls' });
    expect(result.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant']);
    expect(result).to.include({ reply: 'Checking.', finishReason: 'tool_calls' });
    expect(result.clientCalls).to.equal(calls);
  });
});
