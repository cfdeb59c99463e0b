/**
 * The calls whose relay socket this process holds, by conversation id (docs/api-notes.md "Live control"): a control
 * queued for a call (db/repositories/conversationControls.ts) is claimed and applied by the process holding its
 * socket — at once when the control was asked of this process, else on the change feed's
 * `conversation_controls:<conversationId>` notice (db/changeFeed.ts), which every API process receives.
 */
import type { Db } from '../../db';
import { claimControls, type QueuedControl } from '../../db/repositories/conversationControls';

/** A relay session as the registry sees it. */
export interface LiveCall {
  orgId: string;
  /** Applies one control, resolving once it was said, stored or the call ended. */
  apply(control: QueuedControl): Promise<void>;
}

const calls = new Map<string, LiveCall>();
/** Per conversation, the tail of its deliveries in progress. */
const deliveries = new Map<string, Promise<void>>();

/** Registers the relay session of a conversation (services/voice/relaySession.ts, after `setup`). */
export function registerLiveCall(conversationId: string, call: LiveCall): void {
  calls.set(conversationId, call);
}

/** Forgets a conversation's relay session (its socket closed). */
export function unregisterLiveCall(conversationId: string, call: LiveCall): void {
  if (calls.get(conversationId) === call) calls.delete(conversationId);
}

/**
 * Claims and applies, in order, the controls queued for a conversation whose socket this process holds.
 * @returns the ids of the controls applied (none when another process holds the socket)
 */
export function deliverControls(db: Db, orgId: string, conversationId: string): Promise<string[]> {
  const call = calls.get(conversationId);
  if (!call || call.orgId !== orgId) return Promise.resolve([]);
  // One delivery of a conversation at a time (the change feed's notice and the API's own call race for the same
  // control): a delivery that finds nothing left to claim resolves after the one that applied it.
  const run = (deliveries.get(conversationId) ?? Promise.resolve()).then(async () => {
    const claimed = await claimControls(db, orgId, conversationId);
    for (const control of claimed) await call.apply(control);
    return claimed.map((c) => c.id);
  });
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  deliveries.set(conversationId, tail);
  void tail.then(() => {
    if (deliveries.get(conversationId) === tail) deliveries.delete(conversationId);
  });
  return run;
}

/** Whether this process holds the relay socket of a conversation (its controls are applied here). */
export function holdsCall(orgId: string, conversationId: string): boolean {
  return calls.get(conversationId)?.orgId === orgId;
}

/**
 * The change feed's listener of queued controls: applies those of a call this process holds.
 * @param onError where a failure is reported (the control stays applied-marked: a person asks again)
 */
export function controlListener(db: Db, onError: (err: unknown) => void): (conversationId: string) => void {
  return (conversationId) => {
    const call = calls.get(conversationId);
    if (call) deliverControls(db, call.orgId, conversationId).catch(onError);
  };
}
