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
import { integrationsAdapter, IntegrationProviderError } from '../providers/integrations';
import { openCredentials } from '../services/integrations/connections';
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
        page = await integrationsAdapter(process.env, c.provider).listRecords(c.kind as IntegrationKind, openCredentials(c.credentialsSealed), { spreadsheetId: c.config.spreadsheetId as string | undefined }, cursor);
      } catch (err) {
        if (err instanceof IntegrationProviderError && err.code !== 'unavailable') throw ApplicationFailure.nonRetryable(err.message, err.code);
        throw err;
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
