/**
 * The single virtual clock every server timer and timeout goes through: real time plus a skipped
 * offset (milliseconds). With time skipping, the owner calls `skipToNext()` when nothing is
 * runnable, which jumps the offset forward to the earliest pending timer and fires it.
 */

interface TimerEntry {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Handle returned by `Clock.schedule`; `cancel()` is idempotent. */
export interface TimerHandle {
  at: number;
  cancel(): void;
}

const MAX_REAL_WAIT_MS = 60_000;

/** Virtual clock with a binary-heap timer queue. All times are epoch milliseconds. */
export class Clock {
  private offset = 0;
  private heap: TimerEntry[] = [];
  private seq = 0;
  private real: NodeJS.Timeout | undefined;
  private realAt = Infinity;
  private stopped = false;

  constructor(initialOffsetMs = 0) {
    this.offset = initialOffsetMs;
  }

  /** Current virtual time in epoch ms. */
  now(): number {
    return Date.now() + this.offset;
  }

  /** Skipped offset in ms (persisted so virtual time never goes backwards across restarts). */
  get skippedMs(): number {
    return this.offset;
  }

  /** Runs `fn` when virtual time reaches `at` (epoch ms). */
  schedule(at: number, fn: () => void): TimerHandle {
    const e: TimerEntry = { at, seq: this.seq++, fn, cancelled: false };
    this.push(e);
    this.arm();
    return {
      at,
      cancel: () => {
        e.cancelled = true;
      },
    };
  }

  /** Earliest pending (not cancelled) timer time, or undefined. */
  nextAt(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.at;
  }

  /** Jumps virtual time forward to the earliest timer (never backwards) and fires due timers. */
  skipToNext(limitAt = Infinity): boolean {
    const at = this.nextAt();
    if (at === undefined) return false;
    const target = Math.min(at, limitAt);
    const now = this.now();
    if (target > now) this.offset += target - now;
    // The armed real timeout was computed for the old offset; re-arm after firing.
    if (this.real) clearTimeout(this.real);
    this.real = undefined;
    this.realAt = Infinity;
    this.fireDue();
    return true;
  }

  /** Stops firing timers (server shutdown). */
  stop(): void {
    this.stopped = true;
    if (this.real) clearTimeout(this.real);
    this.real = undefined;
  }

  private fireDue(): void {
    const now = this.now();
    for (;;) {
      this.dropCancelled();
      const top = this.heap[0];
      if (!top || top.at > now) break;
      this.pop();
      try {
        top.fn();
      } catch (err) {
        // A timer callback failing must not stop the clock; surface it.
        process.emitWarning(`devserver timer callback failed: ${(err as Error).stack ?? err}`);
      }
    }
    this.arm();
  }

  private arm(): void {
    if (this.stopped) return;
    this.dropCancelled();
    const top = this.heap[0];
    if (!top) return;
    if (this.real && this.realAt <= top.at) return;
    if (this.real) clearTimeout(this.real);
    const wait = Math.max(0, Math.min(top.at - this.now(), MAX_REAL_WAIT_MS));
    this.realAt = top.at;
    this.real = setTimeout(() => {
      this.real = undefined;
      this.realAt = Infinity;
      this.fireDue();
    }, wait);
    this.real.unref?.();
  }

  private dropCancelled(): void {
    while (this.heap.length && this.heap[0].cancelled) this.pop();
  }

  private less(a: TimerEntry, b: TimerEntry): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(e: TimerEntry): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  private pop(): TimerEntry | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}
