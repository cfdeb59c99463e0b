/**
 * The workflow-start outbox (docs/operations.md "Workflows start after the commit"): a row per workflow start
 * owed by a committed transaction. It is written in the transaction whose rows the workflow reads, so a start
 * exists only once that transaction commits (and never when it rolls back). The request that wrote it starts
 * the workflow right after the commit and deletes the row; the sweep of services/workflowStarts.ts starts what
 * a crash or an unreachable Temporal left behind, retrying with `next_attempt_at` backing off.
 */
import type { Knex } from 'knex';
import { timestampsNow } from '../migrationHelpers';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('workflow_starts', (t) => {
    t.bigIncrements('id');
    t.text('org_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('workflow_type').notNullable();
    t.text('workflow_id').notNullable(); // deterministic (temporal.config.ts workflowIds): starting twice is harmless
    t.jsonb('args').notNullable();
    t.text('resource_id');
    t.jsonb('options').notNullable().defaultTo('{}'); // memo, workflowIdConflictPolicy
    t.integer('attempts').notNullable().defaultTo(0);
    t.text('last_error');
    timestampsNow(t, knex, 'created_at', 'next_attempt_at');
    t.index(['next_attempt_at', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('workflow_starts');
}
