/**
 * Rules of the OAuth 2.0 authorization server (spec "Authentication" 4; RFC 6749, RFC 7636, RFC 8252;
 * docs/team-and-oauth.md "Connect an app with OAuth"): redirect URI shapes, scope descriptions in plain words for the
 * consent page, and what a grant may contain.
 */
import type { FieldError } from './errors';
import { isScope, RESERVED_SCOPES, type Scope } from './scopes';

/** Lifetime of an authorization code, in seconds (RFC 6749 §4.1.2 recommends at most 10 minutes). */
export const CODE_TTL_SECONDS = 600;
/** Lifetime of an access token, in seconds (1 h). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
/** Lifetime of a refresh token, in seconds (30 days); each use rotates it. */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;

/**
 * Field errors of a client's redirect URIs (RFC 6749 §3.1.2; RFC 8252 §7.3 for loopback apps): absolute
 * https URIs without a fragment, or http on a loopback host (127.0.0.1, [::1], localhost). They are
 * matched exactly, character for character.
 */
export function redirectUriErrors(uris: readonly string[], field = 'redirectUris'): FieldError[] {
  const errors: FieldError[] = [];
  uris.forEach((raw, i) => {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      errors.push({ field: `${field}.${i}`, message: 'must be an absolute URI' });
      return;
    }
    if (raw.includes('#')) errors.push({ field: `${field}.${i}`, message: 'must not contain a fragment' });
    else if (u.protocol === 'http:' && !['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname)) errors.push({ field: `${field}.${i}`, message: 'http is allowed only for loopback hosts; use https' });
    else if (u.protocol !== 'https:' && u.protocol !== 'http:') errors.push({ field: `${field}.${i}`, message: 'scheme must be https (or http on a loopback host)' });
  });
  return errors;
}

/** Field errors of scopes a client or grant lists: unknown or reserved scopes. */
export function clientScopeErrors(scopes: readonly string[], field = 'scopes'): FieldError[] {
  const errors: FieldError[] = [];
  scopes.forEach((s, i) => {
    if (!isScope(s)) errors.push({ field: `${field}.${i}`, message: `"${s}" is not a scope` });
    else if (RESERVED_SCOPES.has(s)) errors.push({ field: `${field}.${i}`, message: `"${s}" is reserved and cannot be granted` });
  });
  return errors;
}

const AREA_WORDS: Record<string, string> = {
  agents: 'your agents', knowledge: 'knowledge sources', skills: 'agent skills', playbooks: 'playbooks',
  guardrails: 'guardrails', numbers: 'phone numbers', sms: 'text-messaging registration and numbers',
  outbound: 'outbound campaigns and contact lists', integrations: 'integration status', records: 'records',
  calls: 'conversation summaries, transcripts and receipts', analytics: 'analytics', dashboards: 'dashboards',
  reports: 'reports', billing: 'billing, wallet and invoices', audit: 'the audit log', webhooks: 'webhook endpoints',
  keys: 'API keys and OAuth apps', chat: 'chat conversations', widgets: 'chat widget settings',
  pubkeys: 'publishable keys', phone: 'phone calls', presence: 'presence', team: 'team members and invitations',
  escalation_destinations: 'escalation destinations',
};

/** One scope in plain words for the consent page, e.g. `agents:write` → "Create and change your agents". */
export function describeScope(scope: Scope | string): string {
  const [area, action] = scope.split(':');
  const what = AREA_WORDS[area] ?? area;
  if (scope === 'sms:send') return 'Send text messages from your numbers';
  if (scope === 'integrations:connect') return 'Connect integrations (submit their credentials)';
  if (scope === 'presence:write') return 'Set agent presence';
  if (action === 'read') return `See ${what}`;
  return `Create, change and delete ${what}`;
}

/**
 * The scopes a grant may carry: those requested that the client is allowed and the member's role may
 * approve, in the order requested (RFC 6749 §3.3: the server may issue fewer scopes than requested).
 */
export function grantableScopes(requested: readonly string[], clientScopes: readonly string[], approvable: ReadonlySet<string>): string[] {
  const allowed = new Set(clientScopes);
  return [...new Set(requested)].filter((s) => allowed.has(s) && approvable.has(s));
}
