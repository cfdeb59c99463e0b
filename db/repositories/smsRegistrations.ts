/**
 * The organization's one 10DLC registration (spec "SMS registration draft" / "SMS registration").
 * One row per organization (unique org_id); saves serialize on that row.
 */
import type { Knex } from 'knex';
import { prepared, type Db } from '../index';
import { GroupCommit } from '../groupCommit';
import { newId } from '../ids';
import type { SmsRegistration, SmsRegistrationDraft } from '../../schemas/types/sms';
import { iso } from '../timestamps';
import { AUDIT_COLUMNS, AUDIT_RECORD_COLUMNS, auditRow, type AuditRecord } from './auditLogs';

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

/**
 * A change of the registration's `status` or `providerStatus` (the `sms.registration.updated` payload).
 * `previousStatus` is null when the registration was just created.
 */
export interface RegistrationStatusChange {
  registrationId: string;
  status: string;
  previousStatus: string | null;
  providerStatus: string | null;
  lastError: string | null;
  brandId: string | null;
  campaignId: string | null;
}

/**
 * Called inside the transaction of a status change (webhook events are written there, so there is no
 * change without its event and no event without its change).
 */
export type OnRegistrationChange = (trx: Knex.Transaction, change: RegistrationStatusChange) => Promise<unknown>;

/** The change from row `before` (undefined: just created) to row `after`, or null when neither status nor providerStatus moved. */
function statusChange(before: Record<string, any> | undefined, after: Record<string, any>): RegistrationStatusChange | null {
  if (before && before.status === after.status && (before.provider_status ?? null) === (after.provider_status ?? null)) return null;
  return {
    registrationId: after.id,
    status: after.status,
    previousStatus: before ? before.status : null,
    providerStatus: after.provider_status ?? null,
    lastError: after.last_error ?? null,
    brandId: after.brand_id ?? null,
    campaignId: after.campaign_id ?? null,
  };
}

/** Runs `fn` in `db` when it is already a transaction, else in a new one. */
function inTransaction<T>(db: Db, fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return (db as Knex.Transaction).isTransaction ? fn(db as Knex.Transaction) : db.transaction(fn);
}

/** A registration with its row version (bumped by a trigger on every update; read caches key on it). */
export interface RegistrationRecord {
  registration: SmsRegistration;
  version: number;
}

/**
 * The read behind the GET /sms cache, a prepared statement (db/index.ts `prepared`) naming its columns,
 * so a column added by a later migration cannot change a cached plan's result type.
 */
const RECORD_SQL = `SELECT ${[...Object.values(DRAFT_COLUMNS), 'brand_id', 'campaign_id', 'status', 'provider_status', 'last_error', 'submitted_at', 'created_at', 'updated_at', 'version'].join(', ')} FROM sms_registrations WHERE org_id = ? LIMIT 1`;

/** The organization's registration and its version, or undefined before the first save. */
export async function getRegistrationRecord(db: Db, orgId: string): Promise<RegistrationRecord | undefined> {
  const [row] = (await db.raw(RECORD_SQL, [orgId]).options(prepared(RECORD_SQL))).rows;
  return row ? { registration: toRegistration(row), version: row.version } : undefined;
}

/** Column → value of the draft fields that are given (undefined leaves a column alone; null clears it). */
function draftColumnValues(fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(fields)) {
    const col = DRAFT_COLUMNS[field as keyof typeof DRAFT_COLUMNS];
    if (col && value !== undefined) out[col] = value;
  }
  return out;
}

function draftUpdate(fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>, now: unknown): Record<string, unknown> {
  return { status: 'draft', updated_at: now, ...draftColumnValues(fields) };
}

const BOOLEAN_DRAFT_COLUMNS = new Set(['use_policy_page', 'sends_links', 'quiet_hours_replies_exempt']);

/** One optimistic draft save: the fields to write over `current`, the registration as of `version`. */
interface DraftSave {
  orgId: string;
  version: number;
  fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>;
  current: SmsRegistration;
  /** The request's audit entry, stored by the same statement when (and only when) the save is written. */
  audit?: AuditRecord;
}

/**
 * The batched statement. Each save sends only the columns it writes (a JSON object `d`; a key that is
 * present, even with null, is written), so one statement fits saves that set different fields. The
 * version guard makes the result exact: a row that moved since `current` is not written, and a
 * written row is `current` with the save's fields, status `draft` and the returned version and time.
 */
const BATCH_UPDATE_SQL = (() => {
  const sets = Object.values(DRAFT_COLUMNS).map((c) => {
    const value = BOOLEAN_DRAFT_COLUMNS.has(c) ? `(v.d->>'${c}')::boolean` : `v.d->>'${c}'`;
    // `\\?` is knex's escape for the jsonb key-exists operator `?` (a bare `?` is a binding).
    return `${c} = CASE WHEN v.d \\? '${c}' THEN ${value} ELSE r.${c} END`;
  });
  // The audit entry of a written save goes in with it (its organization is the written row's).
  const auditValues = AUDIT_COLUMNS.split(', ').map((c) => (c === 'org_id' ? 'w.org_id' : `a.${c}`));
  return (
    `WITH w AS (UPDATE sms_registrations r SET status = 'draft', updated_at = now(), ${sets.join(', ')} ` +
    `FROM jsonb_to_recordset(?::jsonb) AS v(i int, org_id text, version int, d jsonb, a jsonb) ` +
    `WHERE r.org_id = v.org_id AND r.version = v.version AND r.status = 'draft' ` +
    `RETURNING v.i, r.org_id, r.version, r.updated_at, v.a), ` +
    `audit AS (INSERT INTO audit_logs (${AUDIT_COLUMNS}) SELECT ${auditValues.join(', ')} ` +
    `FROM w CROSS JOIN LATERAL jsonb_to_record(w.a) AS a(${AUDIT_RECORD_COLUMNS}) WHERE w.a IS NOT NULL) ` +
    `SELECT i, version, updated_at FROM w`
  );
})();

async function runDraftSaves(db: Db, batch: DraftSave[]): Promise<(RegistrationRecord | undefined)[]> {
  const seen = new Set<string>();
  const rows: { i: number; org_id: string; version: number; d: Record<string, unknown>; a?: Record<string, unknown> }[] = [];
  batch.forEach((save, i) => {
    // A second save of the same organization in one batch goes the locking way (it would lose its
    // version check anyway once the first is written).
    if (seen.has(save.orgId)) return;
    seen.add(save.orgId);
    rows.push({ i, org_id: save.orgId, version: save.version, d: draftColumnValues(save.fields), a: save.audit && auditRow(save.orgId, save.audit) });
  });
  const out: (RegistrationRecord | undefined)[] = new Array(batch.length).fill(undefined);
  let written: { i: number; version: number; updated_at: Date }[];
  try {
    written = (await db.raw(BATCH_UPDATE_SQL, [JSON.stringify(rows)]).options(prepared(BATCH_UPDATE_SQL))).rows;
  } catch {
    // Nothing of this batch was written (a deadlock with another process' batch, say): each save
    // retries alone on the locking path, so one save's failure never fails the others.
    return out;
  }
  for (const w of written) {
    const { current, fields } = batch[w.i];
    const registration: SmsRegistration = { ...current, status: 'draft', updatedAt: new Date(w.updated_at).toISOString() };
    for (const [field, value] of Object.entries(fields)) {
      if (value !== undefined && field in DRAFT_COLUMNS) (registration as unknown as Record<string, unknown>)[field] = value;
    }
    out[w.i] = { registration, version: w.version };
  }
  return out;
}

const draftSaveBatches = new WeakMap<Db, GroupCommit<DraftSave, RegistrationRecord | undefined>>();

/**
 * Writes draft fields only if the row is still at `version` and already a draft (optimistic
 * concurrency). A save that returns a submitted, active or failed registration to `draft` is a status
 * change with a webhook event, so it is left to saveDraftRecord. Saves arriving while a batch is in
 * flight are written together by the next one (db/groupCommit.ts): one statement, one commit.
 * With `audit`, the request's audit entry is stored by the same statement if the save is written (the
 * change and its entry commit together), and not at all otherwise.
 * @param current the registration at `version` (the caller's cached copy), which `fields` were merged
 *   against
 * @returns the saved record, or undefined when the row changed meanwhile, is not a draft, does not
 *   exist or the batch could not be written (the caller falls back to saveDraftRecord, which locks)
 */
export function saveDraftIfVersion(
  db: Db,
  orgId: string,
  version: number,
  fields: Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>,
  current: SmsRegistration,
  audit?: AuditRecord,
): Promise<RegistrationRecord | undefined> {
  let group = draftSaveBatches.get(db);
  if (!group) {
    // 500 saves × 26 values stay in one JSON parameter; the cap bounds one statement's latency.
    group = new GroupCommit((batch) => runDraftSaves(db, batch), 500);
    draftSaveBatches.set(db, group);
  }
  return group.submit({ orgId, version, fields, current, audit });
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

/**
 * saveDraft, returning the row version too.
 * @param onChange runs in the save's transaction when the save creates the registration (previous
 *   status null) or returns it to `draft` from another status
 */
export async function saveDraftRecord(
  db: Db,
  orgId: string,
  compute: (current: SmsRegistration | undefined) => Partial<Record<keyof typeof DRAFT_COLUMNS, unknown>>,
  onChange?: OnRegistrationChange,
): Promise<RegistrationRecord> {
  return db.transaction(async (trx) => {
    let before: Record<string, any> | undefined = await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first();
    let current = before ? toRegistration(before) : undefined;
    if (!before) {
      const inserted = await trx('sms_registrations').insert({ id: newId('smsreg'), org_id: orgId }).onConflict('org_id').ignore().returning('*');
      // Lost the race to another first save: lock the row it inserted.
      if (!inserted[0]) before = await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first();
      current = before ? toRegistration(before) : undefined;
    }
    const [row] = await trx('sms_registrations').where({ org_id: orgId }).update(draftUpdate(compute(current), trx.fn.now())).returning('*');
    const change = onChange && statusChange(before, row);
    if (change) await onChange(trx, change);
    return { registration: toRegistration(row), version: row.version };
  });
}

// ---------------------------------------------------------------------------------------------------
// Review, submission and carrier progress (docs/sms.md "10DLC review, submission and carrier callbacks"). Status writes of the registration workflow are
// guarded by the submission id and by `status <> 'draft'`, so a stale workflow, or one whose draft was
// saved again meanwhile (a save sets status draft), never moves the registration.

/** The stored last review verdict (`{ verdict, findings, reviewedAt }`). */
export async function storeReview(db: Db, orgId: string, review: unknown): Promise<void> {
  await db('sms_registrations').where({ org_id: orgId }).update({ last_review: JSON.stringify(review) });
}

/** The last stored review verdict, or null. */
export async function getLastReview<T>(db: Db, orgId: string): Promise<T | null> {
  const row = await db('sms_registrations').where({ org_id: orgId }).first('last_review');
  return (row?.last_review as T) ?? null;
}

/** What the registration workflow needs besides the API shape. */
export interface SubmissionRecord {
  registration: SmsRegistration;
  registrationId: string;
  submissionId: string | null;
  stockSymbol: string | null;
  stockExchange: string | null;
}

/** The registration with its internal submission fields, or undefined. */
export async function getSubmissionRecord(db: Db, orgId: string): Promise<SubmissionRecord | undefined> {
  const row = await db('sms_registrations').where({ org_id: orgId }).first();
  if (!row) return undefined;
  return { registration: toRegistration(row), registrationId: row.id, submissionId: row.submission_id ?? null, stockSymbol: row.stock_symbol ?? null, stockExchange: row.stock_exchange ?? null };
}

/**
 * Marks the registration submitted inside `trx` (the caller also records fees in it and holds the row
 * lock, see lockRegistration). Keeps brandId/campaignId so a resubmission updates the carrier's
 * existing brand and campaign.
 * @param onChange runs in `trx` when the status or providerStatus moved
 * @returns the updated registration
 */
export async function markSubmitted(
  trx: Knex.Transaction,
  orgId: string,
  fields: { submissionId: string; stockSymbol?: string | null; stockExchange?: string | null },
  onChange?: OnRegistrationChange,
): Promise<SmsRegistration> {
  const before = await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first('id', 'status', 'provider_status');
  const [row] = await trx('sms_registrations')
    .where({ org_id: orgId })
    .update({
      status: 'submitted',
      submission_id: fields.submissionId,
      submitted_at: trx.fn.now(),
      provider_status: null,
      last_error: null,
      registered_at: null,
      activated_at: null,
      stock_symbol: fields.stockSymbol ?? null,
      stock_exchange: fields.stockExchange ?? null,
      updated_at: trx.fn.now(),
    })
    .returning('*');
  const change = onChange && statusChange(before, row);
  if (change) await onChange(trx, change);
  return toRegistration(row);
}

/** Locks the registration row for the rest of `trx`. @returns the row's API shape or undefined */
export async function lockRegistration(trx: Db, orgId: string): Promise<SmsRegistration | undefined> {
  const row = await trx('sms_registrations').where({ org_id: orgId }).forUpdate().first();
  return row ? toRegistration(row) : undefined;
}

/** Stores the carrier's brand or campaign id (kept across drafts and resubmissions). */
export async function setCarrierIds(db: Db, orgId: string, ids: { brandId?: string; campaignId?: string }): Promise<void> {
  const update: Record<string, unknown> = {};
  if (ids.brandId) update.brand_id = ids.brandId;
  if (ids.campaignId) update.campaign_id = ids.campaignId;
  if (Object.keys(update).length) await db('sms_registrations').where({ org_id: orgId }).update(update);
}

/**
 * Moves the registration of submission `submissionId` forward (workflow activity). Locks the row, so
 * the status read for the event is the one replaced.
 * @param to new status and provider facts; `lastError` null clears it
 * @param onChange runs in the same transaction when status or providerStatus actually moved (a
 *   retried activity writing the same values emits nothing)
 * @returns true when the submission is current (row written); false when the submission is stale or
 *   the draft was saved since
 */
export async function transitionSubmission(
  db: Db,
  orgId: string,
  submissionId: string,
  to: { status: 'submitted' | 'registered' | 'active' | 'failed'; providerStatus?: string | null; lastError?: string | null },
  onChange?: OnRegistrationChange,
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const before = await trx('sms_registrations').where({ org_id: orgId, submission_id: submissionId }).whereNot({ status: 'draft' }).forUpdate().first('id', 'status', 'provider_status');
    if (!before) return false;
    const update: Record<string, unknown> = { status: to.status, updated_at: trx.fn.now() };
    if (to.providerStatus !== undefined) update.provider_status = to.providerStatus;
    if (to.lastError !== undefined) update.last_error = to.lastError;
    if (to.status === 'registered' && before.status !== 'registered') update.registered_at = trx.fn.now();
    if (to.status === 'active' && before.status !== 'active') update.activated_at = trx.fn.now();
    const [row] = await trx('sms_registrations').where({ id: before.id }).update(update).returning('*');
    const change = onChange && statusChange(before, row);
    if (change) await onChange(trx, change);
    return true;
  });
}

/**
 * Resolves a carrier brand or campaign id to its organization (provider callbacks, which carry no
 * credential: the carrier's id is the only key, so this lookup is necessarily across organizations).
 */
export async function findOrgByCarrierId(db: Db, kind: 'brand' | 'campaign', externalId: string): Promise<string | undefined> {
  const row = await db('sms_registrations').where(kind === 'brand' ? { brand_id: externalId } : { campaign_id: externalId }).first('org_id');
  return row?.org_id;
}

/** Organization of a registration id (the carrier echoes it as its reference id in callbacks). */
export async function findOrgByRegistrationId(db: Db, registrationId: string): Promise<string | undefined> {
  const row = await db('sms_registrations').where({ id: registrationId }).first('org_id');
  return row?.org_id;
}
