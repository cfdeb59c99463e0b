/**
 * What agent drafts refer to outside the agent (docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): organization variables (`{{vars.<name>}}`) and escalation destinations (`transfer_call`'s
 * `destinationId`). Checked when a skill is saved, again at publish (domain/agents/compile.ts), and
 * resolved when a skill runs: secret values are opened only here, right before the call.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { ApiError, validationError, type FieldError } from '../../domain/errors';
import { fillSecrets, namesIn, resolveReferences } from '../../domain/settings/variables';
import { openSecret } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';
import { sealedSecrets, variableRefs } from '../../db/repositories/variables';
import { destinations, existingDestinationIds } from '../../db/repositories/escalationDestinations';
import type { EscalationDestination } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

/**
 * 404 `escalation_destination_not_found` naming `field`: what an id of another organization's (or no)
 * escalation destination in a request body answers, like every id of a resource (docs/api-notes.md).
 */
export function destinationNotFound(field: string, id: string): ApiError {
  return new ApiError(404, 'escalation_destination_not_found', `Escalation destination ${id} was not found`, {
    errors: [{ field, message: 'is not an escalation destination of this organization (POST /escalation-destinations)' }],
  });
}

/**
 * Checks a skill config's outside references before it is saved.
 * @param prefix field prefix of the config (`config`)
 * @throws ApiError 400 `validation_error` naming each string that references no variable of the
 *   organization; 404 `escalation_destination_not_found` naming `config.destinationId`
 */
export async function assertSkillReferences(conn: Conn, orgId: string, type: string, config: unknown, prefix = 'config'): Promise<void> {
  if (namesIn(config).length) {
    const vars = new Map((await variableRefs(conn, orgId)).map((v) => [v.name, v]));
    const errors: FieldError[] = resolveReferences(config, vars, prefix, true).errors;
    if (errors.length) throw validationError(errors);
  }
  const dest = type === 'transfer_call' && config && typeof config === 'object' ? (config as Record<string, unknown>).destinationId : undefined;
  if (typeof dest === 'string' && !(await existingDestinationIds(conn, orgId, [dest])).has(dest)) throw destinationNotFound(`${prefix}.destinationId`, dest);
}

/**
 * A published skill config with its secret references filled from the sealed store (WEBHOOK_SECRET_KEY,
 * or the previous key during a rotation; docs/security.md).
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
