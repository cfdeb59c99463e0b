/**
 * Uploaded files (spec "Limits": 25 MB; "Errors": file_expired). Bytes live in Postgres (`bytea`) until
 * a knowledge source attaches the file; an unattached upload expires after its TTL and is then
 * garbage-collected, after which its id answers 404 `file_expired`.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import type { Upload } from '../../schemas/types/knowledge';
import { iso } from '../timestamps';

type Conn = Db | Knex.Transaction;

/**
 * What an upload is for (column `uploads.purpose`): `general` (knowledge sources, contact lists),
 * `sms` (attachable to texts by `POST /sms/messages`), `chat` (uploaded in a web chat: never reachable
 * from SMS, spec "Scope rules" 3).
 */
export type UploadPurpose = 'general' | 'sms' | 'chat';

/** How long an unattached upload is kept, seconds (24 h). */
export const UPLOAD_TTL_SECONDS = 24 * 60 * 60;


function toUpload(r: Record<string, any>): Upload {
  return {
    id: r.id,
    filename: r.filename,
    contentType: r.content_type,
    sizeBytes: Number(r.size_bytes),
    sha256: r.sha256,
    createdAt: iso(r.created_at),
    expiresAt: iso(r.expires_at),
  };
}

/**
 * Stores an uploaded file.
 * @param file.data the bytes (the caller enforces the size limit)
 * @param file.ttlSeconds lifetime before attachment (default UPLOAD_TTL_SECONDS)
 * @param file.purpose what the file is for (default `general`; see UploadPurpose)
 * @returns the upload's public shape (`id` = `file_…`)
 */
export async function createUpload(
  db: Conn,
  orgId: string,
  file: { filename: string; contentType: string; data: Buffer; ttlSeconds?: number; purpose?: UploadPurpose },
): Promise<Upload> {
  const sha256 = crypto.createHash('sha256').update(file.data).digest('hex');
  const ttl = file.ttlSeconds ?? UPLOAD_TTL_SECONDS;
  const [row] = await db('uploads')
    .insert({
      id: newId('file'),
      org_id: orgId,
      filename: file.filename,
      content_type: file.contentType,
      size_bytes: file.data.length,
      sha256,
      data: file.data,
      purpose: file.purpose ?? 'general',
      expires_at: db.raw(`now() + make_interval(secs => ?)`, [ttl]),
    })
    .returning(['id', 'filename', 'content_type', 'size_bytes', 'sha256', 'created_at', 'expires_at']);
  return toUpload(row);
}

/**
 * Marks an upload as taken by a knowledge source (it is then never collected), inside the caller's
 * transaction. Locks the row so a concurrent collection cannot delete it in between.
 * @returns the upload, or undefined when it does not exist in this organization or has expired
 *   unattached (both answer `file_expired`)
 */
export async function attachUpload(trx: Knex.Transaction, orgId: string, fileId: string): Promise<Upload | undefined> {
  const row = await trx('uploads')
    .where({ org_id: orgId, id: fileId })
    .andWhere((q) => q.whereNotNull('attached_at').orWhere('expires_at', '>', trx.fn.now()))
    .forUpdate()
    .first('id', 'filename', 'content_type', 'size_bytes', 'sha256', 'created_at', 'expires_at', 'attached_at');
  if (!row) return undefined;
  if (!row.attached_at) await trx('uploads').where({ org_id: orgId, id: fileId }).update({ attached_at: trx.fn.now() });
  return toUpload(row);
}

/** The bytes and metadata of an upload, or undefined when it is gone. */
export async function getUploadContent(
  db: Conn,
  orgId: string,
  fileId: string,
): Promise<{ filename: string; contentType: string; data: Buffer } | undefined> {
  const row = await db('uploads').where({ org_id: orgId, id: fileId }).first('filename', 'content_type', 'data');
  return row ? { filename: row.filename, contentType: row.content_type, data: row.data as Buffer } : undefined;
}

/**
 * The first `maxBytes` bytes and the metadata of an upload that can still be attached (unexpired or
 * attached), or undefined when it is gone: what a type check needs without reading up to 25 MB.
 */
export async function getUploadHead(
  db: Conn,
  orgId: string,
  fileId: string,
  maxBytes: number,
): Promise<{ filename: string; contentType: string; head: Buffer } | undefined> {
  const row = await db('uploads')
    .where({ org_id: orgId, id: fileId })
    .andWhere((q) => q.whereNotNull('attached_at').orWhere('expires_at', '>', db.fn.now()))
    .first('filename', 'content_type', db.raw('substring(data from 1 for ?) as head', [maxBytes]));
  return row ? { filename: row.filename, contentType: row.content_type, head: row.head as Buffer } : undefined;
}

/**
 * Garbage collection: deletes up to `batch` unattached uploads past their expiry, across every
 * organization (the one query here without an organization: collection is not a tenant operation).
 * @returns how many were deleted
 */
export async function collectExpiredUploads(db: Db, batch = 100): Promise<number> {
  const res = await db.raw(
    `DELETE FROM uploads WHERE id IN (
       SELECT id FROM uploads WHERE attached_at IS NULL AND expires_at <= now()
       ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)`,
    [batch],
  );
  return res.rowCount ?? 0;
}
