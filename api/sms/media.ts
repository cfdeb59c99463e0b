/**
 * Text-message attachments (spec "Scope rules" 2 and 3; docs/sms.md "Text attachments"); the handlers are in
 * api/routes/sms/media.ts:
 * - `GET /sms/media/{id}` (getSMSMedia, sms:read): any attachment id of the organization, inbound or
 *   outbound, answers a short-lived signed link; sms:read grants no message text, only this.
 * - `GET /sms/media/{id}/content?expires=&signature=` (getSMSMediaContent, no API key): the bytes. The
 *   signature is the credential: `signature = hex HMAC-SHA256(MEDIA_URL_SECRET, "sms-media-link.<id>.<expires>")`
 *   (the media-link label of domain/tokenMac.ts),
 *   `expires` in unix seconds, TTL MEDIA_URL_TTL_SECONDS (default 300). Expired, tampered or missing
 *   signatures answer 403 `invalid_media_signature` before anything is looked up.
 * - `mediaIds` of `POST /sms/messages` (sms:send): `med_…` attachment ids of the organization
 *   (including ones a customer sent) or `file_…` uploads made with `purpose=sms`; uploads made in a web
 *   chat (`purpose=chat`) answer exactly like unknown ids.
 * - inbound provider callbacks may carry `media: [{ contentType, contentBase64 }]` (stored as inbound
 *   attachments, their ids listed in `sms.message.received`).
 */
import crypto from 'node:crypto';
import { tokenMac } from '../../domain/tokenMac';
import { ApiError, validationError, type FieldError } from '../../domain/errors';
import { lookupAttachments } from '../../db/repositories/smsMedia';

/** Default lifetime of a signed media link, seconds (5 minutes). */
export const MEDIA_URL_TTL_SECONDS = 300;

/** Most attachments per text (carrier MMS practice). */
export const MAX_ATTACHMENTS = 10;

/** Largest total size of a text's attachments, bytes (5 MB: the common carrier MMS ceiling). */
export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;

/**
 * The signing secret of media links: MEDIA_URL_SECRET, which the entry points fill from DATA_DIR/secrets
 * or require (docs/security.md); no default value. Read per call.
 * @throws Error when unset
 */
export function mediaUrlSecret(): string {
  const secret = process.env.MEDIA_URL_SECRET;
  if (!secret) throw new Error('MEDIA_URL_SECRET is not set');
  return secret;
}

/** Lifetime of a new link, seconds: MEDIA_URL_TTL_SECONDS (1..86400), else 300. Read per call. */
export function mediaUrlTtlSeconds(): number {
  const n = Number(process.env.MEDIA_URL_TTL_SECONDS);
  return Number.isInteger(n) && n >= 1 && n <= 86_400 ? n : MEDIA_URL_TTL_SECONDS;
}

/** Hex HMAC-SHA256 of `"<id>.<expires>"` under `secret` and the media-link label (domain/tokenMac.ts). */
export function mediaSignature(id: string, expiresUnix: number, secret = mediaUrlSecret()): string {
  return tokenMac('mediaLink', secret, `${id}.${expiresUnix}`).toString('hex');
}

/**
 * True when `signature` is the link signature of `id` until `expires` and that time has not passed.
 * Constant-time comparison; never says which part failed.
 */
export function verifyMediaSignature(id: string, expires: string | undefined, signature: string | undefined, nowMs = Date.now()): boolean {
  if (!expires || !/^\d{1,12}$/.test(expires) || !signature || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const exp = Number(expires);
  if (nowMs >= exp * 1000) return false;
  const expected = Buffer.from(mediaSignature(id, exp), 'utf8');
  return crypto.timingSafeEqual(Buffer.from(signature, 'utf8'), expected);
}

/**
 * Checks the `mediaIds` of a send (spec rule 3) before anything is written.
 * @returns the ids (duplicates refused), in order
 * @throws 400 `validation_error` for a malformed or repeated id or more than MAX_ATTACHMENTS;
 *   404 `media_not_found` (unknown, another organization's, or a web-chat upload) and 404
 *   `file_expired` (an unattached upload past its 24 h), each naming `mediaIds[i]`;
 *   422 `upload_not_for_sms` for an upload made with another purpose; 422 `media_too_large` over 5 MB in total
 */
export async function checkSendAttachments(db: Parameters<typeof lookupAttachments>[0], orgId: string, ids: string[] | undefined): Promise<string[]> {
  if (!ids || ids.length === 0) return [];
  const shapeErrors: FieldError[] = [];
  if (ids.length > MAX_ATTACHMENTS) shapeErrors.push({ field: 'mediaIds', message: `must have at most ${MAX_ATTACHMENTS} items` });
  ids.forEach((id, i) => {
    if (typeof id !== 'string' || !/^(med|file)_[0-9A-Za-z]{1,64}$/.test(id)) {
      shapeErrors.push({ field: `mediaIds[${i}]`, message: 'must be a text attachment id (med_…) or an SMS upload id (file_…)' });
    } else if (ids.indexOf(id) !== i) {
      shapeErrors.push({ field: `mediaIds[${i}]`, message: `repeats mediaIds[${ids.indexOf(id)}]` });
    }
  });
  if (shapeErrors.length) throw validationError(shapeErrors);
  const found = await lookupAttachments(db, orgId, ids);
  const byProblem = (p: string) => found.flatMap((f, i) => (!f.ok && f.problem === p ? [{ field: `mediaIds[${i}]`, id: ids[i] }] : []));
  const missing = byProblem('not_found');
  if (missing.length) {
    throw new ApiError(404, 'media_not_found', `No text attachment or SMS upload ${missing.map((m) => m.id).join(', ')} exists in this organization`, {
      errors: missing.map((m) => ({ field: m.field, message: 'no text attachment (med_…) or SMS upload (file_…) with this id' })),
    });
  }
  const expired = byProblem('file_expired');
  if (expired.length) {
    throw new ApiError(404, 'file_expired', `The upload ${expired.map((m) => m.id).join(', ')} expired before it was attached; upload it again`, {
      errors: expired.map((m) => ({ field: m.field, message: 'the upload expired before attachment; re-upload' })),
    });
  }
  const other = byProblem('not_sms_upload');
  if (other.length) {
    throw new ApiError(422, 'upload_not_for_sms', `The upload ${other.map((m) => m.id).join(', ')} was not made for texts; upload it with purpose=sms`, {
      errors: other.map((m) => ({ field: m.field, message: 'upload made for another purpose; POST /uploads with purpose=sms' })),
    });
  }
  const total = found.reduce((n, f) => n + (f.ok ? f.sizeBytes : 0), 0);
  if (total > MAX_ATTACHMENT_BYTES) {
    throw new ApiError(422, 'media_too_large', `The attachments total ${total} bytes; a text carries at most ${MAX_ATTACHMENT_BYTES} (5 MB)`, {
      errors: [{ field: 'mediaIds', message: `at most ${MAX_ATTACHMENT_BYTES} bytes in total` }],
    });
  }
  return ids;
}

/** One attachment of an inbound provider callback, decoded. */
export interface InboundMediaItem {
  contentType: string;
  data: Buffer;
}

/**
 * Validates and decodes the optional `media` of an inbound-message callback:
 * `[{ contentType: "image/jpeg", contentBase64: "…" }]`, at most MAX_ATTACHMENTS items (the sandbox's
 * format: real adapters fetch the carrier's media URLs and map to it). The request body limit bounds
 * the total size.
 * @param errors receives one entry per offending field (`media[i].contentType` …)
 */
export function parseInboundMedia(media: unknown, errors: FieldError[]): InboundMediaItem[] {
  if (media === undefined || media === null) return [];
  if (!Array.isArray(media)) {
    errors.push({ field: 'media', message: 'must be an array of { contentType, contentBase64 }' });
    return [];
  }
  if (media.length > MAX_ATTACHMENTS) errors.push({ field: 'media', message: `must have at most ${MAX_ATTACHMENTS} items` });
  const out: InboundMediaItem[] = [];
  media.forEach((m: any, i) => {
    const type = typeof m?.contentType === 'string' ? m.contentType.trim().toLowerCase() : '';
    if (!/^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(type)) {
      errors.push({ field: `media[${i}].contentType`, message: 'must be a media type such as image/jpeg' });
    }
    const b64 = m?.contentBase64;
    if (typeof b64 !== 'string' || b64.length === 0 || b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) {
      errors.push({ field: `media[${i}].contentBase64`, message: 'must be non-empty standard base64' });
      return;
    }
    out.push({ contentType: type, data: Buffer.from(b64, 'base64') });
  });
  return out;
}
