/**
 * gRPC handlers: temporal.api.workflowservice.v1.WorkflowService (the subset the SDK client and
 * worker use) and temporal.api.testservice.v1.TestService (time skipping). Unlisted methods
 * answer UNIMPLEMENTED naming the method. Each mutating call resolves only after its changes are
 * committed to Postgres (group commit), when a database is configured.
 *
 * Modules: `workflowService.ts`, `testService.ts`, `visibility.ts` (list filters and execution
 * info), `common.ts` (handler table, page tokens).
 */
import * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import { encodePlain, pbType, serviceDefinition } from '../proto';
import { ServiceError } from '../types';
import { Handlers } from './common';
import { timeCall } from '../metrics';

export { decodeSearchAttribute } from './visibility';
export { SERVER_VERSION, workflowServiceHandlers } from './workflowService';
export { testServiceHandlers } from './testService';
export { operatorServiceHandlers } from './operatorService';

/**
 * Methods whose reply does not wait for the Postgres commit: polls and heartbeats (a lost
 * dispatch is recovered by timeouts after a restart) and reads.
 */
export const NO_COMMIT_WAIT = new Set([
  'PollWorkflowTaskQueue',
  'PollActivityTaskQueue',
  'RecordActivityTaskHeartbeat',
  'RecordActivityTaskHeartbeatById',
  'QueryWorkflow',
  'GetWorkflowExecutionHistory',
  'GetWorkflowExecutionHistoryReverse',
  'DescribeWorkflowExecution',
  'DescribeNamespace',
  'ListNamespaces',
  'ListWorkflowExecutions',
  'ScanWorkflowExecutions',
  'CountWorkflowExecutions',
  'GetSystemInfo',
  'GetClusterInfo',
  'GetSearchAttributes',
  'ListSearchAttributes',
  'DescribeTaskQueue',
  'GetCurrentTime',
  'PollWorkflowExecutionUpdate',
  'DescribeSchedule',
  'ListSchedules',
  'ListScheduleMatchingTimes',
]);

/** Converts an engine error into a grpc-js status (with google.rpc.Status details when given). */
function toGrpcError(err: unknown): Partial<grpc.StatusObject> & Error {
  if (err instanceof ServiceError) {
    const metadata = new grpc.Metadata();
    if (err.details) {
      const value = encodePlain(pbType(err.details.typeName), err.details.value);
      const st = encodePlain(pbType('google.rpc.Status'), {
        code: err.code,
        message: err.message,
        details: [{ type_url: `type.googleapis.com/${err.details.typeName}`, value }],
      });
      metadata.set('grpc-status-details-bin', st);
    }
    return Object.assign(new Error(err.message), { code: err.code, details: err.message, metadata });
  }
  const msg = err instanceof Error ? err.message : String(err);
  return Object.assign(new Error(msg), { code: Code.INTERNAL, details: msg });
}

/**
 * The feature an unimplemented method belongs to, for its UNIMPLEMENTED message (checked in order;
 * the first match names the feature).
 */
const UNIMPLEMENTED_FEATURES: Array<[RegExp, string]> = [
  [/Nexus/, 'Nexus (endpoints and operations)'],
  [/ActivityExecution/, 'standalone activities'],
  [/Deployment|BuildIdCompatibility|VersioningRules|TaskReachability/, 'worker versioning and deployments'],
  [/BatchOperation/, 'batch operations'],
  [/Worker(Heartbeat|Config)?$|Workers$|WorkerHeartbeat|WorkerConfig/, 'worker heartbeats and listing'],
  [/WorkflowRule/, 'workflow rules'],
  [/^(Pause|Unpause)WorkflowExecution$/, 'workflow pause'],
  [/^UpdateActivityOptions$/, 'activity options updates'],
  [/^DeleteWorkflowExecution$/, 'workflow deletion'],
  [/Archived/, 'archival'],
  [/RemoteCluster|ListClusters/, 'multi-cluster replication'],
  [/^(DeleteNamespace|DeprecateNamespace|UpdateNamespace)$/, 'namespace administration'],
  [/TaskQueueConfig|TaskQueuePartitions/, 'task queue configuration'],
  [/UpdateWorkflowExecutionOptions/, 'workflow options updates'],
  [/CountSchedules/, 'schedule counts'],
];

/** UNIMPLEMENTED message naming the method and, when known, its feature. */
export function unimplementedMessage(serviceName: string, method: string): string {
  const feature = UNIMPLEMENTED_FEATURES.find(([re]) => re.test(method))?.[1];
  return `${serviceName}/${method} is not implemented by the dev server${feature ? ` (${feature} is not supported)` : ''}`;
}

/**
 * Builds the grpc-js implementation object for a service: known handlers wrapped with error
 * mapping and commit-before-reply; every other method answers UNIMPLEMENTED naming itself.
 */
export function buildImplementation(
  serviceName: string,
  handlers: Handlers,
  afterEach: (method: string) => Promise<void>,
  log: (msg: string, fields: Record<string, unknown>) => void,
): { definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation } {
  const { definition, methods } = serviceDefinition(serviceName);
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const m of methods) {
    const h = handlers[m];
    implementation[m] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!h) {
        callback({ code: Code.UNIMPLEMENTED, details: unimplementedMessage(serviceName, m) });
        return;
      }
      const done = timeCall(m);
      Promise.resolve()
        .then(() => h(call.request ?? {}, call))
        .then(
          async (res) => {
            done(false);
            await afterEach(m);
            callback(null, res ?? {});
          },
          async (err) => {
            done(true);
            if (!(err instanceof ServiceError)) log('unexpected error', { method: m, err: String(err?.stack ?? err) });
            await afterEach(m).catch(() => undefined);
            callback(toGrpcError(err));
          },
        )
        .catch((err) => callback(toGrpcError(err)));
    };
  }
  return { definition, implementation };
}
