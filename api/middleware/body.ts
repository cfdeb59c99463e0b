/**
 * JSON body parsing with koa-body for methods that carry a body: a body of another media type is
 * 415 `unsupported_media_type`; over the limit 413 `payload_too_large`; malformed 400 `malformed_json`;
 * a string Postgres cannot store (U+0000, unpaired surrogates) 400 `validation_error` naming the field,
 * before any handler runs, so no write can fail on it later (provider callbacks keep it as U+FFFD);
 * nesting deeper than 64 levels 400 `validation_error` on `(body)`.
 */
import { koaBody } from 'koa-body';
import { ApiError, validationError } from '../errors';
import { nestingErrors, unstorableTextErrors } from '../validation';
import { storableJson } from '../../db/text';
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
      const req = ctx.request as { body?: unknown };
      const tooDeep = nestingErrors(req.body);
      if (tooDeep.length) throw validationError(tooDeep);
      if (opts.keepRaw) {
        // A provider's callback is a fact that already happened (an inbound message, a verdict): keep
        // it, with U+FFFD for what Postgres cannot store, instead of refusing it into endless retries.
        req.body = storableJson(req.body);
      } else {
        const errors = unstorableTextErrors(req.body);
        if (errors.length) throw validationError(errors);
      }
      return next();
    });
  };
}

