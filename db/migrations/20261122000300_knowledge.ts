/**
 * Knowledge: uploaded files (bytes kept in Postgres until attached or expired), knowledge sources of an
 * agent with their ingestion status, and the chunks indexed for Postgres full-text search (a stored
 * generated `tsvector` column with a GIN index; queries rank with `ts_rank`).
 *
 * `agent_id` carries no foreign key: the agents table belongs to another migration and agents are not
 * deleted through the API; the handlers check the agent exists in the caller's organization.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('uploads', (t) => {
    t.text('id').primary(); // file_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('filename').notNullable();
    t.text('content_type').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.binary('data').notNullable(); // bytea
    timestampsNow(t, knex, 'created_at');
    // Unattached uploads are garbage-collected after this instant (file_expired afterwards).
    t.timestamp('expires_at', { useTz: true }).notNullable();
    // Set when a knowledge source takes the file; attached files are never collected.
    t.timestamp('attached_at', { useTz: true });
    t.index(['org_id', 'created_at']);
  });
  await knex.raw('CREATE INDEX uploads_expiry_idx ON uploads (expires_at) WHERE attached_at IS NULL');

  await knex.schema.createTable('knowledge_sources', (t) => {
    t.bigIncrements('seq'); // list order and pagination key
    t.text('id').notNullable().unique(); // ks_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('kind').notNullable(); // url | file | text
    t.text('name');
    t.text('url');
    t.text('file_id').references('uploads.id').onDelete('SET NULL');
    t.text('text_content'); // body of a `text` source as submitted
    t.text('status').notNullable().defaultTo('pending'); // pending | processing | ready | failed
    t.text('failure_code');
    t.text('failure_reason');
    t.text('format'); // html | pdf | markdown | text, once extracted
    t.text('content_type');
    t.text('title');
    t.text('extracted_text'); // kept so a source can be re-chunked without fetching again
    t.integer('char_count');
    t.integer('chunk_count').notNullable().defaultTo(0);
    t.text('workflow_id');
    timestampsNow(t, knex, 'created_at', 'updated_at');
    t.timestamp('processing_started_at', { useTz: true });
    t.timestamp('ready_at', { useTz: true });
    t.index(['org_id', 'agent_id', 'seq']);
  });
  await knex.raw(`ALTER TABLE knowledge_sources ADD CONSTRAINT knowledge_sources_kind_check CHECK (kind IN ('url', 'file', 'text'))`);
  await knex.raw(`ALTER TABLE knowledge_sources ADD CONSTRAINT knowledge_sources_status_check CHECK (status IN ('pending', 'processing', 'ready', 'failed'))`);

  await knex.schema.createTable('knowledge_chunks', (t) => {
    t.text('id').primary(); // chk_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('source_id').notNullable().references('knowledge_sources.id').onDelete('CASCADE');
    t.integer('ordinal').notNullable();
    t.text('content').notNullable();
    timestampsNow(t, knex, 'created_at');
    t.unique(['source_id', 'ordinal']);
    t.index(['org_id', 'agent_id']);
  });
  await knex.raw(`ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED`);
  await knex.raw('CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING GIN (tsv)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('knowledge_chunks');
  await knex.schema.dropTableIfExists('knowledge_sources');
  await knex.schema.dropTableIfExists('uploads');
}
