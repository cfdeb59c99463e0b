/**
 * Diff of a frozen version against the current draft's compiled form (spec "Agent versions": entries
 * `{field, before, after, kind}` with kind added | removed | changed). Paths are readable: object members
 * by dot, arrays of named things keyed by name (`skills[book_appointment].config.url`), by id
 * (`playbooks[intake].graph.nodes[ask_name].prompt`) or, for edges, by `from->to`; arrays of plain
 * values (e.g. `guardrails.blockedTopics`) compare as one value.
 */
import type { DiffEntry } from '../../schemas/types/versions';
import { canonicalJson } from './compile';

type Json = unknown;

const isObject = (v: Json): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The key of an array element, or undefined when the element has no identity. */
function elementKey(v: Json): string | undefined {
  if (!isObject(v)) return undefined;
  if (typeof v.name === 'string') return v.name;
  if (typeof v.id === 'string') return v.id;
  if (typeof v.from === 'string' && typeof v.to === 'string') return `${v.from}->${v.to}${typeof v.when === 'string' ? `:${v.when}` : ''}`;
  return undefined;
}

/** Keys of every element when all have one and they are unique; else undefined (compare as a whole). */
function keyed(arr: Json[]): Map<string, Json> | undefined {
  const m = new Map<string, Json>();
  for (const el of arr) {
    const k = elementKey(el);
    if (k === undefined || m.has(k)) return undefined;
    m.set(k, el);
  }
  return m;
}

const same = (a: Json, b: Json) => canonicalJson(a) === canonicalJson(b);

function walk(before: Json, after: Json, path: string, out: DiffEntry[]): void {
  if (same(before, after)) return;
  if (before === undefined) {
    out.push({ field: path, after, kind: 'added' });
    return;
  }
  if (after === undefined) {
    out.push({ field: path, before, kind: 'removed' });
    return;
  }
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    for (const k of keys) walk(before[k], after[k], path ? `${path}.${k}` : k, out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after) && (before.length || after.length)) {
    const b = keyed(before);
    const a = keyed(after);
    if (b && a && [...b.values(), ...a.values()].some(isObject)) {
      for (const [k, v] of b) walk(v, a.get(k), `${path}[${k}]`, out);
      for (const [k, v] of a) if (!b.has(k)) walk(undefined, v, `${path}[${k}]`, out);
      return;
    }
  }
  out.push({ field: path, before, after, kind: 'changed' });
}

/**
 * Differences from `before` (the version's snapshot) to `after` (the compiled draft).
 * @returns entries in document order; empty when they are equal
 */
export function diffSnapshots(before: unknown, after: unknown): DiffEntry[] {
  const out: DiffEntry[] = [];
  walk(before, after, '', out);
  return out.filter((e) => e.field !== 'schemaVersion');
}
