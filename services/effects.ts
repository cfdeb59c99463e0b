/**
 * Writes at outside providers that happen once (docs/operations.md "Provider calls happen once"). Voice APIs take
 * no idempotency key and CSPs' brand and campaign creates are billable, non-idempotent writes, so a
 * retried activity must not simply ask again: `performOnce` records the intent (what, and the client
 * reference the provider echoes) in Postgres before the request; a later attempt that finds that intent
 * without a result asks the provider's look-up by the reference instead of writing again, and marks the
 * intent `unknown` (with a `provider.intent.unknown` event) when the provider cannot tell.
 *
 * Tests inject a fault hook that crashes the attempt at a named step (before the request, after the
 * provider accepted it, after the result was recorded) and then run the attempt again, as Temporal does.
 */
import type { Db } from '../db';
import { beginIntent, markIntentUnknown, type IntentKind, type ProviderIntent } from '../db/repositories/providerIntents';
import { emitEvent } from '../events/emit';

/** A point of a write where a test may crash the worker. */
export type EffectStep = 'before_request' | 'after_accept' | 'after_record';

/** Test-only crash points: throw (e.g. SimulatedCrash) to end the attempt at `step`. */
export type FaultHook = (step: EffectStep, kind: IntentKind, reference: string) => void | Promise<void>;

/** What a test's fault hook throws: the attempt dies as a killed worker's would. */
export class SimulatedCrash extends Error {
  constructor(readonly step: EffectStep, readonly kind: IntentKind) {
    super(`simulated crash ${step} of ${kind}`);
    this.name = 'SimulatedCrash';
  }
}

import type { Lookup } from '../providers/lookup';

export type { Lookup };

/** The outcome of a write done once. */
export type EffectOutcome<R> =
  /** The provider's answer: asked now (`performedNow`), or found by the look-up / already recorded. */
  | { state: 'known'; result: R; performedNow: boolean; intent: ProviderIntent }
  /** The provider cannot tell whether the earlier request happened: nothing was asked again. */
  | { state: 'unknown'; intent: ProviderIntent; reason: string };

/** What performOnce needs to know about the write. */
export interface EffectSpec<R> {
  kind: IntentKind;
  /** Client reference sent with the request and echoed by the provider. */
  reference: string;
  /** Our resource the write is for. */
  subjectId: string;
  provider: string;
  /** What is asked, as recorded on the intent (no secrets). */
  request: unknown;
  /** The write itself. */
  perform: () => Promise<R>;
  /** The provider's look-up by reference (or by to/from/time for calls; the intent gives the time). */
  lookup: (intent: ProviderIntent) => Promise<Lookup<R>>;
  fault?: FaultHook;
  /**
   * The intent the caller recorded and committed a moment ago, in the statement that stored the resource
   * (an agent's reply, db/repositories/smsReplies.ts): not recorded again, and asked at once.
   */
  recorded?: ProviderIntent;
}

/**
 * Performs a non-idempotent provider write at most once per (organization, kind, reference). The
 * caller records the answer and calls `resolveIntent(trx, orgId, intent.id, result)` in the same
 * transaction; a `known` outcome whose intent is already `done` was recorded before (the caller's
 * recording is idempotent). An `unknown` outcome has marked the intent and emitted
 * `provider.intent.unknown` once; the caller shows it on its resource.
 * @throws whatever `perform` or `lookup` throws (the attempt is retried; the intent stays pending)
 */
export async function performOnce<R>(db: Db, orgId: string, spec: EffectSpec<R>): Promise<EffectOutcome<R>> {
  const { intent, created } = spec.recorded?.status === 'pending' && spec.recorded.reference === spec.reference
    ? { intent: spec.recorded, created: true }
    : await beginIntent(db, orgId, { kind: spec.kind, reference: spec.reference, subjectId: spec.subjectId, provider: spec.provider, request: spec.request });
  if (intent.status === 'done') return { state: 'known', result: intent.result as R, performedNow: false, intent };
  if (intent.status === 'unknown') return { state: 'unknown', intent, reason: intent.note ?? 'the provider could not tell' };
  if (!created) {
    // An earlier attempt recorded the intent and died before recording an answer: ask, do not write.
    const seen = await spec.lookup(intent);
    if ('found' in seen) return { state: 'known', result: seen.found, performedNow: false, intent };
    if ('cannotTell' in seen) {
      await db.transaction(async (trx) => {
        if (await markIntentUnknown(trx, orgId, intent.id, seen.cannotTell)) {
          await emitEvent(trx, orgId, 'provider.intent.unknown', {
            intentId: intent.id,
            kind: spec.kind,
            reference: spec.reference,
            subjectId: spec.subjectId,
            provider: spec.provider,
            reason: seen.cannotTell,
          });
        }
      });
      return { state: 'unknown', intent: { ...intent, status: 'unknown', note: seen.cannotTell }, reason: seen.cannotTell };
    }
    // Absent: the earlier request never reached the provider, so asking now is the first time.
  }
  await spec.fault?.('before_request', spec.kind, spec.reference);
  const result = await spec.perform();
  await spec.fault?.('after_accept', spec.kind, spec.reference);
  return { state: 'known', result, performedNow: true, intent };
}
