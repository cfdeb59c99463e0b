/**
 * `POST /uploads` (createUpload; spec "Limits": upload size 25 MB → 413 `file_too_large`): one file
 * as `multipart/form-data` (field name `file`; any single file part is accepted). The bytes are stored
 * in Postgres and the answer carries its `id` (`file_…`, passed as `fileId` where a file is used) to use as a knowledge source within 24 h;
 * after that an unattached upload is collected and its id answers 404 `file_expired`.
 *
 * An optional text field `purpose` (`general` by default, or `sms`) marks what the file is for: only
 * `sms` uploads can be attached to texts (POST /sms/messages `mediaIds`).
 *
 * The bytes must be what the part's type says (domain/mediaType.ts, sniffed with `file-type`): an image,
 * audio, video or PDF that is not, or a text that is a binary format, answers 415 `content_type_mismatch`
 * and nothing is stored; an undeclared type is taken from the bytes.
 *
 * The multipart stream is parsed here from `ctx.req` with formidable (the JSON body middleware must
 * leave multipart requests of this operation unread), in memory, stopping at the limit.
 */
import path from 'node:path';
import { Writable } from 'node:stream';
import { formidable, errors as formidableErrors, type File as FormidableFile } from 'formidable';
import { collectExpiredUploads, createUpload as storeUpload } from '../../db/repositories/uploads';
import type { Handler } from '../context';
import { ApiError, validationError } from '../../domain/errors';
import { requireScope } from '../middleware/auth';
import { orgOf } from '../http';
import { checkDeclaredType } from '../../domain/mediaType';

/** Values of the optional multipart field `purpose` (db/repositories/uploads.ts UploadPurpose, minus `chat`). */
const UPLOAD_PURPOSES = ['general', 'sms'];

/** Largest accepted file: 25 MB (MiB, 26 214 400 bytes). */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;

/** Slack for multipart headers and boundaries when judging `Content-Length` before reading. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const TYPES_BY_EXTENSION: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.json': 'application/json',
};

function tooLarge(): ApiError {
  return new ApiError(413, 'file_too_large', `The file exceeds the ${MAX_UPLOAD_BYTES}-byte (25 MB) upload limit`);
}

/** A safe display name: the last path segment, control characters removed, at most 255 characters. */
function cleanFilename(name: string | null | undefined): string {
  const base = path.basename(String(name ?? '').replace(/\\/g, '/')).replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return (base || 'upload').slice(0, 255);
}

/** The part's media type unless generic, else one guessed from the extension, else octet-stream. */
function contentTypeOf(declared: string | null | undefined, filename: string): string {
  const t = (declared ?? '').trim().toLowerCase();
  if (t && t !== 'application/octet-stream') return t;
  return TYPES_BY_EXTENSION[path.extname(filename).toLowerCase()] ?? (t || 'application/octet-stream');
}

/**
 * POST /uploads → 201 with the stored upload.
 * @throws 415 unsupported_media_type (not multipart) or content_type_mismatch naming `file`; 413 file_too_large;
 *   400 validation_error naming `file` or `purpose`; 403 insufficient_scope
 */
export const createUpload: Handler = async (ctx, { db, logger }) => {
  const orgId = orgOf(ctx);
  const type = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
  if (type !== 'multipart/form-data') {
    throw new ApiError(415, 'unsupported_media_type', `Send the file as multipart/form-data with a "file" part (got ${type || 'no Content-Type'})`);
  }
  const declared = ctx.request.length;
  if (declared && declared > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES) throw tooLarge();

  const buffers: Buffer[] = [];
  let received = 0;
  const form = formidable({
    maxFiles: 1,
    maxFileSize: MAX_UPLOAD_BYTES,
    maxTotalFileSize: MAX_UPLOAD_BYTES,
    maxFields: 20,
    maxFieldsSize: 64 * 1024,
    allowEmptyFiles: false,
    minFileSize: 1,
    fileWriteStreamHandler: () =>
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          received += chunk.length;
          // formidable also enforces the limit; this keeps memory bounded whatever it does.
          if (received <= MAX_UPLOAD_BYTES) buffers.push(chunk);
          cb();
        },
      }),
  });
  let parts: FormidableFile[];
  let purposeField: string | undefined;
  try {
    const [fields, files] = await form.parse<string, string>(ctx.req);
    parts = Object.values(files).flatMap((f) => f ?? []);
    purposeField = fields.purpose?.[0];
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === formidableErrors.biggerThanMaxFileSize || code === formidableErrors.biggerThanTotalMaxFileSize) throw tooLarge();
    if (code === formidableErrors.maxFilesExceeded) throw validationError([{ field: 'file', message: 'only one file can be uploaded per request' }]);
    if (code === formidableErrors.noEmptyFiles || code === formidableErrors.smallerThanMinFileSize) {
      throw validationError([{ field: 'file', message: 'is empty' }]);
    }
    throw new ApiError(400, 'malformed_multipart', `The multipart body cannot be read: ${(err as Error).message}`);
  }
  const file = parts[0];
  if (!file) throw validationError([{ field: 'file', message: 'is required (a multipart part with a filename)' }]);
  if (received > MAX_UPLOAD_BYTES) throw tooLarge();

  // Optional form field `purpose`: `general` (default: knowledge sources, contact lists) or `sms` (attachable
  // to texts by POST /sms/messages). `chat` uploads are made by the web chat only (spec "Scope rules" 3).
  if (purposeField !== undefined && !UPLOAD_PURPOSES.includes(purposeField)) {
    throw validationError([{ field: 'purpose', message: `must be one of: ${UPLOAD_PURPOSES.join(', ')}` }]);
  }
  // Knowledge and contact-list files need knowledge:write or outbound:write; text attachments sms:send (rule 3).
  if (purposeField === 'sms') requireScope(ctx, 'sms:send');
  else requireScope(ctx, 'knowledge:write', 'outbound:write');
  const filename = cleanFilename(file.originalFilename);
  const data = Buffer.concat(buffers, received);
  const checked = await checkDeclaredType(data, contentTypeOf(file.mimetype, filename));
  if ('mismatch' in checked) {
    const { declared, actual } = checked.mismatch;
    throw new ApiError(415, 'content_type_mismatch', `The file is declared ${declared} but its bytes are ${actual}`, {
      errors: [{ field: 'file', message: `is declared ${declared} but its bytes are ${actual}` }],
    });
  }
  const upload = await storeUpload(db, orgId, {
    filename,
    contentType: checked.contentType,
    data,
    purpose: (purposeField ?? 'general') as 'general' | 'sms',
  });
  // Opportunistic garbage collection of expired, unattached uploads (bounded batch, never fails the upload).
  collectExpiredUploads(db, 50).catch((err) => logger.warn({ err }, 'upload collection failed'));
  return { data: upload, status: 201 };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = { createUpload };

/** Schemas of this area's operations (merged into the route table). */
export const routeSchemas = {
  createUpload: { responseSchema: 'Upload' },
};
