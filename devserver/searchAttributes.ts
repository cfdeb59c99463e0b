/**
 * Custom search attribute registration, as the real server keeps it per namespace
 * (OperatorService AddSearchAttributes / ListSearchAttributes / RemoveSearchAttributes;
 * `temporal server start-dev --search-attribute KEY=Type`), and the typing of payloads on the way
 * in: a value the SDK sends without `type` metadata for a registered attribute gets the registered
 * type (the real server's searchattribute `ApplyTypeMap`), so it reads back typed (a Datetime as a
 * `Date`, a Keyword in a schedule action's `typedSearchAttributes`). Unregistered names are still
 * accepted and typed from their own metadata (the dev server's leniency; the real server refuses
 * them).
 */
import { status as Code } from '@grpc/grpc-js';
import { IndexedValueType, Payload } from './protoTypes';
import { NamespaceState, ServiceError } from './types';

/** Type names (payload `type` metadata and the CLI's `KEY=Type`) by temporal.api.enums.v1.IndexedValueType. */
export const INDEXED_VALUE_TYPES: Record<string, number> = {
  Text: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};
const TYPE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(INDEXED_VALUE_TYPES).map(([k, v]) => [v, k]));

/** System search attributes of the real server's visibility, with their types. */
export const SYSTEM_ATTRIBUTES: Record<string, number> = {
  WorkflowId: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  RunId: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  WorkflowType: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  ExecutionStatus: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  StartTime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  CloseTime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  ExecutionTime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  ExecutionDuration: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  HistoryLength: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  TaskQueue: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TemporalChangeVersion: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  BinaryChecksums: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  BuildIds: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  ParentWorkflowId: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  RootWorkflowId: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
};

/**
 * Parses `KEY=Type` (the CLI's `--search-attribute`) into [name, IndexedValueType].
 * @throws Error naming the flag when the type is not one of Text, Keyword, Int, Double, Bool, Datetime, KeywordList.
 */
export function parseSearchAttributeFlag(text: string): [string, number] {
  const i = text.indexOf('=');
  const name = i > 0 ? text.slice(0, i) : '';
  const type = INDEXED_VALUE_TYPES[i > 0 ? text.slice(i + 1) : ''];
  if (!name || type === undefined) {
    throw new Error(`--search-attribute must be KEY=Type with Type one of ${Object.keys(INDEXED_VALUE_TYPES).join(', ')} (got "${text}")`);
  }
  return [name, type];
}

/**
 * AddSearchAttributes: registers each name with its type. Re-adding a name with the same type is
 * a no-op.
 * @throws ServiceError INVALID_ARGUMENT for a system attribute name or an unspecified type;
 * ALREADY_EXISTS for a name registered with another type.
 */
export function addSearchAttributes(ns: NamespaceState, attrs: Record<string, number>): void {
  const reg = (ns.searchAttributes ??= {});
  for (const [name, type] of Object.entries(attrs)) {
    if (SYSTEM_ATTRIBUTES[name] !== undefined) throw new ServiceError(Code.INVALID_ARGUMENT, `Search attribute ${name} is reserved by system.`);
    if (!TYPE_NAMES[type]) throw new ServiceError(Code.INVALID_ARGUMENT, `Unknown search attribute type: ${type}.`);
    if (reg[name] !== undefined && reg[name] !== type) throw new ServiceError(Code.ALREADY_EXISTS, `Search attribute ${name} already exists.`);
  }
  Object.assign(reg, attrs);
}

/**
 * RemoveSearchAttributes: unregisters the names (values already stored stay on their runs).
 * @throws ServiceError NOT_FOUND for a name that is not registered.
 */
export function removeSearchAttributes(ns: NamespaceState, names: string[]): void {
  const reg = ns.searchAttributes ?? {};
  for (const name of names) if (reg[name] === undefined) throw new ServiceError(Code.NOT_FOUND, `Search attribute ${name} doesn't exist.`);
  for (const name of names) delete reg[name];
}

/** Type name carried by a payload's metadata, if any. */
function payloadType(p: Payload | null | undefined): string | undefined {
  const t = p?.metadata?.type;
  return t && t.length ? Buffer.from(t).toString('utf8') : undefined;
}

/**
 * Adds the registered type to each untyped payload of `fields` (in place; returns `fields`), as
 * the real server's `ApplyTypeMap` does on every write of search attributes.
 */
export function applyTypeMap<T extends Record<string, Payload> | null | undefined>(ns: NamespaceState, fields: T): T {
  const reg = ns.searchAttributes;
  if (!fields || !reg) return fields;
  for (const [name, p] of Object.entries(fields)) {
    const type = reg[name];
    if (type === undefined || !p || payloadType(p)) continue;
    fields[name] = { ...p, metadata: { ...(p.metadata ?? {}), type: Buffer.from(TYPE_NAMES[type]) } };
  }
  return fields;
}

/** The custom attributes of a namespace: registered ones and those some run carries (typed by metadata). */
export function customAttributes(ns: NamespaceState, seen: Iterable<Record<string, Payload>>): Record<string, number> {
  const keys: Record<string, number> = {};
  for (const fields of seen) {
    for (const [k, p] of Object.entries(fields)) {
      if (SYSTEM_ATTRIBUTES[k] !== undefined) continue;
      keys[k] = INDEXED_VALUE_TYPES[payloadType(p) ?? 'Keyword'] ?? IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    }
  }
  return Object.assign(keys, ns.searchAttributes ?? {});
}
