/** Shared fixtures of the agent suites. */
import type { PlaybookGraph } from '../../schemas/types/agents';

/**
 * The edges of a path through a playbook graph (schemas/types/agents.ts `PlaybookGraph`):
 * `chain('a', 'b', 'c')` is `[{ from: 'a', to: 'b' }, { from: 'b', to: 'c' }]`, unconditional edges in order.
 */
export function chain(...ids: string[]): PlaybookGraph['edges'] {
  return ids.slice(1).map((to, i) => ({ from: ids[i], to }));
}

/** start → ask name → ask phone → ask start_time → book → end */
export function intakeGraph(): PlaybookGraph {
  return {
    nodes: [
      { id: 'start', type: 'start' },
      { id: 'ask_name', type: 'ask', prompt: 'Your name?', gathers: 'name' },
      { id: 'ask_phone', type: 'ask', prompt: 'Your phone?', gathers: 'phone' },
      { id: 'ask_time', type: 'ask', prompt: 'When?', gathers: 'start_time' },
      { id: 'book', type: 'skill', skill: 'book_appointment' },
      { id: 'end', type: 'end' },
    ],
    edges: chain('start', 'ask_name', 'ask_phone', 'ask_time', 'book', 'end'),
  };
}
