/**
 * temporal.api.operatorservice.v1.OperatorService: custom search attribute registration per
 * namespace — `AddSearchAttributes`, `ListSearchAttributes` (the Web UI calls it to learn what it
 * can filter by), `RemoveSearchAttributes` — with the real server's semantics (devserver/searchAttributes.ts).
 */
import type { Engine } from '../engine';
import { Plain } from '../protoTypes';
import { temporal } from '@temporalio/proto';
import { addSearchAttributes, customAttributes, removeSearchAttributes, SYSTEM_ATTRIBUTES } from '../searchAttributes';
import { Handlers } from './common';

import ops = temporal.api.operatorservice.v1;

/** OperatorService handlers; every other method of the service answers UNIMPLEMENTED. */
export function operatorServiceHandlers(engine: Engine): Handlers {
  return {
    async ListSearchAttributes(req: Plain<ops.IListSearchAttributesRequest>) {
      const ns = engine.namespace(req.namespace || 'default');
      const seen = [...engine.allExecutions()].filter((e) => e.namespace === ns.name).map((e) => e.searchAttributes);
      return { systemAttributes: SYSTEM_ATTRIBUTES, customAttributes: customAttributes(ns, seen), storageSchema: {} };
    },
    async AddSearchAttributes(req: Plain<ops.IAddSearchAttributesRequest>) {
      const ns = engine.namespace(req.namespace || 'default');
      addSearchAttributes(ns, (req.searchAttributes ?? {}) as Record<string, number>);
      engine.sink?.markNamespaceDirty(ns);
      return {};
    },
    async RemoveSearchAttributes(req: Plain<ops.IRemoveSearchAttributesRequest>) {
      const ns = engine.namespace(req.namespace || 'default');
      removeSearchAttributes(ns, req.searchAttributes ?? []);
      engine.sink?.markNamespaceDirty(ns);
      return {};
    },
  };
}
