/**
 * Task queues: in-memory FIFOs of workflow and activity tasks with waiting long-polls.
 * A queue entry is validated when dispatched (`isValid`), so cancelled/stale tasks are skipped
 * instead of being removed eagerly.
 */

/** Simple array deque with O(1) amortised shift. */
export class Deque<T> {
  private items: T[] = [];
  private head = 0;
  push(v: T): void {
    this.items.push(v);
  }
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    (this.items as unknown[])[this.head] = undefined;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
  get length(): number {
    return this.items.length - this.head;
  }
  /** Removes matching entries (O(n)); used only for rare cleanup. */
  remove(pred: (v: T) => boolean): void {
    this.items = this.items.slice(this.head).filter((v) => !pred(v));
    this.head = 0;
  }
}

/** A waiting long-poll: `deliver` returns false if the caller is gone (task must be requeued). */
export interface Poller<E> {
  deliver(entry: E): boolean;
  alive(): boolean;
}

/** One kind (workflow or activity) of one task queue. */
export class TaskList<E> {
  readonly tasks = new Deque<E>();
  readonly pollers = new Deque<Poller<E>>();

  constructor(private readonly isValid: (e: E) => boolean) {}

  /** Adds a task, handing it straight to a waiting poller when there is one. */
  add(entry: E): void {
    for (;;) {
      const p = this.pollers.shift();
      if (!p) break;
      if (!p.alive()) continue;
      if (p.deliver(entry)) return;
    }
    this.tasks.push(entry);
  }

  /** Takes the next valid task, or undefined. */
  take(): E | undefined {
    for (;;) {
      const e = this.tasks.shift();
      if (e === undefined) return undefined;
      if (this.isValid(e)) return e;
    }
  }

  /** Number of valid queued tasks (O(n); used by idle detection and describe). */
  get backlog(): number {
    return this.tasks.length;
  }
}
