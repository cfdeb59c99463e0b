/**
 * The change feed (db/changeFeed.ts, channel `acp_changes`) also reports `phone_numbers`, keyed by the number
 * (`phone_numbers:+13125550100,+13125550101`): an inbound text's callback finds the number's organization and
 * agent through a read cache the feed evicts (api/sms/callbacks.ts), instead of a query per text. One
 * notification per statement and 200 numbers, old and new numbers of an update both named, as
 * migration 20261123000300 does for `sms_registrations`.
 */
import type { Knex } from 'knex';
import { changeFeedFunction, changeFeedTriggers, dropChangeFeed } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    changeFeedFunction('acp_notify_number_rows', {
      deleted: 'SELECT DISTINCT o.e164 AS k FROM old_rows o',
      updated: 'SELECT o.e164 AS k FROM old_rows o UNION SELECT n.e164 FROM new_rows n',
      inserted: 'SELECT DISTINCT n.e164 AS k FROM new_rows n',
    }),
  );
  await knex.raw(changeFeedTriggers('phone_numbers', 'acp_notify_number_rows', true));
}

export async function down(knex: Knex): Promise<void> {
  for (const sql of dropChangeFeed(['phone_numbers'], 'acp_notify_number_rows')) await knex.raw(sql);
}
