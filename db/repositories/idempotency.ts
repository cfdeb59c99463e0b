/**
 * Idempotency keys of creating POSTs (DESIGN.md "Idempotency-Key"): the first response is stored per
 * (organization, operation, key) with a hash of the request body, and replayed for a retry with the
 * same body. Used by api/middleware/idempotency.ts for every creating POST, and directly by the SMS
 * submit and send handlers, which replay inside their own transactions.
 */
import type { Db } from '../index';

/** A stored response; `status` 0 while the first request is still being processed. */
export interface StoredResponse {
  requestHash: string;
  status: number;
  response: unknown;
  /** When the key was claimed. */
  createdAt: Date;
}

/** The stored response for the key, or undefined. */
export async function getStoredResponse(db: Db, orgId: string, operation: string, key: string): Promise<StoredResponse | undefined> {
  const row = await db('idempotency_keys').where({ org_id: orgId, operation, idempotency_key: key }).first();
  return row ? { requestHash: row.request_hash, status: row.status, response: row.response, createdAt: row.created_at } : undefined;
}

/**
 * Claims the key for a request (status 0, no response yet), inside the caller's transaction.
 * @returns true when claimed now; false when the key exists already (read it with getStoredResponse)
 */
export async function claimKey(db: Db, orgId: string, operation: string, key: string, requestHash: string): Promise<boolean> {
  const rows = await db('idempotency_keys')
    .insert({ org_id: orgId, operation, idempotency_key: key, request_hash: requestHash, status: 0, response: null })
    .onConflict(['org_id', 'operation', 'idempotency_key'])
    .ignore()
    .returning('status');
  return rows.length > 0;
}

/** Stores the response of a claimed key. */
export async function completeKey(db: Db, orgId: string, operation: string, key: string, status: number, response: unknown): Promise<void> {
  await db('idempotency_keys').where({ org_id: orgId, operation, idempotency_key: key }).update({ status, response: JSON.stringify(response) });
}

/** Forgets a key (its request failed before taking effect, so a retry must run again). */
export async function releaseKey(db: Db, orgId: string, operation: string, key: string): Promise<void> {
  await db('idempotency_keys').where({ org_id: orgId, operation, idempotency_key: key }).delete();
}
