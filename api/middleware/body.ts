/**
 * JSON body parsing with koa-body for methods that carry a body: a body of another media type is
 * 415 `unsupported_media_type` (except form-encoded provider webhooks on routes that keep the raw body); over the limit 413 `payload_too_large`; malformed 400 `malformed_json`;
 * a string Postgres cannot store (U+0000, unpaired surrogates) 400 `validation_error` naming the field,
 * before any handler runs, so no write can fail on it later; nesting deeper than 64 levels 400
 * `validation_error` on `(body)`; a `__proto__`, `constructor` or `prototype` key at any depth 400
 * `validation_error` naming its path (domain/validation.ts jsonValueErrors). JSON is UTF-8 (RFC 8259 §8.1):
 * another `charset` is 415, and so is a `Content-Encoding` other than `identity` (RFC 9110 §15.5.16).
 */
import type { IncomingMessage } from 'node:http';
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
  // A request without a body passes through synchronously (no async frame).
  return (ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> => {
    const hasBody = ctx.request.length > 0 || !!ctx.get('transfer-encoding');
    if (hasBody) return withBody(ctx, next);
    (ctx.request as { body?: unknown }).body = undefined;
    return next();
  };
  async function withBody(ctx: AppContext, next: () => Promise<unknown>): Promise<unknown> {
    const type = (ctx.get('content-type') || '').split(';')[0].trim();
    // POST /uploads parses its multipart stream itself (api/routes/uploads.ts), with its own 25 MB limit.
    if (ctx.state.route?.operationId === 'createUpload' && /^multipart\/form-data$/i.test(type)) return next();
    // Provider webhooks that are form-encoded (Twilio's) keep their exact text; the handler verifies it.
    if (opts.keepRaw && /^application\/x-www-form-urlencoded$/i.test(type)) {
      const text = await readText(ctx, limitBytes);
      (ctx.request as { rawBody?: string; body?: unknown }).rawBody = text;
      (ctx.request as { body?: unknown }).body = Object.fromEntries(new URLSearchParams(text));
      return next();
    }
    if (!JSON_TYPE.test(type)) {
      throw new ApiError(415, 'unsupported_media_type', `Send the body as application/json (got ${type || 'no Content-Type'})`);
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(ctx.get('content-type'))?.[1];
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      throw new ApiError(415, 'unsupported_media_type', `JSON bodies are UTF-8 (RFC 8259); got charset=${charset}`);
    }
    const encoding = (ctx.get('content-encoding') || 'identity').trim();
    if (!/^identity$/i.test(encoding)) {
      throw new ApiError(415, 'unsupported_media_type', `Send the body without a content coding (got Content-Encoding: ${encoding})`);
    }
    const length = ctx.request.length;
    if (length && length > limitBytes) {
      throw new ApiError(413, 'payload_too_large', `The request body is ${length} bytes; the limit is ${limitBytes} bytes`);
    }
    if (!opts.keepRaw) {
      (ctx.request as { body?: unknown }).body = parseJson(await readText(ctx, limitBytes));
      const errors = jsonValueErrors((ctx.request as { body?: unknown }).body, { text: true });
      if (errors.length) throw validationError(errors);
      return next();
    }
    return parseRefusingPrototypeKeys(parse, ctx, async () => {
      // Routes that keep the raw bytes (provider callbacks) read those, not the parsed body, and keep
      // unstorable text as U+FFFD themselves (api/sms/callbacks.ts): only the nesting limit applies.
      const errors = jsonValueErrors((ctx.request as { body?: unknown }).body, { text: !opts.keepRaw });
      if (errors.length) throw validationError(errors);
      return next();
    });
  }
}

/** RFC 8259 whitespace, then an object or an array (koa-body's `jsonStrict`, which the API kept). */
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*[[{]/;

/**
 * The body of a JSON request as text, read straight from the socket stream: koa-body (co-body, raw-body,
 * inflation, type-is) cost about 20 µs of CPU per request for what the checks above already decided
 * (docs/benchmarks.md). Decodes UTF-8 (invalid bytes become U+FFFD) and drops a leading byte order mark,
 * as koa-body did. Provider callbacks, which need the exact bytes, still go through koa-body.
 * @throws ApiError 413 payload_too_large past `limitBytes` (a chunked body has no Content-Length);
 *   400 bad_request when the client aborts the body
 */
function readText(ctx: AppContext, limitBytes: number): Promise<string> {
  const req = ctx.req as ReadingRequest;
  return new Promise<string>((resolve, reject) => {
    req[READING] = { chunks: [], size: 0, limitBytes, resolve, reject };
    req.on('data', onBodyData);
    req.on('end', onBodyEnd);
    req.on('error', onBodyError);
    req.on('close', onBodyClose);
  });
}

/**
 * A body being read: its listeners are module functions finding it on the request (`this`), not
 * closures made per request (under tsx each named closure also costs a `defineProperty` of its name).
 */
interface BodyReading {
  chunks: Buffer[];
  size: number;
  limitBytes: number;
  resolve(text: string): void;
  reject(err: unknown): void;
}
const READING = Symbol('bodyReading');
type ReadingRequest = IncomingMessage & { [READING]?: BodyReading };

/** Settles the read of `req` once: removes the listeners, then rejects with `err` or resolves with `text`. */
function finishBody(req: ReadingRequest, err: unknown, text?: string): void {
  const reading = req[READING];
  if (!reading) return;
  req[READING] = undefined;
  req.off('data', onBodyData);
  req.off('end', onBodyEnd);
  req.off('error', onBodyError);
  req.off('close', onBodyClose);
  if (err) reading.reject(err);
  else reading.resolve(text!);
}

function onBodyData(this: ReadingRequest, chunk: Buffer): void {
  const reading = this[READING];
  if (!reading) return;
  reading.size += chunk.length;
  if (reading.size > reading.limitBytes) {
    this.pause();
    finishBody(this, new ApiError(413, 'payload_too_large', `The request body is over the limit of ${reading.limitBytes} bytes`));
    return;
  }
  reading.chunks.push(chunk);
}

function onBodyEnd(this: ReadingRequest): void {
  const reading = this[READING];
  if (!reading) return;
  const { chunks, size } = reading;
  const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)).toString('utf8');
  finishBody(this, undefined, text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

function onBodyError(this: ReadingRequest, err: unknown): void {
  finishBody(this, err);
}

function onBodyClose(this: ReadingRequest): void {
  finishBody(this, new ApiError(400, 'bad_request', 'The request body was cut off before its end'));
}

/**
 * Parses a JSON request body: an object or an array (empty text is `{}`, as with koa-body). A
 * `__proto__` key becomes an own property here, which the caller's jsonValueErrors refuses by name.
 * @throws ApiError 400 malformed_json
 */
function parseJson(text: string): unknown {
  if (!text) return {};
  if (!STRICT_JSON.test(text)) throw new ApiError(400, 'malformed_json', 'The request body is not valid JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'malformed_json', 'The request body is not valid JSON');
  }
}

/**
 * Runs koa-body. Its JSON parser (co-body, with @hapi/bourne) refuses a `__proto__` key with a bare
 * SyntaxError; that becomes 400 `validation_error` naming the path of every prototype key, found by
 * parsing the same text again with JSON.parse (which only makes an own property of it).
 * @throws ApiError 400 validation_error for prototype keys; other parser errors propagate (api/middleware/problem.ts maps them)
 */
async function parseRefusingPrototypeKeys(
  parse: (ctx: never, next: () => Promise<unknown>) => Promise<unknown>,
  ctx: AppContext,
  next: () => Promise<unknown>,
): Promise<unknown> {
  let parsed = false;
  try {
    return await parse(ctx as never, async () => {
      parsed = true;
      return next();
    });
  } catch (err) {
    const raw = (err as { body?: unknown }).body;
    if (!parsed && err instanceof SyntaxError && /prototype/i.test(err.message) && typeof raw === 'string') {
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch {
        throw err;
      }
      const errors = jsonValueErrors(value, { text: false });
      if (errors.length) throw validationError(errors);
    }
    throw err;
  }
}
