/**
 * Text-message attachments (`sms_media`, `med_…`; docs/sms.md "Text attachments", spec "Scope rules" 2 and 3).
 * Inbound attachments keep their bytes here; outbound ones made from an SMS upload reference the upload
 * (`file_…`, purpose `sms`), which is then marked attached so upload collection never deletes it.
 * An attachment can be sent again on any later message of its organization (its id is listed in
 * `sms_messages.media_ids`); uploads of purpose `chat` are never reachable from here.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { fromColumns } from '../rows';

type Conn = Db | Knex.Transaction;

/** An attachment's metadata. */
export interface SmsMediaRecord {
  id: string;
  orgId: string;
  /** The message that first carried it. */
  messageId: string;
  direction: 'inbound' | 'outbound';
  contentType: string;
  sizeBytes: number;
  sha256: string;
  /** The upload it was made from (outbound), else null. */
  uploadId: string | null;
  createdAt: string;
}

function toRecord(r: Record<string, any>): SmsMediaRecord {
  return {
    ...fromColumns(r, ['id', 'orgId', 'messageId', 'direction', 'contentType']),
    sizeBytes: Number(r.size_bytes),
    sha256: r.sha256,
    uploadId: r.upload_id ?? null,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

const COLUMNS = ['id', 'org_id', 'message_id', 'direction', 'content_type', 'size_bytes', 'sha256', 'upload_id', 'created_at'];

/** The attachment `id` of `orgId`, or undefined (also for another organization's id). */
export async function getMedia(db: Conn, orgId: string, id: string): Promise<SmsMediaRecord | undefined> {
  const r = await db('sms_media').where({ org_id: orgId, id }).first(COLUMNS);
  return r ? toRecord(r) : undefined;
}

/**
 * The attachment and its bytes by id alone, in any organization: only for the signed content link,
 * whose signature (issued by `GET /sms/media/{id}` within the organization) is the credential.
 */
export async function getMediaContentById(db: Conn, id: string): Promise<{ media: SmsMediaRecord; data: Buffer } | undefined> {
  const r = await db('sms_media as m')
    .leftJoin('uploads as u', 'u.id', 'm.upload_id')
    .where('m.id', id)
    .first(...COLUMNS.map((c) => `m.${c}`), db.raw('coalesce(m.data, u.data) as content'));
  if (!r || !r.content) return undefined;
  return { media: toRecord(r), data: r.content as Buffer };
}

/** What an id given in `mediaIds` of a send resolves to (before anything is written). */
export type AttachmentLookup =
  | { ok: true; kind: 'media'; id: string; sizeBytes: number; contentType: string }
  | { ok: true; kind: 'upload'; id: string; sizeBytes: number; contentType: string }
  /** `not_found`: no such id in the organization, or an upload made in a web chat (never reachable);
   * `file_expired`: an unattached upload past its expiry; `not_sms_upload`: an upload made for another purpose. */
  | { ok: false; problem: 'not_found' | 'file_expired' | 'not_sms_upload' };

/**
 * Resolves attachment ids of a send (spec rule 3): `med_…` ids of the organization's text attachments,
 * inbound or outbound, and `file_…` ids of its uploads of purpose `sms`. Read only.
 * @param ids well-formed ids (`med_…` or `file_…`), in the request's order
 * @returns one lookup per id, in order
 */
export async function lookupAttachments(db: Conn, orgId: string, ids: string[]): Promise<AttachmentLookup[]> {
  const medIds = ids.filter((i) => i.startsWith('med_'));
  const fileIds = ids.filter((i) => i.startsWith('file_'));
  const media = medIds.length ? await db('sms_media').where({ org_id: orgId }).whereIn('id', medIds).select('id', 'size_bytes', 'content_type') : [];
  const uploads = fileIds.length
    ? await db('uploads')
        .where({ org_id: orgId })
        .whereIn('id', fileIds)
        .select('id', 'size_bytes', 'content_type', 'purpose', 'attached_at', db.raw('expires_at <= now() as expired'))
    : [];
  const mediaById = new Map(media.map((m: any) => [m.id, m]));
  const uploadsById = new Map(uploads.map((u: any) => [u.id, u]));
  return ids.map((id): AttachmentLookup => {
    const m = mediaById.get(id);
    if (m) return { ok: true, kind: 'media', id, sizeBytes: Number(m.size_bytes), contentType: m.content_type };
    const u = uploadsById.get(id);
    if (!u || u.purpose === 'chat') return { ok: false, problem: 'not_found' };
    if (u.purpose !== 'sms') return { ok: false, problem: 'not_sms_upload' };
    if (!u.attached_at && u.expired) return { ok: false, problem: 'file_expired' };
    return { ok: true, kind: 'upload', id, sizeBytes: Number(u.size_bytes), contentType: u.content_type };
  });
}

/**
 * Turns the ids of a send into attachment ids inside the send's transaction: `med_…` ids stay as they
 * are; each `file_…` SMS upload becomes (once per upload, reused by later sends) an outbound attachment
 * first carried by `messageId`, and the upload is marked attached (never collected). Locks the uploads.
 * @returns the `med_…` ids in the request's order, or `{ failedIndex }` for an id that is no longer
 *   attachable (an upload collected or a media row gone since the lookup)
 */
export async function attachForMessage(
  trx: Knex.Transaction,
  orgId: string,
  messageId: string,
  ids: string[],
): Promise<{ mediaIds: string[] } | { failedIndex: number }> {
  const out: string[] = [];
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id.startsWith('med_')) {
      if (!(await trx('sms_media').where({ org_id: orgId, id }).first('id'))) return { failedIndex: i };
      out.push(id);
      continue;
    }
    const u = await trx('uploads')
      .where({ org_id: orgId, id, purpose: 'sms' })
      .andWhere((q) => q.whereNotNull('attached_at').orWhere('expires_at', '>', trx.fn.now()))
      .forUpdate()
      .first('id', 'content_type', 'size_bytes', 'sha256', 'attached_at');
    if (!u) return { failedIndex: i };
    if (!u.attached_at) await trx('uploads').where({ org_id: orgId, id }).update({ attached_at: trx.fn.now() });
    const existing = await trx('sms_media').where({ org_id: orgId, upload_id: id }).first('id');
    if (existing) {
      out.push(existing.id);
      continue;
    }
    const medId = newId('med');
    await trx('sms_media').insert({
      id: medId,
      org_id: orgId,
      message_id: messageId,
      direction: 'outbound',
      content_type: u.content_type,
      size_bytes: u.size_bytes,
      sha256: u.sha256,
      upload_id: id,
    });
    out.push(medId);
  }
  return { mediaIds: out };
}

/**
 * Stores the attachments of an inbound text (bytes received in the provider callback), inside the
 * transaction that stores the message.
 * @returns the new `med_…` ids, in the callback's order
 */
export async function storeInboundMedia(
  trx: Knex.Transaction,
  orgId: string,
  messageId: string,
  items: Array<{ contentType: string; data: Buffer }>,
): Promise<string[]> {
  const ids: string[] = [];
  for (const item of items) {
    const id = newId('med');
    await trx('sms_media').insert({
      id,
      org_id: orgId,
      message_id: messageId,
      direction: 'inbound',
      content_type: item.contentType,
      size_bytes: item.data.length,
      sha256: crypto.createHash('sha256').update(item.data).digest('hex'),
      data: item.data,
    });
    ids.push(id);
  }
  return ids;
}
