/**
 * What the server-rendered pages at the origin root share (docs/team-and-oauth.md "Connect an app with OAuth"): reading an
 * `application/x-www-form-urlencoded` body (HTML 5.2 §4.10.21.6), cookies (RFC 6265bis: `__Host-`
 * prefix, Secure, HttpOnly, SameSite=Lax), CSRF tokens (OWASP CSRF Prevention Cheat Sheet: synchronizer
 * token for signed-in forms, signed double-submit cookie before sign-in), HTML escaping and the page frame.
 */
import crypto from 'node:crypto';
import type { AppContext } from '../context';
import { ApiError } from '../../domain/errors';
import { randomBase62 } from '../../db/ids';
import { escapeHtml, htmlDocument } from '../pages/theme';

/** Name of the sign-in session cookie. */
export const SESSION_COOKIE = '__Host-acp_session';
/** Name of the pre-sign-in CSRF cookie (double submit). */
export const CSRF_COOKIE = '__Host-acp_csrf';
/** Largest form body accepted, in bytes. */
const FORM_LIMIT_BYTES = 64 * 1024;

/**
 * Reads an urlencoded form body (repeated names become arrays).
 * @throws ApiError 415 for another content type; 413 above 64 KiB
 */
export async function readForm(ctx: AppContext): Promise<Record<string, string | string[]>> {
  if (!ctx.is('application/x-www-form-urlencoded')) throw new ApiError(415, 'unsupported_media_type', 'Send the form as application/x-www-form-urlencoded');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT_BYTES) throw new ApiError(413, 'payload_too_large', 'The form is larger than 64 KiB');
    chunks.push(chunk as Buffer);
  }
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** One value of a form field or query parameter (the first when repeated), or '' when absent. */
export function field(form: Record<string, unknown>, name: string): string {
  const v = form[name];
  return typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : '';
}

/** Every value of a repeated form field. */
export function fields(form: Record<string, unknown>, name: string): string[] {
  const v = form[name];
  return typeof v === 'string' ? [v] : Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** The value of a request cookie, or undefined. */
export function readCookie(ctx: AppContext, name: string): string | undefined {
  for (const part of (ctx.get('cookie') || '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/**
 * Appends a `Set-Cookie`: always `Path=/; Secure; HttpOnly; SameSite=Lax` (browsers accept Secure cookies
 * from http://localhost; Lax lets the cookie ride the top-level redirect from an app to the consent page).
 * @param maxAgeSeconds 0 deletes the cookie
 */
export function setCookie(ctx: AppContext, name: string, value: string, maxAgeSeconds: number): void {
  ctx.append('Set-Cookie', `${name}=${value}; Path=/; Max-Age=${maxAgeSeconds}; Secure; HttpOnly; SameSite=Lax`);
}

/** Constant-time equality of two strings (false when lengths differ). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && x.length > 0 && crypto.timingSafeEqual(x, y);
}

/** The double-submit CSRF token of a visitor who is not signed in, set as a cookie when missing (lasts 2 h). */
export function anonymousCsrf(ctx: AppContext): string {
  let token = readCookie(ctx, CSRF_COOKIE);
  if (!token || !/^[A-Za-z0-9]{32,64}$/.test(token)) {
    token = randomBase62(24);
    setCookie(ctx, CSRF_COOKIE, token, 7200);
  }
  return token;
}

/**
 * Refuses a form whose `csrf` field does not match `expected` (the session's token, or the CSRF cookie).
 * @throws ApiError 403 csrf_failed
 */
export function checkCsrf(form: Record<string, unknown>, expected: string | undefined): void {
  if (!expected || !sameSecret(field(form, 'csrf'), expected)) {
    throw new ApiError(403, 'csrf_failed', 'The form is stale or was not sent from this site; reload the page and try again');
  }
}

/** Escapes text for HTML content and attribute values (the pages' one escaper, api/pages/theme.ts). */
export const esc = escapeHtml;

/** A hidden input. */
export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;
}

/**
 * Answers a whole HTML page in the shared frame (api/pages/theme.ts: product name, organization, the one
 * stylesheet): no caching, not framable (clickjacking: RFC 7034, CSP frame-ancestors), no script at all
 * (CSP), no referrer (the query carries OAuth parameters).
 * @param body inner HTML, already escaped
 * @param opts.organization the organization's name, when the page knows it
 */
export function page(ctx: AppContext, status: number, title: string, body: string, opts: { organization?: string } = {}): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Content-Security-Policy', PAGE_CSP);
  ctx.body = htmlDocument(title, body, opts);
}

/** The pages' Content-Security-Policy: the stylesheet and favicon of this origin, no script. */
export const PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' http: https:; frame-ancestors 'none'";

/**
 * Client credentials of an `Authorization: Basic` header (RFC 6749 §2.3.1: each part form-urlencoded,
 * then RFC 7617), or undefined when the header is absent or not Basic.
 */
export function basicCredentials(header: string): { clientId: string; secret: string } | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return undefined;
  const formDecode = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { clientId: formDecode(decoded.slice(0, i)), secret: formDecode(decoded.slice(i + 1)) };
}
