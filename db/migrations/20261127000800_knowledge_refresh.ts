/**
 * Knowledge sources that refresh and crawl themselves (docs/knowledge.md "Refresh and crawl"):
 *
 * - `knowledge_sources`: the refresh interval (`refresh_every_hours`, a Temporal schedule
 *   `knowledge-refresh/{sourceId}` per source), the crawl settings (`crawl`, JSON), the validators of the last
 *   fetch (ETag, Last-Modified: RFC 9110 §8.8, sent back as If-None-Match / If-Modified-Since), the SHA-256 of the
 *   last indexed bytes (re-index only on change) and the last check (when, outcome, HTTP status, failure).
 * - `knowledge_source_pages`: the pages of a crawling source, each with its own status, validators and hash.
 * - `knowledge_chunks.page_id`: the page a chunk was cut from (null for a single-document source); ordinals are
 *   unique per page, so one page's chunks are swapped without touching the others'.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('knowledge_sources', (t) => {
    t.integer('refresh_every_hours');
    t.jsonb('crawl');
    t.text('etag');
    t.text('last_modified');
    t.text('content_hash');
    t.timestamp('last_checked_at', { useTz: true });
    t.text('last_check_outcome');
    t.integer('last_check_status');
    t.text('last_check_code');
    t.text('last_check_reason');
    t.jsonb('last_check_pages');
  });
  await knex.raw(`ALTER TABLE knowledge_sources ADD CONSTRAINT knowledge_sources_refresh_check CHECK (refresh_every_hours IS NULL OR refresh_every_hours >= 1)`);
  await knex.raw(`ALTER TABLE knowledge_sources ADD CONSTRAINT knowledge_sources_check_outcome_check CHECK (last_check_outcome IS NULL OR last_check_outcome IN ('unchanged', 'updated', 'failed'))`);

  await knex.schema.createTable('knowledge_source_pages', (t) => {
    t.bigIncrements('seq'); // list order and pagination key
    t.text('id').notNullable().unique(); // kpg_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('source_id').notNullable().references('knowledge_sources.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.text('status').notNullable(); // ready | failed
    t.text('failure_code');
    t.text('failure_reason');
    t.integer('http_status');
    t.text('etag');
    t.text('last_modified');
    t.text('content_hash');
    t.text('format');
    t.text('title');
    t.integer('char_count');
    t.integer('chunk_count').notNullable().defaultTo(0);
    t.text('last_outcome'); // unchanged | updated | failed
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('checked_at', { useTz: true });
    t.unique(['source_id', 'url']);
    t.index(['org_id', 'source_id', 'seq']);
  });
  await knex.raw(`ALTER TABLE knowledge_source_pages ADD CONSTRAINT knowledge_source_pages_status_check CHECK (status IN ('ready', 'failed'))`);

  await knex.schema.alterTable('knowledge_chunks', (t) => {
    t.text('page_id').references('knowledge_source_pages.id').onDelete('CASCADE');
  });
  await knex.raw('ALTER TABLE knowledge_chunks DROP CONSTRAINT knowledge_chunks_source_id_ordinal_unique');
  await knex.raw(`CREATE UNIQUE INDEX knowledge_chunks_source_page_ordinal_unique ON knowledge_chunks (source_id, COALESCE(page_id, ''), ordinal)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX knowledge_chunks_source_page_ordinal_unique');
  await knex('knowledge_chunks').whereNotNull('page_id').delete();
  await knex.schema.alterTable('knowledge_chunks', (t) => {
    t.dropColumn('page_id');
    t.unique(['source_id', 'ordinal']);
  });
  await knex.schema.dropTableIfExists('knowledge_source_pages');
  await knex.raw('ALTER TABLE knowledge_sources DROP CONSTRAINT knowledge_sources_refresh_check');
  await knex.raw('ALTER TABLE knowledge_sources DROP CONSTRAINT knowledge_sources_check_outcome_check');
  await knex.schema.alterTable('knowledge_sources', (t) => {
    for (const c of ['refresh_every_hours', 'crawl', 'etag', 'last_modified', 'content_hash', 'last_checked_at', 'last_check_outcome', 'last_check_status', 'last_check_code', 'last_check_reason', 'last_check_pages']) t.dropColumn(c);
  });
}
