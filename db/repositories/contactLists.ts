/**
 * Contact lists of outbound voice (docs/voice.md "Outbound voice campaigns"): the list, its import progress and its rows (accepted or
 * rejected with the scrub outcome), and the organization's do-not-call list. A list is imported once;
 * rows are inserted idempotently per (list, row number), so a retried import never duplicates a row.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { CampaignPurpose, Contact, ContactColumnMapping, ContactList } from '../../schemas/types/outbound';
import { iso } from '../timestamps';
import { fromNullableColumns, rowMapper } from '../rows';

type Conn = Db | Knex.Transaction;

const toImport = rowMapper<ContactList['import']>({
  status: 'value',
  fileId: 'nullable',
  rowsRead: 'value',
  accepted: 'value',
  rejected: 'value',
  counts: 'object',
  error: 'nullable',
  startedAt: (r) => iso(r.import_started_at),
  finishedAt: (r) => iso(r.import_finished_at),
});

/** Row → API shape. */
export const toContactList: (r: any) => ContactList = rowMapper<ContactList>({
  id: 'value',
  name: 'value',
  purpose: 'value',
  import: toImport,
  createdAt: 'iso',
  updatedAt: 'iso',
});

function toContact(r: any): Contact {
  return {
    id: r.id,
    row: r.row_number,
    ...fromNullableColumns(r, ['rawPhone', 'e164', 'firstName', 'lastName', 'timeZone']),
    zones: r.zones ?? [],
    variables: r.variables ?? {},
    status: r.status,
    reason: r.reason,
  };
}

/** Creates an empty list. */
export async function createContactList(db: Db, orgId: string, fields: { name: string; purpose: CampaignPurpose }): Promise<ContactList> {
  const [row] = await db('contact_lists').insert({ id: newId('cl'), org_id: orgId, name: fields.name, purpose: fields.purpose }).returning('*');
  return toContactList(row);
}

/** A list of the organization, or undefined. */
export async function getContactList(db: Conn, orgId: string, listId: string): Promise<ContactList | undefined> {
  const row = await db('contact_lists').where({ org_id: orgId, id: listId }).first();
  return row ? toContactList(row) : undefined;
}

/** One page of the organization's lists, oldest first. @throws InvalidCursorError */
export async function listContactLists(db: Db, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<ContactList>> {
  return keysetPage(db('contact_lists').where({ org_id: orgId }), { ...page, column: 'seq', map: toContactList });
}

/** Why an import cannot start. */
export class ImportStateError extends Error {
  constructor(readonly status: string) {
    super(`the list is ${status}`);
    this.name = 'ImportStateError';
  }
}

/**
 * Marks the list as importing `fileId` (inside the caller's transaction, which also attaches the upload).
 * Lists are imported once: an `importing` or `ready` list refuses; a `failed` one may be imported again.
 * @returns undefined when the list does not exist in the organization
 * @throws ImportStateError
 */
export async function beginImport(trx: Knex.Transaction, orgId: string, listId: string, fileId: string, mapping: ContactColumnMapping | null): Promise<ContactList | undefined> {
  const row = await trx('contact_lists').where({ org_id: orgId, id: listId }).forUpdate().first();
  if (!row) return undefined;
  if (row.status === 'importing' || row.status === 'ready') throw new ImportStateError(row.status);
  await trx('contacts').where({ org_id: orgId, list_id: listId }).delete(); // leftovers of a failed import
  const [updated] = await trx('contact_lists')
    .where({ org_id: orgId, id: listId })
    .update({
      status: 'importing',
      file_id: fileId,
      column_mapping: mapping ? JSON.stringify(mapping) : null,
      rows_read: 0,
      accepted: 0,
      rejected: 0,
      counts: '{}',
      error: null,
      import_started_at: trx.fn.now(),
      import_finished_at: null,
      updated_at: trx.fn.now(),
    })
    .returning('*');
  return toContactList(updated);
}

/** What the import activity needs about a list. */
export async function importSource(db: Db, orgId: string, listId: string): Promise<{ status: string; fileId: string | null; mapping: ContactColumnMapping | null; purpose: CampaignPurpose } | undefined> {
  const row = await db('contact_lists').where({ org_id: orgId, id: listId }).first('status', 'file_id', 'column_mapping', 'purpose');
  return row ? { status: row.status, fileId: row.file_id, mapping: row.column_mapping ?? null, purpose: row.purpose } : undefined;
}

/**
 * The organization's facts about `e164s` that the scrub needs: SMS opt-outs (suppressions), the
 * do-not-call list and granted consent (only when `withConsent`).
 */
export async function scrubFacts(db: Db, orgId: string, e164s: string[], withConsent: boolean): Promise<{ suppressed: Set<string>; doNotCall: Set<string>; consented: Set<string> }> {
  if (!e164s.length) return { suppressed: new Set(), doNotCall: new Set(), consented: new Set() };
  const [contacts, dnc] = await Promise.all([
    db('sms_contacts').where({ org_id: orgId }).whereIn('e164', e164s).select('e164', 'opted_out', 'consent_status'),
    db('do_not_call').where({ org_id: orgId }).whereIn('e164', e164s).select('e164'),
  ]);
  return {
    suppressed: new Set(contacts.filter((c) => c.opted_out).map((c) => c.e164)),
    doNotCall: new Set(dnc.map((d) => d.e164)),
    consented: new Set(withConsent ? contacts.filter((c) => c.consent_status === 'granted' && !c.opted_out).map((c) => c.e164) : []),
  };
}

/** One scrubbed row to store: a Contact (schemas/types/outbound.ts) before it has an id; the raw phone is always read. */
export type ContactRowInsert = Omit<Contact, 'id' | 'rawPhone'> & { rawPhone: string };

/**
 * Stores scrubbed rows and the progress counters (rows already stored by an earlier try are kept as they are).
 * @param progress totals so far (rows read, accepted, rejected)
 */
export async function storeContactRows(db: Db, orgId: string, listId: string, rows: ContactRowInsert[], progress: { rowsRead: number; accepted: number; rejected: number }): Promise<void> {
  await db.transaction(async (trx) => {
    if (rows.length) {
      await trx('contacts')
        .insert(
          rows.map((r) => ({
            id: newId('ct'),
            org_id: orgId,
            list_id: listId,
            row_number: r.row,
            raw_phone: r.rawPhone,
            e164: r.e164,
            first_name: r.firstName,
            last_name: r.lastName,
            time_zone: r.timeZone,
            zones: r.zones,
            variables: JSON.stringify(r.variables),
            status: r.status,
            reason: r.reason,
          })),
        )
        .onConflict(['list_id', 'row_number'])
        .ignore();
    }
    await trx('contact_lists')
      .where({ org_id: orgId, id: listId })
      .update({ rows_read: progress.rowsRead, accepted: progress.accepted, rejected: progress.rejected, updated_at: trx.fn.now() });
  });
}

/** Ends an import: counters recomputed from the stored rows, status ready. */
export async function finishImport(db: Db, orgId: string, listId: string): Promise<ContactList | undefined> {
  return db.transaction(async (trx) => {
    const groups = await trx('contacts').where({ org_id: orgId, list_id: listId }).groupBy('reason').select('reason').count<{ reason: string; count: string }[]>('* as count');
    const counts: Record<string, number> = {};
    for (const g of groups) counts[g.reason] = Number(g.count);
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const accepted = counts.accepted ?? 0;
    const [row] = await trx('contact_lists')
      .where({ org_id: orgId, id: listId })
      .update({ status: 'ready', rows_read: total, accepted, rejected: total - accepted, counts: JSON.stringify(counts), import_finished_at: trx.fn.now(), updated_at: trx.fn.now() })
      .returning('*');
    return row ? toContactList(row) : undefined;
  });
}

/** Ends an import as failed with a reason (rows stored so far are kept for inspection). */
export async function failImport(db: Db, orgId: string, listId: string, error: string): Promise<void> {
  await db('contact_lists')
    .where({ org_id: orgId, id: listId })
    .whereNot({ status: 'ready' })
    .update({ status: 'failed', error: error.slice(0, 2000), import_finished_at: db.fn.now(), updated_at: db.fn.now() });
}

/** One page of a list's rows in file order, optionally only `accepted` or `rejected`. @throws InvalidCursorError */
export async function listListContacts(db: Db, orgId: string, listId: string, page: { limit: number; cursor?: string; status?: 'accepted' | 'rejected' }): Promise<Page<Contact>> {
  const q = db('contacts').where({ org_id: orgId, list_id: listId });
  if (page.status) q.where({ status: page.status });
  return keysetPage(q, { limit: page.limit, cursor: page.cursor, column: 'row_number', key: 'int', map: toContact });
}

/** Adds numbers to the organization's do-not-call list. @returns how many were new */
export async function addDoNotCall(db: Db, orgId: string, e164s: string[], source = 'api'): Promise<number> {
  if (!e164s.length) return 0;
  const rows = await db('do_not_call')
    .insert([...new Set(e164s)].map((e164) => ({ org_id: orgId, e164, source })))
    .onConflict(['org_id', 'e164'])
    .ignore()
    .returning('e164');
  return rows.length;
}
