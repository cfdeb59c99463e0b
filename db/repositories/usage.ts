/**
 * Billable usage entries (table `usage_entries`, unique per organization and dedupe key): one entry per
 * business event, never two, however often an activity or request is retried.
 */
import type { Db } from '../index';
import { newId } from '../ids';

/** Registration and number fees in US cents (README "10DLC review, submission and carrier callbacks"; sandbox prices). */
export const FEES = {
  /** TCR brand registration, charged once per registration. */
  brandRegistration: { kind: '10dlc_brand_registration', amountCents: 400 },
  /** Campaign vetting, charged once per registration. */
  campaignVetting: { kind: '10dlc_campaign_vetting', amountCents: 1500 },
  /** A long-code number purchase (first month). */
  numberPurchase: { kind: 'phone_number_purchase', amountCents: 115 },
} as const;

/** One usage entry as read back. */
export interface UsageEntry {
  id: string;
  kind: string;
  quantity: number;
  amountCents: number;
  dedupeKey: string;
  details: Record<string, unknown>;
  createdAt: string;
}

/**
 * Records a usage entry once per `(orgId, dedupeKey)`.
 * @returns true when this call inserted it, false when it existed already
 */
export async function recordUsage(
  db: Db,
  orgId: string,
  entry: { kind: string; amountCents: number; dedupeKey: string; quantity?: number; details?: Record<string, unknown> },
): Promise<boolean> {
  return (await recordUsages(db, orgId, [entry])) > 0;
}

/**
 * Records several usage entries in one statement, each once per `(orgId, dedupeKey)` (hot paths: a
 * conversation turn). @returns how many were inserted
 */
export async function recordUsages(
  db: Db,
  orgId: string,
  entries: readonly { kind: string; amountCents: number; dedupeKey: string; quantity?: number; details?: Record<string, unknown> }[],
): Promise<number> {
  if (!entries.length) return 0;
  const rows = await db('usage_entries')
    .insert(
      entries.map((e) => ({
        id: newId('use'),
        org_id: orgId,
        kind: e.kind,
        quantity: e.quantity ?? 1,
        amount_cents: e.amountCents,
        dedupe_key: e.dedupeKey,
        details: JSON.stringify(e.details ?? {}),
      })),
    )
    .onConflict(['org_id', 'dedupe_key'])
    .ignore()
    .returning('id');
  return rows.length;
}

/** Usage entries of an organization, oldest first (tests, billing). */
export async function listUsage(db: Db, orgId: string): Promise<UsageEntry[]> {
  const rows = await db('usage_entries').where({ org_id: orgId }).orderBy('created_at').orderBy('id');
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    quantity: r.quantity,
    amountCents: r.amount_cents,
    dedupeKey: r.dedupe_key,
    details: r.details,
    createdAt: new Date(r.created_at).toISOString(),
  }));
}
