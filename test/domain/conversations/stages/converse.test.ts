/**
 * The model's part of a free turn as stages (domain/conversations/turn/converse.ts, toolRound.ts): the answer, tool
 * rounds and their limit, the client's calls, and what a round decides (the end, a line said instead, a playbook).
 */
import { expect } from 'chai';
import { converse, MAX_TOOL_ROUNDS } from '../../../../domain/conversations/turn/converse';
import { toolRound } from '../../../../domain/conversations/turn/toolRound';
import { offerTools } from '../../../../domain/conversations/turn/offerTools';
import { retrieve } from '../../../../domain/conversations/turn/retrieve';
import type { TurnOptions, TurnPorts } from '../../../../domain/conversations/turn/contract';
import type { TurnContext } from '../../../../domain/conversations/turn/contract';
import type { LlmMessage } from '../../../../domain/conversations/llm';
import type { EscalationRoute } from '../../../../domain/conversations/escalation';
import { begin, clinic, conversationOf, pinCheck, pinDue, portsOf, scriptedModel, streamed, type Scripted } from './turn';

const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({ id, name, arguments: JSON.stringify(args) });
const route: EscalationRoute = { destination: { id: 'esc_1', kind: 'email', address: 'desk@clinic.example' }, phone: null, email: null };

/** A free turn up to the model: opened, admitted, retrieved and equipped. */
async function equipped(ctx: TurnContext, text: string | null, ports: TurnPorts, opts: TurnOptions = {}) {
  const { turn, state, events } = begin(ctx, text, ports, opts);
  return { turn, state: await offerTools(turn, await retrieve(turn, state)), events };
}

describe('turn stages: converse with tools', () => {
  it("ends with the model's answer as streamed, its finish reason, tokens, model and latencies", async () => {
    const llm = scriptedModel([{ content: 'We open at nine.', finishReason: 'length' }]);
    const { turn, state, events } = await equipped(conversationOf(clinic(), { history: [{ role: 'assistant', content: 'Hello' }] }), 'When do you open?', portsOf({ llm }));
    const end = await converse(turn, state);
    expect(end).to.deep.include({ reply: 'We open at nine.', finishReason: 'length', playbook: null, model: 'scripted-1', usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 } });
    expect(streamed(events)).to.equal('We open at nine.');
    expect(end.state.receipt.latency.map((l) => l.stage)).to.deep.equal(['llm_first_token', 'llm_total']);
    const sent = llm.requests[0];
    expect(sent.messages.map((m) => m.role)).to.deep.equal(['system', 'assistant', 'user']);
    expect(sent.messages[2].content).to.equal('When do you open?');
    expect(sent.tools!.map((t) => t.name)).to.deep.equal(['book_visit', 'start_playbook_book_appointment']);
  });

  it('runs the skill the model calls, answers it with a tool message, and asks again', async () => {
    const llm = scriptedModel([{ content: '', toolCalls: [call('call_1', 'book_visit', { name: 'Ada' })] }, { content: 'Booked: A-17.' }]);
    const ports = portsOf({ llm });
    const { turn, state, events } = await equipped(conversationOf(clinic()), 'book me in, Ada', ports);
    const end = await converse(turn, state);
    expect(end.reply).to.equal('Booked: A-17.');
    expect(end.usage.totalTokens).to.equal(30);
    expect(ports.skillCalls.map((c) => c.args)).to.deep.equal([{ name: 'Ada' }]);
    expect(end.state.messages.map((m) => m.role)).to.deep.equal(['user', 'assistant', 'tool']);
    expect(end.state.messages[2]).to.deep.equal({ role: 'tool', toolCallId: 'call_1', name: 'book_visit', content: '{"ok":true,"output":{"confirmation":"A-17"}}' });
    expect(llm.requests[1].messages.at(-1)).to.deep.equal(end.state.messages[2]);
    expect(events.map((e) => e.type).filter((t) => t.startsWith('tool'))).to.deep.equal(['tool.call', 'tool.result']);
  });

  it(`stops offering tools after ${MAX_TOOL_ROUNDS} rounds, answering without them`, async () => {
    const again = (i: number): Scripted => ({ content: '', toolCalls: [call(`call_${i}`, 'book_visit', { name: 'Ada' })] });
    const llm = scriptedModel([again(1), again(2), again(3), { content: 'Done.', toolCalls: [call('call_4', 'book_visit')] }]);
    const { turn, state } = await equipped(conversationOf(clinic()), 'book', portsOf({ llm }));
    const end = await converse(turn, state);
    expect(end.reply).to.equal('Done.');
    expect(llm.requests.map((r) => r.tools?.length ?? 0)).to.deep.equal([2, 2, 2, 0]);
  });

  it("ends with the client's calls unrun, the text said with them as the reply", async () => {
    const llm = scriptedModel([{ content: 'Checking the weather.', toolCalls: [call('call_w', 'get_weather', { city: 'Oslo' })] }]);
    const opts = { clientTools: [{ name: 'get_weather', description: 'Weather', parameters: {} }] };
    const { turn, state } = await equipped(conversationOf(clinic()), 'Weather in Oslo?', portsOf({ llm }), opts);
    const end = await converse(turn, state);
    expect(end.clientCalls).to.deep.equal([call('call_w', 'get_weather', { city: 'Oslo' })]);
    expect(end.reply).to.equal('Checking the weather.');
    expect(end.state.messages.at(-1)).to.deep.include({ role: 'assistant', content: 'Checking the weather.' });
  });

  it('ends the conversation when a skill does, saying its closing line', async () => {
    const llm = scriptedModel([{ content: '', toolCalls: [call('call_e', 'book_visit')] }]);
    const ports = portsOf({ llm, runSkill: async () => ({ output: null, effect: 'end', say: 'Bye for now.' }) });
    const { turn, state } = await equipped(conversationOf(clinic()), 'that is all', ports);
    const end = await converse(turn, state);
    expect(end.reply).to.equal('Bye for now.');
    expect(end.state.end).to.equal('end_call');
    expect(end).to.not.have.property('finishReason');
  });

  it("answers the client's calls as not run when the round ends the conversation", async () => {
    const llm = scriptedModel([{ content: '', toolCalls: [call('c1', 'escalate'), call('c2', 'get_weather')] }]);
    const opts = { clientTools: [{ name: 'get_weather', description: 'Weather', parameters: {} }] };
    const { turn, state } = await equipped(conversationOf(clinic(), { channel: 'voice' }), 'a person please', portsOf({ llm, escalationRoute: async () => route }), opts);
    const end = await converse(turn, state);
    expect(end.state.end).to.equal('escalated');
    expect(end).to.not.have.property('clientCalls');
    expect(end.reply).to.equal("I'll connect you with a member of our team.");
    expect(end.state.messages.at(-1)).to.deep.equal({ role: 'tool', toolCallId: 'c2', name: 'get_weather', content: '{"ok":false,"error":"Not run: the conversation moved on."}' });
  });

  it("starts the playbook whose tool the model calls and says its first question", async () => {
    const llm = scriptedModel([{ content: '', toolCalls: [call('call_p', 'start_playbook_book_appointment')] }]);
    const { turn, state } = await equipped(conversationOf(clinic()), "I'd like an appointment", portsOf({ llm }));
    const end = await converse(turn, state);
    expect(end.reply).to.equal('May I have your name?');
    expect(end.playbook).to.deep.equal({ playbook: 'book_appointment', node: 'ask_name' });
    expect(llm.requests).to.have.length(1);
  });
});

describe('turn stages: a round of tool calls', () => {
  it("escalates on the escalate tool, with where it goes, keeping the client's call of the round for later", async () => {
    const ports = portsOf({ escalationRoute: async () => route });
    const { turn, state, events } = await equipped(conversationOf(clinic()), 'a person please', ports, { clientTools: [{ name: 'get_weather', description: 'Weather', parameters: {} }] });
    const convo: LlmMessage[] = [];
    const round = await toolRound(turn, state, [call('c1', 'escalate', { reason: 'asks for a person' }), call('c2', 'get_weather')], convo);
    expect(round.state.end).to.equal('escalated');
    expect(round.state.escalation).to.deep.equal({ reason: 'escalate_tool', route });
    expect(round.closing).to.have.length(1);
    expect(round.pending).to.deep.equal([call('c2', 'get_weather')]);
    expect(round.state.receipt.toolCalls).to.deep.equal([{ id: 'c1', skill: 'escalate', type: 'escalate', source: 'model', inputs: { reason: 'asks for a person' }, output: { escalated: true, destinationId: 'esc_1' }, durationMs: 0 }]);
    expect(convo.map((m) => JSON.parse(m.content!))).to.deep.equal([{ ok: true, output: { escalated: true, destinationId: 'esc_1' } }]);
    expect(events.filter((e) => e.type === 'tool.call' || e.type === 'tool.result').map((e) => e.type)).to.deep.equal(['tool.call', 'tool.result']);
  });

  it('once a playbook is to start, declines every later call of the round', async () => {
    const ports = portsOf();
    const { turn, state } = await equipped(conversationOf(clinic()), 'appointment', ports, { clientTools: [{ name: 'get_weather', description: 'Weather', parameters: {} }] });
    const convo: LlmMessage[] = [];
    const round = await toolRound(turn, state, [call('c1', 'start_playbook_book_appointment'), call('c2', 'book_visit'), call('c3', 'get_weather')], convo);
    expect(round.start?.name).to.equal('book_appointment');
    expect(round.pending).to.deep.equal([]);
    expect(convo.map((m) => JSON.parse(m.content!))).to.deep.equal([
      { ok: true, started: 'book_appointment' },
      { ok: false, error: 'Not run: another action is under way.' },
      { ok: false, error: 'Not run: another action is under way.' },
    ]);
    expect(ports.skillCalls).to.deep.equal([]);
    expect(round.state.receipt.toolCalls).to.deep.equal([]);
  });

  it("holds a protected skill for the PIN: it is not run, the request is said instead and the skill waits in the variables", async () => {
    const agent = clinic({ callerVerification: pinCheck({ requiredForSkills: ['book_visit'] }), playbooks: [] });
    const ports = portsOf({ checkPin: async () => null });
    const { turn, state } = await equipped(conversationOf(agent, { variables: { ...pinDue } }), 'book visit for Ada', ports);
    const round = await toolRound(turn, state, [call('c1', 'book_visit', { name: 'Ada' })], []);
    expect(round.instead).to.match(/^Before I can help with that, I need to confirm who you are\./);
    expect(round.state.vars).to.include({ caller_verification_pending: 'skill:book_visit' });
    expect(round.state.receipt.toolCalls[0].error).to.match(/^Held/);
    expect(ports.skillCalls).to.deep.equal([]);
    expect(state.vars, 'the state it was given keeps its variables').to.not.have.property('caller_verification_pending');
  });

  it('records a call of a tool the agent does not have as failed, without running anything', async () => {
    const ports = portsOf();
    const { turn, state } = await equipped(conversationOf(clinic()), 'hi', ports);
    const convo: LlmMessage[] = [];
    const round = await toolRound(turn, state, [call('c1', 'delete_everything')], convo);
    expect(round.state.receipt.toolCalls[0]).to.include({ skill: 'delete_everything', type: 'unknown', error: 'The agent has no skill "delete_everything"' });
    expect(JSON.parse(convo[0].content!)).to.deep.equal({ ok: false, error: 'The agent has no skill "delete_everything"' });
    expect(ports.skillCalls).to.deep.equal([]);
  });
});
