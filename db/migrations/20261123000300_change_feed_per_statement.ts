/**
 * The change feed (migration 20261122000050, db/changeFeed.ts) notifies once per statement on
 * `sms_registrations` instead of once per row: a group-committed save updates hundreds of rows in one
 * UPDATE, and every API process received and handled one notification per row (docs/operations.md "Scaling out":
 * measured at 8 API processes, the fan-out cost about a fifth of a PUT's CPU). A notification now carries up
 * to 200 `<key>:<version>` entries after the table name, comma-separated (`sms_registrations:org_a:3,org_b:7`),
 * which keeps each payload far under Postgres' 8,000-byte limit. `api_keys` keeps its row trigger (one
 * entry per notification is the same format).
 */
import type { Knex } from 'knex';
import { dropTriggers } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION acp_notify_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE chunk text;
    BEGIN
      -- PL/pgSQL plans each statement when first run, so each branch names only the transition table
      -- its trigger declares.
      IF TG_OP = 'DELETE' THEN
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT o.org_id AS k, (row_number() OVER () - 1) / 200 AS g FROM old_rows o) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      ELSE
        FOR chunk IN
          -- The version lets the writing process keep the copy it already holds.
          SELECT string_agg(k, ',') FROM (SELECT n.org_id || ':' || n.version AS k, (row_number() OVER () - 1) / 200 AS g FROM new_rows n) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      END IF;
      RETURN NULL;
    END $$;

    DROP TRIGGER sms_registrations_changes ON sms_registrations;
    CREATE TRIGGER sms_registrations_inserts AFTER INSERT ON sms_registrations
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_rows();
    CREATE TRIGGER sms_registrations_updates AFTER UPDATE ON sms_registrations
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_rows();
    CREATE TRIGGER sms_registrations_deletes AFTER DELETE ON sms_registrations
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_rows();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ${dropTriggers(['inserts', 'updates', 'deletes'].map((op) => [`sms_registrations_${op}`, 'sms_registrations'] as const), ['acp_notify_rows']).join('\n    ')}
    CREATE TRIGGER sms_registrations_changes AFTER INSERT OR UPDATE OR DELETE ON sms_registrations
      FOR EACH ROW EXECUTE FUNCTION acp_notify_change();
  `);
}
