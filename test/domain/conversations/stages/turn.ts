/**
 * A turn to drive one stage of the runtime with (domain/conversations/turn/): a clinic agent, a conversation,
 * ports with a scripted model, and the turn opened and admitted as runTurn does, its streamed events kept.
 */
import type { CompiledAgent } from '../../../../domain/agents/compile';
import type { LlmRequest, LlmResponse, LlmStreamEvent, LlmToolCall, LlmProvider } from '../../../../domain/conversations/llm';
import type { SkillCall, TurnContext, TurnEvent, TurnOptions, TurnPorts } from '../../../../domain/conversations/turn/contract';
import { admit, openTurn } from '../../../../domain/conversations/turn/admit';
import type { Turn, TurnState } from '../../../../domain/conversations/turn/state';
import type { CallerVerification } from '../../../../schemas/types/guardrails';
import type { PlaybookGraph } from '../../../../schemas/types/playbooks';
import { chain } from '../../../api/agents-fixtures';
import { compiledAgent } from '../../../helpers/agents';

/** ask name → book_visit → say the confirmation → end. */
export const bookingGraph: PlaybookGraph = {
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'ask_name', type: 'ask', prompt: 'May I have your name?', gathers: 'name' },
    { id: 'book', type: 'skill', skill: 'book_visit' },
    { id: 'confirm', type: 'say', prompt: 'Booked for {{name}}: {{book_visit_confirmation}}.' },
    { id: 'end', type: 'end' },
  ],
  edges: chain('start', 'ask_name', 'book', 'confirm', 'end'),
};

export const bookVisit: CompiledAgent['skills'][number] = { name: 'book_visit', type: 'http_request', description: 'Books a visit', config: { url: 'https://x.example/book', method: 'POST', inputs: [{ name: 'name' }] } };

/** A clinic agent with the `book_visit` skill and the `book_appointment` playbook. */
export const clinic = (over: Partial<CompiledAgent> = {}): CompiledAgent =>
  compiledAgent({ name: 'Clinic', skills: [bookVisit], playbooks: [{ name: 'book_appointment', description: 'Books a visit', graph: bookingGraph, triggerPhrases: ['see the dentist'] }], ...over });

/** PIN verification on, for protected actions. */
export const pinCheck = (over: Partial<CallerVerification> = {}): CallerVerification => ({ enabled: true, method: 'pin', requiredForSkills: [], maxAttempts: 3, required: 'for_protected_actions', ...over });
/** Variables of a conversation whose caller must still give the PIN. */
export const pinDue = { caller_verified: 'false', caller_verification: 'pin_required', caller_pin_attempts: '0' };

export const conversationOf = (agent: CompiledAgent, over: Partial<TurnContext> = {}): TurnContext => ({
  id: 'cnv_stage000',
  orgId: 'org_stage',
  agentId: 'agt_stage000',
  channel: 'chat',
  agent,
  variables: {},
  playbook: null,
  turn: 0,
  history: [],
  startedAtMs: Date.now(),
  ...over,
});

/** One answer of the scripted model. */
export interface Scripted {
  content: string;
  toolCalls?: LlmToolCall[];
  finishReason?: LlmResponse['finishReason'];
}

/** A model that answers `answers` in order, streaming each word; keeps every request. */
export function scriptedModel(answers: Scripted[]): LlmProvider & { requests: LlmRequest[] } {
  const requests: LlmRequest[] = [];
  const next = (req: LlmRequest): LlmResponse => {
    requests.push(req);
    const a = answers[requests.length - 1];
    if (!a) throw new Error(`the script has no answer ${requests.length}`);
    return { content: a.content, toolCalls: a.toolCalls ?? [], finishReason: a.finishReason ?? 'stop', usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 }, model: 'scripted-1' };
  };
  return {
    name: 'scripted',
    requests,
    complete: async (req) => next(req),
    async *stream(req): AsyncIterable<LlmStreamEvent> {
      const response = next(req);
      for (const piece of response.content?.match(/\S+\s*/g) ?? []) yield { type: 'delta', content: piece };
      yield { type: 'done', response };
    },
  };
}

/** Ports over a scripted model and an in-memory skill runner that keeps its calls. */
export function portsOf(over: Partial<TurnPorts> = {}, answers: Scripted[] = []): TurnPorts & { skillCalls: SkillCall[] } {
  const skillCalls: SkillCall[] = [];
  return {
    skillCalls,
    llm: scriptedModel(answers),
    searchKnowledge: async () => [],
    runSkill: async (call) => {
      skillCalls.push(call);
      return { output: { confirmation: 'A-17' } };
    },
    now: () => performance.now(),
    wallClock: () => Date.now(),
    ...over,
  };
}

/** The turn opened and admitted as runTurn does, and the events it streams. */
export function begin(ctx: TurnContext, userText: string | null, ports: TurnPorts, opts: TurnOptions = {}): { turn: Turn; state: TurnState; events: TurnEvent[] } {
  const events: TurnEvent[] = [];
  const turn = openTurn(ctx, userText, ports, (e) => events.push(e), opts);
  return { turn, state: admit(turn), events };
}

/** What was streamed as `message.delta`, joined. */
export const streamed = (events: readonly TurnEvent[]) => events.map((e) => (e.type === 'message.delta' ? e.data.content : '')).join('');

/** The stage's end, or a failure naming that it went on. */
export function ended<T>(step: { next: T } | { done: import('../../../../domain/conversations/turn/state').TurnEnd }) {
  if (!('done' in step)) throw new Error('expected the stage to end the turn');
  return step.done;
}

/** The stage's next state, or a failure naming that it ended. */
export function went<T>(step: { next: T } | { done: unknown }): T {
  if (!('next' in step)) throw new Error('expected the stage to go on');
  return step.next;
}
