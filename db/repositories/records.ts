/**
 * Customer records (docs/api-notes.md "Integrations and records": PII fields name, phone, email, fields). Every
 * function takes the organization id first; another organization's record is invisible. Reads are
 * audited by their callers (api/routes/records.ts, services/conversations/skills.ts).
 *
 * Sensitive members of `fields` (docs/security.md "Sensitive record fields"; domain/records/sensitive.ts) live only in
 * `sealed_fields`, each as `{ sealed, mask }`: writes take them already sealed (services/records/sealing.ts
 * seals with WEBHOOK_SECRET_KEY), and every read answers the mask, never opening a seal. A value stored
 * plain before its field became sensitive is masked on read too. Only {@link sealedRecordField} hands a
 * sealed value out, for server-side use.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { iso } from '../timestamps';
import { isSensitiveField, maskValue, recordRules, type RecordRules } from '../../domain/records/sensitive';
import type { CustomerRecord, RecordFieldSchema, RecordSchema } from '../../schemas/types/integrations';

type Conn = Db | Knex.Transaction;

/** A sensitive member of a record's `fields` as stored: the sealed value and what reads show. */
export interface SealedField {
  /** `v1:` AES-256-GCM (domain/webhooks/signing.ts `sealSecret`). */
  sealed: string;
  /** `••21` (domain/records/sensitive.ts `maskValue`). */
  mask: string;
}

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
  /** The plain members (none sensitive: the caller split them, services/records/sealing.ts). */
  fields?: Record<string, string>;
  /** The sensitive members, sealed; written together with `fields` (a write of `fields` replaces both). */
  sealed?: Record<string, SealedField>;
}

function toRecord(r: Record<string, any>, rules: RecordRules): CustomerRecord {
  const fields: Record<string, string> = {};
  const sensitive: string[] = [];
  for (const [k, v] of Object.entries<string>(r.fields ?? {})) {
    if (typeof v === 'string' && v.trim() !== '' && isSensitiveField(rules, k, v)) {
      fields[k] = maskValue(v);
      sensitive.push(k);
    } else fields[k] = v;
  }
  for (const [k, v] of Object.entries<SealedField>(r.sealed_fields ?? {})) {
    fields[k] = v.mask;
    sensitive.push(k);
  }
  return {
    id: r.id,
    name: r.name ?? null,
    phone: r.phone ?? null,
    email: r.email ?? null,
    fields,
    sensitiveFields: sensitive,
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

/** The organization's record schema (no fields and `updatedAt: null` before the first save). */
export async function getRecordSchema(db: Conn, orgId: string): Promise<RecordSchema> {
  const row = await db('record_schemas').where({ org_id: orgId }).first();
  return { fields: (row?.fields as RecordFieldSchema[] | undefined) ?? [], updatedAt: row ? iso(row.updated_at)! : null };
}

/** The organization's declared sensitivity rules (domain/records/sensitive.ts). */
export async function recordSchemaRules(db: Conn, orgId: string): Promise<RecordRules> {
  return recordRules((await getRecordSchema(db, orgId)).fields);
}

/** Replaces the organization's record schema. @returns it as stored */
export async function putRecordSchema(db: Conn, orgId: string, fields: RecordFieldSchema[]): Promise<RecordSchema> {
  const [row] = await db('record_schemas')
    .insert({ org_id: orgId, fields: JSON.stringify(fields), updated_at: db.fn.now() })
    .onConflict('org_id')
    .merge(['fields', 'updated_at'])
    .returning('*');
  return { fields: row.fields as RecordFieldSchema[], updatedAt: iso(row.updated_at)! };
}

/**
 * Seals, in batches, the values still stored plain in `fields` that `rules` make sensitive (after a schema
 * change, or written before sensitive fields existed), in the caller's transaction.
 * @param seal maps a plain value to its stored form
 * @returns how many records changed
 */
export async function sealPlainSensitiveFields(trx: Conn, orgId: string, rules: RecordRules, seal: (value: string) => SealedField): Promise<number> {
  let changed = 0;
  let after = 0;
  for (;;) {
    const rows = await trx('records').where({ org_id: orgId }).where('seq', '>', after).whereRaw("fields <> '{}'::jsonb").orderBy('seq').limit(500).forUpdate().select('id', 'seq', 'fields', 'sealed_fields');
    if (!rows.length) return changed;
    after = Number(rows[rows.length - 1].seq);
    for (const r of rows) {
      const plain: Record<string, string> = {};
      const sealed: Record<string, SealedField> = { ...(r.sealed_fields ?? {}) };
      let moved = false;
      for (const [k, v] of Object.entries<string>(r.fields ?? {})) {
        if (typeof v === 'string' && v.trim() !== '' && isSensitiveField(rules, k, v)) {
          sealed[k] = seal(v);
          moved = true;
        } else plain[k] = v;
      }
      if (!moved) continue;
      await trx('records').where({ org_id: orgId, id: r.id }).update({ fields: JSON.stringify(plain), sealed_fields: JSON.stringify(sealed) });
      changed++;
    }
  }
}

/** One page of records matching `filter`, oldest first. @throws InvalidCursorError */
export async function listRecords(db: Db, orgId: string, filter: RecordFilter, page: { limit: number; cursor?: string }): Promise<Page<CustomerRecord>> {
  const rules = await recordSchemaRules(db, orgId);
  return keysetPage(filtered(db, orgId, filter).select('*'), { ...page, column: 'seq', direction: 'asc', map: (r: Record<string, any>) => toRecord(r, rules) });
}

/** Up to `limit` records matching `filter` (the lookup skill, caller verification), sensitive fields masked. */
export async function findRecords(db: Conn, orgId: string, filter: RecordFilter, limit: number): Promise<CustomerRecord[]> {
  const [rules, rows] = await Promise.all([recordSchemaRules(db, orgId), filtered(db, orgId, filter).orderBy('seq').limit(limit)]);
  return rows.map((r: Record<string, any>) => toRecord(r, rules));
}

/** The records of `source` with these external ids (a CRM lookup's matches), in the given order, sensitive fields masked. */
export async function findRecordsByExternalIds(db: Conn, orgId: string, source: string, externalIds: readonly string[]): Promise<CustomerRecord[]> {
  if (!externalIds.length) return [];
  const [rules, rows] = await Promise.all([recordSchemaRules(db, orgId), db('records').where({ org_id: orgId, source }).whereIn('external_id', externalIds)]);
  const byId = new Map(rows.map((r: Record<string, any>) => [r.external_id as string, r]));
  return externalIds.flatMap((id) => (byId.has(id) ? [toRecord(byId.get(id)!, rules)] : []));
}

/** One record, or undefined. */
export async function getRecord(db: Conn, orgId: string, id: string): Promise<CustomerRecord | undefined> {
  const [rules, row] = await Promise.all([recordSchemaRules(db, orgId), db('records').where({ org_id: orgId, id }).first()]);
  return row ? toRecord(row, rules) : undefined;
}

/**
 * The stored form of one member of a record's `fields`, for server-side use only (caller verification, a
 * skill input filled at run time): `{ sealed }` for a sealed value, `{ plain }` for one stored plain
 * (written before it was sensitive), undefined when the record or the member does not exist.
 */
export async function sealedRecordField(db: Conn, orgId: string, id: string, name: string): Promise<{ sealed: string } | { plain: string } | undefined> {
  const row = await db('records').where({ org_id: orgId, id }).first(db.raw('sealed_fields -> ? AS s', [name]), db.raw('fields ->> ? AS p', [name]));
  if (row?.s?.sealed) return { sealed: row.s.sealed as string };
  return typeof row?.p === 'string' ? { plain: row.p } : undefined;
}

/** Creates a record with source `api`. */
export async function createRecord(db: Conn, orgId: string, f: RecordFields): Promise<CustomerRecord> {
  const [row] = await db('records')
    .insert({
      id: newId('rec'),
      org_id: orgId,
      name: f.name ?? null,
      phone: f.phone ?? null,
      email: f.email ?? null,
      fields: JSON.stringify(f.fields ?? {}),
      sealed_fields: JSON.stringify(f.sealed ?? {}),
      source: 'api',
    })
    .returning('*');
  return toRecord(row, await recordSchemaRules(db, orgId));
}

/**
 * Updates the given members (`fields` and `sealed` together replace every field). A sensitive member
 * written back as the mask a read showed (`••21`) keeps its sealed value, so a read-modify-write never
 * replaces a secret with its mask.
 * @param f.sealed the sensitive members given, sealed; `givenSensitive` the same members as given (plain),
 *   compared with the stored masks
 * @returns the record, or undefined when missing
 */
export async function updateRecord(db: Db, orgId: string, id: string, f: RecordFields & { givenSensitive?: Record<string, string> }): Promise<CustomerRecord | undefined> {
  return db.transaction(async (trx) => {
    const set: Record<string, unknown> = { updated_at: trx.fn.now() };
    if (f.name !== undefined) set.name = f.name;
    if (f.phone !== undefined) set.phone = f.phone;
    if (f.email !== undefined) set.email = f.email;
    if (f.fields !== undefined) {
      const current = await trx('records').where({ org_id: orgId, id }).forUpdate().first('sealed_fields');
      if (!current) return undefined;
      const plain: Record<string, string> = { ...f.fields };
      const sealed: Record<string, SealedField> = { ...(f.sealed ?? {}) };
      for (const [k, given] of Object.entries({ ...f.fields, ...(f.givenSensitive ?? {}) })) {
        const kept = (current.sealed_fields as Record<string, SealedField> | null)?.[k];
        if (kept && kept.mask === given) {
          sealed[k] = kept;
          delete plain[k];
        }
      }
      set.fields = JSON.stringify(plain);
      set.sealed_fields = JSON.stringify(sealed);
    }
    const [row] = await trx('records').where({ org_id: orgId, id }).update(set).returning('*');
    return row ? toRecord(row, await recordSchemaRules(trx, orgId)) : undefined;
  });
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
        sealed_fields: JSON.stringify(r.sealed ?? {}),
        source,
        external_id: r.externalId,
        connection_id: connectionId,
      })),
    )
    .onConflict(['org_id', 'source', 'external_id'])
    .merge(['name', 'phone', 'email', 'fields', 'sealed_fields', 'connection_id', 'updated_at'])
    .returning(db.raw('(xmax = 0) AS inserted'));
  const created = out.filter((r) => r.inserted).length;
  return { created, updated: out.length - created };
}

/**
 * Re-seals every sealed record field of the organization with `reseal` (docs/security.md: after a
 * WEBHOOK_SECRET_KEY rotation, `secrets reseal-webhooks`). One transaction.
 * @returns how many records were re-sealed
 */
export async function resealRecordFields(db: Db, orgId: string, reseal: (sealed: string) => string): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('records').where({ org_id: orgId }).whereRaw("sealed_fields <> '{}'::jsonb").forUpdate().select('id', 'sealed_fields');
    for (const r of rows) {
      const next = Object.fromEntries(Object.entries<SealedField>(r.sealed_fields).map(([k, v]) => [k, { ...v, sealed: reseal(v.sealed) }]));
      await trx('records').where({ org_id: orgId, id: r.id }).update({ sealed_fields: JSON.stringify(next) });
    }
    return rows.length;
  });
}
