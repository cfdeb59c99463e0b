/**
 * The change feed (db/changeFeed.ts, channel `acp_changes`) also reports `phone_numbers`, keyed by the number
 * (`phone_numbers:+13125550100,+13125550101`): an inbound text's callback finds the number's organization and
 * agent through a read cache the feed evicts (api/sms/callbacks.ts), instead of a query per text. One
 * notification per statement and 200 numbers, old and new numbers of an update both named, as
 * migration 20261123000300 does for `sms_registrations`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION acp_notify_number_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE chunk text;
    BEGIN
      -- PL/pgSQL plans each statement when first run, so each branch names only the transition tables its trigger declares.
      IF TG_OP = 'DELETE' THEN
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT d.k, (row_number() OVER () - 1) / 200 AS g FROM (SELECT DISTINCT o.e164 AS k FROM old_rows o) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      ELSIF TG_OP = 'UPDATE' THEN
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT d.k, (row_number() OVER () - 1) / 200 AS g FROM (SELECT o.e164 AS k FROM old_rows o UNION SELECT n.e164 FROM new_rows n) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      ELSE
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT d.k, (row_number() OVER () - 1) / 200 AS g FROM (SELECT DISTINCT n.e164 AS k FROM new_rows n) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      END IF;
      RETURN NULL;
    END $$;

    CREATE TRIGGER phone_numbers_inserts AFTER INSERT ON phone_numbers
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_number_rows();
    CREATE TRIGGER phone_numbers_updates AFTER UPDATE ON phone_numbers
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_number_rows();
    CREATE TRIGGER phone_numbers_deletes AFTER DELETE ON phone_numbers
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_number_rows();
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS phone_numbers_inserts ON phone_numbers;
    DROP TRIGGER IF EXISTS phone_numbers_updates ON phone_numbers;
    DROP TRIGGER IF EXISTS phone_numbers_deletes ON phone_numbers;
    DROP FUNCTION IF EXISTS acp_notify_number_rows();
  `);
}
