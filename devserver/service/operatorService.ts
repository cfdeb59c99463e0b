/**
 * temporal.api.operatorservice.v1.OperatorService: `ListSearchAttributes`, which the Web UI
 * calls to learn the custom search attributes it can filter by. The dev server takes custom
 * attributes as they come (no registration): the list holds the system attributes and every
 * custom attribute some execution carries, typed by its payload's `type` metadata.
 */
import type { Engine } from '../engine';
import { IndexedValueType } from '../protoTypes';
import { Handlers } from './common';
import { searchAttributeKeys } from './workflowService';

/** System search attributes of the real server's visibility, with their types. */
const SYSTEM_ATTRIBUTES: Record<string, number> = {
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

/** OperatorService handlers; every other method of the service answers UNIMPLEMENTED. */
export function operatorServiceHandlers(engine: Engine): Handlers {
  return {
    async ListSearchAttributes() {
      return { systemAttributes: SYSTEM_ATTRIBUTES, customAttributes: searchAttributeKeys(engine), storageSchema: {} };
    },
  };
}
