/** Playbooks of an agent and their graphs (the Playbooks rows; docs/api-notes.md "Agents": playbook graphs). `npm run schemas` generates one JSON Schema per type. */

/**
 * Kind of a playbook node. `escalate` hands the person to a member of the team and ends the playbook and the
 * conversation (`escalated`; docs/api-notes.md "Conversations": escalation).
 */
export type PlaybookNodeType = 'start' | 'ask' | 'say' | 'skill' | 'branch' | 'end' | 'escalate';

/** One node of a playbook graph. Fields used depend on `type`. */
export interface PlaybookNode {
  /** Unique within the graph. @pattern ^[A-Za-z0-9_-]{1,64}$ */
  id: string;
  type: PlaybookNodeType;
  /** `ask`: the question; `say`: the text; `escalate`: what is said first (default "I'll connect you with a member of our team."). @maxLength 2000 */
  prompt?: string;
  /** `ask`: the variable the answer is stored in. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  gathers?: string;
  /** `skill`: the skill name. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  skill?: string;
  /** `skill`: skill input name → conversation variable (default: the variable of the same name). */
  inputs?: Record<string, string>;
  /** `branch`: the variable whose value selects the outgoing edge. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  on?: string;
}

/** A directed edge between two nodes. */
export interface PlaybookEdge {
  /** @maxLength 64 */
  from: string;
  /** @maxLength 64 */
  to: string;
  /** `branch` edges: the value of the branch variable that selects this edge; omitted = default. @maxLength 200 */
  when?: string;
  /**
   * `true` on the one edge a `skill` node follows when its skill fails, times out or is refused (docs/api-notes.md
   * "Agents": playbook graphs). A skill node without one says a short apology and offers a member of the team.
   */
  onError?: boolean;
}

/**
 * A playbook graph (`GET/PUT /agents/{agentId}/playbooks/{id}/graph`); PUT replaces it.
 * @additionalProperties false
 */
export interface PlaybookGraph {
  /** @maxItems 500 */
  nodes: PlaybookNode[];
  /** @maxItems 2000 */
  edges: PlaybookEdge[];
}

/** A phrase that starts a playbook when a message contains it (whole words, case and punctuation ignored). @minLength 1 @maxLength 200 */
type TriggerPhrase = string;

/**
 * Request body of `POST /agents/{agentId}/playbooks`.
 * @additionalProperties false
 */
export interface PlaybookCreate {
  /** Unique per agent. @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** What the playbook does (shown to the model with its tool and in the pre-publish report). @maxLength 1000 */
  description?: string | null;
  /**
   * When the agent should start it, in plain words (e.g. "the caller wants to book an appointment"): the model
   * reads it in the playbook's tool `start_playbook_<name>`; the sandbox LLM matches its key words. @maxLength 1000
   */
  whenToUse?: string | null;
  /** Phrases that start it (e.g. "book an appointment"). @maxItems 20 */
  triggerPhrases?: TriggerPhrase[];
  /** Whether it runs only for a verified caller (docs/api-notes.md "Caller verification"; default false). */
  requiresVerifiedCaller?: boolean;
  /** Initial graph; default is a start node followed by an end node. */
  graph?: PlaybookGraph;
}

/**
 * Request body of `PATCH /agents/{agentId}/playbooks/{id}` (updatePlaybook): the members to change (null clears
 * `description` and `whenToUse`); the graph has its own PUT.
 * @additionalProperties false
 */
export interface PlaybookPatch {
  /** @maxLength 1000 */
  description?: string | null;
  /** @maxLength 1000 */
  whenToUse?: string | null;
  /** @maxItems 20 */
  triggerPhrases?: TriggerPhrase[];
  requiresVerifiedCaller?: boolean;
}

/** A playbook: a multi-turn node graph that gathers inputs and drives skills. */
export interface Playbook {
  /** `pbk_…` */
  id: string;
  agentId: string;
  name: string;
  description: string | null;
  /** When the agent should start it (null: only when asked for by name or trigger phrase). */
  whenToUse: string | null;
  triggerPhrases: string[];
  requiresVerifiedCaller: boolean;
  graph: PlaybookGraph;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}


/** Page of playbooks. */
export interface PlaybookPage {
  items: Playbook[];
  nextCursor: string | null;
  hasMore: boolean;
}
