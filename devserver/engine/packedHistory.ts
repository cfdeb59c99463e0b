/**
 * What the dev server keeps of a closed run, made small (devserver/README.md "Memory"): the server keeps every closed
 * run for its namespace's retention, a day by default (engine/retention.ts), so what each one holds, times the runs a
 * day closes, is what a long-lived `npm start` holds.
 *
 * - Its history is held packed: its events encoded (temporal.api.history.v1.HistoryEvent, the bytes the store
 *   writes) in one buffer of its own, decoded when something reads `exec.history` (a replay, a query, a reset, the
 *   Web UI). A closed run's history never changes again; its decoded objects would stay on the V8 heap, where every
 *   full garbage collection marks them.
 * - Its state's byte arrays get storage of their own ({@link unpinRunBytes}): decoded from a request, each was a view
 *   that kept the request's whole buffer alive, often a slab of Node's shared 8 KiB pool.
 */
import { decodePlain, encodeHistoryEvent, pbType } from '../proto';
import type { Execution, HistoryEvent } from '../types';
import { historiesPacked, historyBytesPacked } from '../metrics';

/** How long after a run closes its history is packed (wall-clock ms): the reads right after a close find it decoded. */
export const HISTORY_PACK_DELAY_MS = 5_000;

/** Runs whose history is packed: the events' bytes, and where each event ends in them. */
const packed = new WeakMap<Execution, { bytes: Buffer; ends: Uint32Array }>();

/** A copy of `bytes` in storage of its own (a Buffer stays a Buffer; never cut from Node's shared pool). */
function ownCopy(bytes: Uint8Array): Uint8Array {
  const copy = Buffer.isBuffer(bytes) ? Buffer.allocUnsafeSlow(bytes.byteLength) : new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

/**
 * Gives every byte array in a closed run's state (payloads, headers, memo, search attributes: `bytes` fields decoded
 * from the request that carried them) storage of its own. Decoded, such a field is a view into the request's whole
 * buffer, often a slab of Node's shared 8 KiB pool, which a run held forever keeps alive with it.
 */
export function unpinRunBytes(exec: Execution): void {
  const seen = new Set<object>();
  const walk = (holder: Record<string | number, unknown>): void => {
    if (seen.has(holder)) return;
    seen.add(holder);
    for (const key of Object.keys(holder)) {
      if (holder === (exec as object) && (key === 'history' || key === 'rt')) continue;
      const v = holder[key];
      if (v instanceof Uint8Array) {
        if (v.byteLength < v.buffer.byteLength) holder[key] = ownCopy(v);
      } else if (v && typeof v === 'object' && (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype)) {
        walk(v as Record<string | number, unknown>);
      }
    }
  };
  walk(exec as unknown as Record<string, unknown>);
}

/**
 * The last event of a run's history (undefined for none), decoding only that one when the history is packed.
 */
export function lastHistoryEvent(exec: Execution): HistoryEvent | undefined {
  const form = packed.get(exec);
  if (!form) return exec.history[exec.history.length - 1];
  const n = form.ends.length;
  if (!n) return undefined;
  return decodePlain(pbType('temporal.api.history.v1.HistoryEvent'), form.bytes.subarray(n > 1 ? form.ends[n - 2] : 0, form.ends[n - 1])) as HistoryEvent;
}

/**
 * Replaces a run's history array by its packed form: `exec.history` then answers a fresh decode, the same array
 * while any reader still holds it (a WeakRef), and assigning `exec.history` makes it a plain array again. Packing a
 * packed run, or one with no events, does nothing. The run's state gets its own bytes too ({@link unpinRunBytes}).
 * Call it only for a closed run: events appended to the array a read answers are lost.
 * @returns the packed history's size in bytes, or undefined when nothing was packed
 */
export function packHistory(exec: Execution): number | undefined {
  if (packed.has(exec) || !exec.history.length) return undefined;
  return packEncodedHistory(
    exec,
    exec.history.map((ev) => encodeHistoryEvent(ev)),
  );
}

/**
 * {@link packHistory} from the events already encoded, in event id order (the store's rows on a restart: a closed
 * run's history is never decoded onto the heap); the run's state gets its own bytes too ({@link unpinRunBytes}).
 * @returns the packed history's size in bytes
 */
export function packEncodedHistory(exec: Execution, parts: readonly Uint8Array[]): number {
  const ends = new Uint32Array(parts.length);
  let end = 0;
  parts.forEach((p, i) => (ends[i] = end += p.length));
  // A buffer of its own: a small Buffer.concat is cut from Node's shared 8 KiB pool and would keep a whole slab alive.
  const bytes = Buffer.allocUnsafeSlow(end);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  const form = { bytes, ends };
  packed.set(exec, form);
  historiesPacked.inc();
  historyBytesPacked.inc(end);
  unpinRunBytes(exec);
  let recent: WeakRef<HistoryEvent[]> | undefined;
  const type = pbType('temporal.api.history.v1.HistoryEvent');
  Object.defineProperty(exec, 'history', {
    configurable: true,
    enumerable: true,
    get(): HistoryEvent[] {
      let events = recent?.deref();
      if (!events) {
        events = new Array<HistoryEvent>(form.ends.length);
        let start = 0;
        for (let i = 0; i < form.ends.length; i++) {
          events[i] = decodePlain(type, form.bytes.subarray(start, form.ends[i])) as HistoryEvent;
          start = form.ends[i];
        }
        recent = new WeakRef(events);
      }
      return events;
    },
    set(value: HistoryEvent[]) {
      packed.delete(exec);
      Object.defineProperty(exec, 'history', { configurable: true, enumerable: true, writable: true, value });
    },
  });
  return end;
}
