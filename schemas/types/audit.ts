/**
 * Audit log wire types (spec "Audit": `GET /audit-logs`, fields "not shown", decided here). One entry
 * per write through the API (every non-GET operation), successful or not.
 */

/** One audit entry. */
export interface AuditLogEntry {
  /** `aud_…` */
  id: string;
  /** When the request finished. @format date-time */
  occurredAt: string;
  /** The credential that made the request. */
  actor: {
    /** Credential id (`key_…`), the conversation (`conv_…`) whose skill read a record (`agent`), or the delivery (`whd_…`) that disabled a webhook endpoint (`system`). */
    id: string;
    kind: 'secret' | 'publishable' | 'oauth' | 'agent' | 'system';
  };
  /** Operation of the route table, e.g. `createWebhook`. */
  operationId: string;
  method: string;
  /** Concrete request path, without the query string. */
  path: string;
  resource: {
    /** e.g. `webhook`, `agent`, `knowledge_source`. */
    type: string;
    /** Id of the resource acted on, when known. */
    id: string | null;
  };
  requestId: string;
  /** Client address as the API saw it. */
  sourceIp: string | null;
  /** HTTP status of the answer: the outcome. */
  statusCode: number;
  outcome: 'success' | 'failure';
}

/** A page of audit entries, newest first. */
export interface AuditLogList {
  items: AuditLogEntry[];
  nextCursor: string | null;
  hasMore: boolean;
}
