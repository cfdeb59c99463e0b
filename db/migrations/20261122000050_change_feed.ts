/**
 * Change feed for in-process read caches: every insert, update or delete of a cached table sends
 * `pg_notify('acp_changes', '<table>:<key>[:<version>]')` after commit, so every API process evicts its copy at
 * once, whichever code path (API, activity, operator) wrote the row. `sms_registrations.version` is
 * bumped by a trigger on every update; the draft save uses it for a one-round-trip optimistic update.
 */
import type { Knex } from 'knex';
import { dropTriggers } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sms_registrations', (t) => {
    t.integer('version').notNullable().defaultTo(0);
  });
  await knex.raw(`
    CREATE FUNCTION acp_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE k text;
    BEGIN
      IF TG_TABLE_NAME = 'api_keys' THEN
        k := COALESCE(NEW.key_hash, OLD.key_hash);
      ELSIF TG_OP = 'DELETE' THEN
        k := OLD.org_id;
      ELSE
        -- The version lets the writing process keep the copy it already holds.
        k := NEW.org_id || ':' || NEW.version;
      END IF;
      PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || k);
      RETURN NULL;
    END $$;

    CREATE FUNCTION acp_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.version := OLD.version + 1;
      RETURN NEW;
    END $$;

    CREATE TRIGGER sms_registrations_version BEFORE UPDATE ON sms_registrations
      FOR EACH ROW EXECUTE FUNCTION acp_bump_version();
    CREATE TRIGGER sms_registrations_changes AFTER INSERT OR UPDATE OR DELETE ON sms_registrations
      FOR EACH ROW EXECUTE FUNCTION acp_notify_change();
    CREATE TRIGGER api_keys_changes AFTER UPDATE OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION acp_notify_change();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ${dropTriggers(
      [
        ['api_keys_changes', 'api_keys'],
        ['sms_registrations_changes', 'sms_registrations'],
        ['sms_registrations_version', 'sms_registrations'],
      ],
      ['acp_bump_version', 'acp_notify_change'],
    ).join('\n    ')}
  `);
  await knex.schema.alterTable('sms_registrations', (t) => t.dropColumn('version'));
}
