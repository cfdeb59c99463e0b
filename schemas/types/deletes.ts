/**
 * Response data of the deletes (docs/api-notes.md "Deletes"): `DELETE /agents/{id}`,
 * `DELETE /agents/{agentId}/knowledge/sources/{id}`, `DELETE /agents/{agentId}/playbooks/{id}` and `DELETE /numbers/{id}`.
 */

/** Response data of `DELETE /agents/{id}`: the agent is archived; its versions and conversations stay readable. */
export interface AgentDeletion {
  /** `agt_…` */
  id: string;
  deleted: true;
  /** @format date-time */
  archivedAt: string;
  /** Numbers that were assigned to the agent, now unassigned. */
  unassignedNumberIds: string[];
  /** The agent's publishable (widget) keys, now revoked. */
  revokedPublishableKeyIds: string[];
}

/** Response data of `DELETE /agents/{agentId}/knowledge/sources/{id}`. */
export interface KnowledgeSourceDeletion {
  /** `ks_…` */
  id: string;
  agentId: string;
  deleted: true;
  /** @format date-time */
  deletedAt: string;
  /** True when a published version lists the source: its chunks stay for the conversations pinned to that version. */
  chunksKept: boolean;
}

/** Response data of `DELETE /agents/{agentId}/playbooks/{id}` (the new draft version is the `ETag`). */
export interface PlaybookDeletion {
  id: string;
  agentId: string;
  name: string;
  deleted: true;
  /** The draft version after the delete. */
  draftVersion: number;
}

/** Response data of `DELETE /numbers/{id}`: the number is released. */
export interface ReleasedNumber {
  /** `num_…` */
  id: string;
  e164: string;
  status: 'released';
  /** The telephony provider it was released at; null for a reservation let go (nothing was bought). */
  provider: string | null;
  providerNumberId: string | null;
}
