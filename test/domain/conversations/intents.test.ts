/**
 * Playbooks by intent, honest outcomes and verification only where it protects (docs/api-notes.md "Agents",
 * "Conversations", "Caller verification", "Sandbox LLM"), on the pure runtime with the real sandbox model: a
 * playbook offered as a tool and started by trigger phrase or `whenToUse`, left with "never mind", a failing
 * skill taking the `onError` edge or the default apology, a `say` node with an unfilled placeholder left unsaid,
 * what may reach a person (speakable), and the PIN asked for only with a protected action.
 */
import { expect } from 'chai';
import { runTurn, type SkillCall, type TurnContext, type TurnPorts, type TurnResult } from '../../../domain/conversations/runtime';
import type { CompiledAgent } from '../../../domain/agents/compile';
import { continueAfterSkill, leavesPlaybook, playbookToolName, SKILL_ERROR_REPLY, startPlaybook } from '../../../domain/conversations/playbook';
import { playbookTools } from '../../../domain/conversations/prompt';
import { speakable } from '../../../domain/conversations/speakable';
import { pinDigits, protectedPlaybook, protectedSkill, type VerificationRecord } from '../../../domain/conversations/callerVerification';
import { validatePlaybookGraph } from '../../../domain/agents/playbookGraph';
import { SkillError } from '../../../domain/conversations/runtime';
import type { CallerVerification } from '../../../schemas/types/guardrails';
import type { PlaybookGraph } from '../../../schemas/types/playbooks';
import { chain } from '../../api/agents-fixtures';
import { createLlm } from '../../../providers/llm';
import { compiledAgent } from '../../helpers/agents';

/** ask name → ask date → book_visit → say confirmation → end; `onError` optional. */
const bookingGraph = (onError = false): PlaybookGraph => ({
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
    { id: 'ask_date', type: 'ask', prompt: 'Thanks {{name}}, which date suits you?', gathers: 'date' },
    { id: 'book', type: 'skill', skill: 'book_visit' },
    { id: 'confirm', type: 'say', prompt: "You're all set, {{name}}: your confirmation code is {{book_visit_confirmation}}." },
    ...(onError ? [{ id: 'sorry', type: 'say' as const, prompt: 'That date could not be booked; our front desk will call you back.' }] : []),
    { id: 'end', type: 'end' },
  ],
  edges: [...chain('start', 'ask_name', 'ask_date', 'book', 'confirm', 'end'), ...(onError ? [{ from: 'book', to: 'sorry', onError: true }, { from: 'sorry', to: 'end' }] : [])],
});

const agent = (over: Partial<CompiledAgent> = {}): CompiledAgent => compiledAgent({ name: 'Clinic', skills: [{ name: 'book_visit', type: 'http_request', description: 'Books a visit', config: { url: 'https://x.example/book', method: 'POST', inputs: [{ name: 'name' }, { name: 'date' }] } }], playbooks: [{ name: 'book_appointment', description: 'Books a visit', graph: bookingGraph(), whenToUse: 'The caller wants to book an appointment', triggerPhrases: ['see the dentist'] }], ...over });

const grace: VerificationRecord = { id: 'rec_1', name: 'Grace', email: null, phone: '+12065550100', hasPin: true };

/** Runs turns one after the other, carrying variables, playbook state and history like the service does. */
function conversation(a: CompiledAgent, opts: { vars?: Record<string, string>; skill?: (call: SkillCall) => Promise<{ output: unknown }> } = {}) {
  const calls: SkillCall[] = [];
  let c: TurnContext = { id: 'cnv_test0000', orgId: 'org_t', agentId: 'agt_t0000000', channel: 'chat', agent: a, variables: opts.vars ?? {}, playbook: null, turn: 0, history: [], startedAtMs: Date.now() };
  const ports: TurnPorts = {
    llm: createLlm({}),
    searchKnowledge: async () => [],
    runSkill: async (call) => {
      calls.push(call);
      return opts.skill ? opts.skill(call) : { output: { confirmation: 'A-17' } };
    },
    now: () => performance.now(),
    wallClock: () => Date.now(),
    checkPin: async (pin) => (pin === '4321' ? grace : null),
  };
  return {
    calls,
    async say(text: string): Promise<TurnResult> {
      const r = await runTurn(c, text, ports);
      c = { ...c, variables: r.variables, playbook: r.playbook, turn: c.turn + 1, history: [...c.history, ...r.messages] };
      return r;
    },
  };
}

describe('playbooks by intent (runtime, sandbox LLM)', () => {
  it('offers each playbook as a start_playbook_<name> tool with its description, whenToUse and trigger phrases', () => {
    const tools = playbookTools(agent());
    expect(tools.map((t) => t.name)).to.deep.equal(['start_playbook_book_appointment']);
    expect(tools[0].description).to.contain('Books a visit').and.contain('Use when: The caller wants to book an appointment').and.contain('"see the dentist"');
    expect(tools[0].parameters).to.deep.equal({ type: 'object', properties: {}, required: [] });
    expect(playbookToolName('Book Visit/2!')).to.equal('start_playbook_book_visit_2_');
    expect(playbookToolName('x'.repeat(64))).to.have.length(64);
  });

  it('starts the playbook from "I\'d like to book an appointment" through its tool, then its ask nodes drive the turns', async () => {
    const talk = conversation(agent());
    const first = await talk.say("I'd like to book an appointment");
    expect(first.reply).to.equal('May I have your name?');
    expect(first.playbook).to.deep.equal({ playbook: 'book_appointment', node: 'ask_name' });
    expect(first.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool', 'assistant']);
    expect(first.messages[1].toolCalls![0].name).to.equal('start_playbook_book_appointment');
    expect((await talk.say('Ada')).reply).to.equal('Thanks Ada, which date suits you?');
    const done = await talk.say('2026-12-01');
    expect(done.reply).to.equal("You're all set, Ada: your confirmation code is A-17.");
    expect(talk.calls[0].args).to.deep.equal({ name: 'Ada', date: '2026-12-01' });
    // By trigger phrase, and by the literal name (no model needed).
    expect((await conversation(agent()).say('Could I see the dentist?')).reply).to.equal('May I have your name?');
    const literal = await conversation(agent()).say('book appointment');
    expect(literal.reply).to.equal('May I have your name?');
    expect(literal.model).to.equal(null);
  });

  it('leaves the playbook on "never mind" and says what was not done', async () => {
    expect(['never mind', 'Cancel that', 'STOP.', 'forget it please', 'nevermind'].every(leavesPlaybook)).to.equal(true);
    expect(['I want to stop by tomorrow'.replace('I want to ', 'maybe '), 'Ada'].some(leavesPlaybook)).to.equal(false);
    const talk = conversation(agent());
    await talk.say('book appointment');
    const out = await talk.say('Never mind');
    expect(out.reply).to.equal("No problem, I've stopped there: your book appointment request was not completed. Is there anything else I can help with?");
    expect(out.playbook).to.equal(null);
    expect(out.receipt.playbook).to.deep.equal({ name: 'book_appointment', nodes: ['ask_name'], exited: true });
    expect(talk.calls).to.have.length(0);
  });
});

describe('honest outcomes (runtime)', () => {
  const failing = async () => {
    throw new SkillError('Skill "book_visit" answered HTTP 500: {"trace":"at x (a.ts:1:2)"}', 'http_status');
  };

  it('a failing skill without an onError edge says the default apology, never the confirmation or a placeholder', async () => {
    const talk = conversation(agent(), { skill: failing });
    await talk.say('book appointment');
    await talk.say('Ada');
    const out = await talk.say('2026-12-01');
    expect(out.reply).to.equal(SKILL_ERROR_REPLY);
    expect(out.playbook).to.equal(null);
    expect(out.receipt.playbook!.nodes).to.deep.equal(['ask_date', 'book', 'book:error', 'book:error']);
    expect(out.receipt.toolCalls[0].error).to.contain('HTTP 500');
    expect(out.variables).to.include({ book_visit_failed: 'true' });
  });

  it('a failing skill follows its onError edge', async () => {
    const talk = conversation(agent({ playbooks: [{ name: 'book_appointment', description: null, graph: bookingGraph(true) }] }), { skill: failing });
    await talk.say('book appointment');
    await talk.say('Ada');
    const out = await talk.say('2026-12-01');
    expect(out.reply).to.equal('That date could not be booked; our front desk will call you back.');
    expect(out.receipt.playbook!.nodes).to.deep.equal(['ask_date', 'book', 'sorry', 'end']);
  });

  it('a say node whose placeholder has no value is not said; a success with nothing left to say says so plainly', async () => {
    const talk = conversation(agent(), { skill: async () => ({ output: { status: 'booked' } }) });
    await talk.say('book appointment');
    await talk.say('Ada');
    const out = await talk.say('2026-12-01');
    expect(out.reply).to.equal("That's done. Is there anything else I can help with?");
    expect(out.receipt.playbook!.skipped).to.deep.equal(['confirm']);
    const graph = bookingGraph();
    const state = startPlaybook(graph, 'b', {}).state!;
    expect(continueAfterSkill(graph, { ...state, node: 'book' }, { name: 'Ada' }, true).steps[0]).to.include({ type: 'say', text: SKILL_ERROR_REPLY });
  });

  it('validates onError edges: only from skill nodes, one per node', () => {
    const g = bookingGraph(true);
    const skills = new Map([['book_visit', { type: 'http_request', config: { url: 'https://x.example', method: 'POST', inputs: [{ name: 'name' }, { name: 'date' }] } }]]);
    expect(validatePlaybookGraph(g, { skills, initialVariables: new Set() })).to.deep.equal([]);
    const bad = { ...g, edges: [...g.edges, { from: 'ask_name', to: 'end', onError: true }, { from: 'book', to: 'end', onError: true }] };
    expect(validatePlaybookGraph(bad, { skills, initialVariables: new Set() }).map((e) => e.field)).to.deep.equal(['graph.edges[7].onError', 'graph.edges[8].onError']);
  });

  it('nothing internal reaches a person: citations, placeholders, JSON, stack frames and snake_case codes are removed or read as words', () => {
    expect(speakable('We open at 9am (source: Clinic FAQ). Parking is free [source: faq.md]')).to.equal('We open at 9am. Parking is free');
    expect(speakable('Your code is {{book_visit_confirmation}}.')).to.equal('Your code is.');
    expect(speakable('Done: {"ok":false,"error":{"code":"x"}} and [{"a":1}] left')).to.equal('Done: and left');
    expect(speakable('Failed\n    at run (/srv/a.ts:10:3)\nSorry')).to.equal('Failed\nSorry');
    expect(speakable('book_visit failed with caller_not_verified')).to.equal('book visit failed with caller not verified');
    expect(speakable('mail ada_l@example.com or see https://x.example/a_b and file_name.txt')).to.equal('mail ada_l@example.com or see https://x.example/a_b and file_name.txt');
    // Streaming: an opening still undecided is held back, an open one is already removed.
    expect(speakable('We open at 9am (source: Cli')).to.equal('We open at 9am');
    expect(speakable('Result {"ok":tr')).to.equal('Result');
  });

  it('the sandbox says a model-path tool failure as an apology without the error, the JSON or the skill name', async () => {
    const a = agent({ playbooks: [] });
    const talk = conversation(a, { skill: failing });
    const out = await talk.say('please book visit name: Ada');
    expect(out.receipt.toolCalls[0]).to.include({ skill: 'book_visit', source: 'model' });
    expect(out.reply).to.equal("I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?");
  });
});

describe('verification only where it protects (runtime)', () => {
  const cv = (over: Partial<CallerVerification>): CallerVerification => ({ enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3, required: 'for_protected_actions', ...over });
  const pinDue = { caller_verified: 'false', caller_verification: 'pin_required', caller_pin_attempts: '0' };
  const lookup = { name: 'find_account', type: 'lookup_record', description: 'Finds the account', config: { matchOn: ['phone'] } };

  it('protects skills in requiredForSkills, record lookups (for_protected_actions) and marked playbooks or ones running a protected skill', () => {
    const c = cv({ requiredForSkills: ['book_visit'] });
    expect(protectedSkill(c, { name: 'book_visit', type: 'http_request' })).to.equal('listed in requiredForSkills');
    expect(protectedSkill(c, lookup)).to.equal('looks up customer records');
    expect(protectedSkill({ ...c, required: 'always' }, lookup)).to.equal(null);
    expect(protectedSkill({ ...c, enabled: false }, { name: 'book_visit', type: 'http_request' })).to.equal(null);
    expect(protectedPlaybook(c, { graph: bookingGraph() }, agent().skills)).to.equal('runs the protected skill book_visit');
    expect(protectedPlaybook(cv({}), { requiresVerifiedCaller: true, graph: bookingGraph() }, agent().skills)).to.equal('marked requiresVerifiedCaller');
    expect(protectedPlaybook(cv({}), { graph: bookingGraph() }, agent().skills)).to.equal(null);
    expect(pinDigits('What time are you open?')).to.equal(null);
  });

  it('answers questions before verification and asks for the PIN only when a protected playbook is asked for; it starts once the PIN matched', async () => {
    const a = agent({ callerVerification: cv({}), playbooks: [{ ...agent().playbooks[0], requiresVerifiedCaller: true }] });
    const talk = conversation(a, { vars: pinDue });
    const open = await talk.say('What time are you open?');
    expect(open.reply).to.match(/^I understand you said/);
    expect(open.variables.caller_pin_attempts).to.equal('0');
    const asked = await talk.say("I'd like to book an appointment");
    expect(asked.reply).to.equal('Before I can help with that, I need to confirm who you are. For your security, please type your PIN.');
    expect(asked.playbook).to.equal(null);
    expect(asked.variables).to.include({ caller_verification_pending: 'playbook:book_appointment' });
    const wrong = await talk.say('1111');
    expect(wrong.reply).to.match(/^Sorry, that PIN is not correct\. You have 2 attempts left\./);
    const verified = await talk.say('4321');
    expect(verified.reply).to.equal('Thank you, Grace, you are verified. May I have your name?');
    expect(verified.messages[0].content).to.equal('[PIN entered]');
    expect(verified.playbook).to.deep.equal({ playbook: 'book_appointment', node: 'ask_name' });
    expect(verified.variables).to.include({ caller_verified: 'true' }).and.not.have.property('caller_verification_pending');
  });

  it('counts only PIN-shaped answers as attempts; another question drops the pending action', async () => {
    const a = agent({ callerVerification: cv({ requiredForSkills: ['book_visit'] }), playbooks: [] });
    const talk = conversation(a, { vars: pinDue });
    const held = await talk.say('please book visit name: Ada date: 2026-12-01');
    expect(held.reply).to.match(/^Before I can help with that/);
    expect(held.receipt.toolCalls[0].error).to.match(/^Held/);
    expect(talk.calls).to.have.length(0);
    const moved = await talk.say('Actually, where do I park?');
    expect(moved.reply).to.match(/^I understand you said/);
    expect(moved.variables.caller_pin_attempts).to.equal('0');
    expect(moved.variables).to.not.have.property('caller_verification_pending');
    // A PIN-shaped answer nobody asked for is not an attempt either.
    expect((await talk.say('1234')).variables.caller_pin_attempts).to.equal('0');
  });

  it('runs a held skill once the PIN matched, with the request that asked for it', async () => {
    const a = agent({ callerVerification: cv({ requiredForSkills: ['book_visit'] }), playbooks: [] });
    const talk = conversation(a, { vars: pinDue });
    await talk.say('please book visit name: Ada date: 2026-12-01');
    const done = await talk.say('4321');
    expect(talk.calls.map((c) => c.args)).to.deep.equal([{ name: 'Ada', date: '2026-12-01' }]);
    expect(done.reply).to.equal('Thank you, Grace, you are verified. All done. The confirmation is A-17.');
  });

  it('declines a protected action the caller cannot be verified for here, and offers a person', async () => {
    const a = agent({ callerVerification: cv({ method: 'caller_id' }), playbooks: [{ ...agent().playbooks[0], requiresVerifiedCaller: true }] });
    const out = await conversation(a, { vars: { caller_verified: 'false', caller_verification: 'not_found' } }).say('book appointment');
    expect(out.reply).to.match(/^I'm sorry, I can only help with that once I've confirmed who you are/);
    expect(out.playbook).to.equal(null);
  });

  it('required: always keeps asking for the PIN first (versions without `required` run this way)', async () => {
    const { required: _r, ...old } = cv({});
    const talk = conversation(agent({ callerVerification: old }), { vars: pinDue });
    expect((await talk.say('What time are you open?')).reply).to.equal('For your security, please type your PIN.');
    expect((await talk.say('4321')).reply).to.equal('Thank you, Grace, you are verified. How can I help?');
  });
});
