/**
 * Records (spec scopes `records:read` / `records:write`; paths not shown: docs/api-notes.md
 * "Integrations and records"): the organization's customer records that agents look up (the `lookup_record` skill, caller
 * verification). PII: name, phone, email and every value of `fields`. Every read — a list, a search, one
 * record — writes an audit entry, as writes do (api/middleware/audit.ts writes those).
 * - `GET /records?q=&phone=&email=&name=&source=`, `GET /records/{id}` (records:read);
 * - `POST /records`, `PATCH /records/{id}`, `DELETE /records/{id}` (records:write);
 * - `POST /records/imports` {fileId} (records:write): a CSV uploaded with `POST /uploads`, read with the
 *   contact-list reader (domain/outbound/csv.ts), upserted by phone;
 * - sync from a connected spreadsheet or CRM: `POST /integrations/{kind}/sync` (api/routes/integrations.ts);
 * - `GET /record-schema` (records:read), `PUT /record-schema` (records:write): the declared fields and which
 *   are sensitive. Sensitive members of `fields` are write-only (docs/security.md "Sensitive record fields";
 *   domain/records/sensitive.ts): every write seals them (services/records/sealing.ts), every read masks them.
 */
import type { AppContext, Handler } from '../context';
import { ApiError, notFound, validationError, type FieldError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { isE164 } from '../../domain/sms/draftChecks';
import { normalizeUsPhone } from '../../domain/outbound/scrub';
import { CsvFormatError, readContactRows } from '../../domain/outbound/csv';
import {
  createRecord,
  deleteRecord,
  getRecord,
  getRecordSchema,
  listRecords,
  putRecordSchema,
  sealPlainSensitiveFields,
  updateRecord,
  upsertSourcedRecords,
  type RecordFields,
  type RecordFilter,
} from '../../db/repositories/records';
import { recordRules } from '../../domain/records/sensitive';
import { recordWriter, sealRecordValue } from '../../services/records/sealing';
import { attachUpload, getUploadContent } from '../../db/repositories/uploads';
import { insertAuditLogs } from '../../db/repositories/auditLogs';
import type { Db } from '../../db';
import { orgOf, pageParams, paged } from '../http';
import { param } from './agents';
import type { CustomerRecordCreate, CustomerRecordPatch, RecordImportRequest, RecordImportResult, RecordSchema } from '../../schemas/types/integrations';

const MAX_FIELDS = 50;
const MAX_FIELD_CHARS = 2000;
const IMPORT_BATCH = 500;

/** Field checks the schema cannot express: E.164 phone, at most 50 fields of at most 2000 characters. */
function recordErrors(b: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  if (typeof b.phone === 'string' && !isE164(b.phone)) errors.push({ field: 'phone', message: 'must be a phone number in E.164, e.g. +14155550100' });
  if (b.fields && typeof b.fields === 'object' && !Array.isArray(b.fields)) {
    const keys = Object.keys(b.fields);
    if (keys.length > MAX_FIELDS) errors.push({ field: 'fields', message: `must have at most ${MAX_FIELDS} members` });
    for (const k of keys) {
      if (k.length > 100) errors.push({ field: `fields.${k.slice(0, 100)}`, message: 'names a field of more than 100 characters' });
      else if (typeof b.fields[k] === 'string' && b.fields[k].length > MAX_FIELD_CHARS) errors.push({ field: `fields.${k}`, message: `must be at most ${MAX_FIELD_CHARS} characters` });
    }
  }
  return errors;
}

/** One audit entry for a read of records (the route's operation; `id` of the record read, null for a list). */
async function auditRead(ctx: AppContext, db: Db, id: string | null, found: boolean): Promise<void> {
  const auth = ctx.state.auth!;
  await insertAuditLogs(db, [
    {
      orgId: auth.orgId,
      rec: {
        actorId: auth.keyId,
        actorKind: auth.kind,
        operationId: ctx.state.route!.operationId,
        method: ctx.method,
        path: ctx.path,
        resourceType: 'record',
        resourceId: id,
        requestId: ctx.state.requestId,
        sourceIp: ctx.ip || null,
        statusCode: found ? 200 : 404,
      },
    },
  ]);
}

const one = (v: unknown): string | undefined => (Array.isArray(v) ? v[0] : typeof v === 'string' && v !== '' ? v : undefined);

/**
 * GET /records (records:read): oldest first, cursor-paginated; `phone` (E.164, exact), `email` (exact,
 * case-insensitive), `name` (substring), `q` (any of the three), `source`. Audited.
 * @throws 400 naming `phone`, `limit`; 400 `invalid_cursor`
 */
export const listRecordsHandler: Handler = async (ctx, { db }) => {
  const page = pageParams(ctx);
  const filter: RecordFilter = { phone: one(ctx.query.phone), email: one(ctx.query.email), name: one(ctx.query.name), q: one(ctx.query.q), source: one(ctx.query.source) };
  if (filter.phone !== undefined) {
    const p = filter.phone.replace(/^ /, '+');
    if (!isE164(p)) throw validationError([{ field: 'phone', message: 'must be a phone number in E.164, e.g. +14155550100' }]);
    filter.phone = p;
  }
  for (const k of ['email', 'name', 'q', 'source'] as const) if ((filter[k]?.length ?? 0) > 320) throw validationError([{ field: k, message: 'must be at most 320 characters' }]);
  const out = await paged(() => listRecords(db, orgOf(ctx), filter, page));
  await auditRead(ctx, db, null, true);
  return { data: out };
};

/** GET /records/{id} (records:read). Audited, found or not. @throws 404 `record_not_found` */
export const getRecordHandler: Handler = async (ctx, { db }) => {
  const r = await getRecord(db, orgOf(ctx), param(ctx, 'id'));
  await auditRead(ctx, db, param(ctx, 'id').slice(0, 100), !!r);
  if (!r) throw notFound('Record', 'record_not_found');
  return { data: r };
};

/** POST /records (records:write) → 201. @throws 400 naming `phone`/`email`/`fields`, or `(body)` when it names no one */
export const createRecordHandler: Handler = async (ctx, { db }) => {
  const body = ctx.request.body as CustomerRecordCreate;
  const errors = recordErrors(body);
  if (errors.length) throw validationError(errors);
  if (!body.name && !body.phone && !body.email) throw validationError([{ field: '(body)', message: 'give at least one of name, phone, email' }]);
  const orgId = orgOf(ctx);
  const { fields, sealed } = (await recordWriter(db, orgId))(body.fields ?? {});
  return { data: await createRecord(db, orgId, { name: body.name, phone: body.phone, email: body.email, fields, sealed }), status: 201 };
};

/** PATCH /records/{id} (records:write): given members replace. @throws 404 `record_not_found` */
export const updateRecordHandler: Handler = async (ctx, { db }) => {
  const errors = recordErrors(ctx.request.body as Record<string, any>);
  if (errors.length) throw validationError(errors);
  const body = ctx.request.body as CustomerRecordPatch;
  const orgId = orgOf(ctx);
  const protectedFields = body.fields !== undefined ? (await recordWriter(db, orgId))(body.fields) : {};
  const r = await updateRecord(db, orgId, param(ctx, 'id'), { name: body.name, phone: body.phone, email: body.email, ...protectedFields });
  if (!r) throw notFound('Record', 'record_not_found');
  return { data: r };
};

/** DELETE /records/{id} (records:write). @throws 404 `record_not_found` */
export const deleteRecordHandler: Handler = async (ctx, { db }) => {
  if (!(await deleteRecord(db, orgOf(ctx), param(ctx, 'id')))) throw notFound('Record', 'record_not_found');
  return { data: { id: param(ctx, 'id'), deleted: true } };
};

/**
 * POST /records/imports {fileId, columnMapping?} (records:write): reads the uploaded CSV with the
 * contact-list reader (a phone column; first/last name make `name`; an `email` column makes `email`;
 * every other column a field) and upserts one record per phone (source `csv`, a re-import updates).
 * Rows whose phone is neither E.164 nor a US number are refused and listed. Synchronous: the upload limit bounds it.
 * @throws 404 `file_expired` naming `fileId`; 400 `validation_error` naming `fileId` with row, column, line of a malformed CSV
 */
export const importRecords: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<RecordImportRequest>('RecordImportRequest', ctx.request.body);
  return db.transaction(async (trx) => {
    const upload = await attachUpload(trx, orgId, body.fileId);
    if (!upload) throw new ApiError(404, 'file_expired', `File ${body.fileId} does not exist or has expired; upload it again with POST /uploads`, { errors: [{ field: 'fileId', message: 'no unexpired upload with this id' }] });
    const content = await getUploadContent(trx, orgId, body.fileId);
    const result: RecordImportResult = { rowsRead: 0, created: 0, updated: 0, rejected: [], rejectedCount: 0 };
    const protect = await recordWriter(trx, orgId);
    let batch: (RecordFields & { externalId: string })[] = [];
    const flush = async () => {
      const r = await upsertSourcedRecords(trx, orgId, 'csv', null, batch);
      result.created += r.created;
      result.updated += r.updated;
      batch = [];
    };
    try {
      for await (const row of readContactRows(content!.data, body.columnMapping)) {
        result.rowsRead++;
        const phone = isE164(row.phone) ? { e164: row.phone } : normalizeUsPhone(row.phone);
        if (!('e164' in phone)) {
          result.rejectedCount++;
          if (result.rejected.length < 100) result.rejected.push({ row: row.row, reason: phone.reason });
          continue;
        }
        const { email, Email, EMAIL, name: nameCol, Name, ...fields } = row.variables;
        const name = [row.firstName, row.lastName].filter(Boolean).join(' ') || nameCol || Name || null;
        batch.push({ externalId: phone.e164, phone: phone.e164, name, email: email ?? Email ?? EMAIL ?? null, ...protect(fields) });
        if (batch.length >= IMPORT_BATCH) await flush();
      }
    } catch (err) {
      if (!(err instanceof CsvFormatError)) throw err;
      throw new ApiError(400, 'validation_error', `The CSV is malformed: ${err.message}`, { errors: [{ field: 'fileId', message: err.message }], extra: { row: err.row, column: err.column, line: err.line } });
    }
    await flush();
    return { data: result };
  });
};

/** GET /record-schema (records:read): the declared fields of the organization's records and which are sensitive. */
export const getRecordSchemaHandler: Handler = async (ctx, { db }) => ({ data: await getRecordSchema(db, orgOf(ctx)) });

/** Field errors of a record schema the JSON schema accepted: repeated names. */
function schemaErrors(b: Record<string, any>): FieldError[] {
  const errors: FieldError[] = [];
  if (!Array.isArray(b.fields)) return errors;
  const seen = new Map<string, number>();
  b.fields.forEach((f: unknown, i: number) => {
    const name = f && typeof f === 'object' ? (f as { name?: unknown }).name : undefined;
    if (typeof name !== 'string') return;
    if (seen.has(name)) errors.push({ field: `fields.${i}.name`, message: `repeats fields.${seen.get(name)}.name` });
    else seen.set(name, i);
  });
  return errors;
}

/**
 * PUT /record-schema (records:write) `{fields: [{name, sensitive, description?}]}`: replaces the schema;
 * values already stored plain that it makes sensitive are sealed in the same transaction (docs/security.md
 * "Sensitive record fields"). A sealed value stays sealed when its field is declared `sensitive: false` later
 * (write-only): only a new write of that field stores it plain.
 * @throws 400 validation_error naming `fields.N.<member>` (schema) or a repeated `fields.N.name`
 */
export const putRecordSchemaHandler: Handler = async (ctx, { db }) => {
  const body = ctx.request.body as unknown as RecordSchema;
  const errors = schemaErrors(body);
  if (errors.length) throw validationError(errors);
  const fields = body.fields.map((f) => ({ name: f.name, sensitive: f.sensitive, ...(f.description !== undefined ? { description: f.description } : {}) }));
  const orgId = orgOf(ctx);
  const saved = await db.transaction(async (trx) => {
    const out = await putRecordSchema(trx, orgId, fields);
    await sealPlainSensitiveFields(trx, orgId, recordRules(fields), sealRecordValue);
    return out;
  });
  return { data: saved };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  listRecords: listRecordsHandler,
  getRecord: getRecordHandler,
  createRecord: createRecordHandler,
  updateRecord: updateRecordHandler,
  deleteRecord: deleteRecordHandler,
  importRecords,
  getRecordSchema: getRecordSchemaHandler,
  putRecordSchema: putRecordSchemaHandler,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  listRecords: { responseSchema: 'CustomerRecordPage' },
  getRecord: { responseSchema: 'CustomerRecord' },
  createRecord: { requestSchema: 'CustomerRecordCreate', responseSchema: 'CustomerRecord', bodyChecks: recordErrors },
  updateRecord: { requestSchema: 'CustomerRecordPatch', responseSchema: 'CustomerRecord', bodyChecks: recordErrors },
  importRecords: { requestSchema: 'RecordImportRequest', responseSchema: 'RecordImportResult' },
  getRecordSchema: { responseSchema: 'RecordSchema' },
  putRecordSchema: { requestSchema: 'RecordSchema', responseSchema: 'RecordSchema', bodyChecks: schemaErrors },
};
