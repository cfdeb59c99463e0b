/** Shared fixtures of the agent suites. */
import type { PlaybookGraph } from '../../schemas/types/playbooks';
import type { Db } from '../../db';
import { createAgentActivities } from '../../activities/agents';
import { publishRequestHash } from '../../domain/agents/compile';

/**
 * The edges of a path through a playbook graph (schemas/types/playbooks.ts `PlaybookGraph`):
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

/**
 * Publishes the agent's draft through the real `compileAndPublishAgent` activity (the work behind
 * `POST /agents/{id}/publish`, spec operation publishAgent), with no note, as `org.keyId`.
 * @returns the activity's result (the new version).
 */
export function publishDraft(db: Db, org: { orgId: string; keyId: string }, agentId: string, idempotencyKey: string) {
  return createAgentActivities({ db }).compileAndPublishAgent({ orgId: org.orgId, agentId, idempotencyKey, requestHash: publishRequestHash({ note: null }), note: null, publishedBy: org.keyId });
}
