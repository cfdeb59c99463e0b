/**
 * Pieces shared by the gRPC handler modules: the handler table type, cancellation of a call and
 * the page tokens of list/history calls.
 */
import * as grpc from '@grpc/grpc-js';
import { status as Code } from '@grpc/grpc-js';
import type { UnaryHandler } from '../proto';
import { ServiceError } from '../types';

/** Handlers of one gRPC service by method name. */
export type Handlers = Record<string, UnaryHandler>;

/** The call's cancellation as the engine's long-polls take it. */
export function onCancelOf(call: grpc.ServerUnaryCall<unknown, unknown>): { onCancel: (fn: () => void) => void; isCancelled: () => boolean } {
  return {
    onCancel: (fn) => call.on('cancelled', fn),
    isCancelled: () => call.cancelled,
  };
}

/**
 * Opaque page tokens (JSON bytes) of ListNamespaces, GetWorkflowExecutionHistory(Reverse) and the
 * visibility lists. `decode` throws ServiceError INVALID_ARGUMENT for bytes it did not issue.
 */
export const pageToken = {
  encode: (o: unknown) => Buffer.from(JSON.stringify(o)),
  decode: <T>(b: Uint8Array | null | undefined): T | undefined => {
    if (!b || !b.length) return undefined;
    try {
      return JSON.parse(Buffer.from(b).toString('utf8')) as T;
    } catch {
      throw new ServiceError(Code.INVALID_ARGUMENT, 'invalid next page token');
    }
  },
};
