/**
 * The change feed (migration 20261122000050, db/changeFeed.ts) on `knowledge_sources` and `knowledge_chunks`: once
 * per statement, `<table>:<org_id>[,<org_id>…]` (each organization once, up to 200 a notification), so every API
 * process drops its in-process knowledge index of that organization (services/knowledge/lexicalIndex.ts) whichever
 * path wrote the rows (ingestion, refresh, deletes, an operator).
 */
import type { Knex } from 'knex';
import { changeFeedFunction, changeFeedTriggers, dropChangeFeed } from '../migrationHelpers';

const TABLES = ['knowledge_sources', 'knowledge_chunks'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(changeFeedFunction('acp_notify_orgs', { deleted: 'SELECT DISTINCT o.org_id AS k FROM old_rows o', inserted: 'SELECT DISTINCT n.org_id AS k FROM new_rows n' }));
  for (const t of TABLES) await knex.raw(changeFeedTriggers(t, 'acp_notify_orgs'));
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of dropChangeFeed(TABLES, 'acp_notify_orgs')) await knex.raw(sql);
}
