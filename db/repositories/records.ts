/**
 * Customer records (README "Integrations and records": PII fields name, phone, email, fields). Every
 * function takes the organization id first; another organization's record is invisible. Reads are
 * audited by their callers (api/routes/records.ts, services/conversations/skills.ts).
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { iso } from '../timestamps';
import type { CustomerRecord } from '../../schemas/types/integrations';

type Conn = Db | Knex.Transaction;

/** Search of a list: exact phone (E.164), email (case-insensitive), name (substring, case-insensitive), `q` (any of the three). */
export interface RecordFilter {
  phone?: string;
  email?: string;
  name?: string;
  q?: string;
  /** Only records from this source (`api`, `csv`, an integration kind). */
  source?: string;
}

/** The fields of a record a write sets. */
export interface RecordFields {
  name?: string | null;
  phone?: string | null;
  email?: string | null;
  fields?: Record<string, string>;
}

function toRecord(r: Record<string, any>): CustomerRecord {
  return {
    id: r.id,
    name: r.name ?? null,
    phone: r.phone ?? null,
    email: r.email ?? null,
    fields: r.fields ?? {},
    source: r.source,
    externalId: r.external_id ?? null,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function filtered(db: Conn, orgId: string, f: RecordFilter): Knex.QueryBuilder {
  const q = db('records').where({ org_id: orgId });
  if (f.phone) q.where('phone', f.phone);
  if (f.email) q.whereRaw('lower(email) = lower(?)', [f.email]);
  if (f.name) q.whereRaw("name ILIKE ? ESCAPE '\\'", [`%${likeEscape(f.name)}%`]);
  if (f.source) q.where('source', f.source);
  if (f.q) {
    const text = f.q;
    q.where((w) => w.where('phone', text).orWhereRaw('lower(email) = lower(?)', [text]).orWhereRaw("name ILIKE ? ESCAPE '\\'", [`%${likeEscape(text)}%`]));
  }
  return q;
}

/** One page of records matching `filter`, oldest first. @throws InvalidCursorError */
export async function listRecords(db: Db, orgId: string, filter: RecordFilter, page: { limit: number; cursor?: string }): Promise<Page<CustomerRecord>> {
  return keysetPage(filtered(db, orgId, filter).select('*'), { ...page, column: 'seq', direction: 'asc', map: toRecord });
}

/** Up to `limit` records matching `filter` (the lookup skill). */
export async function findRecords(db: Conn, orgId: string, filter: RecordFilter, limit: number): Promise<CustomerRecord[]> {
  return (await filtered(db, orgId, filter).orderBy('seq').limit(limit)).map(toRecord);
}

/** One record, or undefined. */
export async function getRecord(db: Conn, orgId: string, id: string): Promise<CustomerRecord | undefined> {
  const row = await db('records').where({ org_id: orgId, id }).first();
  return row ? toRecord(row) : undefined;
}

/** Creates a record with source `api`. */
export async function createRecord(db: Conn, orgId: string, f: RecordFields): Promise<CustomerRecord> {
  const [row] = await db('records')
    .insert({ id: newId('rec'), org_id: orgId, name: f.name ?? null, phone: f.phone ?? null, email: f.email ?? null, fields: JSON.stringify(f.fields ?? {}), source: 'api' })
    .returning('*');
  return toRecord(row);
}

/** Updates the given members. @returns the record, or undefined when missing */
export async function updateRecord(db: Conn, orgId: string, id: string, f: RecordFields): Promise<CustomerRecord | undefined> {
  const set: Record<string, unknown> = { updated_at: db.fn.now() };
  if (f.name !== undefined) set.name = f.name;
  if (f.phone !== undefined) set.phone = f.phone;
  if (f.email !== undefined) set.email = f.email;
  if (f.fields !== undefined) set.fields = JSON.stringify(f.fields);
  const [row] = await db('records').where({ org_id: orgId, id }).update(set).returning('*');
  return row ? toRecord(row) : undefined;
}

/** Deletes a record. @returns whether one was deleted */
export async function deleteRecord(db: Conn, orgId: string, id: string): Promise<boolean> {
  return (await db('records').where({ org_id: orgId, id }).delete()) > 0;
}

/**
 * Inserts or updates records identified by (`source`, `externalId`) in one statement: a re-sync or a
 * re-import updates the rows it wrote before instead of duplicating them.
 * @returns how many rows were created and how many updated
 */
export async function upsertSourcedRecords(
  db: Conn,
  orgId: string,
  source: string,
  connectionId: string | null,
  rows: (RecordFields & { externalId: string })[],
): Promise<{ created: number; updated: number }> {
  if (!rows.length) return { created: 0, updated: 0 };
  // One row per external id: Postgres refuses ON CONFLICT touching a row twice in one statement.
  const unique = [...new Map(rows.map((r) => [r.externalId, r])).values()];
  const out: { inserted: boolean }[] = await db('records')
    .insert(
      unique.map((r) => ({
        id: newId('rec'),
        org_id: orgId,
        name: r.name ?? null,
        phone: r.phone ?? null,
        email: r.email ?? null,
        fields: JSON.stringify(r.fields ?? {}),
        source,
        external_id: r.externalId,
        connection_id: connectionId,
      })),
    )
    .onConflict(['org_id', 'source', 'external_id'])
    .merge(['name', 'phone', 'email', 'fields', 'connection_id', 'updated_at'])
    .returning(db.raw('(xmax = 0) AS inserted'));
  const created = out.filter((r) => r.inserted).length;
  return { created, updated: out.length - created };
}
