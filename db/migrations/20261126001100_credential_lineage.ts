/**
 * Where a credential came from (spec "Authentication" 4: OAuth service tokens ride the same scope matrix
 * as secret keys; docs/team-and-oauth.md "Connect an app with OAuth"): `via_grant_id` on `api_keys` (secret and
 * publishable keys) and on `oauth_clients` is the OAuth grant whose `<brand>_oat_…` token minted the
 * credential, directly or through a credential that token minted (null: minted by an owner's key, the CLI
 * or the bootstrap). Deleting the app (or revoking the grant) stops every credential minted through it,
 * and such a credential acts on the Team with the role of the member who approved the app, never as an
 * owner. No foreign key: grants are soft-revoked, and a removed member's grants go with the member while
 * the revoked keys they minted stay for the audit trail.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.text('via_grant_id');
    t.index(['via_grant_id']);
  });
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.text('via_grant_id');
    t.index(['via_grant_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => t.dropColumn('via_grant_id'));
  await knex.schema.alterTable('api_keys', (t) => t.dropColumn('via_grant_id'));
}
