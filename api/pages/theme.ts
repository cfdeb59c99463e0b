/**
 * What every server-rendered page shares so they read as one product (docs/team-and-oauth.md "Pages"):
 * the product name, one small stylesheet (no framework; served at `/assets/site.css`), the favicon (an
 * inline SVG, served at `/favicon.svg` and `/favicon.ico`), and the header naming the product and, where
 * known, the organization. The sign-in, consent, invitation, error, landing and voice talk pages use it.
 */

/** The product's name, as pages and emails show it. */
export const PRODUCT_NAME = 'Agent Control Plane';

/** Where the shared stylesheet is served. */
export const STYLESHEET_PATH = '/assets/site.css';

/** Where the favicon is served (browsers also ask for `/favicon.ico`; both answer this SVG). */
export const FAVICON_PATH = '/favicon.svg';

/** The favicon: a rounded square with a node graph, in the product's accent colour. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#3b4bd8"/><g stroke="#fff" stroke-width="2.4" stroke-linecap="round" fill="none"><path d="M9 22 16 10 23 22Z"/></g><g fill="#fff"><circle cx="16" cy="10" r="3.2"/><circle cx="9" cy="22" r="3.2"/><circle cx="23" cy="22" r="3.2"/></g></svg>`;

/**
 * The one stylesheet. Classes: `.brand` (header), `.card` (the page's box), `.primary` / `.secondary`
 * (buttons), `.error`, `.notice`, `.muted`, `.scopes` (the consent list), `.links` (the landing page).
 * Colours meet WCAG 2.2 AA contrast (4.5:1 for text) on both light and dark schemes.
 */
export const SITE_CSS = `:root{--bg:#f5f6fa;--card:#fff;--text:#1d2130;--muted:#5b6275;--line:#dde0ea;--accent:#3b4bd8;--accent-text:#fff;--accent-hover:#2f3db5;--error:#b00020;--error-bg:#fdecef;--notice-bg:#eaf5ee;--notice:#17643a;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#14161d;--card:#1d2029;--text:#e7e9f0;--muted:#a3a9ba;--line:#343846;--accent:#8d98ff;--accent-text:#10121a;--accent-hover:#a9b1ff;--error:#ff8a9b;--error-bg:#3a1c22;--notice-bg:#183024;--notice:#8fdcae}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
a{color:var(--accent)}
.brand{display:flex;align-items:center;gap:.6rem;max-width:36rem;margin:2.5rem auto 1rem;padding:0 1rem;font-weight:600}
.brand img{width:28px;height:28px}
.brand .org{font-weight:400;color:var(--muted)}
.brand .org::before{content:"·";margin:0 .5rem 0 .1rem}
main.card{max-width:36rem;margin:0 auto 2rem;padding:1.75rem 2rem;background:var(--card);border:1px solid var(--line);border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.06)}
main.card.wide{max-width:52rem}
h1{font-size:1.45rem;line-height:1.25;margin:0 0 1rem}
label{display:block;margin:.9rem 0;font-weight:500}
input[type=email],input[type=password],input[type=text]{display:block;width:100%;margin-top:.3rem;padding:.6rem .7rem;font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:8px}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
button{font:inherit;font-weight:600;padding:.6rem 1.2rem;border-radius:8px;border:1px solid var(--line);background:var(--card);color:var(--text);cursor:pointer;margin:.3rem .5rem .3rem 0}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-text)}
button.primary:hover{background:var(--accent-hover)}
button.secondary:hover{border-color:var(--muted)}
.actions{display:flex;flex-wrap:wrap;align-items:center;margin-top:1.2rem}
.error{color:var(--error);background:var(--error-bg);padding:.6rem .8rem;border-radius:8px}
.notice{color:var(--notice);background:var(--notice-bg);padding:.6rem .8rem;border-radius:8px}
.muted{color:var(--muted);font-size:.93rem}
fieldset{border:1px solid var(--line);border-radius:8px;padding:.4rem 1rem;margin:1rem 0}
legend{padding:0 .3rem;font-weight:600}
.scopes label{display:flex;gap:.6rem;align-items:baseline;font-weight:400;margin:.6rem 0}
.scopes code{font-size:.85rem;color:var(--muted)}
.links{list-style:none;padding:0;margin:0}
.links li{padding:.7rem 0;border-top:1px solid var(--line)}
.links li:first-child{border-top:0}
.links a{font-weight:600}
footer{text-align:center;color:var(--muted);font-size:.85rem;margin-bottom:2rem}
`;

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The `<head>` links every page carries: the stylesheet and the favicon. */
export const HEAD_LINKS = `<link rel="stylesheet" href="${STYLESHEET_PATH}"><link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml">`;

/**
 * The header: the favicon, the product name and, when known, the organization.
 * @param organization the organization's name (escaped here), or undefined when the page does not know it
 */
export function brandHeader(organization?: string): string {
  return `<header class="brand"><img src="${FAVICON_PATH}" alt=""><span>${escapeHtml(PRODUCT_NAME)}</span>${organization ? `<span class="org">${escapeHtml(organization)}</span>` : ''}</header>`;
}

/**
 * A whole HTML document in the shared frame: title "<title> · <product>" (the product's name alone once), the header, and `body` inside
 * the card.
 * @param body inner HTML, already escaped
 * @param opts.organization the organization's name, when known; `wide` for a wider card
 */
export function htmlDocument(title: string, body: string, opts: { organization?: string; wide?: boolean; head?: string } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title === PRODUCT_NAME ? escapeHtml(title) : `${escapeHtml(title)} · ${escapeHtml(PRODUCT_NAME)}`}</title>${HEAD_LINKS}${opts.head ?? ''}</head>
<body>${brandHeader(opts.organization)}<main class="card${opts.wide ? ' wide' : ''}"><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}
