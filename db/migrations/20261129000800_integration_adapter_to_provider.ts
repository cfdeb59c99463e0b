/**
 * One per-connection adapter choice (docs/api-notes.md "Integrations and records"): HubSpot connections made on
 * HubSpot's API recorded it in their config (`config.adapter = 'hubspot'`); the `provider` column now records it for
 * every kind, so those connections get `provider = 'hubspot'` and lose the config member.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex('integration_connections')
    .whereRaw("config->>'adapter' is not null")
    .update({
      provider: knex.raw("case when config->>'adapter' = 'hubspot' then 'hubspot' else provider end"),
      config: knex.raw("config - 'adapter'"),
    });
}

export async function down(knex: Knex): Promise<void> {
  await knex('integration_connections')
    .where({ provider: 'hubspot' })
    .update({ provider: 'sandbox', config: knex.raw(`config || '{"adapter":"hubspot"}'::jsonb`) });
}
