/**
 * Playbooks as stages (domain/conversations/turn/playbooks.ts): leaving one, a running one taking the answer, one
 * started by name or held for the PIN, and its steps run with their skills.
 */
import { expect } from 'chai';
import { continuePlaybook, DONE_REPLY, holdPlaybook, leavePlaybook, runPlaybook } from '../../../../domain/conversations/turn/playbooks';
import { startPlaybook } from '../../../../domain/conversations/playbook';
import { UNVERIFIED_REFUSAL } from '../../../../domain/conversations/callerVerification';
import { SkillError } from '../../../../domain/conversations/turn/contract';
import { begin, bookingGraph, clinic, conversationOf, ended, pinCheck, pinDue, portsOf, streamed, went } from './turn';

const running = { playbook: 'book_appointment', node: 'ask_name' };

describe('turn stages: playbooks', () => {
  it('leaves the running playbook on "never mind", marking it exited in the receipt', () => {
    const { turn, state, events } = begin(conversationOf(clinic(), { playbook: running }), 'Never mind', portsOf());
    const end = ended(leavePlaybook(turn, state));
    expect(end.reply).to.match(/^No problem, I've stopped there: your book appointment request was not completed\./);
    expect(end.playbook).to.equal(null);
    expect(end.state.receipt.playbook).to.deep.equal({ name: 'book_appointment', nodes: ['ask_name'], exited: true });
    expect(streamed(events)).to.equal(end.reply);
    const answer = begin(conversationOf(clinic(), { playbook: running }), 'Ada', portsOf());
    expect(went(leavePlaybook(answer.turn, answer.state))).to.equal(answer.state);
  });

  it('gives the running playbook the answer: the name is gathered, the skill runs with it, the confirmation is said', async () => {
    const ports = portsOf();
    const { turn, state } = begin(conversationOf(clinic(), { playbook: running, turn: 2 }), 'Ada', ports);
    const end = ended(await continuePlaybook(turn, state));
    expect(end.reply).to.equal('Booked for Ada: A-17.');
    expect(end.playbook).to.equal(null);
    expect(end.state.vars).to.include({ name: 'Ada', book_visit_confirmation: 'A-17' });
    expect(ports.skillCalls.map((c) => [c.callId, c.args])).to.deep.equal([['pb_3_book', { name: 'Ada' }]]);
    expect(end.state.receipt.playbook).to.deep.equal({ name: 'book_appointment', nodes: ['ask_name', 'book', 'confirm', 'end'] });
    expect(end.state.receipt.toolCalls[0]).to.include({ skill: 'book_visit', source: 'playbook' });
  });

  it('starts a playbook the message names, and goes on when none is named or the turn resumes a skill', async () => {
    const named = begin(conversationOf(clinic()), 'I want to book appointment', portsOf());
    const end = ended(await continuePlaybook(named.turn, named.state));
    expect(end.reply).to.equal('May I have your name?');
    expect(end.playbook).to.deep.equal(running);
    const plain = begin(conversationOf(clinic()), 'When are you open?', portsOf());
    expect(went(await continuePlaybook(plain.turn, plain.state))).to.equal(plain.state);
    const resumed = { ...plain.state, resume: 'skill:book_visit' };
    expect(went(await continuePlaybook(plain.turn, resumed))).to.equal(resumed);
  });

  it('starts the playbook that waited for the PIN, after the thanks', async () => {
    const { turn, state } = begin(conversationOf(clinic()), '4321', portsOf());
    const end = ended(await continuePlaybook(turn, { ...state, resume: 'playbook:book_appointment', lead: 'Thank you, Grace, you are verified.' }));
    expect(end.reply).to.equal('Thank you, Grace, you are verified. May I have your name?');
    expect(end.playbook).to.deep.equal(running);
  });

  it('holds a protected playbook for the PIN, or declines it when the caller cannot be verified here', async () => {
    const agent = clinic({ callerVerification: pinCheck({ requiredForSkills: ['book_visit'] }) });
    const ports = portsOf({ checkPin: async () => null });
    const asked = begin(conversationOf(agent, { variables: { ...pinDue } }), 'book appointment', ports);
    const end = ended(await continuePlaybook(asked.turn, asked.state));
    expect(end.reply).to.match(/^Before I can help with that, I need to confirm who you are\./);
    expect(end.state.vars).to.include({ caller_verification_pending: 'playbook:book_appointment' });
    expect(end.playbook).to.equal(null);
    expect(ports.skillCalls).to.deep.equal([]);

    const byCallerId = clinic({ callerVerification: pinCheck({ method: 'caller_id', requiredForSkills: ['book_visit'] }) });
    const declined = begin(conversationOf(byCallerId, { variables: { caller_verified: 'false', caller_verification: 'not_found' } }), 'book appointment', ports);
    const held = holdPlaybook(declined.turn, declined.state, byCallerId.playbooks[0]);
    expect(held).to.deep.equal({ state: declined.state, hold: UNVERIFIED_REFUSAL });
    const verified = begin(conversationOf(agent, { variables: { caller_verified: 'true' } }), 'book appointment', ports);
    expect(holdPlaybook(verified.turn, verified.state, agent.playbooks[0]).hold).to.equal(null);
  });

  it('runs steps until the playbook waits: a failed skill is <skill>_failed and the default apology; a skill alone says it is done', async () => {
    const failing = portsOf({
      runSkill: async () => {
        throw new SkillError('HTTP 500', 'http_status');
      },
    });
    const agent = clinic();
    const { turn, state } = begin(conversationOf(agent), 'Ada', failing);
    const run = await runPlaybook(turn, state, agent.playbooks[0], { steps: [{ type: 'skill', node: 'book', skill: 'book_visit', inputs: { name: 'Ada' } }], state: { playbook: 'book_appointment', node: 'book' }, gathered: { name: 'Ada' } }, 'ask_name');
    expect(run.said).to.deep.equal(["I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?"]);
    expect(run.state.vars).to.include({ name: 'Ada', book_visit_failed: 'true' });
    expect(run.playbook).to.equal(null);
    expect(run.state.receipt.toolCalls[0].error).to.equal('HTTP 500');

    const skillOnly = { nodes: bookingGraph.nodes.filter((n) => n.id !== 'confirm' && n.id !== 'ask_name'), edges: [{ from: 'start', to: 'book' }, { from: 'book', to: 'end' }] };
    const quiet = clinic({ playbooks: [{ name: 'quick_book', description: 'Books at once', graph: skillOnly }] });
    const q = begin(conversationOf(quiet, { variables: { name: 'Ada' } }), 'quick book', portsOf());
    const done = await runPlaybook(q.turn, q.state, quiet.playbooks[0], startPlaybook(skillOnly, 'quick_book', q.state.vars), null);
    expect(done.said).to.deep.equal([DONE_REPLY]);
    expect(done.state.vars).to.include({ book_visit_confirmation: 'A-17' });
  });
});
