/** Shared fixtures of the agent suites. */
import type { PlaybookGraph } from '../../schemas/types/agents';

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
    edges: [
      { from: 'start', to: 'ask_name' },
      { from: 'ask_name', to: 'ask_phone' },
      { from: 'ask_phone', to: 'ask_time' },
      { from: 'ask_time', to: 'book' },
      { from: 'book', to: 'end' },
    ],
  };
}
