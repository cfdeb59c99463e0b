/**
 * The embeddable widget's script (docs/api-notes.md "Widget"): `widget/src/widget.ts` bundled with esbuild (minified,
 * one IIFE, ES2020) once per process, the first time it is asked for, and served at the origin root:
 * `GET /widget.js` (revalidated hourly: `ETag` is the content hash) and `GET /widget.<hash>.js`
 * (immutable, cached for a year).
 */
import crypto from 'node:crypto';
import path from 'node:path';
import type { AppContext } from './context';
import type { KeyCache } from './keyCache';
import { hashKey } from '../db/repositories/apiKeys';
import { originAllowed } from '../domain/keys';
import { browserBundle } from './browserBundle';

/** A built bundle and its content hash (hex, 16 characters). */
export interface WidgetBundle {
  code: string;
  hash: string;
}

const widgetScript = browserBundle(path.join(__dirname, '..', 'widget', 'src', 'widget.ts'));
let bundle: Promise<WidgetBundle> | undefined;

/** Builds (once) and returns the widget bundle. @throws when esbuild fails (a build error in widget/src) */
export function widgetBundle(): Promise<WidgetBundle> {
  bundle ??= widgetScript().then((code) => ({ code, hash: crypto.createHash('sha256').update(code).digest('hex').slice(0, 16) }));
  bundle.catch(() => (bundle = undefined));
  return bundle;
}

/**
 * `GET /widget/status?key=<publishable key>`: whether the page's `Origin` may use that key
 * (`{"originAllowed": boolean}`, readable from any origin). The widget asks before it shows anything — a
 * refused origin's CORS preflight answers 403 without CORS headers, so the page could not read that refusal
 * later — and on a refused origin shows no launcher, only a `console.warn` for the site owner.
 */
async function serveStatus(ctx: AppContext, keys: KeyCache): Promise<void> {
  const key = typeof ctx.query.key === 'string' ? ctx.query.key : '';
  const info = /^[a-z][a-z0-9]{1,15}_pk_[A-Za-z0-9_]{16,64}$/.test(key) ? await keys.resolve(hashKey(key)) : undefined;
  const live = info && info.kind === 'publishable' && (!info.expiresAt || info.expiresAt.getTime() > Date.now());
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'application/json';
  ctx.body = { originAllowed: !!live && originAllowed(ctx.get('origin') || undefined, info.allowedOrigins ?? []) };
}

/** Serves `/widget.js`, `/widget.<hash>.js` and `/widget/status`; returns false for any other path. */
export async function serveWidget(ctx: AppContext, keys: KeyCache): Promise<boolean> {
  if (ctx.path === '/widget/status' && ctx.method === 'GET') {
    await serveStatus(ctx, keys);
    return true;
  }
  const m = /^\/widget(?:\.([0-9a-f]{16}))?\.js$/.exec(ctx.path);
  if (!m || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return false;
  const b = await widgetBundle();
  if (m[1] && m[1] !== b.hash) return false;
  ctx.set('Content-Type', 'text/javascript; charset=utf-8');
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('ETag', `"${b.hash}"`);
  ctx.set('Cache-Control', m[1] ? 'public, max-age=31536000, immutable' : 'public, max-age=3600, stale-while-revalidate=86400');
  if (ctx.get('if-none-match') === `"${b.hash}"`) {
    ctx.status = 304;
    return true;
  }
  ctx.body = b.code;
  return true;
}
