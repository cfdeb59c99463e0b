/**
 * Keys through the API (spec "Authentication" 1 and 3; docs/api-notes.md "Credentials and tenancy"):
 * - `seq`: list order and pagination key of `GET /api-keys` and `GET /publishable-keys`;
 * - `expires_at`: a key stops authenticating at that instant (set at creation, or by a rotation's grace period);
 * - `last_used_at`: written in batches by each API process (api/keyUsage.ts), never once per request;
 * - `agent_id`, `allowed_origins`: the agent a publishable key is pinned to and the browser origins it serves;
 * - `rotated_from`: the key a rotation replaced (for listings and audits).
 *
 * The change-feed trigger is narrowed to the columns a cached credential depends on, so the batched
 * `last_used_at` writes do not evict every process's key cache (api/keyCache.ts).
 */
import type { Knex } from 'knex';

const AUTH_COLUMNS = 'key_hash, kind, org_id, scopes, revoked_at, expires_at, rate_limit_points, rate_limit_window_seconds, agent_id, allowed_origins';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.specificType('seq', 'bigserial');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.text('agent_id').references('agents.id').onDelete('CASCADE');
    t.specificType('allowed_origins', 'text[]');
    t.text('rotated_from');
  });
  await knex.raw('CREATE UNIQUE INDEX api_keys_org_kind_seq ON api_keys (org_id, kind, seq)');
  await knex.raw(`
    DROP TRIGGER api_keys_changes ON api_keys;
    CREATE TRIGGER api_keys_changes AFTER UPDATE OF ${AUTH_COLUMNS} OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION acp_notify_change();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER api_keys_changes ON api_keys;
    CREATE TRIGGER api_keys_changes AFTER UPDATE OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION acp_notify_change();
  `);
  await knex.raw('DROP INDEX IF EXISTS api_keys_org_kind_seq');
  await knex.schema.alterTable('api_keys', (t) => {
    for (const c of ['seq', 'expires_at', 'last_used_at', 'agent_id', 'allowed_origins', 'rotated_from']) t.dropColumn(c);
  });
}
