/**
 * Model settings per agent (docs/api-notes.md "Agents": model settings): the chat model (`model`, one of the
 * deployment's LLM_MODELS; null: LLM_MODEL), `temperature` (0–2), `max_tokens`, the `fallback_model` asked once
 * when the first answers 429/5xx or times out, and the IANA `time_zone` of the date and time the prompt carries
 * (null: the organization's, UTC). All nullable: agents stored before keep the deployment's defaults, and the
 * columns need no rewrite of the table. Blocked topics with a match mode live in the `guardrails` JSON, whose
 * older string form stays valid (no migration).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.text('model');
    t.double('temperature');
    t.integer('max_tokens');
    t.text('fallback_model');
    t.text('time_zone');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    for (const c of ['model', 'temperature', 'max_tokens', 'fallback_model', 'time_zone']) t.dropColumn(c);
  });
}
