/**
 * The one error middleware (STYLE.md, Koa): every failure becomes an RFC 9457 `application/problem+json`
 * body `{type, title, status, detail, instance, code, errors?}` (spec "Problem details"). Unexpected
 * errors answer 500 `internal_error` without a stack; the stack goes to the log. The OpenAI-compatible operations
 * answer the same errors in OpenAI's shape instead (`speaksOpenAi`, `openAiErrorBody`).
 */
import { ApiError, statusTitle } from '../../domain/errors';
import { InvalidCursorError } from '../../db/pagination';
import { invalidCursor } from '../http';
import type { AppContext } from '../context';
import { escapeHtml, htmlDocument } from '../pages/theme';

/** Builds a problem body. `instance` is the request path (spec "Problem details"). */
export function problemBody(ctx: AppContext, err: ApiError): Record<string, unknown> {
  const body: Record<string, unknown> = {
    type: 'about:blank',
    title: statusTitle(err.status),
    status: err.status,
    detail: err.message,
    instance: ctx.path,
    code: err.code,
  };
  if (err.errors?.length) body.errors = err.errors;
  if (err.extra) Object.assign(body, err.extra);
  return body;
}

/** Maps errors thrown by libraries (koa-body, JSON parsing, http-errors) to ApiError. */
export function toApiError(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  // A list that forgot api/http.ts `paged` still answers 400, never 500 (docs/api-notes.md: cursors).
  if (err instanceof InvalidCursorError) return invalidCursor(err.message);
  const e = err as { status?: number; statusCode?: number; type?: string; message?: string; expose?: boolean };
  const status = e?.status ?? e?.statusCode;
  if (status === 413 || e?.type === 'entity.too.large') {
    return new ApiError(413, 'payload_too_large', 'The request body is larger than this endpoint accepts');
  }
  if (status === 415) return new ApiError(415, 'unsupported_media_type', e.message ?? 'Unsupported content type');
  if (e?.type === 'entity.parse.failed' || (status === 400 && /JSON|parse|Unexpected/i.test(e?.message ?? ''))) {
    return new ApiError(400, 'malformed_json', 'The request body is not valid JSON');
  }
  if (status === 400 && /encoding|charset/i.test(e?.message ?? '')) {
    return new ApiError(415, 'unsupported_media_type', e.message ?? 'Unsupported charset');
  }
  if (status === 400 && err instanceof SyntaxError) return new ApiError(400, 'malformed_json', 'The request body is not valid JSON');
  if (status && status >= 400 && status < 500) {
    // A client error a library raised: its status stands; its message only when the library exposes it.
    return new ApiError(status, 'bad_request', e.expose && e.message ? e.message : statusTitle(status));
  }
  return undefined;
}

/**
 * The OpenAI-compatible operations (`/chat/completions`, `/models`, `/models/{id}`, `/responses…` under /api/v1), whose
 * failures take OpenAI's error shape instead of problem+json so OpenAI clients read them (docs/api-notes.md "OpenAI
 * compatibility"). Matched like the routers match: case-insensitively.
 */
const OPENAI_PATHS = /^\/api\/v1\/(chat\/completions|models|responses)(\/|$)/i;

/** Whether a failure at `path` is answered in OpenAI's error shape ({@link openAiErrorBody}). */
export function speaksOpenAi(path: string): boolean {
  return OPENAI_PATHS.test(path);
}

/** OpenAI's error `type` for an HTTP status (OpenAI API reference "Error codes"). */
export function openAiErrorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * An error in OpenAI's shape `{error: {message, type, param, code}}` (OpenAI API reference "Error codes"): `code` is
 * ours (spec "Errors": `validation_error`, `no_published_version`, …), `type` OpenAI's for the status, `param` the
 * first offending field (else null), and `message` says everything a problem's `detail` and `errors[]` would: for a
 * `validation_error` each field's problem (an unknown field as OpenAI words it, "Unrecognized request argument
 * supplied: <name>"), otherwise the detail with the fields' problems in parentheses.
 */
export function openAiErrorBody(err: ApiError): { error: { message: string; type: string; param: string | null; code: string } } {
  const fields = err.errors ?? [];
  const said = fields.map((f) => (f.message === 'is not a known field' ? `Unrecognized request argument supplied: ${f.field}` : `${f.field}: ${f.message}`)).join('; ');
  const message = !fields.length ? err.message : err.code === 'validation_error' ? said : `${err.message} (${said})`;
  return { error: { message, type: openAiErrorType(err.status), param: fields[0]?.field ?? null, code: err.code } };
}

/**
 * Whether a failure is answered as an HTML page: a browser (its `Accept` prefers `text/html` to JSON, RFC 9110 §12.5.1)
 * asking for a path outside the API (`/api/v1…` always answers problem+json, whatever the client).
 */
function wantsHtmlPage(ctx: AppContext): boolean {
  if (/^\/api\/v1(\/|$)/i.test(ctx.path)) return false;
  return ctx.accepts('json', 'html') === 'html' && /text\/html/.test(ctx.get('accept'));
}

/** A failure as a page in the sign-in pages' frame (api/pages/theme.ts): what happened in words, and where to go. */
function errorPage(ctx: AppContext, err: ApiError): void {
  const titles: Record<number, string> = { 403: 'Not allowed', 404: 'Page not found', 405: 'Not available this way', 413: 'Too large', 415: 'Not accepted', 429: 'Too many requests' };
  const title = titles[err.status] ?? (err.status >= 500 ? 'Something went wrong' : 'Not accepted');
  const detail = err.code === 'route_not_found' ? `There is no page at ${ctx.path}.` : err.message;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'");
  ctx.body = htmlDocument(
    title,
    `<p class="error" role="alert">${escapeHtml(detail)}</p><p class="muted">Code: ${escapeHtml(err.code)} · request ${escapeHtml(String(ctx.state.requestId ?? ''))}</p><p><a href="/">Home</a> · <a href="/console">Console</a> · <a href="/docs">API reference</a></p>`,
  );
}

/** Catches everything downstream and writes one problem+json response (OpenAI's error shape on {@link speaksOpenAi} paths). */
export function problem() {
  return async (ctx: AppContext, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (err) {
      let apiErr = toApiError(err);
      if (!apiErr) {
        ctx.state.log?.error({ err }, 'unhandled error');
        apiErr = new ApiError(500, 'internal_error', 'An unexpected error occurred; the request id identifies it in the logs');
      }
      for (const [k, v] of Object.entries(apiErr.headers)) ctx.set(k, v);
      // A refusal before the body was read to its end (413, 415): the rest of the body would be read
      // as the next request, so the connection ends with this answer (RFC 9110 §15.5.14, §9.6).
      if (!ctx.req.complete && (ctx.request.length > 0 || !!ctx.get('transfer-encoding'))) ctx.set('Connection', 'close');
      ctx.status = apiErr.status;
      if (speaksOpenAi(ctx.path)) {
        ctx.type = 'application/json; charset=utf-8';
        ctx.body = JSON.stringify(openAiErrorBody(apiErr));
        return;
      }
      if (wantsHtmlPage(ctx)) {
        errorPage(ctx, apiErr);
        return;
      }
      ctx.type = 'application/problem+json';
      ctx.body = JSON.stringify(problemBody(ctx, apiErr));
    }
  };
}
