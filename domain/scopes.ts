/**
 * The scope catalogue (spec "Authentication" → "Scopes"). Reserved scopes exist in the catalogue but
 * every endpoint that needs one answers 403 (spec "Scope rules" 5).
 */

/** Every scope the spec lists, in the spec's order. */
export const ALL_SCOPES = [
  'agents:read', 'agents:write', 'knowledge:read', 'knowledge:write', 'skills:read', 'skills:write',
  'playbooks:read', 'playbooks:write', 'guardrails:read', 'guardrails:write', 'numbers:read', 'numbers:write',
  'sms:read', 'sms:write', 'sms:send', 'outbound:read', 'outbound:write', 'integrations:read',
  'integrations:write', 'integrations:connect', 'records:read', 'records:write', 'calls:read', 'analytics:read',
  'analytics:write', 'dashboards:read', 'dashboards:write', 'reports:read', 'reports:write', 'billing:read',
  'billing:write', 'audit:read', 'webhooks:write', 'keys:write', 'chat:read', 'chat:write', 'widgets:read',
  'widgets:write', 'pubkeys:read', 'pubkeys:write', 'phone:read', 'phone:write', 'presence:write', 'team:read',
  'team:write', 'escalation_destinations:read', 'escalation_destinations:write', 'escalation_policies:read',
  'escalation_policies:write', 'escalations:read', 'escalations:claim', 'escalations:respond',
  'escalations:resolve', 'escalations:initiate',
] as const;

/** One scope name. */
export type Scope = (typeof ALL_SCOPES)[number];

/** Scopes the spec marks "(reserved)". */
export const RESERVED_SCOPES: ReadonlySet<Scope> = new Set<Scope>([
  'analytics:write', 'escalation_policies:read', 'escalation_policies:write', 'escalations:read',
  'escalations:claim', 'escalations:respond', 'escalations:resolve', 'escalations:initiate',
]);

/** Every scope a bootstrap key holds: all that are not reserved. */
export const NON_RESERVED_SCOPES: Scope[] = ALL_SCOPES.filter((s) => !RESERVED_SCOPES.has(s));

const KNOWN = new Set<string>(ALL_SCOPES);

/** True when `s` is a scope of the catalogue. */
export function isScope(s: string): s is Scope {
  return KNOWN.has(s);
}

/**
 * Parses a comma-separated scope list (CLI input).
 * @throws Error naming the first unknown scope
 */
export function parseScopes(list: string): Scope[] {
  const out: Scope[] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!isScope(raw)) throw new Error(`unknown scope "${raw}"`);
    if (!out.includes(raw)) out.push(raw);
  }
  return out;
}
