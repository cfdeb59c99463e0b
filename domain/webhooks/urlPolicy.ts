/**
 * Which webhook URLs may be registered and delivered to (docs/api-notes.md "Webhooks and audit logs", SSRF). Checked when an endpoint is
 * created or updated (400 naming `url`) and again before every delivery; the SSRF guard of
 * providers/http/guard.ts then judges the addresses DNS returns at connect time.
 *
 * - https only; plain http only to hosts listed in WEBHOOK_ALLOW_HTTP_HOSTS (local development).
 * - No credentials in the URL.
 * - IP literals must be public (or allow-listed in HTTP_ALLOW_PRIVATE_HOSTS); `localhost` names are
 *   refused unless listed in WEBHOOK_ALLOW_HTTP_HOSTS.
 */
import net from 'node:net';
import { checkAddress } from '../net/guard';
import type { WebhookSettings } from './settings';

/** Why a URL is refused, or null when it may be used. */
export function webhookUrlProblem(raw: string, settings: Pick<WebhookSettings, 'allowHttpHosts' | 'allowPrivate'>): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  const host = url.hostname.toLowerCase();
  const hostPort = url.host.toLowerCase();
  const operatorListed = settings.allowHttpHosts.includes(host) || settings.allowHttpHosts.includes(hostPort);
  if (url.protocol === 'http:') {
    if (!operatorListed) return 'must use https (plain http is allowed only to hosts the operator lists in WEBHOOK_ALLOW_HTTP_HOSTS)';
  } else if (url.protocol !== 'https:') {
    return 'must use https';
  }
  if (url.username || url.password) return 'must not carry credentials';
  const bare = host.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) {
    const verdict = checkAddress(bare, settings.allowPrivate);
    if (!verdict.allowed) return `must point to a public address (${verdict.reason})`;
  } else if ((bare === 'localhost' || bare.endsWith('.localhost')) && !operatorListed) {
    return 'must point to a public host (localhost is refused)';
  }
  return null;
}
