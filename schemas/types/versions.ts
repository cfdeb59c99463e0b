/** Publishing, versions, rollback, traffic splits and diffs of an agent (spec "Agent versions"). `npm run schemas` generates one JSON Schema per type. */

/**
 * Request body of `POST /agents/{id}/publish` (header `Idempotency-Key` required).
 * @additionalProperties false
 */
export interface PublishRequest {
  /** @maxLength 1000 */
  note?: string | null;
  /**
   * Evaluate the draft with a suite of this agent first (docs/evals.md "Publish gate"): the publish is refused with
   * 409 `evaluation_failed` when the run's pass rate is below `minPassRate`.
   */
  gate?: {
    /** `evs_…` of this agent. @minLength 1 @maxLength 64 */
    suiteId: string;
    /** 0..1. @minimum 0 @maximum 1 */
    minPassRate: number;
  };
}

/** A frozen, immutable version of an agent (spec "Agent versions"). */
export interface AgentVersion {
  /** `ver_…` */
  id: string;
  agentId: string;
  /** Per agent, gapless and monotonic from 1. */
  number: number;
  note: string | null;
  /** Id of the credential that published it (`key_…`). */
  publishedBy: string;
  /** Draft version this snapshot was compiled from. */
  draftVersion: number;
  /** Whether live traffic runs this version now. */
  isPublished: boolean;
  /** SHA-256 (hex) of the canonical snapshot JSON. */
  checksum: string;
  /** @format date-time */
  createdAt: string;
}

/** Page of versions, newest first. */
export interface AgentVersionPage {
  items: AgentVersion[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /agents/{id}/rollback`.
 * @additionalProperties false
 */
export interface RollbackRequest {
  /** An earlier frozen version of this agent (`ver_…`). @maxLength 64 */
  versionId: string;
}

/** One share of a traffic split: a published version of the agent and its percentage of new conversations. */
export interface TrafficSplitEntry {
  /** A frozen (published) version of this agent (`ver_…`). @maxLength 64 */
  versionId: string;
  /** Whole percent of new conversations, 1..100. @asType integer @minimum 1 @maximum 100 */
  percent: number;
}

/**
 * Request body of `PUT /agents/{id}/traffic` (setAgentTraffic; docs/api-notes.md "Traffic splits"): the shares sum
 * to 100, no version twice. `stickiness` `counterpart` (default) keeps a repeat caller, texter, widget visitor or
 * chat customer on one version (a stable hash of the key); `none` picks at random per conversation.
 * @additionalProperties false
 */
export interface TrafficSplitUpdate {
  /** @minItems 1 @maxItems 20 */
  splits: TrafficSplitEntry[];
  stickiness?: 'counterpart' | 'none';
}

/** Response data of `GET`/`PUT /agents/{id}/traffic`: the split new conversations are picked from. */
export interface TrafficSplit {
  agentId: string;
  splits: TrafficSplitEntry[];
  stickiness: 'counterpart' | 'none';
  /** The live published version (what the default split and a reset send 100 % to). */
  publishedVersionId: string;
  /** False: the default (100 % on the live version; no split was set since the last publish or rollback). */
  custom: boolean;
  /** When the split was last set (null: the default). @format date-time */
  updatedAt: string | null;
}

/** One difference between a version and the current draft (spec "Agent versions"). */
export interface DiffEntry {
  /** Readable deep path, e.g. `skills[book_appointment].config.url`. */
  field: string;
  /** Value in the version (absent when added). */
  before?: unknown;
  /** Value in the draft (absent when removed). */
  after?: unknown;
  kind: 'added' | 'removed' | 'changed';
}

/** Diff of a version against the current draft. */
export interface AgentVersionDiff {
  versionId: string;
  versionNumber: number;
  draftVersion: number;
  items: DiffEntry[];
}
