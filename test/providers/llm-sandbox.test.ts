/**
 * The sandbox LLM (docs/api-notes.md "Sandbox LLM"): each rule, the order of streamed events, usage equal to the tokenizer's
 * counts (OpenAI cookbook per-message overhead, checked against gpt-tokenizer's own chat encoding), and abort.
 */
import { expect } from 'chai';
import { encode, encodeChat } from 'gpt-tokenizer';
import { createLlm, type LlmMessage, type LlmRequest, type LlmStreamEvent, type LlmTool } from '../../providers/llm';
import { SandboxLlm } from '../../providers/llm/sandbox';
import { countMessages, countTokens } from '../../providers/llm/tokens';
import { collect } from '../helpers/llm';

const llm = new SandboxLlm();

const user = (content: string): LlmMessage => ({ role: 'user', content });
const system: LlmMessage = { role: 'system', content: 'You are the front desk of Acme Dental.' };

const bookAppointment: LlmTool = {
  name: 'book_appointment',
  description: 'Books an appointment for a patient',
  parameters: {
    type: 'object',
    properties: {
      email: { type: 'string', description: 'patient email' },
      phone: { type: 'string' },
      date: { type: 'string' },
      party_size: { type: 'integer' },
      kind: { type: 'string', enum: ['Cleaning', 'Checkup'] },
      name: { type: 'string' },
    },
    required: ['email', 'date', 'name'],
  },
};
const endCall: LlmTool = { name: 'end-call', description: 'Hangs up', parameters: { type: 'object', properties: {} } };

describe('sandbox LLM (docs/api-notes.md "Sandbox LLM")', () => {
  it('says the greeting verbatim while the conversation has no user message, and not after one', async () => {
    const hints = { greeting: 'Hi, this is Acme Dental — how can I help?' };
    const first = await llm.complete({ messages: [system], hints });
    expect(first).to.include({ content: hints.greeting, finishReason: 'stop', model: 'sandbox' });
    expect(first.toolCalls).to.deep.equal([]);
    const later = await llm.complete({ messages: [system, { role: 'assistant', content: hints.greeting }, user('hello')], hints });
    expect(later.content).to.not.equal(hints.greeting);
  });

  it('says a refusal verbatim before anything else (greeting, say, tools, knowledge)', async () => {
    const res = await llm.complete({
      messages: [system, user('please book appointment email: a@b.co')],
      tools: [bookAppointment],
      hints: { refusal: "I can't help with that.", say: 'Say this', ask: 'Ask this', greeting: 'Hi', knowledge: [{ text: 'K.', source: 'faq', score: 1 }] },
    });
    expect(res).to.include({ content: "I can't help with that.", finishReason: 'stop' });
    expect(res.toolCalls).to.deep.equal([]);
  });

  it("says a playbook 'say' node and an 'ask' question verbatim", async () => {
    expect((await llm.complete({ messages: [system, user('hi')], hints: { say: 'We open at 9am.', ask: 'What is your name?' } })).content).to.equal('We open at 9am.');
    expect((await llm.complete({ messages: [system, user('hi')], hints: { ask: 'What is your name?' } })).content).to.equal('What is your name?');
  });

  it('calls the tool the user names (spaces for underscores, case-insensitive) with key: value, key=value and typed values', async () => {
    const res = await llm.complete({
      messages: [system, user('Please Book Appointment for name: "Doe, Jane" kind=cleaning party_size: 3 — reach me at jane.doe@example.com or +1 415-555-0100, on 2026-12-01.')],
      tools: [endCall, bookAppointment],
    });
    expect(res.finishReason).to.equal('tool_calls');
    expect(res.content).to.equal(null);
    expect(res.toolCalls).to.have.length(1);
    const [call] = res.toolCalls;
    expect(call.name).to.equal('book_appointment');
    expect(call.id).to.match(/^call_[0-9a-f]{24}$/);
    expect(JSON.parse(call.arguments)).to.deep.equal({
      email: 'jane.doe@example.com',
      phone: '+14155550100',
      date: '2026-12-01',
      party_size: 3,
      kind: 'Cleaning',
      name: 'Doe, Jane',
    });
  });

  it('matches /toolname and the raw name with a dash; calls with what it has when required properties are missing', async () => {
    const slash = await llm.complete({ messages: [user('/end-call now')], tools: [bookAppointment, endCall] });
    expect(slash.toolCalls.map((c) => [c.name, c.arguments])).to.deep.equal([['end-call', '{}']]);
    const spaced = await llm.complete({ messages: [user('ok, END CALL')], tools: [endCall] });
    expect(spaced.toolCalls[0]?.name).to.equal('end-call');
    const partial = await llm.complete({ messages: [user('book appointment please')], tools: [bookAppointment] });
    expect(partial.toolCalls[0]).to.include({ name: 'book_appointment', arguments: '{}' });
  });

  it('does not call a tool when the last user message names none, or when the last message is not the user', async () => {
    const none = await llm.complete({ messages: [user('what are your hours?')], tools: [bookAppointment, endCall] });
    expect(none.toolCalls).to.deep.equal([]);
    expect(none.finishReason).to.equal('stop');
    // "appointment" alone or "booking" is not the tool's name.
    const near = await llm.complete({ messages: [user('I have an appointment; booking is hard')], tools: [bookAppointment] });
    expect(near.toolCalls).to.deep.equal([]);
    const notUser = await llm.complete({ messages: [user('book appointment'), { role: 'assistant', content: 'Sure.' }], tools: [bookAppointment] });
    expect(notUser.toolCalls).to.deep.equal([]);
  });

  it('gives the same call id for the same conversation and a different one for another turn', async () => {
    const req: LlmRequest = { messages: [user('book appointment date: 2026-01-02')], tools: [bookAppointment] };
    const a = await llm.complete(req);
    const b = await llm.complete(req);
    expect(a).to.deep.equal(b);
    const c = await llm.complete({ ...req, messages: [user('hi'), { role: 'assistant', content: 'Hello' }, ...req.messages] });
    expect(c.toolCalls[0].id).to.not.equal(a.toolCalls[0].id);
  });

  it('says a tool result as plain sentences, and a failure as an apology with an offer of a person — never JSON, the error or the tool name', async () => {
    const call = { id: 'call_1', name: 'book_appointment', arguments: '{}' };
    const base: LlmMessage[] = [user('book appointment'), { role: 'assistant', content: null, toolCalls: [call] }];
    const ok = await llm.complete({ messages: [...base, { role: 'tool', toolCallId: 'call_1', content: '{ "confirmation": "A-17",\n "startTime": "2026-12-01T09:00", "deposit": 0, "paid": false, "slot": {"room": 2} }' }], tools: [bookAppointment], hints: { ask: 'What else?' } });
    expect(ok).to.include({ content: 'All done. The confirmation is A-17, the start time is Tuesday, December 1 at 9:00 AM, the deposit is 0 and it is not paid.', finishReason: 'stop' });
    const wrapped = await llm.complete({ messages: [...base, { role: 'tool', toolCallId: 'call_1', content: '{"ok":true,"output":{"status":"shipped"}}' }] });
    expect(wrapped.content).to.equal('All done. The status is shipped.');
    for (const content of ['{"error":"slot taken"}', '{"ok":false,"error":"Skill \\"book_appointment\\" runs only for a verified caller"}']) {
      const failed = await llm.complete({ messages: [...base, { role: 'tool', toolCallId: 'call_1', content }] });
      expect(failed.content).to.equal("I'm sorry, I couldn't complete that just now. Would you like me to connect you with a member of our team?");
    }
    const long = await llm.complete({ messages: [...base, { role: 'tool', toolCallId: 'call_1', content: 'word '.repeat(200) }] });
    expect(long.content!.length).to.be.at.most('All done. '.length + 200);
    expect(long.content).to.match(/^All done\. word word .*…$/);
  });

  it('says a booking as a person would: times in words in the agent\'s time zone, no ids unless asked, durations with their unit', async () => {
    const call = { id: 'call_1', name: 'book_appointment', arguments: '{}' };
    const booked = JSON.stringify({ ok: true, output: { bookingId: 'bk_cb67f0a1c2', status: 'confirmed', startTime: '2026-12-03T16:00:00.000Z', durationMinutes: 30, timeZone: 'America/Chicago' } });
    const turn = (ask: string, hints: LlmRequest['hints']) =>
      llm.complete({ messages: [user(ask), { role: 'assistant', content: null, toolCalls: [call] }, { role: 'tool', toolCallId: 'call_1', content: booked }], hints });
    const said = await turn('book me for Thursday at ten', { timeZone: 'America/Chicago' });
    expect(said.content).to.equal('All done. The status is confirmed, the start time is Thursday, December 3 at 10:00 AM and the duration is 30 minutes.');
    expect(said.content).to.not.match(/bk_|\d{4}-\d{2}-\d{2}|T\d{2}:|America\/Chicago|minutes:/);
    // Another zone, another wall time; no zone given is UTC.
    expect((await turn('book me', { timeZone: 'Europe/Paris' })).content).to.contain('Thursday, December 3 at 5:00 PM');
    expect((await turn('book me', {})).content).to.contain('Thursday, December 3 at 4:00 PM');
    // Asked for the reference, the id is said too.
    expect((await turn('book me and give me the reference number', { timeZone: 'America/Chicago' })).content).to.equal(
      'All done. The booking id is bk_cb67f0a1c2, the status is confirmed, the start time is Thursday, December 3 at 10:00 AM and the duration is 30 minutes.',
    );
    const slots = JSON.stringify({ available: true, slotCount: 1, nextSlot: '2026-12-04T09:30:00-06:00', conversationId: 'conv_a1b2c3d4e5', slots: [{ start: 'x' }] });
    const free = await llm.complete({ messages: [user('any time friday?'), { role: 'assistant', content: null, toolCalls: [call] }, { role: 'tool', toolCallId: 'call_1', content: slots }], hints: { timeZone: 'America/New_York' } });
    expect(free.content).to.equal('All done. It is available, the slot count is 1 and the next slot is Friday, December 4 at 10:30 AM.');
  });

  it('answers from knowledge with the sentences that match the question best, leaving out headings and citations', async () => {
    const text = 'We are open Monday to Friday, 8am to 6pm. ' + 'Saturdays we open at 9am and close at noon for cleanings only. '.repeat(6);
    const res = await llm.complete({
      messages: [system, user('when are you open?')],
      hints: { knowledge: [{ text, source: 'https://acme.example/hours', score: 0.91 }, { text: 'Other.', source: 'other', score: 0.2 }] },
    });
    expect(res.content).to.not.contain('source').and.not.contain('acme.example');
    expect(res.content!.length).to.be.at.most(300);
    expect(res.content!.startsWith('We are open Monday to Friday, 8am to 6pm. Saturdays')).to.equal(true);
    // Headings (a Markdown one, and a short line without closing punctuation) are not glued into the answer;
    // the sentence sharing the question's key words wins over the chunk's first one.
    const faq = '# Clinic FAQ\n\nOPENING HOURS\nWe are open Monday to Friday from 8am to 6pm.\n\nParking\nParking is free behind the building.';
    const parking = await llm.complete({ messages: [user('Is there parking nearby?')], hints: { knowledge: [{ text: faq, source: 'Clinic FAQ', score: 1 }] } });
    expect(parking.content).to.equal('Parking is free behind the building.');
    const hours = await llm.complete({ messages: [user('What time do you open on Monday?')], hints: { knowledge: [{ text: faq, source: 'Clinic FAQ', score: 1 }] } });
    expect(hours.content).to.equal('We are open Monday to Friday from 8am to 6pm.');
    const oneLong = await llm.complete({ messages: [user('?')], hints: { knowledge: [{ text: 'x '.repeat(400), source: 'doc.pdf', score: 1 }] } });
    expect(oneLong.content).to.match(/^x x .*…$/);
    expect(oneLong.content!.length).to.be.at.most(300);
  });

  it('starts a playbook by its tool when the message contains a trigger phrase or shares the key words of whenToUse', async () => {
    const start: LlmTool = { name: 'start_playbook_book_appointment', description: 'Starts booking', parameters: { type: 'object', properties: {} } };
    const cancel: LlmTool = { name: 'start_playbook_cancel_visit', description: 'Cancels', parameters: { type: 'object', properties: {} } };
    const playbooks = [
      { tool: start.name, name: 'book_appointment', triggerPhrases: ['see the dentist'], whenToUse: 'The caller wants to book an appointment or a visit' },
      { tool: cancel.name, name: 'cancel_visit', triggerPhrases: [], whenToUse: 'The caller wants to cancel an existing appointment' },
    ];
    const ask = (text: string) => llm.complete({ messages: [system, user(text)], tools: [bookAppointment, start, cancel], hints: { playbooks } });
    expect((await ask("I'd like to book an appointment")).toolCalls.map((c) => [c.name, c.arguments])).to.deep.equal([[start.name, '{}']]);
    expect((await ask('Can I SEE the dentist, tomorrow?')).toolCalls.map((c) => c.name)).to.deep.equal([start.name]);
    expect((await ask('I need to cancel my appointment')).toolCalls.map((c) => c.name)).to.deep.equal([cancel.name]);
    // One shared key word is not enough, and a question about something else starts nothing.
    expect((await ask('Is my appointment still on?')).toolCalls).to.deep.equal([]);
    expect((await ask('What time are you open?')).toolCalls).to.deep.equal([]);
    // A tool the message names comes first; a playbook whose tool is not offered never starts.
    expect((await ask('please book appointment')).toolCalls.map((c) => c.name)).to.deep.equal(['book_appointment']);
    expect((await llm.complete({ messages: [user("I'd like to book an appointment")], tools: [bookAppointment], hints: { playbooks } })).toolCalls).to.deep.equal([]);
  });

  it('otherwise answers a fixed reply that echoes the last user message', async () => {
    const req: LlmRequest = { messages: [system, user('  I   need help\nwith billing ')] };
    const a = await llm.complete(req);
    expect(a.content).to.equal('I understand you said: "I need help with billing". How can I help further?');
    expect(await llm.complete(req)).to.deep.equal(a);
    expect((await llm.complete({ messages: [system] })).content).to.equal('Hello! How can I help you today?');
  });

  it('streams one delta per token, then the done event; the deltas make the content', async () => {
    const req: LlmRequest = { messages: [user('hello')], hints: { say: 'Our clinic opens at nine, and parking is free.' } };
    const events = await collect(llm.stream(req));
    const deltas = events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    expect(deltas.length).to.equal(encode(req.hints!.say!).length);
    expect(deltas.join('')).to.equal(req.hints!.say);
    expect(events.map((e) => e.type)).to.deep.equal([...deltas.map(() => 'delta'), 'done']);
    const done = events[events.length - 1] as Extract<LlmStreamEvent, { type: 'done' }>;
    expect(done.response).to.deep.equal(await llm.complete(req));
  });

  it('streams an answer said again with the same deltas, and a knowledge chunk read again answers each question by its own key words', async () => {
    const say = 'Parking is free behind the building, and we open at nine.';
    const deltasOf = async () => (await collect(llm.stream({ messages: [user('x')], hints: { say } }))).filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    const first = await deltasOf();
    const again = await deltasOf();
    expect(again).to.deep.equal(first);
    expect(again.join('')).to.equal(say);
    expect(again.length).to.equal(encode(say).length);
    // The same chunk's sentences are remembered; the question's key words still pick the sentence.
    const chunk = { text: 'We accept Delta Dental and MetLife. A cleaning costs $90. Parking is free behind the building.', source: 'Handbook', score: 1 };
    const answer = async (q: string) => (await llm.complete({ messages: [user(q)], hints: { knowledge: [chunk] } })).content;
    expect(await answer('How much is a cleaning?')).to.equal('A cleaning costs $90.');
    expect(await answer('Do you accept Delta Dental?')).to.equal('We accept Delta Dental and MetLife.');
    expect(await answer('How much is a cleaning?')).to.equal('A cleaning costs $90.');
  });

  it('keeps multi-byte characters whole when a token ends inside one', async () => {
    const say = 'Tschüss 😀🦷 — à bientôt 日本語';
    const events = await collect(llm.stream({ messages: [user('x')], hints: { say } }));
    const deltas = events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    expect(deltas.join('')).to.equal(say);
    for (const d of deltas) expect(d).to.not.include('\uFFFD');
  });

  it('streams a tool call as one tool_call event, then done', async () => {
    const events = await collect(llm.stream({ messages: [user('/book_appointment email: a@b.co')], tools: [bookAppointment] }));
    expect(events.map((e) => e.type)).to.deep.equal(['tool_call', 'done']);
    const call = (events[0] as Extract<LlmStreamEvent, { type: 'tool_call' }>).call;
    expect(JSON.parse(call.arguments)).to.deep.equal({ email: 'a@b.co' });
    expect((events[1] as Extract<LlmStreamEvent, { type: 'done' }>).response.toolCalls).to.deep.equal([call]);
  });

  it('counts usage with the tokenizer: prompt = messages with per-message overhead, completion = answer tokens', async () => {
    const messages: LlmMessage[] = [system, user('What are your hours on Saturday?'), { role: 'assistant', content: 'Let me check.' }, user('thanks')];
    const res = await llm.complete({ messages, hints: { ask: 'May I have your name, please?' } });
    // gpt-tokenizer's own chat encoding for gpt-4o (3 per message + 3 priming, as in OpenAI's cookbook).
    const expectedPrompt = encodeChat(messages.map((m) => ({ role: m.role as 'user', content: m.content! })), 'gpt-4o').length;
    expect(countMessages(messages)).to.equal(expectedPrompt);
    expect(res.usage).to.deep.equal({ promptTokens: expectedPrompt, completionTokens: encode('May I have your name, please?').length, totalTokens: expectedPrompt + encode('May I have your name, please?').length });
    const call = await llm.complete({ messages, tools: [endCall], hints: {} });
    expect(call.usage.completionTokens).to.equal(0 + countTokens('I understand you said: "thanks". How can I help further?'));
    const tool = await llm.complete({ messages: [user('end call')], tools: [endCall] });
    expect(tool.usage.completionTokens).to.equal(encode('end-call').length + encode('{}').length);
  });

  it('cuts a text answer to maxTokens with finishReason length', async () => {
    const res = await llm.complete({ messages: [user('hi')], hints: { say: 'one two three four five six seven' }, maxTokens: 3 });
    expect(res).to.include({ content: 'one two three', finishReason: 'length' });
    expect(res.usage.completionTokens).to.equal(3);
  });

  it('waits SANDBOX_LLM_TOKEN_DELAY_MS between tokens, and stops with the AbortSignal reason when aborted', async () => {
    const slow = createLlm({ SANDBOX_LLM_TOKEN_DELAY_MS: '25' });
    expect(slow.name).to.equal('sandbox');
    const say = 'one two three four five';
    const started = Date.now();
    await slow.complete({ messages: [user('x')], hints: { say } });
    expect(Date.now() - started).to.be.at.least((encode(say).length - 1) * 25 - 5);

    const controller = new AbortController();
    const seen: string[] = [];
    let caught: unknown;
    try {
      for await (const ev of slow.stream({ messages: [user('x')], hints: { say }, signal: controller.signal })) {
        if (ev.type === 'delta') seen.push(ev.content);
        if (seen.length === 2) controller.abort();
      }
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(Error);
    expect((caught as Error).name).to.equal('AbortError');
    expect(seen).to.have.length(2);

    const pre = new AbortController();
    pre.abort(new Error('caller went away'));
    let preErr: unknown;
    await llm.complete({ messages: [user('x')], signal: pre.signal }).catch((e) => (preErr = e));
    expect((preErr as Error).message).to.equal('caller went away');
  });

  it('createLlm: sandbox by default; unknown providers, openai without a key and malformed numbers are refused', () => {
    expect(createLlm({}).name).to.equal('sandbox');
    expect(() => createLlm({ LLM_PROVIDER: 'claude' })).to.throw(/LLM_PROVIDER=claude/);
    expect(() => createLlm({ LLM_PROVIDER: 'openai' })).to.throw(/LLM_API_KEY/);
    expect(() => createLlm({ SANDBOX_LLM_TOKEN_DELAY_MS: 'fast' })).to.throw(/SANDBOX_LLM_TOKEN_DELAY_MS/);
    expect(() => createLlm({ LLM_PROVIDER: 'openai', LLM_API_KEY: 'k', LLM_TIMEOUT_MS: '-1' })).to.throw(/LLM_TIMEOUT_MS/);
    expect(createLlm({ LLM_PROVIDER: 'openai', LLM_API_KEY: 'k' }).name).to.equal('openai');
  });
});

describe('sandbox LLM: a caller\'s stop, tool_choice and response_format (docs/api-notes.md "Sandbox LLM")', () => {
  const weather: LlmTool = { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };

  it('ends a text answer before the first stop sequence, then applies the token limit', async () => {
    expect((await llm.complete({ messages: [user('hello there')], stop: ['there', 'xyz'] })).content).to.equal('I understand you said: "hello ');
    const cut = await llm.complete({ messages: [user('hello there')], stop: ['How'], maxTokens: 2 });
    expect(cut.finishReason).to.equal('length');
    expect(countTokens(cut.content!)).to.equal(2);
  });

  it('follows toolChoice: none calls nothing, a named function always, required the first tool when none is named', async () => {
    expect((await llm.complete({ messages: [user('get weather city: Oslo')], tools: [weather], toolChoice: 'none' })).toolCalls).to.deep.equal([]);
    const named = await llm.complete({ messages: [user('city: Oslo')], tools: [weather], toolChoice: { name: 'get_weather' } });
    expect(named.toolCalls.map((c) => [c.name, c.arguments])).to.deep.equal([['get_weather', '{"city":"Oslo"}']]);
    expect((await llm.complete({ messages: [user('anything')], tools: [weather], toolChoice: 'required' })).toolCalls[0].name).to.equal('get_weather');
    expect((await llm.complete({ messages: [user('anything')], tools: [weather] })).toolCalls).to.deep.equal([]);
  });

  it('answers a response format with one JSON object read from the message', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' }, nights: { type: 'integer' } }, required: ['city', 'nights'] };
    const out = await llm.complete({ messages: [user('city: Lima, nights: 2')], responseFormat: { type: 'json_schema', name: 'b', schema } });
    expect(JSON.parse(out.content!)).to.deep.equal({ city: 'Lima', nights: 2 });
    const obj = await llm.complete({ messages: [user('hello')], responseFormat: 'json_object' });
    expect(JSON.parse(obj.content!)).to.deep.equal({ answer: 'I understand you said: "hello". How can I help further?' });
  });
});
