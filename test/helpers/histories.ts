/**
 * Recorded workflow histories for the replay suite (docs/operations.md "Changing a workflow with runs in
 * flight"). `npm run histories:record` runs the scenario tests with `RECORD_HISTORIES=<dir>`; when the run
 * ends, {@link recordHistories} exports, for every workflow type of the service, one history per shape
 * (type, close status and the kinds of events that matter to replay: timers, signals, updates, activity
 * failures, children, continue-as-new, cancellation, patches), the smallest one of each. test/workflows/
 * replay.test.ts replays them all against the current workflow code with `Worker.runReplayHistories`,
 * as Temporal's production guidance asks (docs.temporal.io "Replay testing").
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { startDevServer, type DevServer } from '../../devserver';

/** Where the recorded histories live (one folder per workflow type, plus `manifest.json`). */
export const HISTORIES_DIR = path.join(__dirname, '..', 'fixtures', 'histories');

/** One recorded history in the manifest. */
export interface RecordedHistory {
  /** Path relative to {@link HISTORIES_DIR}. */
  file: string;
  workflowType: string;
  /** The run's status when it was recorded (`COMPLETED`, `FAILED`, `TERMINATED`, `CONTINUED_AS_NEW`, …). */
  status: string;
  /** The notable event kinds the history holds (the shape it was chosen for). */
  features: string[];
  events: number;
  /**
   * Why the history is kept by hand (a branch the scenario tests no longer reach, such as the old side of a
   * `patched` change): {@link writeRecordedHistories} carries kept entries over when it records anew.
   */
  kept?: string;
}

/** The service's workflow type names (workflows/index.ts exports). */
export const SERVICE_WORKFLOW_TYPES: readonly string[] = serviceWorkflowTypes();

/** The names workflows/index.ts exports (read from its source: workflow code is not loaded outside the worker's sandbox). */
function serviceWorkflowTypes(): string[] {
  const source = fs.readFileSync(path.join(__dirname, '..', '..', 'workflows', 'index.ts'), 'utf8');
  const names = [...source.matchAll(/export \{([^}]*)\} from/g)].flatMap((m) => m[1].split(',').map((n) => n.trim().split(/\s+as\s+/).pop()!).filter(Boolean));
  return [...new Set(names)].sort();
}

const E = temporal.api.enums.v1.EventType;
/** Event kinds that change what a replay has to match, by the name they get in the manifest. */
const NOTABLE: [number, string][] = [
  [E.EVENT_TYPE_TIMER_STARTED, 'timer'],
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 'signal'],
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'update'],
  [E.EVENT_TYPE_ACTIVITY_TASK_FAILED, 'activity-failed'],
  [E.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, 'activity-timed-out'],
  [E.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, 'activity-cancelled'],
  [E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, 'child'],
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, 'continue-as-new'],
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED, 'cancel-requested'],
  [E.EVENT_TYPE_MARKER_RECORDED, 'marker'],
  [E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, 'signal-external'],
  [E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES, 'search-attributes'],
];
/** How a history is written as JSON: 64-bit numbers and enums as strings, bytes as base64 (protobufjs `toObject`). */
const PROTO_JSON = { longs: String, enums: String, bytes: String, defaults: false } as const;
/** Histories above this size are not kept (a fixture should stay readable in a diff). */
const MAX_EVENTS = 400;
/** At most this many shapes per workflow type. */
const MAX_PER_TYPE = 8;

/** Every page of one run's history. */
async function fetchHistory(connection: Connection, namespace: string, workflowId: string, runId: string): Promise<temporal.api.history.v1.IHistory> {
  const events: temporal.api.history.v1.IHistoryEvent[] = [];
  let token: Uint8Array | undefined;
  do {
    const r = await connection.workflowService.getWorkflowExecutionHistory({ namespace, execution: { workflowId, runId }, nextPageToken: token, maximumPageSize: 1000 });
    events.push(...(r.history?.events ?? []));
    token = r.nextPageToken?.length ? r.nextPageToken : undefined;
  } while (token);
  return { events };
}

type Candidate = { history: temporal.api.history.v1.IHistory; entry: Omit<RecordedHistory, 'file'> };
/** The smallest history of each shape seen so far in this run, by shape key. */
const collected = new Map<string, Candidate>();

/**
 * Collects, from the dev server behind `connection`, the closed runs of the service's workflow types: the
 * smallest history of each shape (see the module comment) is kept for {@link writeRecordedHistories}.
 * Does nothing unless `RECORD_HISTORIES` is set.
 */
export async function collectHistories(connection: Connection): Promise<void> {
  if (!process.env.RECORD_HISTORIES) return;
  const svc = connection.workflowService;
  const types = new Set(SERVICE_WORKFLOW_TYPES);
  const ns = await svc.listNamespaces({ pageSize: 100 });
  for (const namespace of (ns.namespaces ?? []).map((n) => n.namespaceInfo?.name).filter((n): n is string => !!n)) {
    let token: Uint8Array | undefined;
    do {
      const r = await svc.listWorkflowExecutions({ namespace, pageSize: 1000, nextPageToken: token });
      for (const e of r.executions ?? []) {
        const type = e.type?.name ?? '';
        if (!types.has(type) || !e.execution?.workflowId || !e.execution.runId) continue;
        const status = temporal.api.enums.v1.WorkflowExecutionStatus[e.status ?? 0]?.replace('WORKFLOW_EXECUTION_STATUS_', '') ?? 'UNKNOWN';
        if (status === 'RUNNING') continue;
        const history = await fetchHistory(connection, namespace, e.execution.workflowId, e.execution.runId);
        const events = history.events ?? [];
        if (events.length > MAX_EVENTS) continue;
        // The SDK's build id (`@temporalio/worker@<version>+<bundle hash>`) plays no part in replay, and it reads
        // like an e-mail address to the scan of test/workflows/histories-pii.test.ts.
        for (const ev of events) if (ev.workflowTaskCompletedEventAttributes) ev.workflowTaskCompletedEventAttributes.workerVersion = null;
        const kinds = new Set(events.map((ev) => ev.eventType));
        const features = NOTABLE.filter(([t]) => kinds.has(t)).map(([, name]) => name);
        const key = `${type}\u0000${status}\u0000${features.join(',')}`;
        const seen = collected.get(key);
        if (!seen || events.length < seen.entry.events) collected.set(key, { history, entry: { workflowType: type, status, features, events: events.length } });
      }
      token = r.nextPageToken?.length ? r.nextPageToken : undefined;
    } while (token);
  }
}

/**
 * Starts a dev server like `startDevServer`; with `RECORD_HISTORIES` set, its `stop()` first collects
 * the histories it ran ({@link collectHistories}). For the tests that run a dev server of their own.
 */
export async function startRecordingDevServer(opts: Parameters<typeof startDevServer>[0]): Promise<DevServer> {
  const server = await startDevServer(opts);
  if (!process.env.RECORD_HISTORIES) return server;
  const stop = server.stop.bind(server);
  return Object.assign(server, {
    stop: async () => {
      const connection = await Connection.connect({ address: server.address });
      try {
        await collectHistories(connection);
      } finally {
        await connection.close();
      }
      await stop();
    },
  });
}

/**
 * Writes what {@link collectHistories} kept into `dir` (one folder per workflow type, at most
 * {@link MAX_PER_TYPE} shapes each, the richest first, and `manifest.json`), replacing what it held.
 * @returns the manifest written
 */
export function writeRecordedHistories(dir: string): RecordedHistory[] {
  const byType = new Map<string, Candidate[]>();
  for (const v of collected.values()) byType.set(v.entry.workflowType, [...(byType.get(v.entry.workflowType) ?? []), v]);
  const kept = loadRecordedHistories(dir).filter((h) => h.entry.kept);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const manifest: RecordedHistory[] = [];
  for (const { entry, history } of kept) {
    fs.mkdirSync(path.dirname(path.join(dir, entry.file)), { recursive: true });
    fs.writeFileSync(path.join(dir, entry.file), JSON.stringify(temporal.api.history.v1.History.toObject(temporal.api.history.v1.History.fromObject(history), PROTO_JSON), null, 1) + '\n');
    manifest.push(entry);
  }
  for (const [type, list] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
    // The richest shapes first: they exercise the most of the workflow's code.
    list.sort((a, b) => b.entry.features.length - a.entry.features.length || a.entry.events - b.entry.events);
    for (const { history, entry } of list.slice(0, MAX_PER_TYPE)) {
      const label = [entry.status.toLowerCase(), ...entry.features].join('-');
      const hash = crypto.createHash('sha256').update(label).digest('hex').slice(0, 6);
      const file = `${type}/${label.slice(0, 80)}-${hash}.json`;
      fs.mkdirSync(path.join(dir, type), { recursive: true });
      fs.writeFileSync(path.join(dir, file), JSON.stringify(temporal.api.history.v1.History.toObject(temporal.api.history.v1.History.fromObject(history), PROTO_JSON), null, 1) + '\n');
      manifest.push({ file, ...entry });
    }
  }
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}

/** The recorded histories (manifest order), each parsed for `Worker.runReplayHistories`. */
export function loadRecordedHistories(dir = HISTORIES_DIR): { entry: RecordedHistory; history: temporal.api.history.v1.IHistory }[] {
  const manifestPath = path.join(dir, 'manifest.json');
  if (!fs.existsSync(manifestPath)) return [];
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as RecordedHistory[];
  return manifest.map((entry) => ({ entry, history: temporal.api.history.v1.History.fromObject(JSON.parse(fs.readFileSync(path.join(dir, entry.file), 'utf8'))) }));
}
