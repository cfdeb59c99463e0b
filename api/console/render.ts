/**
 * The console's page frame and the small pieces its pages share (docs/operations.md "Operator console"): the sign-in
 * pages' frame and stylesheet (api/pages/theme.ts) with a navigation bar, wider tables that scroll sideways on a
 * phone (390 px), badges, and a strict Content-Security-Policy: scripts only from this origin (the console's bundle
 * and chart.js), no inline script or style.
 */
import type { AppContext } from '../context';
import { brandHeader, escapeHtml, HEAD_LINKS, PRODUCT_NAME } from '../pages/theme';
import { hidden } from '../oauth/forms';

/** Where the console's stylesheet, script and chart.js are served. */
export const CONSOLE_ASSETS = {
  css: '/console/assets/console.css',
  js: '/console/assets/console.js',
  chart: '/console/assets/chart.umd.js',
} as const;

/** The console pages' Content-Security-Policy (W3C CSP Level 3): this origin's scripts, styles, and SSE; recordings over https. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' https: data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The console's own rules, on top of the site stylesheet. */
export const CONSOLE_CSS = `.console-page .brand{max-width:80rem}
nav.console-nav{max-width:80rem;margin:0 auto 1rem;padding:0 1rem;display:flex;flex-wrap:wrap;gap:.3rem .9rem;align-items:center}
nav.console-nav a{font-weight:600;text-decoration:none;padding:.2rem 0}
nav.console-nav a[aria-current=page]{text-decoration:underline;text-underline-offset:4px}
nav.console-nav form{margin-left:auto}
nav.console-nav button{margin:0;padding:.3rem .8rem}
main.console{max-width:80rem;margin:0 auto 2rem;padding:1.25rem 1.5rem;background:var(--card);border:1px solid var(--line);border-radius:12px}
@media (max-width:600px){main.console{padding:1rem .75rem;border-radius:0;border-left:0;border-right:0}}
h2{font-size:1.15rem;margin:1.6rem 0 .6rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:.93rem}
th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);white-space:nowrap}
td code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem;word-break:break-all}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:999px;border:1px solid var(--line);font-size:.8rem;white-space:nowrap}
.badge.ok{color:var(--notice);background:var(--notice-bg);border-color:transparent}
.badge.bad{color:var(--error);background:var(--error-bg);border-color:transparent}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem .8rem;align-items:flex-end;margin:0 0 1rem}
form.filters label{margin:0;font-size:.9rem}
form.filters input,form.filters select,form.control textarea,form.control input,select{display:block;margin-top:.2rem;padding:.45rem .5rem;font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:8px;max-width:100%}
form.filters button{margin:0}
ol.transcript{list-style:none;padding:0;margin:0}
ol.transcript li{padding:.5rem .7rem;margin:.4rem 0;border-radius:10px;background:var(--bg);border:1px solid var(--line)}
ol.transcript li .who{font-weight:600;font-size:.85rem;color:var(--muted);display:block}
ol.transcript li.operator{border-color:var(--accent)}
ol.transcript li.user,ol.transcript li.contact{margin-right:12%}
ol.transcript li.agent,ol.transcript li.operator{margin-left:12%}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0;overflow-wrap:anywhere}
.controls{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:1rem;margin-top:1rem}
form.control{border:1px solid var(--line);border-radius:10px;padding:.8rem}
form.control textarea{width:100%;min-height:4rem}
.chart{position:relative;height:260px;width:100%;min-width:0;margin:.5rem 0 1.5rem}
.chart canvas{max-width:100%}
.timeline{list-style:none;padding:0;border-left:3px solid var(--line);margin:0 0 0 .4rem}
.timeline li{padding:.2rem 0 .6rem .9rem}
.progress{height:10px;background:var(--bg);border:1px solid var(--line);border-radius:999px;overflow:hidden}
.progress span{display:block;height:100%;background:var(--accent)}
.pager{margin-top:1rem}
audio{width:100%;max-width:32rem}
form.inline{display:inline}
${Array.from({ length: 21 }, (_, i) => `.progress span.w${i * 5}{width:${i * 5}%}`).join('\n')}
`;

/** The console sections, in navigation order: path and label. */
const SECTIONS: [string, string][] = [
  ['/console/conversations', 'Conversations'],
  ['/console/live', 'Live'],
  ['/console/calls', 'Calls'],
  ['/console/campaigns', 'Campaigns'],
  ['/console/sms', 'Texts and 10DLC'],
  ['/console/webhooks', 'Webhooks'],
  ['/console/agents', 'Agents'],
  ['/console/analytics', 'Analytics'],
];

/** Escapes text for HTML. */
export const esc = escapeHtml;

/** The signed-in member's part of a page: organization name, sign-out token. */
export interface Viewer {
  organization: string;
  email: string;
  role: string;
  csrf: string;
}

/**
 * Answers a whole console page (no caching, not framable, the console CSP).
 * @param section the navigation entry to mark current (its path)
 * @param body inner HTML, already escaped
 * @param opts.scripts load the console bundle (and chart.js first with `charts`)
 */
export function consolePage(ctx: AppContext, v: Viewer, section: string, title: string, body: string, opts: { status?: number; scripts?: boolean; charts?: boolean } = {}): void {
  ctx.status = opts.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('Content-Security-Policy', CONSOLE_CSP);
  const nav = SECTIONS.map(([href, label]) => `<a href="${href}"${section === href ? ' aria-current="page"' : ''}>${esc(label)}</a>`).join('');
  const scripts = `${opts.charts ? `<script src="${CONSOLE_ASSETS.chart}" defer></script>` : ''}${opts.scripts || opts.charts ? `<script src="${CONSOLE_ASSETS.js}" defer></script>` : ''}`;
  ctx.body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)} · ${esc(PRODUCT_NAME)}</title>${HEAD_LINKS}<link rel="stylesheet" href="${CONSOLE_ASSETS.css}">${scripts}</head>
<body class="console-page">${brandHeader(v.organization)}<nav class="console-nav" aria-label="Console">${nav}<form method="post" action="/logout">${hidden('csrf', v.csrf)}<button type="submit" class="secondary" title="Signed in as ${esc(v.email)} (${esc(v.role)})">Sign out</button></form></nav>
<main class="console"><h1>${esc(title)}</h1>${body}</main></body></html>`;
}

/** A table that scrolls sideways on a narrow screen; `rows` are already-escaped cells. */
export function table(headers: string[], rows: string[][], empty = 'Nothing yet.'): string {
  if (!rows.length) return `<p class="muted">${esc(empty)}</p>`;
  return `<div class="scroll"><table><thead><tr>${headers.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></div>`;
}

/** A status badge: `ok` and `bad` words get colour. */
export function badge(text: string | null | undefined): string {
  if (!text) return '<span class="muted">—</span>';
  const ok = /^(active|completed|succeeded|answered|applied|passed|published|delivered|sent|resolved|enabled)$/.test(text);
  const bad = /(fail|error|reject|cancel|disabled|abandon|blocked|opted_out|not_)/.test(text);
  return `<span class="badge${ok ? ' ok' : bad ? ' bad' : ''}">${esc(text)}</span>`;
}

/** A time as `YYYY-MM-DD HH:MM:SS UTC` in a `<time>` element, or a dash. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '<span class="muted">—</span>';
  return `<time datetime="${esc(iso)}">${esc(iso.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC'))}</time>`;
}

/** An id in monospace, linked when `href` is given. */
export function idLink(id: string | null | undefined, href?: string): string {
  if (!id) return '<span class="muted">—</span>';
  return href ? `<a class="mono" href="${esc(href)}">${esc(id)}</a>` : `<code>${esc(id)}</code>`;
}

/** Definition list of facts (values already escaped). */
export function facts(pairs: [string, string][]): string {
  return `<dl class="facts">${pairs.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

/** A link to the next page of a list, keeping the current query. */
export function pager(path: string, query: Record<string, string | undefined>, nextCursor: string | null): string {
  if (!nextCursor) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v && k !== 'cursor') q.set(k, v);
  q.set('cursor', nextCursor);
  return `<p class="pager"><a href="${esc(`${path}?${q}`)}">Next page →</a></p>`;
}

/** A POST form of one button (CSRF token included); `fields` are extra hidden inputs. */
export function actionButton(action: string, csrf: string, label: string, fields: Record<string, string> = {}, cls = 'secondary'): string {
  return `<form method="post" action="${esc(action)}" class="inline">${hidden('csrf', csrf)}${Object.entries(fields)
    .map(([k, v]) => hidden(k, v))
    .join('')}<button type="submit" class="${cls}">${esc(label)}</button></form>`;
}
