/**
 * Task queues: in-memory backlogs of workflow and activity tasks with waiting long-polls, dispatched
 * by Task Queue Priority and Fairness as the real server's matching service does (docs.temporal.io
 * "Task Queue Priority and Fairness"; temporalio/temporal service/matching/config.go `clipPriority`,
 * fair_task_writer.go `pickPasses`, counter/map.go `GetPass`, fairness_util.go `getEffectiveWeight`):
 *
 * - one sub-queue per priority key 1..5 (0 = unset → the default 3, above 5 → 5); a lower key is
 *   always dispatched first;
 * - within a priority, stride scheduling across fairness keys: a task of key k gets the pass
 *   `max(base, last[k] + inc)` with `inc = max(1, 1000 / weight)` and `base` the pass of the last
 *   dispatched task of that priority; the task with the lowest (pass, arrival) goes next. A key
 *   whose backlog is long therefore never delays another key's next task by more than one round,
 *   and keys are dispatched in proportion to their weights;
 * - FIFO within a key.
 *
 * A task handed straight to a waiting poll (no backlog) skips all of this, as the real server's
 * sync match does. A queue entry is validated when dispatched (`isValid`), so cancelled/stale tasks
 * are skipped instead of being removed eagerly.
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
  peek(): T | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }
  get length(): number {
    return this.items.length - this.head;
  }
}

/**
 * temporal.api.common.v1.Priority as dispatch reads it: `priorityKey` (0 = unset), `fairnessKey`
 * ('' = the shared unkeyed bucket), `fairnessWeight` (0 = unset = 1.0).
 */
export interface TaskPriority {
  priorityKey?: number | null;
  fairnessKey?: string | null;
  fairnessWeight?: number | null;
}

/** Number of priority levels (dynamic config `matching.priorityLevels`, default 5). */
export const PRIORITY_LEVELS = 5;
/** Priority key of a task that sets none (`matching.defaultPriorityKey`: ceil(levels / 2) = 3). */
export const DEFAULT_PRIORITY_KEY = 3;
/** Longest fairness key the real server accepts, in UTF-8 bytes (common/priorities `fairnessKeyMaxLength`). */
export const FAIRNESS_KEY_MAX_BYTES = 64;
/** Stride numerator and smallest weight (service/matching/fairness_util.go: `strideFactor`, `minWeight`). */
const STRIDE_FACTOR = 1000;
const MIN_WEIGHT = 0.001;
/** Largest weight: the proto documents the range [0.001, 1000]; above it the stride is the minimum 1. */
const MAX_WEIGHT = 1000;

/** The sub-queue of a priority key (matching `clipPriority`): 0 → default, clipped to [1, levels]. */
export function priorityLevel(key: number | null | undefined): number {
  const k = key && key > 0 ? Math.floor(key) : DEFAULT_PRIORITY_KEY;
  return Math.min(k, PRIORITY_LEVELS);
}

/** Effective weight (matching `getEffectiveWeight`): ≤ 0 / unset → 1, clamped to [0.001, 1000]. */
export function effectiveWeight(w: number | null | undefined): number {
  if (!w || !(w > 0)) return 1;
  return Math.min(Math.max(w, MIN_WEIGHT), MAX_WEIGHT);
}

/**
 * Field-by-field inheritance (common/priorities `Merge`): each field of `override` that is set
 * (non-zero, non-empty) wins, the others come from `base`. Returns undefined when both are empty.
 */
export function mergePriority(base: TaskPriority | null | undefined, override: TaskPriority | null | undefined): TaskPriority | undefined {
  if (!base) return override ?? undefined;
  if (!override) return base;
  const out: TaskPriority = {};
  const pk = override.priorityKey || base.priorityKey;
  const fk = override.fairnessKey || base.fairnessKey;
  const fw = override.fairnessWeight || base.fairnessWeight;
  if (pk) out.priorityKey = pk;
  if (fk) out.fairnessKey = fk;
  if (fw) out.fairnessWeight = fw;
  return out;
}

/**
 * The real server's validation of a Priority (common/priorities `Validate`): the message that
 * INVALID_ARGUMENT carries, or undefined when valid.
 */
export function priorityError(p: TaskPriority | null | undefined): string | undefined {
  if (!p) return undefined;
  if ((p.priorityKey ?? 0) < 0) return "priority key can't be negative";
  if (p.fairnessKey && Buffer.byteLength(p.fairnessKey, 'utf8') > FAIRNESS_KEY_MAX_BYTES) return 'fairness key length exceeds limit';
  if ((p.fairnessWeight ?? 0) < 0) return 'must be greater than zero';
  return undefined;
}

/** A waiting long-poll: `deliver` returns false if the caller is gone (task must be requeued). */
export interface Poller<E> {
  deliver(entry: E): boolean;
  alive(): boolean;
}

interface Queued<E> {
  entry: E;
  pass: number;
  /** Arrival order within the task list: ties of pass go first-in first-out. */
  seq: number;
}

/** One fairness key's FIFO within a priority level and its last assigned pass. */
interface KeyQueue<E> {
  key: string;
  tasks: Deque<Queued<E>>;
  lastPass: number;
  /** Position in the level's heap, -1 when its FIFO is empty. */
  pos: number;
}

const before = <E>(a: KeyQueue<E>, b: KeyQueue<E>): boolean => {
  const x = a.tasks.peek()!;
  const y = b.tasks.peek()!;
  return x.pass < y.pass || (x.pass === y.pass && x.seq < y.seq);
};

/** One priority level: stride scheduling over fairness keys (a binary heap of non-empty keys). */
class FairLevel<E> {
  private readonly keys = new Map<string, KeyQueue<E>>();
  private readonly heap: KeyQueue<E>[] = [];
  /** Pass of the last dispatched task (the real server's ack-level pass of the sub-queue). */
  private base = 0;
  size = 0;

  push(entry: E, seq: number, key: string, weight: number): void {
    let kq = this.keys.get(key);
    if (!kq) {
      kq = { key, tasks: new Deque(), lastPass: -Infinity, pos: -1 };
      this.keys.set(key, kq);
    }
    const inc = Math.max(1, Math.floor(STRIDE_FACTOR / weight));
    const pass = Math.max(this.base, kq.lastPass + inc);
    kq.lastPass = pass;
    kq.tasks.push({ entry, pass, seq });
    this.size++;
    if (kq.pos < 0) {
      kq.pos = this.heap.length;
      this.heap.push(kq);
      this.up(kq.pos);
    }
  }

  shift(): E | undefined {
    const kq = this.heap[0];
    if (!kq) return undefined;
    const q = kq.tasks.shift()!;
    this.size--;
    this.base = Math.max(this.base, q.pass);
    if (kq.tasks.length) {
      this.down(0);
    } else {
      const last = this.heap.pop()!;
      kq.pos = -1;
      if (last !== kq) {
        this.heap[0] = last;
        last.pos = 0;
        this.down(0);
      }
      // A key with nothing queued and no pass ahead of the base starts at the base again anyway.
      if (kq.lastPass <= this.base) this.keys.delete(kq.key);
      else if (this.keys.size > 2 * this.heap.length + 1024) this.sweep();
    }
    return q.entry;
  }

  /** Forgets idle keys whose last pass the base has passed (bounded memory with many keys). */
  private sweep(): void {
    for (const [k, kq] of this.keys) if (kq.pos < 0 && kq.lastPass <= this.base) this.keys.delete(k);
  }

  private up(i: number): void {
    const h = this.heap;
    const item = h[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(item, h[p])) break;
      h[i] = h[p];
      h[i].pos = i;
      i = p;
    }
    h[i] = item;
    item.pos = i;
  }

  private down(i: number): void {
    const h = this.heap;
    const n = h.length;
    const item = h[i];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(h[r], h[l]) ? r : l;
      if (!before(h[c], item)) break;
      h[i] = h[c];
      h[i].pos = i;
      i = c;
    }
    h[i] = item;
    item.pos = i;
  }
}

/**
 * One kind (workflow or activity) of one task queue. `priorityOf` gives an entry's effective
 * priority (already inherited); level 0 is above every priority key (query tasks, which the real
 * server never backlogs).
 */
export class TaskList<E> {
  private readonly levels: Array<FairLevel<E> | undefined> = [];
  private arrivals = 0;
  private queued = 0;
  readonly pollers = new Deque<Poller<E>>();

  constructor(
    private readonly isValid: (e: E) => boolean,
    private readonly priorityOf: (e: E) => TaskPriority | 0 | null | undefined = () => undefined,
  ) {}

  /** Adds a task, handing it straight to a waiting poller when there is one. */
  add(entry: E): void {
    for (;;) {
      const p = this.pollers.shift();
      if (!p) break;
      if (!p.alive()) continue;
      if (p.deliver(entry)) return;
    }
    const pri = this.priorityOf(entry);
    const level = pri === 0 ? 0 : priorityLevel(pri?.priorityKey);
    const l = this.levels[level] ?? (this.levels[level] = new FairLevel<E>());
    l.push(entry, this.arrivals++, (pri && pri.fairnessKey) || '', effectiveWeight(pri && pri.fairnessWeight));
    this.queued++;
  }

  /** Whether a poller is waiting on this list now (dead pollers at the front are dropped). */
  hasLivePoller(): boolean {
    for (;;) {
      const p = this.pollers.peek();
      if (!p) return false;
      if (p.alive()) return true;
      this.pollers.shift();
    }
  }

  /** Takes the next valid task (lowest priority key, then lowest pass), or undefined. */
  take(): E | undefined {
    while (this.queued > 0) {
      for (const l of this.levels) {
        if (!l || l.size === 0) continue;
        const e = l.shift()!;
        this.queued--;
        if (this.isValid(e)) return e;
        break;
      }
    }
    return undefined;
  }

  /** Number of queued tasks, stale ones included until they are reached. */
  get backlog(): number {
    return this.queued;
  }

  /**
   * Queued tasks by priority key (1–5; stale ones included until they are reached), as DescribeTaskQueue
   * `statsByPriorityKey` reports them. Query tasks (level 0) are left out: the real server never backlogs them.
   */
  backlogByPriorityKey(): Map<number, number> {
    const out = new Map<number, number>();
    for (let level = 1; level < this.levels.length; level++) {
      const l = this.levels[level];
      if (l && l.size > 0) out.set(level, l.size);
    }
    return out;
  }
}
