/**
 * Registers the worker's workflow functions (workflows/index.ts) as temporal.config.ts's `WorkflowRegistry`, by
 * declaration merging: the one place that types `startWorkflow`, `ensureSchedule` and the queue table by the
 * workflow functions, while temporal.config.ts itself imports no workflow code (docs/architecture.md "Layers").
 * Types only: the worker's bundle never loads this file.
 */
import type * as workflows from './index';

type ServiceWorkflows = typeof workflows;

declare module '../temporal.config' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface WorkflowRegistry extends ServiceWorkflows {}
}
