/**
 * Sensitive record fields at rest and in use (docs/security.md "Sensitive record fields"; the
 * rules are domain/records/sensitive.ts): values are sealed with AES-256-GCM under WEBHOOK_SECRET_KEY, the
 * sealing of integration credentials and secret variables (domain/webhooks/signing.ts), and opened only
 * here, for server-side use — caller verification's PIN comparison and skill inputs filled at run time.
 * Nothing opened here is ever answered, logged, stored in a receipt or shown to the model.
 */
import type { Knex } from 'knex';
import type { Db } from '../../db';
import { recordSchemaRules, sealedRecordField, type RecordFields, type SealedField } from '../../db/repositories/records';
import { maskValue, splitSensitive, type RecordRules } from '../../domain/records/sensitive';
import { openSecret, sealSecret } from '../../domain/webhooks/signing';
import { loadWebhookSettings } from '../../domain/webhooks/settings';

type Conn = Db | Knex.Transaction;

/** Seals one sensitive value with WEBHOOK_SECRET_KEY, with the mask reads show. @throws Error when the key is not set */
export function sealRecordValue(value: string): SealedField {
  return { sealed: sealSecret(value, loadWebhookSettings().secretKey), mask: maskValue(value) };
}

/**
 * The write form of a record's `fields` under the organization's rules: plain members, sensitive ones
 * sealed, and the sensitive ones as given (to keep a sealed value written back as its mask).
 */
export function protectFields(rules: RecordRules, fields: Readonly<Record<string, string>>): Required<Pick<RecordFields, 'fields' | 'sealed'>> & { givenSensitive: Record<string, string> } {
  const { plain, sensitive } = splitSensitive(rules, fields);
  return { fields: plain, sealed: Object.fromEntries(Object.entries(sensitive).map(([k, v]) => [k, sealRecordValue(v)])), givenSensitive: sensitive };
}

/** {@link protectFields} with the organization's rules read from Postgres. */
export async function recordWriter(conn: Conn, orgId: string): Promise<(fields: Readonly<Record<string, string>>) => ReturnType<typeof protectFields>> {
  const rules = await recordSchemaRules(conn, orgId);
  return (fields) => protectFields(rules, fields);
}

/**
 * The plain value of one member of a record's `fields`, for server-side use only (see the module doc):
 * a sealed value opened with WEBHOOK_SECRET_KEY (or the previous key during a rotation), or a value stored
 * before it was sealed. Undefined when the record or the member does not exist.
 * @throws Error when a sealed value cannot be opened
 */
export async function openRecordField(conn: Conn, orgId: string, recordId: string, name: string): Promise<string | undefined> {
  const stored = await sealedRecordField(conn, orgId, recordId, name);
  if (!stored) return undefined;
  if ('plain' in stored) return stored.plain;
  const s = loadWebhookSettings();
  return openSecret(stored.sealed, [s.secretKey, s.previousSecretKey]);
}
