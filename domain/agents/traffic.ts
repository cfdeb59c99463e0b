/**
 * Traffic splits (docs/api-notes.md "Traffic splits"): which published version of an agent a new conversation runs
 * on. A split is a list of `{versionId, percent}` (whole percents summing to 100) and a stickiness: with
 * `counterpart`, a conversation's key (the caller's or texter's number, the widget visitor id, the chat customer id)
 * is hashed with the agent id (SHA-256, FIPS 180-4) to a point in [0, 100) and the version whose cumulative share
 * covers it is picked — so the same key lands on the same version for as long as the split is unchanged; without a
 * key, or with `none`, the point is random per conversation. Pure: no I/O.
 */
import crypto from 'node:crypto';
import type { FieldError } from '../errors';

/** How a repeat counterpart is kept on one version. */
export type Stickiness = 'counterpart' | 'none';

/** One share of a split. */
export interface SplitEntry {
  versionId: string;
  /** Whole percent, 1..100. */
  percent: number;
}

/** A traffic split as stored and as recorded on a conversation. */
export interface TrafficSplitRule {
  splits: SplitEntry[];
  stickiness: Stickiness;
}

/** The default split: every new conversation on the live published version. */
export function defaultSplit(publishedVersionId: string): TrafficSplitRule {
  return { splits: [{ versionId: publishedVersionId, percent: 100 }], stickiness: 'counterpart' };
}

/**
 * The field problems of a requested split that need only the body (also run as the route's `bodyChecks`, so they
 * join the schema's errors; any JSON value is accepted): each percent a whole number 1..100, the percents summing
 * to 100, no version twice. Fields are named by dotted path (`splits.0.percent`), as the schema's are.
 */
export function splitShapeErrors(body: { splits?: unknown }): FieldError[] {
  const errors: FieldError[] = [];
  if (!Array.isArray(body?.splits)) return errors;
  const seen = new Set<string>();
  let total = 0;
  body.splits.forEach((s: unknown, i: number) => {
    const e = (s ?? {}) as { versionId?: unknown; percent?: unknown };
    if (typeof e.percent !== 'number' || !Number.isInteger(e.percent) || e.percent < 1 || e.percent > 100) {
      errors.push({ field: `splits.${i}.percent`, message: 'must be a whole number from 1 to 100' });
    } else total += e.percent;
    if (typeof e.versionId === 'string') {
      if (seen.has(e.versionId)) errors.push({ field: `splits.${i}.versionId`, message: 'names a version already in the split' });
      seen.add(e.versionId);
    }
  });
  if (body.splits.length && !errors.some((e) => e.field.endsWith('.percent')) && total !== 100) {
    errors.push({ field: 'splits', message: `the percents must sum to 100 (they sum to ${total})` });
  }
  return errors;
}

/**
 * Every field problem of a requested split: {@link splitShapeErrors}, and each version one of the agent's
 * published (frozen) versions.
 * @param versionIds the ids of the agent's frozen versions
 * @returns `[]` when valid; otherwise one `{field, message}` per problem (`splits.<i>.versionId`, `splits.<i>.percent`, `splits`)
 */
export function splitErrors(splits: readonly SplitEntry[], versionIds: ReadonlySet<string>): FieldError[] {
  const errors = splitShapeErrors({ splits });
  splits.forEach((s, i) => {
    const field = `splits.${i}.versionId`;
    if (!versionIds.has(s.versionId) && !errors.some((e) => e.field === field)) errors.push({ field, message: 'is not a published version of this agent' });
  });
  return errors;
}

/**
 * The point in [0, 100) of a stickiness key: the first 48 bits of SHA-256(`agentId` + NUL + `key`), scaled. The
 * agent id is mixed in so one customer is not put on the "first" share of every agent alike.
 */
export function stickyPoint(agentId: string, key: string): number {
  const digest = crypto.createHash('sha256').update(`${agentId}\u0000${key}`).digest();
  return (digest.readUIntBE(0, 6) / 2 ** 48) * 100;
}

/**
 * Picks the version of a new conversation from a split.
 * @param key the stickiness key (null or empty: none); ignored when the split's stickiness is `none`
 * @param random a uniform number in [0, 1) for the unkeyed pick (default Math.random)
 * @returns the picked version id
 * @throws Error for an empty split (a stored split always has a share)
 */
export function pickVersion(split: TrafficSplitRule, agentId: string, key: string | null | undefined, random: () => number = Math.random): string {
  if (!split.splits.length) throw new Error('pickVersion: the split has no share');
  const point = split.stickiness === 'counterpart' && key ? stickyPoint(agentId, key) : random() * 100;
  let upTo = 0;
  for (const s of split.splits) {
    upTo += s.percent;
    if (point < upTo) return s.versionId;
  }
  return split.splits[split.splits.length - 1].versionId;
}
