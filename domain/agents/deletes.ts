/**
 * Rules of the deletes (docs/api-notes.md "Deletes"): what may be deleted, and what refuses a delete with 409.
 * Plain functions: the API handlers, the services and the repositories all ask these.
 */

/** Campaign statuses that keep their agent from being deleted: the dialer would still hand calls to it. */
export const CAMPAIGN_STATUSES_HOLDING_AGENT: readonly string[] = ['running', 'paused'];

/** Whether a campaign in `status` keeps its agent from being deleted (cancel or finish it first). */
export function campaignHoldsAgent(status: string): boolean {
  return CAMPAIGN_STATUSES_HOLDING_AGENT.includes(status);
}

/** Whether a knowledge source in `status` may be deleted: only once its ingestion stopped writing (`ready`, `failed`). */
export function knowledgeSourceDeletable(status: string): boolean {
  return status === 'ready' || status === 'failed';
}

/**
 * Why a number cannot be released, or null when it can: an assigned number still answers calls and texts for
 * an agent, so it is unassigned (`POST /numbers/{id}/assign` with `agentId: null`) before it is released.
 */
export function numberReleaseBlocker(n: { status: string; agentId: string | null }): 'number_assigned' | null {
  return n.agentId ? 'number_assigned' : null;
}
