/**
 * The change feed (migration 20261122000050, db/changeFeed.ts) on `knowledge_sources` and `knowledge_chunks`: once
 * per statement, `<table>:<org_id>[,<org_id>…]` (each organization once, up to 200 a notification), so every API
 * process drops its in-process knowledge index of that organization (services/knowledge/lexicalIndex.ts) whichever
 * path wrote the rows (ingestion, refresh, deletes, an operator).
 */
import type { Knex } from 'knex';

const TABLES = ['knowledge_sources', 'knowledge_chunks'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION acp_notify_orgs() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE chunk text;
    BEGIN
      -- PL/pgSQL plans each statement when first run, so each branch names only the transition table its trigger declares.
      IF TG_OP = 'DELETE' THEN
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT k, (row_number() OVER () - 1) / 200 AS g FROM (SELECT DISTINCT o.org_id AS k FROM old_rows o) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      ELSE
        FOR chunk IN
          SELECT string_agg(k, ',') FROM (SELECT k, (row_number() OVER () - 1) / 200 AS g FROM (SELECT DISTINCT n.org_id AS k FROM new_rows n) d) s GROUP BY g
        LOOP
          PERFORM pg_notify('acp_changes', TG_TABLE_NAME || ':' || chunk);
        END LOOP;
      END IF;
      RETURN NULL;
    END $$;
  `);
  for (const t of TABLES) {
    await knex.raw(`
      CREATE TRIGGER ${t}_inserts AFTER INSERT ON ${t} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_orgs();
      CREATE TRIGGER ${t}_updates AFTER UPDATE ON ${t} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_orgs();
      CREATE TRIGGER ${t}_deletes AFTER DELETE ON ${t} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION acp_notify_orgs();
    `);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const t of TABLES) {
    await knex.raw(`DROP TRIGGER IF EXISTS ${t}_inserts ON ${t}; DROP TRIGGER IF EXISTS ${t}_updates ON ${t}; DROP TRIGGER IF EXISTS ${t}_deletes ON ${t};`);
  }
  await knex.raw('DROP FUNCTION IF EXISTS acp_notify_orgs()');
}
