/**
 * Pollers per task queue for DescribeTaskQueue, as the real server's matching service keeps them:
 * each identity's last poll time per namespace, task queue and type, forgotten after five
 * minutes without a poll (the real server's default poller history TTL). The Web UI shows them as
 * the workflow's workers and enables call stacks and queries only when some are present.
 */
import { fromMs } from '../proto';

/** temporal.api.enums.v1.TaskQueueType: WORKFLOW = 1, ACTIVITY = 2. */
export type PollerKind = 1 | 2;

/** How long a poller is listed after its last poll, in ms. */
export const POLLER_TTL_MS = 5 * 60_000;

/** Last poll time (ms) by identity, per namespace / task queue / task queue type. */
export class PollerRegistry {
  private readonly seen = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  private key(ns: string, queue: string, kind: PollerKind): string {
    return `${ns}\u0000${queue}\u0000${kind}`;
  }

  /** Records a poll by `identity`. */
  record(ns: string, queue: string, kind: PollerKind, identity: string): void {
    const k = this.key(ns, queue, kind);
    let m = this.seen.get(k);
    if (!m) this.seen.set(k, (m = new Map()));
    m.set(identity, this.now());
  }

  /** PollerInfo list (temporal.api.taskqueue.v1.PollerInfo) of the queue, most recent first. */
  list(ns: string, queue: string, kind: PollerKind): Array<{ identity: string; lastAccessTime: { seconds: number; nanos: number }; ratePerSecond: number }> {
    const m = this.seen.get(this.key(ns, queue, kind));
    if (!m) return [];
    const cutoff = this.now() - POLLER_TTL_MS;
    const out: Array<{ identity: string; lastAccessTime: { seconds: number; nanos: number }; ratePerSecond: number }> = [];
    for (const [identity, at] of m) {
      if (at < cutoff) m.delete(identity);
      else out.push({ identity, lastAccessTime: fromMs(at), ratePerSecond: 100_000 });
    }
    return out.sort((a, b) => b.lastAccessTime.seconds - a.lastAccessTime.seconds || b.lastAccessTime.nanos - a.lastAccessTime.nanos);
  }
}
