/**
 * Conversations end when nobody writes (docs/api-notes.md "Conversations": idle timeouts): the agent's
 * `idle_timeout_seconds` (chat and widget, default 1,800), `sms_idle_timeout_seconds` (default 86,400) and
 * `sms_max_segments` (1–10, default 3: the length of its SMS replies). Constant defaults, so adding them
 * rewrites no table, and agents stored before get the defaults they already ran on.
 *
 * The idle sweep (services/housekeeping.ts, db/repositories/conversations.ts `endIdleConversations`) finds the
 * open chat, widget and SMS conversations through `conversations_open_text_idx`. Its key and predicate hold
 * only columns a turn never changes (`started_at`, `status`, `channel`) — not `last_activity_at` — so a stored
 * turn stays a HOT update (migration 20261124001300); the sweep reads `last_activity_at` from the row. The
 * index holds only conversations still open, which the sweep itself keeps few.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.integer('idle_timeout_seconds').notNullable().defaultTo(1800);
    t.integer('sms_idle_timeout_seconds').notNullable().defaultTo(86_400);
    t.integer('sms_max_segments').notNullable().defaultTo(3);
  });
  await knex.raw(`CREATE INDEX conversations_open_text_idx ON conversations (started_at) WHERE status = 'active' AND channel IN ('chat', 'web', 'sms')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS conversations_open_text_idx');
  await knex.schema.alterTable('agents', (t) => {
    for (const c of ['idle_timeout_seconds', 'sms_idle_timeout_seconds', 'sms_max_segments']) t.dropColumn(c);
  });
}
