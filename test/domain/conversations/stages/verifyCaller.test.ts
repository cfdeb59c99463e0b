/**
 * Caller verification by PIN as a stage (domain/conversations/turn/verifyCaller.ts; docs/api-notes.md "Caller
 * verification"): when it goes on untouched, what a wrong, a last and a matching PIN do, and the pending action.
 */
import { expect } from 'chai';
import { PIN_ENTERED, verifyCaller } from '../../../../domain/conversations/turn/verifyCaller';
import type { VerificationRecord } from '../../../../domain/conversations/callerVerification';
import type { EscalationRoute } from '../../../../domain/conversations/escalation';
import { begin, clinic, conversationOf, ended, pinCheck, pinDue, portsOf, streamed, went } from './turn';

const grace: VerificationRecord = { id: 'rec_1', name: 'Grace', email: null, phone: '+12065550100', hasPin: true };
const checking = (over = {}) => portsOf({ checkPin: async (pin) => (pin === '4321' ? grace : null), ...over });

describe('turn stages: verify caller', () => {
  it('goes on with the same state when verification is off, not due, not checkable or there is no message', async () => {
    for (const [agent, vars, ports, text] of [
      [clinic(), pinDue, checking(), '4321'],
      [clinic({ callerVerification: pinCheck() }), { caller_verified: 'true', caller_verification: 'verified' }, checking(), '4321'],
      [clinic({ callerVerification: pinCheck() }), pinDue, portsOf(), '4321'],
      [clinic({ callerVerification: pinCheck() }), pinDue, checking(), null],
    ] as const) {
      const { turn, state } = begin(conversationOf(agent, { variables: { ...vars } }), text, ports);
      expect(went(await verifyCaller(turn, state))).to.equal(state);
    }
  });

  it('asks for the PIN again, uncounted, when it is required always and the answer is not PIN-shaped', async () => {
    const running = { playbook: 'book_appointment', node: 'ask_name' };
    const { turn, state, events } = begin(conversationOf(clinic({ callerVerification: pinCheck({ required: 'always' }) }), { variables: { ...pinDue }, playbook: running }), 'What time are you open?', checking());
    const end = ended(await verifyCaller(turn, state));
    expect(end.reply).to.equal('For your security, please type your PIN.');
    expect(streamed(events)).to.equal(end.reply);
    expect(end.playbook).to.equal(running);
    expect(end.state.vars).to.deep.equal(pinDue);
  });

  it('counts a wrong PIN, stores it as "[PIN entered]" and says the attempts left', async () => {
    const { turn, state } = begin(conversationOf(clinic({ callerVerification: pinCheck({ required: 'always' }) }), { variables: { ...pinDue } }), '1111', checking());
    const end = ended(await verifyCaller(turn, state));
    expect(end.reply).to.match(/^Sorry, that PIN is not correct\. You have 2 attempts left\./);
    expect(end.state.vars).to.include({ caller_pin_attempts: '1' });
    expect(end.state.messages).to.deep.equal([{ role: 'user', content: PIN_ENTERED }]);
    expect(state.messages, 'the state it was given is not rewritten').to.deep.equal([{ role: 'user', content: '1111' }]);
    expect(end.state.stored).to.equal('1111');
  });

  it('escalates at the last attempt, with where the escalation goes, and drops the pending action', async () => {
    const route: EscalationRoute = { destination: { id: 'esc_1', kind: 'email', address: 'desk@clinic.example' }, phone: null, email: 'ada@example.com' };
    const vars = { ...pinDue, caller_pin_attempts: '2', caller_verification_pending: 'skill:book_visit' };
    const { turn, state } = begin(conversationOf(clinic({ callerVerification: pinCheck() }), { variables: vars }), '1111', checking({ escalationRoute: async () => route }));
    const end = ended(await verifyCaller(turn, state));
    expect(end.state.end).to.equal('escalated');
    expect(end.state.escalation).to.deep.equal({ reason: 'caller_verification', route });
    expect(end.state.vars).to.include({ caller_verification: 'failed', caller_pin_attempts: '3' }).and.not.have.property('caller_verification_pending');
    expect(end.reply).to.match(/^Sorry, that PIN is not correct and I could not verify you\./);
  });

  it('a matching PIN with an action waiting goes on with that action to resume and the thanks to lead with', async () => {
    const vars = { ...pinDue, caller_verification_pending: 'playbook:book_appointment' };
    const { turn, state, events } = begin(conversationOf(clinic({ callerVerification: pinCheck() }), { variables: vars }), '4321', checking());
    const next = went(await verifyCaller(turn, state));
    expect(next).to.include({ resume: 'playbook:book_appointment', lead: 'Thank you, Grace, you are verified.' });
    expect(next.vars).to.include({ caller_verified: 'true' }).and.not.have.property('caller_verification_pending');
    expect(next.messages).to.deep.equal([{ role: 'user', content: PIN_ENTERED }]);
    expect(events, 'nothing said yet').to.deep.equal([]);
  });

  it('for protected actions only: another answer drops the pending action, and a PIN nobody asked for is no attempt', async () => {
    const agent = clinic({ callerVerification: pinCheck() });
    const moved = begin(conversationOf(agent, { variables: { ...pinDue, caller_verification_pending: 'skill:book_visit' } }), 'Where do I park?', checking());
    const next = went(await verifyCaller(moved.turn, moved.state));
    expect(next.vars).to.deep.equal(pinDue);
    expect(moved.state.vars, 'the state it was given keeps its variables').to.have.property('caller_verification_pending');
    const unasked = begin(conversationOf(agent, { variables: { ...pinDue } }), '1234', checking());
    expect(went(await verifyCaller(unasked.turn, unasked.state))).to.equal(unasked.state);
  });
});
