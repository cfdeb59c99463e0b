/**
 * JSON body parsing with koa-body for methods that carry a body: a body of another media type is
 * 415 `unsupported_media_type`; over the limit 413 `payload_too_large`; malformed 400 `malformed_json`.
 */
import { koaBody } from 'koa-body';
import { ApiError } from '../errors';
import type { AppContext } from '../context';

const JSON_TYPE = /^application\/([a-z0-9.+-]+\+)?json$/i;

/** @param limitBytes largest accepted JSON body */
export function jsonBody(limitBytes: number) {
  const parse = koaBody({ json: true, urlencoded: false, text: false, multipart: false, jsonLimit: limitBytes, jsonStrict: true, patchNode: false, parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'] as never });
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    const hasBody = ctx.request.length > 0 || !!ctx.get('transfer-encoding');
    if (!hasBody) {
      (ctx.request as { body?: unknown }).body = undefined;
      return next();
    }
    const type = (ctx.get('content-type') || '').split(';')[0].trim();
    if (!JSON_TYPE.test(type)) {
      throw new ApiError(415, 'unsupported_media_type', `Send the body as application/json (got ${type || 'no Content-Type'})`);
    }
    const length = ctx.request.length;
    if (length && length > limitBytes) {
      throw new ApiError(413, 'payload_too_large', `The request body is ${length} bytes; the limit is ${limitBytes} bytes`);
    }
    return parse(ctx as never, next);
  };
}
