/**
 * Normalized carrier statuses and their verdicts, shared by the carrier adapters, the callback
 * endpoint and the registration workflow (pure: safe inside workflow code).
 * - brand: `PENDING` → `VERIFIED` (approved) or `UNVERIFIED` (rejected)
 * - campaign: `PENDING` → `APPROVED` → `PROVISIONED` (carriers finished provisioning), or `REJECTED`
 */

/** Verdict class of a normalized carrier status. */
export type CarrierVerdict = 'pending' | 'approved' | 'rejected' | 'provisioned';

const VERDICTS: Record<string, CarrierVerdict> = {
  PENDING: 'pending',
  VERIFIED: 'approved',
  VETTED_VERIFIED: 'approved',
  UNVERIFIED: 'rejected',
  APPROVED: 'approved',
  ACTIVE: 'approved',
  REJECTED: 'rejected',
  EXPIRED: 'rejected',
  PROVISIONED: 'provisioned',
};

/** Classifies a carrier status; unknown statuses count as pending. */
export function carrierVerdict(status: string): CarrierVerdict {
  return VERDICTS[status.toUpperCase()] ?? 'pending';
}

/**
 * Rank of a verdict for out-of-order callbacks: a lower-ranked status never replaces a higher one of
 * the same revision (pending 0 < approved/rejected 1 < provisioned 2), and an older revision never
 * replaces a newer one.
 */
export function verdictRank(v: CarrierVerdict): number {
  return v === 'pending' ? 0 : v === 'provisioned' ? 2 : 1;
}

/** One carrier status report (callback or poll) about a brand or campaign. */
export interface CarrierEvent {
  kind: 'brand' | 'campaign';
  id: string;
  revision: number;
  status: string;
  reason?: string | null;
}

/**
 * True when `next` should replace `current` (the latest known report of the same object): a newer
 * revision always does; within a revision only a higher rank does.
 */
export function supersedes(current: CarrierEvent | undefined, next: CarrierEvent): boolean {
  if (!current) return true;
  if (next.revision !== current.revision) return next.revision > current.revision;
  return verdictRank(carrierVerdict(next.status)) > verdictRank(carrierVerdict(current.status));
}
