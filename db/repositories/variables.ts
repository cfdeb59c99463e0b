/**
 * Organization variables (docs/api-notes.md "Variables, escalation, onboarding, meta and settings"). A secret's value
 * is stored only sealed (`v1:` AES-256-GCM, domain/webhooks/signing.ts) and leaves this module only through
 * `secretValues`, which the skill executor uses; every other read returns no value for a secret.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { iso } from '../timestamps';
import { orgTable } from './orgTable';
import type { OrgVariableRef } from '../../domain/settings/variables';
import type { Variable } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

/** Row → API shape (no value for a secret). */
export function toVariable(r: Record<string, any>): Variable {
  return {
    id: r.id,
    name: r.name,
    description: r.description ?? null,
    secret: r.secret,
    value: r.secret ? null : r.value,
    reference: `{{vars.${r.name}}}`,
    revision: r.revision,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

/** CRUD of `org_variables` (db/repositories/orgTable.ts). */
export const variables = orgTable('org_variables', 'var', toVariable);

/** The value columns of a variable: the plain value, or the sealed one of a secret. */
export function valueColumns(secret: boolean, value: string, seal: (plain: string) => string): Record<string, unknown> {
  return secret ? { value: null, value_sealed: seal(value) } : { value, value_sealed: null };
}

/** Every variable of the organization as the publish compiler sees it (a secret without its value). */
export async function variableRefs(conn: Conn, orgId: string): Promise<OrgVariableRef[]> {
  const rows = await conn('org_variables').where({ org_id: orgId }).orderBy('name').select('id', 'name', 'secret', 'value');
  return rows.map((r) => ({ id: r.id, name: r.name, secret: r.secret, value: r.secret ? null : r.value }));
}

/** Sealed values of the named secret variables, by name (the skill executor opens them). */
export async function sealedSecrets(conn: Conn, orgId: string, names: string[]): Promise<Map<string, string>> {
  if (!names.length) return new Map();
  const rows = await conn('org_variables').where({ org_id: orgId, secret: true }).whereIn('name', names).select('name', 'value_sealed');
  return new Map(rows.map((r) => [r.name as string, r.value_sealed as string]));
}

/** Bumps the revision with a value change. */
export function revisionBump(db: Conn): Knex.Raw {
  return db.raw('revision + 1');
}

/**
 * Agents whose draft (persona, instructions, greeting, voicemail message, skills, playbooks) or published version refers to
 * `{{vars.<name>}}`, sorted.
 */
export async function variableUsers(conn: Conn, orgId: string, name: string): Promise<string[]> {
  // Names are [a-z0-9_] (schemas/types/settings.ts VariableName), so they are safe inside the pattern.
  const pattern = `\\{\\{\\s*vars\\.${name}\\s*\\}\\}`;
  const res = await conn.raw(
    `SELECT id FROM agents WHERE org_id = :org AND concat_ws(' ', persona, instructions, greeting, voicemail_message) ~ :p
     UNION SELECT agent_id FROM agent_skills WHERE org_id = :org AND config::text ~ :p
     UNION SELECT agent_id FROM agent_playbooks WHERE org_id = :org AND graph::text ~ :p
     UNION SELECT a.id FROM agents a JOIN agent_versions v ON v.id = a.published_version_id
            WHERE a.org_id = :org AND v.snapshot->'orgVariables' @> jsonb_build_array(jsonb_build_object('name', CAST(:name AS text)))
     ORDER BY 1`,
    { org: orgId, p: pattern, name },
  );
  return res.rows.map((r: { id: string }) => r.id);
}

/**
 * Re-seals every secret variable of the organization (`npm run cli -- secrets reseal-webhooks` after a
 * WEBHOOK_SECRET_KEY rotation; docs/security.md), in one transaction.
 * @returns how many were re-sealed
 */
export async function resealVariableSecrets(db: Db, orgId: string, reseal: (sealed: string) => string): Promise<number> {
  return db.transaction(async (trx) => {
    const rows = await trx('org_variables').where({ org_id: orgId, secret: true }).forUpdate().select('id', 'value_sealed');
    for (const r of rows) await trx('org_variables').where({ org_id: orgId, id: r.id }).update({ value_sealed: reseal(r.value_sealed) });
    return rows.length;
  });
}
