/**
 * The organization's one 10DLC registration (spec "SMS registration draft" / "SMS registration").
 * One row per organization (unique org_id); saves serialize on that row.
 */
import type { Db } from '../index';
import { newId } from '../ids';
import type { SmsRegistration, SmsRegistrationDraft } from '../../schemas/types/sms';

/** Draft field names (API camelCase) and their columns. `regenerate` is a command, not stored. */
export const DRAFT_COLUMNS: Record<Exclude<keyof SmsRegistrationDraft, 'regenerate'>, string> = {
  legalName: 'legal_name',
  displayName: 'display_name',
  ein: 'ein',
  entityType: 'entity_type',
  vertical: 'vertical',
  country: 'country',
  street: 'street',
  city: 'city',
  state: 'state',
  postalCode: 'postal_code',
  website: 'website',
  supportEmail: 'support_email',
  phone: 'phone',
  usePolicyPage: 'use_policy_page',
  useCase: 'use_case',
  optInMethod: 'opt_in_method',
  description: 'description',
  sample1: 'sample1',
  sample2: 'sample2',
  messageFlow: 'message_flow',
  helpMessage: 'help_message',
  sendsLinks: 'sends_links',
  quietHoursRepliesExempt: 'quiet_hours_replies_exempt',
};

const iso = (d: Date | null): string | null => (d ? new Date(d).toISOString() : null);

/** Maps a stored row to the API shape. */
export function toRegistration(r: Record<string, any>): SmsRegistration {
  const out: Record<string, unknown> = {};
  for (const [field, col] of Object.entries(DRAFT_COLUMNS)) out[field] = r[col] ?? null;
  return {
    ...(out as Omit<SmsRegistration, 'brandId' | 'campaignId' | 'status' | 'providerStatus' | 'lastError' | 'submittedAt' | 'createdAt' | 'updatedAt'>),
    quietHoursRepliesExempt: r.quiet_hours_replies_exempt,
    brandId: r.brand_id ?? null,
    campaignId: r.campaign_id ?? null,
    status: r.status,
    providerStatus: r.provider_status ?? null,
    lastError: r.last_error ?? null,
    submittedAt: iso(r.submitted_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

/** The organization's registration, or undefined before the first save. */
export async function getRegistration(db: Db, orgId: string): Promise<SmsRegistration | undefined> {
  const row = await db('sms_registrations').where({ org_id: orgId }).first();
  return row ? toRegistration(row) : undefined;
}

/** A registration with its row version (bumped by a trigger on every update; read caches key on it). */
export interface RegistrationRecord {
  registration: SmsRegistration;
  version: number;
}

/** The organization's registration and its version, or undefined before the first save. */
export async function getRegistrationRecord(db: Db, orgId: string): Promise<RegistrationRecord | undefined> {
  const row = await db('sms_registrations').where({ org_id: orgId }).first();
  return row ? { registration: toRegistration(row), version: row.version } : undefined;
}

function draftUpdate(fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>, now: unknown): Record<string, unknown> {
  const update: Record<string, unknown> = { status: 'draft', updated_at: now };
  for (const [field, value] of Object.entries(fields)) {
    const col = DRAFT_COLUMNS[field as keyof typeof DRAFT_COLUMNS];
    if (col && value !== undefined) update[col] = value;
  }
  return update;
}

/**
 * Writes draft fields only if the row is still at `version` (one round trip; optimistic concurrency).
 * @returns the saved record, or undefined when the row changed meanwhile or does not exist (caller
 *   falls back to saveDraft, which locks)
 */
export async function updateDraftIfVersion(
  db: Db,
  orgId: string,
  version: number,
  fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>,
): Promise<RegistrationRecord | undefined> {
  const [row] = await db('sms_registrations').where({ org_id: orgId, version }).update(draftUpdate(fields, db.fn.now())).returning('*');
  return row ? { registration: toRegistration(row), version: row.version } : undefined;
}

/**
 * Upserts the organization's draft. Concurrent saves serialize on the row (INSERT … ON CONFLICT DO
 * NOTHING, then SELECT … FOR UPDATE), so N parallel first saves leave exactly one row.
 * @param compute receives the stored registration (or undefined) and returns the draft fields to
 *   write (API names); it may throw (e.g. a validation error), which rolls everything back
 * @returns the saved registration, status `draft` (spec state table: any save → draft)
 */
export async function saveDraft(
  db: Db,
  orgId: string,
  compute: (current: SmsRegistration | undefined) => Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>,
): Promise<SmsRegistration> {
  return (await saveDraftRecord(db, orgId, compute)).registration;
}

/** saveDraft, returning the row version too. */
export async function saveDraftRecord(
  db: Db,
  orgId: string,
  compute: (current: SmsRegistration | undefined) => Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>,
): Promise<RegistrationRecord> {
  return db.transaction(async (trx) => {
    const existing = await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first();
    let current = existing ? toRegistration(existing) : undefined;
    if (!existing) {
      const inserted = await trx('sms_registrations').insert({ id: newId('smsreg'), org_id: orgId }).onConflict('org_id').ignore().returning('*');
      // Lost the race to another first save: lock the row it inserted.
      const row = inserted[0] ?? (await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first());
      current = inserted[0] ? undefined : toRegistration(row);
    }
    const [row] = await trx('sms_registrations').where({ org_id: orgId }).update(draftUpdate(compute(current), trx.fn.now())).returning('*');
    return { registration: toRegistration(row), version: row.version };
  });
}
