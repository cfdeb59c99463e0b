/**
 * Protobuf plumbing for the dev server: message types and gRPC service definitions built from the
 * descriptors shipped in @temporalio/proto (json-module), plus time/duration helpers.
 *
 * Messages travel inside the server as plain objects (protobufjs `toObject` with int64 as number,
 * enums as number, bytes as Buffer); responses are encoded straight from plain objects.
 */
import type * as grpc from '@grpc/grpc-js';

/** Minimal protobufjs Type surface we use (the package's own typings live in a nested module). */
export interface PbType {
  encode(msg: unknown): { finish(): Uint8Array };
  decode(buf: Uint8Array): unknown;
  toObject(msg: unknown, opts: Record<string, unknown>): unknown;
  fromObject(obj: unknown): unknown;
}
interface PbMethod {
  name: string;
  requestType: string;
  responseType: string;
  resolvedRequestType: PbType | null;
  resolvedResponseType: PbType | null;
  requestStream?: boolean;
  responseStream?: boolean;
}
interface PbService {
  methods: Record<string, PbMethod>;
  resolveAll(): PbService;
}
interface PbRoot {
  lookupType(name: string): PbType;
  lookupService(name: string): PbService;
  lookupEnum(name: string): { values: Record<string, number> };
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const root: PbRoot = require('@temporalio/proto/protos/json-module');

const TO_OBJECT = { longs: Number, enums: Number, defaults: false, arrays: false, objects: false };

const typeCache = new Map<string, PbType>();
/** Looks up a message type by fully qualified name (e.g. `temporal.api.history.v1.HistoryEvent`). */
export function pbType(name: string): PbType {
  let t = typeCache.get(name);
  if (!t) {
    t = root.lookupType(name);
    typeCache.set(name, t);
  }
  return t;
}

/** Decodes bytes into a plain object (int64 → number, enums → number, bytes → Buffer). */
export function decodePlain(type: PbType, buf: Uint8Array): unknown {
  return type.toObject(type.decode(buf), TO_OBJECT);
}

/** Encodes a plain object into bytes. Fields must carry proto types (numbers for enums/int64). */
export function encodePlain(type: PbType, obj: unknown): Buffer {
  const u = type.encode(obj).finish();
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/**
 * Handler signature used by the service table: plain request in, plain response out. Which
 * message a request is depends on the method and is known only from the descriptor at runtime,
 * so the table takes it as `any` (the proto boundary); each handler declares its own request type
 * (temporal.api.workflowservice.v1.*Request as `Plain<…>`).
 */
export type UnaryHandler = (req: any, call: grpc.ServerUnaryCall<unknown, unknown>) => Promise<object>;

/**
 * Builds a grpc-js service definition for a service in the shipped descriptors, e.g.
 * `temporal.api.workflowservice.v1.WorkflowService`. Returns the definition and the method names.
 */
export function serviceDefinition(fullName: string): { definition: grpc.ServiceDefinition; methods: string[] } {
  const svc = root.lookupService(fullName).resolveAll();
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  const methods: string[] = [];
  for (const m of Object.values(svc.methods)) {
    const reqT = m.resolvedRequestType!;
    const resT = m.resolvedResponseType!;
    methods.push(m.name);
    definition[m.name] = {
      path: `/${fullName}/${m.name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: (v: unknown) => encodePlain(reqT, v),
      requestDeserialize: (b: Buffer) => decodePlain(reqT, b),
      responseSerialize: (v: unknown) => encodePlain(resT, v),
      responseDeserialize: (b: Buffer) => decodePlain(resT, b),
      originalName: m.name,
    } as grpc.MethodDefinition<unknown, unknown>;
  }
  return { definition, methods };
}

/** Proto Duration/Timestamp shape as plain object. */
export interface PbTime {
  seconds?: number | null;
  nanos?: number | null;
}

/** Duration or Timestamp → milliseconds (absent → undefined). */
export function toMs(d: PbTime | null | undefined): number | undefined {
  if (!d) return undefined;
  return Number(d.seconds ?? 0) * 1000 + Math.floor(Number(d.nanos ?? 0) / 1e6);
}

/** Milliseconds → Duration/Timestamp plain object. */
export function fromMs(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** Enum values by name for a fully qualified enum (e.g. `temporal.api.enums.v1.EventType`). */
export function enumValues(name: string): Record<string, number> {
  return root.lookupEnum(name).values;
}

const encodedEvents = new WeakMap<object, Buffer>();
let historyEventType: PbType | undefined;

/** Encodes a history event once and caches the bytes (the store and size accounting share them). */
export function encodeHistoryEvent(ev: object): Buffer {
  let b = encodedEvents.get(ev);
  if (!b) {
    historyEventType ??= pbType('temporal.api.history.v1.HistoryEvent');
    b = encodePlain(historyEventType, ev);
    encodedEvents.set(ev, b);
  }
  return b;
}
