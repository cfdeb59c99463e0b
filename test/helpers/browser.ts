/**
 * A minimal browser for the server-rendered pages (sign-in, consent, invitation): a cookie jar, fetch
 * without following redirects, and the hidden and checkbox fields of a page's form, so tests submit the
 * real form (CSRF token included) the way a browser would.
 */
import { Agent, fetch as undiciFetch } from 'undici';
import { decodeHTML } from './html';

/** One response as a browser sees it. */
export interface PageResponse {
  status: number;
  location: string | null;
  html: string;
  headers: Headers;
}

/** A cookie jar over fetch. */
export class Browser {
  readonly cookies = new Map<string, string>();
  private readonly dispatcher?: Agent;

  /** @param opts.localAddress the source address of its connections (another 127.x.y.z: another client address on loopback) */
  constructor(readonly origin: string, opts: { localAddress?: string } = {}) {
    if (opts.localAddress) this.dispatcher = new Agent({ localAddress: opts.localAddress });
  }

  private fetch(url: URL, init: RequestInit): Promise<Response> {
    if (!this.dispatcher) return fetch(url, init);
    return undiciFetch(url, { ...(init as object), dispatcher: this.dispatcher }) as unknown as Promise<Response>;
  }

  private remember(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      const maxAge = attrs.map((a) => a.trim()).find((a) => a.toLowerCase().startsWith('max-age='));
      if (maxAge && Number(maxAge.split('=')[1]) <= 0) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { ...(cookie ? { cookie } : {}), ...extra };
  }

  /** GET a path or absolute URL of this origin. */
  async get(pathOrUrl: string): Promise<PageResponse> {
    const res = await this.fetch(new URL(pathOrUrl, this.origin), { redirect: 'manual', headers: this.headers() });
    this.remember(res);
    return { status: res.status, location: res.headers.get('location'), html: await res.text(), headers: res.headers };
  }

  /** POST an urlencoded form (repeated names as arrays). */
  async post(path: string, form: Record<string, string | string[]>): Promise<PageResponse> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const x of Array.isArray(v) ? v : [v]) body.append(k, x);
    const res = await this.fetch(new URL(path, this.origin), {
      method: 'POST',
      redirect: 'manual',
      headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded' }),
      body: body.toString(),
    });
    this.remember(res);
    return { status: res.status, location: res.headers.get('location'), html: await res.text(), headers: res.headers };
  }

  /** Signs in through the real form (GET for the CSRF token, then POST). */
  async signIn(email: string, password: string, next = '/login'): Promise<PageResponse> {
    const form = await this.get(`/login?next=${encodeURIComponent(next)}`);
    return this.post('/login', { ...hiddenFields(form.html), email, password });
  }
}

/** The hidden inputs of the first form of a page, by name. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) out[decodeHTML(m[1])] = decodeHTML(m[2]);
  return out;
}

/** The checkboxes of a page: value, whether ticked and whether disabled. */
export function checkboxes(html: string): { value: string; checked: boolean; disabled: boolean }[] {
  return [...html.matchAll(/<input type="checkbox" name="granted" value="([^"]*)"( checked)?( disabled)?>/g)].map((m) => ({
    value: decodeHTML(m[1]),
    checked: !!m[2],
    disabled: !!m[3],
  }));
}
