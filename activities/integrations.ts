/**
 * Activities of `records-sync/{connectionId}` (docs/api-notes.md "Integrations and records"; DESIGN.md "Durable
 * processes": provider pages as activities). Each page is read from the provider and upserted by
 * (source, external id) with the progress in one transaction, so a retried page writes the same rows
 * again and never duplicates one. Reading is safe to repeat at the provider (no intent needed).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityDeps } from './index';
import { getConnectionById, setConnectionError, setSyncProgress } from '../db/repositories/integrations';
import { upsertSourcedRecords } from '../db/repositories/records';
import { recordWriter } from '../services/records/sealing';
import { integrationsAdapter, IntegrationProviderError, retryableProviderError } from '../providers/integrations';
import { ConnectionNeedsReauthError, connectionSecrets } from '../services/integrations/connections';
import { writeBackConversationNote } from '../services/integrations/crm';
import type { IntegrationKind } from '../domain/integrations/catalog';
import type { RecordsSyncProgress } from '../schemas/types/integrations';

/** What one page did. */
export interface RecordsSyncPageResult {
  /** Cursor of the next page; null when the source is exhausted. */
  nextCursor: string | null;
  /** Records written so far in this run (created + updated). */
  processed: number;
}

/** The records-sync activities by name. */
export interface IntegrationActivities {
  /** Marks the run `running` with 0 processed. @returns false when the connection no longer exists */
  recordsSyncBegin(orgId: string, connectionId: string, startedAt: string): Promise<boolean>;
  /**
   * Reads one page at the provider and upserts it, adding to `processed`.
   * @throws ApplicationFailure non-retryable `connection_gone` / `not_found` (a sheet no longer shared)
   */
  recordsSyncPage(orgId: string, connectionId: string, cursor: string | null, processed: number): Promise<RecordsSyncPageResult>;
  /** Ends the run: `succeeded`, or `failed` with the error (also the connection's last error). */
  recordsSyncFinish(orgId: string, connectionId: string, outcome: { processed: number; error: string | null; startedAt: string }): Promise<void>;
  /**
   * Writes an ended conversation's summary to the caller's HubSpot contact as a note, once (services/integrations/
   * crm.ts; a retried attempt looks the note up instead of writing again).
   * @returns `written`, `unknown` or `skipped:<reason>`
   * @throws ApplicationFailure non-retryable for a refused token or request; IntegrationProviderError `unavailable` (retried)
   */
  writeBackCrmNote(ref: { orgId: string; conversationId: string }): Promise<string>;
}

/**
 * A provider failure as the activity's failure: a refusal, a revoked grant (`needs_reauth`) or a bad answer is
 * non-retryable; `unavailable` and `timeout` are retried.
 */
function asFailure(err: unknown): unknown {
  if (err instanceof ConnectionNeedsReauthError) return ApplicationFailure.nonRetryable(err.message, 'needs_reauth');
  if (err instanceof IntegrationProviderError && !retryableProviderError(err)) return ApplicationFailure.nonRetryable(err.message, err.code);
  return err;
}

/** Builds the activities. */
export function createIntegrationActivities(deps: Pick<ActivityDeps, 'db'>): IntegrationActivities {
  const { db } = deps;
  return {
    async recordsSyncBegin(orgId, connectionId, startedAt) {
      const c = await getConnectionById(db, orgId, connectionId);
      if (!c) return false;
      await setSyncProgress(db, orgId, connectionId, { status: 'running', processed: 0, total: null, error: null, startedAt, finishedAt: null });
      return true;
    },

    async recordsSyncPage(orgId, connectionId, cursor, processed) {
      const c = await getConnectionById(db, orgId, connectionId);
      if (!c) throw ApplicationFailure.nonRetryable('The connection was removed during the sync', 'connection_gone');
      let page;
      try {
        // The connection's own adapter (its `provider`); an OAuth token about to expire is refreshed first.
        page = await integrationsAdapter(process.env, c.provider).listRecords(c.kind as IntegrationKind, await connectionSecrets(db, c), { spreadsheetId: c.config.spreadsheetId as string | undefined }, cursor);
      } catch (err) {
        throw asFailure(err);
      }
      return db.transaction(async (trx) => {
        // Sensitive members of the provider's rows are sealed before they are stored (docs/security.md "Sensitive record fields").
        const protect = await recordWriter(trx, orgId);
        const r = await upsertSourcedRecords(trx, orgId, c.kind, c.id, page.items.map((row) => ({ ...row, ...protect(row.fields ?? {}) })));
        const total = processed + r.created + r.updated;
        const sync: RecordsSyncProgress = { ...(c.sync ?? { startedAt: new Date().toISOString(), error: null, finishedAt: null }), status: 'running', processed: total, total: page.total };
        await setSyncProgress(trx, orgId, connectionId, sync);
        return { nextCursor: page.nextCursor, processed: total };
      });
    },

    async writeBackCrmNote(ref) {
      try {
        const r = await writeBackConversationNote(db, ref.orgId, ref.conversationId);
        return r.status === 'skipped' ? `skipped:${r.reason}` : r.status;
      } catch (err) {
        throw asFailure(err);
      }
    },

    async recordsSyncFinish(orgId, connectionId, outcome) {
      const c = await getConnectionById(db, orgId, connectionId);
      if (!c) return;
      await db.transaction(async (trx) => {
        await setSyncProgress(trx, orgId, connectionId, {
          status: outcome.error ? 'failed' : 'succeeded',
          processed: outcome.processed,
          total: c.sync?.total ?? null,
          error: outcome.error,
          startedAt: outcome.startedAt,
          finishedAt: new Date().toISOString(),
        });
        await setConnectionError(trx, orgId, connectionId, outcome.error);
      });
    },
  };
}
