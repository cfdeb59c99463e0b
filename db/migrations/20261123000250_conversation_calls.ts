/**
 * Calls as conversations (docs/api-notes.md "Observe"): each campaign dial is recorded as a conversation on the
 * `voice` channel (mode `none`: no runtime turn yet) with its campaign, counterpart, outcome and duration,
 * in the transaction that records the dial, so `GET /conversations` lists it. Indexes for the Observe
 * filters and the analytics queries.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('conversations', (t) => {
    t.text('campaign_id');
    t.text('counterpart'); // E.164 of the other party (calls)
    t.text('outcome'); // calls: completed | voicemail | busy | no_answer | failed …
    t.integer('duration_seconds');
  });
  await knex.raw(`ALTER TABLE conversations DROP CONSTRAINT conversations_pin_check`);
  await knex.raw(`ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_mode_check`);
  await knex.raw(
    `ALTER TABLE conversations ADD CONSTRAINT conversations_pin_check CHECK ((mode = 'published' AND version_id IS NOT NULL) OR (mode = 'draft' AND draft_snapshot IS NOT NULL) OR mode = 'none')`,
  );
  await knex.raw(`CREATE INDEX conversations_org_campaign_idx ON conversations (org_id, campaign_id) WHERE campaign_id IS NOT NULL`);
  await knex.raw(`CREATE INDEX sms_messages_org_thread_idx ON sms_messages (org_id, (CASE WHEN direction = 'outbound' THEN from_e164 ELSE to_e164 END), (CASE WHEN direction = 'outbound' THEN to_e164 ELSE from_e164 END), created_at)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX IF EXISTS sms_messages_org_thread_idx`);
  await knex.raw(`DROP INDEX IF EXISTS conversations_org_campaign_idx`);
  await knex.raw(`ALTER TABLE conversations DROP CONSTRAINT conversations_pin_check`);
  await knex.raw(`DELETE FROM conversations WHERE mode = 'none'`);
  await knex.raw(
    `ALTER TABLE conversations ADD CONSTRAINT conversations_pin_check CHECK ((mode = 'published' AND version_id IS NOT NULL) OR (mode = 'draft' AND draft_snapshot IS NOT NULL))`,
  );
  await knex.schema.alterTable('conversations', (t) => {
    t.dropColumns('campaign_id', 'counterpart', 'outcome', 'duration_seconds');
  });
}
