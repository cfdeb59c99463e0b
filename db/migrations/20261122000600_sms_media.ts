/**
 * Text-message attachments (docs/sms.md "Text attachments"; spec "Scope rules" 2 and 3): `sms_media`, one row per
 * attachment (`med_…`), inbound (bytes received in a provider callback, stored here) or outbound (a
 * reference to an upload made for SMS). A message lists its attachments in `sms_messages.media_ids`;
 * one attachment may be sent again on later messages (rule 3), so the row names only the message that
 * first carried it.
 *
 * `uploads.purpose` marks what an upload is for: `general` (knowledge sources, contact lists; the
 * default), `sms` (attachable to texts) or `chat` (uploaded in a web chat: never reachable from SMS).
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('uploads', (t) => {
    t.text('purpose').notNullable().defaultTo('general');
  });
  await knex.raw(`ALTER TABLE uploads ADD CONSTRAINT uploads_purpose_check CHECK (purpose IN ('general', 'sms', 'chat'))`);

  await knex.schema.createTable('sms_media', (t) => {
    t.text('id').primary(); // med_…
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('message_id').notNullable(); // msg_… that first carried it
    t.text('direction').notNullable(); // inbound | outbound
    t.text('content_type').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.binary('data'); // bytea: inbound media
    t.text('upload_id').references('uploads.id'); // outbound media: the upload (kept: attached_at set)
    timestampsNow(t, knex, 'created_at');
    t.index(['org_id', 'message_id']);
    t.unique(['org_id', 'upload_id']); // one attachment per upload, reused by every send naming the file
  });
  await knex.raw(`ALTER TABLE sms_media ADD CONSTRAINT sms_media_direction_check CHECK (direction IN ('inbound', 'outbound'))`);
  await knex.raw(`ALTER TABLE sms_media ADD CONSTRAINT sms_media_content_check CHECK ((data IS NULL) <> (upload_id IS NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('sms_media');
  await knex.schema.alterTable('uploads', (t) => {
    t.dropColumn('purpose');
  });
}
