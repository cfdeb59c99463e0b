/**
 * Playbooks by intent and verification only where it protects (docs/api-notes.md "Agents", "Caller
 * verification"): when a playbook starts (`when_to_use`, `trigger_phrases`) and whether it needs a verified
 * caller (`requires_verified_caller`); and `callerVerification.required`. The default of `required` for agents
 * created from now on is `for_protected_actions` (domain/agents/compile.ts DEFAULT_CALLER_VERIFICATION), so
 * every agent stored before this migration is stamped `required: always` — they keep asking for the PIN up
 * front as they did. Published versions are immutable: one without `required` runs as `always`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agent_playbooks', (t) => {
    t.text('when_to_use');
    t.jsonb('trigger_phrases').notNullable().defaultTo('[]');
    t.boolean('requires_verified_caller').notNullable().defaultTo(false);
  });
  await knex.raw(`UPDATE agents SET caller_verification = caller_verification || '{"required":"always"}'::jsonb WHERE caller_verification->'required' IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE agents SET caller_verification = caller_verification - 'required'`);
  await knex.schema.alterTable('agent_playbooks', (t) => {
    t.dropColumn('when_to_use');
    t.dropColumn('trigger_phrases');
    t.dropColumn('requires_verified_caller');
  });
}
