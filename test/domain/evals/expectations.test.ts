/** Evaluation verdicts, summaries and suite checks as plain functions (domain/evals/expectations.ts, domain/conversations/skillStubs.ts). */
import { expect } from 'chai';
import { judgeExpectation, rubricVerdict, suiteErrors, summarizeRun, type EvalTurnView } from '../../../domain/evals/expectations';
import { missingStubErrors, skillNeedsStub } from '../../../domain/conversations/skillStubs';
import type { TurnReceipt } from '../../../schemas/types/chat';
import type { EvalRepeatResult } from '../../../schemas/types/evals';

const receipt = (turn: number, toolCalls: unknown[] = [], playbook: TurnReceipt['playbook'] = null) => ({ turn, toolCalls, playbook }) as unknown as TurnReceipt;
const reply = (turn: number, content: string) => ({ id: `m${turn}`, role: 'assistant' as const, content, turn, createdAt: '2026-11-27T00:00:00.000Z' });
const turns: EvalTurnView[] = [
  { index: 1, messages: [reply(1, 'Your order has SHIPPED.')], receipt: receipt(1, [{ skill: 'lookup', inputs: { order_id: 'A1' }, error: null }]) },
  { index: 2, messages: [reply(2, 'Anything else?')], receipt: receipt(2, [], { name: 'intake', nodes: ['ask_name'] } as TurnReceipt['playbook']) },
];
const view = { turns, endReason: 'end_call' };

describe('evaluation expectations', () => {
  it('judges contains, notContains and regex on the replies, case-insensitively, with the deciding turn', () => {
    expect(judgeExpectation({ type: 'contains', text: 'shipped' }, view, null)).to.include({ passed: true, evidence: 'turn 1 reply: "Your order has SHIPPED."' });
    expect(judgeExpectation({ type: 'notContains', text: 'else' }, view, null)).to.include({ passed: false });
    expect(judgeExpectation({ type: 'regex', pattern: '^any', flags: 'i' }, view, null).passed).to.equal(true);
    expect(judgeExpectation({ type: 'regex', pattern: '^any' }, { ...view, turns: [turns[1]] }, 2)).to.include({ passed: false, turn: 2, evidence: 'none of the reply of turn 2 matches /^any/' });
  });

  it('judges a skill call by its arguments, a playbook node and the end reason', () => {
    expect(judgeExpectation({ type: 'skillCalled', skill: 'lookup', args: { order_id: '^A\\d$' } }, view, null).passed).to.equal(true);
    expect(judgeExpectation({ type: 'skillCalled', skill: 'lookup', args: { order_id: '^B' } }, view, null).evidence).to.equal('turn 1 called lookup with order_id="A1", not matching /^B/');
    expect(judgeExpectation({ type: 'skillCalled', skill: 'book' }, view, null).evidence).to.equal('book was never called in 2 turn(s)');
    expect(judgeExpectation({ type: 'playbookReached', playbook: 'intake', node: 'ask_name' }, view, null).evidence).to.equal('turn 2 reached intake.ask_name');
    expect(judgeExpectation({ type: 'endedBy', reason: 'end_call' }, view, null).passed).to.equal(true);
    expect(judgeExpectation({ type: 'endedBy', reason: 'end_call' }, { ...view, endReason: 'active' }, null).evidence).to.equal('the conversation did not end, not end_call');
  });

  it("reads a judge's verdict, and fails an answer that is not one", () => {
    const e = { type: 'rubric' as const, rubric: 'polite' };
    expect(rubricVerdict(e, null, '```json\n{"passed": true, "reason": "Polite throughout."}\n```')).to.include({ passed: true, evidence: 'Polite throughout.' });
    expect(rubricVerdict(e, 1, '{"passed": "yes"}')).to.include({ passed: false, turn: 1 });
    expect(rubricVerdict(e, null, null).evidence).to.contain('was not a verdict');
  });

  it('summarizes a run: pass rate over every scenario run, flaky when a scenario both passed and failed', () => {
    const r = (repeat: number, passed: boolean) => ({ repeat, passed, conversationId: null, results: [], error: null, wallMs: 1 }) as EvalRepeatResult;
    const s = summarizeRun(['a', 'b', 'c'], [[r(2, false), r(1, true)], [r(1, true)], [r(1, false)]]);
    expect(s).to.include({ passed: 2, total: 4, passRate: 0.5 });
    expect(s.flaky).to.deep.equal(['a']);
    expect(s.scenarios[0].repeats.map((x) => x.repeat)).to.deep.equal([1, 2]);
  });

  it('names the fields of a suite the schema cannot check', () => {
    const errors = suiteErrors(
      [
        { name: 'a', turns: [{ say: ' ', expect: [{ type: 'skillCalled', skill: 'x', args: { id: '[' } }] }] },
        { name: 'a', caller: { persona: 'p', goal: 'g' }, repeat: 20 },
        { name: 'c' },
      ],
      1,
    );
    expect(errors.map((e) => e.field)).to.deep.equal(['scenarios[0].turns[0].say', 'scenarios[0].turns[0].expect[0].args.id', 'scenarios[1].name', 'scenarios[2].turns']);
    expect(suiteErrors(Array.from({ length: 60 }, (_, i) => ({ name: `s${i}`, turns: [{ say: 'hi' }], repeat: 20 })), 1).map((e) => e.field)).to.deep.equal(['scenarios']);
  });

  it('asks a stub of every skill that reaches outside the conversation, and of no other', () => {
    expect(['http_request', 'send_sms', 'lookup_record', 'end_call', 'transfer_call'].map((type) => skillNeedsStub({ type, config: {} }))).to.deep.equal([true, true, true, false, false]);
    // A booking reaches its endpoint or its calendar either way (docs/api-notes.md "Booking skills").
    expect(skillNeedsStub({ type: 'book_appointment', config: { url: 'https://book.example.com/' } })).to.equal(true);
    expect(skillNeedsStub({ type: 'book_appointment', config: { integration: 'google_calendar' } })).to.equal(true);
    expect(skillNeedsStub({ type: 'check_availability', config: { integration: 'calcom' } })).to.equal(true);
    const skills = [{ name: 'crm', type: 'http_request', config: {} }, { name: 'bye', type: 'end_call', config: {} }];
    expect(missingStubErrors(skills, { crm: null })).to.deep.equal([]);
    expect(missingStubErrors(skills, undefined, 'scenarios[0].skillStubs').map((e) => e.field)).to.deep.equal(['scenarios[0].skillStubs.crm']);
  });
});
