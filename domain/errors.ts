/**
 * Typed API errors, turned into RFC 9457 problem details by api/middleware/problem.ts.
 * Spec "Errors": clients branch on `status` and `code`, never on `title`/`detail` wording.
 */

/** One field-level problem (spec "Response envelope" / "Problem details": `{field, message}`). */
export interface FieldError {
  field: string;
  message: string;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/** Standard reason phrase for a status (RFC 9110 §15). */
export function statusTitle(status: number): string {
  return TITLES[status] ?? 'Error';
}

/**
 * An error that becomes one problem+json response.
 * @param status HTTP status (authoritative)
 * @param code stable machine code, e.g. `validation_error`, `no_published_version`
 * @param detail human-readable explanation for this occurrence
 * @param opts.errors field-level problems; opts.headers extra response headers; opts.extra extension members
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors?: FieldError[];
  readonly headers: Record<string, string>;
  readonly extra?: Record<string, unknown>;
  constructor(
    status: number,
    code: string,
    detail: string,
    opts: { errors?: FieldError[]; headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.errors = opts.errors;
    this.headers = opts.headers ?? {};
    this.extra = opts.extra;
  }
}

/** 400 `validation_error` with one entry per offending field. */
export function validationError(errors: FieldError[], detail?: string): ApiError {
  const d = detail ?? (errors.length === 1 ? `${errors[0].field}: ${errors[0].message}` : `${errors.length} fields are invalid`);
  return new ApiError(400, 'validation_error', d, { errors });
}

/** 404 `not_found`: also what a resource of another organization answers (DESIGN.md "Tenancy"). */
export function notFound(what: string, code = 'not_found'): ApiError {
  return new ApiError(404, code, `${what} was not found`);
}

/**
 * 503 `temporal_unavailable` with `Retry-After: 30`: the workflow service could not be reached, and
 * nothing was changed (docs/api-notes.md).
 * @param detail what could not be done, e.g. "The registration workflow could not be started; submit again"
 */
export function temporalUnavailable(detail = 'The workflow service is not reachable; nothing was changed, try again later'): ApiError {
  return new ApiError(503, 'temporal_unavailable', detail, { headers: { 'Retry-After': '30' } });
}
