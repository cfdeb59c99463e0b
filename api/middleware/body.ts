/**
 * JSON body parsing with koa-body for methods that carry a body: a body of another media type is
 * 415 `unsupported_media_type`; over the limit 413 `payload_too_large`; malformed 400 `malformed_json`;
 * a string Postgres cannot store (U+0000, unpaired surrogates) 400 `validation_error` naming the field,
 * before any handler runs, so no write can fail on it later; nesting deeper than 64 levels 400
 * `validation_error` on `(body)` (api/validation.ts jsonValueErrors).
 */
import { koaBody } from 'koa-body';
import { ApiError, validationError } from '../../domain/errors';
import { jsonValueErrors } from '../../domain/validation';
import type { AppContext } from '../context';

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json$/i;

/**
 * @param limitBytes largest accepted JSON body
 * @param opts.keepRaw also keep the exact body text on `ctx.request.rawBody` (provider callbacks verify
 *   signatures over the bytes the provider signed)
 */
export function jsonBody(limitBytes: number, opts: { keepRaw?: boolean } = {}) {
  const parse = koaBody({
    json: true,
    urlencoded: false,
    text: false,
    multipart: false,
    jsonLimit: limitBytes,
    jsonStrict: true,
    patchNode: false,
    includeUnparsed: !!opts.keepRaw,
    parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'] as never,
  });
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const hasBody = ctx.request.length > 0 || !!ctx.get('transfer-encoding');
    if (!hasBody) {
      (ctx.request as { body?: unknown }).body = undefined;
      return next();
    }
    const type = (ctx.get('content-type') || '').split(';')[0].trim();
    // POST /uploads parses its multipart stream itself (api/routes/uploads.ts), with its own 25 MB limit.
    if (ctx.state.route?.operationId === 'createUpload' && /^multipart\/form-data$/i.test(type)) return next();
    if (!JSON_TYPE.test(type)) {
      throw new ApiError(415, 'unsupported_media_type', `Send the body as application/json (got ${type || 'no Content-Type'})`);
    }
    const length = ctx.request.length;
    if (length && length > limitBytes) {
      throw new ApiError(413, 'payload_too_large', `The request body is ${length} bytes; the limit is ${limitBytes} bytes`);
    }
    return parse(ctx as never, async () => {
      // Routes that keep the raw bytes (provider callbacks) read those, not the parsed body, and keep
      // unstorable text as U+FFFD themselves (api/sms/callbacks.ts): only the nesting limit applies.
      const errors = jsonValueErrors((ctx.request as { body?: unknown }).body, { text: !opts.keepRaw });
      if (errors.length) throw validationError(errors);
      return next();
    });
  };
}
