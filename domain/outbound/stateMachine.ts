/**
 * Campaign state machine (docs/voice.md "Outbound voice campaigns"):
 *
 *   draft ──launch──▶ running ──pause──▶ paused ──resume──▶ running
 *   running ──(every attempt final)──▶ completed
 *   draft | running | paused ──cancel──▶ cancelled
 *
 * `completed` and `cancelled` are final. Any other (state, action) pair answers 409 `invalid_transition`.
 */
import { ApiError } from '../errors';
import type { Campaign } from '../../schemas/types/outbound';

/** A campaign status. */
export type CampaignStatus = Campaign['status'];
/** An action of the API (or `complete`, taken by the dialer workflow). */
export type CampaignAction = 'launch' | 'pause' | 'resume' | 'cancel' | 'complete';

const TRANSITIONS: Record<CampaignAction, Partial<Record<CampaignStatus, CampaignStatus>>> = {
  launch: { draft: 'running' },
  pause: { running: 'paused' },
  resume: { paused: 'running' },
  cancel: { draft: 'cancelled', running: 'cancelled', paused: 'cancelled' },
  complete: { running: 'completed' },
};

/** The state after `action`, or undefined when the action is not allowed from `from`. */
export function nextStatus(from: CampaignStatus, action: CampaignAction): CampaignStatus | undefined {
  return TRANSITIONS[action][from];
}

/** The state after `action`. @throws ApiError 409 `invalid_transition` (with `status` and `allowedActions`) */
export function transitionOr409(from: CampaignStatus, action: CampaignAction): CampaignStatus {
  const to = nextStatus(from, action);
  if (!to) {
    const allowed = (Object.keys(TRANSITIONS) as CampaignAction[]).filter((a) => a !== 'complete' && TRANSITIONS[a][from]);
    throw new ApiError(409, 'invalid_transition', `A ${from} campaign cannot ${action}${allowed.length ? `; allowed: ${allowed.join(', ')}` : ' (it is final)'}`, {
      extra: { status: from, allowedActions: allowed },
    });
  }
  return to;
}
