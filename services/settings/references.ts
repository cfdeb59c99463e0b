/**
 * What agent drafts refer to outside the agent (README "Variables, escalation, onboarding, meta and
 * settings"): organization variables (`{{vars.<name>}}`) and escalation destinations (`transfer_call`'s
 * `destinationId`). Checked when a skill is saved, again at publish (domain/agents/compile.ts), and
 * resolved when a skill runs: secret values are opened only here, right before the call.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import type { FieldError } from '../../domain/errors';
import { fillSecrets, namesIn, resolveReferences } from '../../domain/settings/variables';
import { openSecret } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { sealedSecrets, variableRefs } from '../../db/repositories/variables';
import { destinations, existingDestinationIds } from '../../db/repositories/escalationDestinations';
import type { EscalationDestination } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

/**
 * Field errors of a skill config's outside references: a `{{vars.x}}` that names no variable of the
 * organization, a `destinationId` that names no escalation destination of it.
 * @param prefix field prefix of the config (`config`)
 */
export async function skillReferenceErrors(conn: Conn, orgId: string, type: string, config: unknown, prefix = 'config'): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (namesIn(config).length) {
    const vars = new Map((await variableRefs(conn, orgId)).map((v) => [v.name, v]));
    errors.push(...resolveReferences(config, vars, prefix, true).errors);
  }
  const dest = type === 'transfer_call' && config && typeof config === 'object' ? (config as Record<string, unknown>).destinationId : undefined;
  if (typeof dest === 'string' && !(await existingDestinationIds(conn, orgId, [dest])).has(dest)) {
    errors.push({ field: `${prefix}.destinationId`, message: `"${dest}" is not an escalation destination of this organization (POST /escalation-destinations)` });
  }
  return errors;
}

/**
 * A published skill config with its secret references filled from the sealed store (WEBHOOK_SECRET_KEY,
 * or the previous key during a rotation; README "Security").
 * @throws Error when a referenced secret no longer exists or cannot be opened
 */
export async function withSecretValues<T>(db: Conn, orgId: string, config: T): Promise<T> {
  const names = namesIn(config);
  if (!names.length) return config;
  const sealed = await sealedSecrets(db, orgId, names);
  const settings = loadWebhookSettings();
  const open = new Map([...sealed].map(([name, s]) => [name, openSecret(s, [settings.secretKey, settings.previousSecretKey])]));
  return fillSecrets(config, open);
}

/** The escalation destination of a `transfer_call` config, or undefined (gone, or a plain phone number). */
export async function transferDestination(db: Conn, orgId: string, config: Record<string, unknown>): Promise<EscalationDestination | undefined> {
  return typeof config.destinationId === 'string' ? destinations.get(db, orgId, config.destinationId) : undefined;
}
