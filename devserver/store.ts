/**
 * Postgres write-through for the dev server, in its own schema (default `temporal_dev`).
 *
 * Tables (created on start, idempotent):
 *  - namespaces(name PK, data jsonb)
 *  - executions(namespace, workflow_id, run_id PK, state jsonb): everything but the history
 *  - history_events(namespace, workflow_id, run_id, event_id PK, data bytea): encoded HistoryEvent
 *  - meta(key PK, value jsonb): the skipped clock offset
 *  - schedules(namespace, schedule_id PK, data jsonb): schedule state (`schedules.ts`)
 *
 * A run deleted once its retention passed (engine/retention.ts) loses its rows in both tables with the next commit.
 *
 * Changes are group-committed: `commit()` resolves once a transaction containing every change
 * made before the call is durable. A commit that fails puts its changes back, so the next commit writes them.
 * Reload reads everything back (`load()`).
 */
import pg from 'pg';
import { decodePlain, encodeHistoryEvent, pbType } from './proto';
import { Execution, HistoryEvent, NamespaceState, Status } from './types';
import { packEncodedHistory } from './engine/packedHistory';
import type { PersistenceSink } from './engine';
import type { ScheduleSink, ScheduleState } from './schedules';

/** A schedule's key among the pending schedule writes. */
const scheduleKey = (namespace: string, scheduleId: string) => `${namespace}\u0000${scheduleId}`;

const HistoryEventType = () => pbType('temporal.api.history.v1.HistoryEvent');

function replacer(this: any, key: string, value: unknown): unknown {
  const raw = this[key];
  if (raw instanceof Uint8Array) return { $b: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') };
  return value;
}
function reviver(_key: string, value: any): unknown {
  if (value && typeof value === 'object' && typeof value.$b === 'string' && Object.keys(value).length === 1) {
    return Buffer.from(value.$b, 'base64');
  }
  return value;
}

/** Serializes execution state (not history, not runtime) to JSON text. */
export function serializeExecution(e: Execution): string {
  // Copied key by key: reading `history` would decode a packed one (engine/packedHistory.ts).
  const rest: Record<string, unknown> = {};
  for (const k of Object.keys(e)) if (k !== 'history' && k !== 'rt') rest[k] = e[k as keyof Execution];
  return JSON.stringify(rest, replacer);
}

/** Postgres-backed persistence sink with group commit. */
export class PgStore implements PersistenceSink, ScheduleSink {
  private readonly pool: pg.Pool;
  /** Schedule rows to write (null = delete), by namespace and id. */
  private readonly dirtySchedules = new Map<string, { ns: string; id: string; data: ScheduleState | null }>();
  private readonly dirtyExecs = new Set<Execution>();
  private readonly dirtyNs = new Set<NamespaceState>();
  /** Runs deleted since the last commit (retention): their state and history rows are deleted with it. */
  private readonly deletedExecs: Array<{ ns: string; wf: string; run: string }> = [];
  /** Runs deleted by retention, so a failed commit's retry never writes their state back. */
  private readonly deletedRuns = new WeakSet<Execution>();
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  clockOffsetMs = 0;
  private clockDirty = false;

  constructor(
    databaseUrl: string,
    private readonly schema = 'temporal_dev',
  ) {
    // The sessions inherit the server's synchronous_commit (docs/operations.md "Durability"): on the `npm start`
    // path a commit returns once its WAL is on disk, so a workflow change the dev server acknowledged
    // survives a crash; the test cluster turns it off server-wide.
    // Named in pg_stat_activity (`application_name`, libpq's fallback: PGAPPNAME or the URL win), so its sessions are
    // told from the service's.
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: 3, fallback_application_name: 'temporal-dev-server' });
    // An idle session's error — above all the server ending it while it stops (57P01 admin shutdown on
    // Ctrl-C of `npm start`) — is no request's failure: the pool drops that client and the next query
    // opens another or fails on its own. Without a listener node-postgres rethrows it and the process dies.
    this.pool.on('error', () => undefined);
  }

  /** Creates the schema and tables if missing. */
  async init(): Promise<void> {
    const s = this.schema;
    await this.pool.query(`
      CREATE SCHEMA IF NOT EXISTS ${s};
      CREATE TABLE IF NOT EXISTS ${s}.namespaces (name text PRIMARY KEY, data jsonb NOT NULL);
      CREATE TABLE IF NOT EXISTS ${s}.executions (
        namespace text NOT NULL, workflow_id text NOT NULL, run_id text NOT NULL, state jsonb NOT NULL,
        PRIMARY KEY (namespace, workflow_id, run_id));
      CREATE TABLE IF NOT EXISTS ${s}.history_events (
        namespace text NOT NULL, workflow_id text NOT NULL, run_id text NOT NULL, event_id bigint NOT NULL, data bytea NOT NULL,
        PRIMARY KEY (namespace, workflow_id, run_id, event_id));
      CREATE TABLE IF NOT EXISTS ${s}.meta (key text PRIMARY KEY, value jsonb NOT NULL);
      CREATE TABLE IF NOT EXISTS ${s}.schedules (
        namespace text NOT NULL, schedule_id text NOT NULL, data jsonb NOT NULL, PRIMARY KEY (namespace, schedule_id));
    `);
  }

  /** Loads namespaces, executions with their histories, and the clock offset. */
  async load(): Promise<{ namespaces: NamespaceState[]; executions: Execution[]; clockOffsetMs: number; schedules: ScheduleState[] }> {
    const s = this.schema;
    const schedRows = await this.pool.query(`SELECT data::text AS data FROM ${s}.schedules`);
    const nsRows = await this.pool.query(`SELECT data FROM ${s}.namespaces`);
    const meta = await this.pool.query(`SELECT value FROM ${s}.meta WHERE key = 'clock_offset_ms'`);
    const execRows = await this.pool.query(`SELECT state::text AS state FROM ${s}.executions`);
    const byKey = new Map<string, Execution>();
    for (const r of execRows.rows) {
      const e = JSON.parse(r.state, reviver) as Execution;
      e.history = [];
      // Counted again from the stored rows below (WorkflowExecutionInfo.history_size_bytes).
      e.historySizeBytes = 0;
      e.rt = { timers: new Map(), waiters: new Set() };
      byKey.set(`${e.namespace}\u0000${e.workflowId}\u0000${e.runId}`, e);
    }
    const ev = await this.pool.query(
      `SELECT namespace, workflow_id, run_id, data FROM ${s}.history_events ORDER BY namespace, workflow_id, run_id, event_id`,
    );
    const T = HistoryEventType();
    // A closed run's history stays encoded, packed as it is after a run closes (engine/packedHistory.ts).
    const closed = new Map<Execution, Buffer[]>();
    for (const e of byKey.values()) if (e.status !== Status.Running) closed.set(e, []);
    for (const r of ev.rows) {
      const e = byKey.get(`${r.namespace}\u0000${r.workflow_id}\u0000${r.run_id}`);
      if (e) {
        const parts = closed.get(e);
        if (parts) parts.push(r.data);
        else e.history.push(decodePlain(T, r.data) as HistoryEvent);
        e.historySizeBytes = (e.historySizeBytes ?? 0) + r.data.length;
      }
    }
    for (const e of byKey.values()) {
      // History rows are committed together with the state that counts them; trust the rows.
      const count = closed.get(e)?.length ?? e.history.length;
      e.persistedEvents = count;
      e.nextEventId = count + 1;
    }
    for (const [e, parts] of closed) packEncodedHistory(e, parts);
    this.clockOffsetMs = meta.rows[0]?.value ?? 0;
    return {
      namespaces: nsRows.rows.map((r) => r.data as NamespaceState),
      executions: [...byKey.values()],
      clockOffsetMs: this.clockOffsetMs,
      schedules: schedRows.rows.map((r) => JSON.parse(r.data, reviver) as ScheduleState),
    };
  }

  markDirty(exec: Execution): void {
    this.dirtyExecs.add(exec);
  }

  markDeleted(exec: Execution): void {
    this.dirtyExecs.delete(exec);
    this.deletedRuns.add(exec);
    this.deletedExecs.push({ ns: exec.namespace, wf: exec.workflowId, run: exec.runId });
  }

  markNamespaceDirty(ns: NamespaceState): void {
    this.dirtyNs.add(ns);
  }

  /** Marks a schedule for writing (`null` deletes its row) with the next commit. */
  saveSchedule(namespace: string, scheduleId: string, data: ScheduleState | null): void {
    this.dirtySchedules.set(scheduleKey(namespace, scheduleId), { ns: namespace, id: scheduleId, data });
  }

  /** Records the virtual clock's skipped offset (persisted with the next commit). */
  setClockOffset(ms: number): void {
    if (ms !== this.clockOffsetMs) {
      this.clockOffsetMs = ms;
      this.clockDirty = true;
    }
  }

  /** Resolves when every change made before this call is committed. */
  commit(): Promise<void> {
    if (!this.dirtyExecs.size && !this.dirtyNs.size && !this.clockDirty && !this.dirtySchedules.size && !this.deletedExecs.length) return this.inFlight ?? Promise.resolve();
    if (this.queued) return this.queued;
    const prev = this.inFlight ?? Promise.resolve();
    this.queued = prev.then(() => {
      this.queued = null;
      const p = this.flushNow();
      this.inFlight = p;
      return p.finally(() => {
        if (this.inFlight === p) this.inFlight = null;
      });
    });
    return this.queued;
  }

  private async flushNow(): Promise<void> {
    const s = this.schema;
    const ens: string[] = [];
    const ewf: string[] = [];
    const erun: string[] = [];
    const estate: string[] = [];
    const hns: string[] = [];
    const hwf: string[] = [];
    const hrun: string[] = [];
    const hid: number[] = [];
    const hdata: Buffer[] = [];
    const taken = [...this.dirtyExecs];
    const persistedBefore = taken.map((e) => e.persistedEvents);
    for (const e of taken) {
      // Only flushed history (ids > 0) is written; held events travel inside the state JSON.
      for (let i = e.persistedEvents; i < e.history.length; i++) {
        hns.push(e.namespace);
        hwf.push(e.workflowId);
        hrun.push(e.runId);
        hid.push(e.history[i].eventId);
        hdata.push(encodeHistoryEvent(e.history[i]));
      }
      e.persistedEvents = e.history.length;
      ens.push(e.namespace);
      ewf.push(e.workflowId);
      erun.push(e.runId);
      estate.push(serializeExecution(e));
    }
    this.dirtyExecs.clear();
    const nss = [...this.dirtyNs];
    this.dirtyNs.clear();
    const clock = this.clockDirty ? this.clockOffsetMs : null;
    this.clockDirty = false;
    // One statement (one round trip, one implicit transaction): history rows, execution state,
    // namespaces and the clock offset commit together or not at all.
    const nsNames = nss.map((n) => n.name);

    const nsData = nss.map((n) => JSON.stringify(n));
    const scheds = [...this.dirtySchedules.values()];
    this.dirtySchedules.clear();
    const live = scheds.filter((x) => x.data);
    const gone = scheds.filter((x) => !x.data);
    const deleted = this.deletedExecs.splice(0);
    try {
      await this.pool.query(
        `WITH h AS (
           INSERT INTO ${s}.history_events (namespace, workflow_id, run_id, event_id, data)
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bytea[])
           ON CONFLICT DO NOTHING RETURNING 1),
         e AS (
           INSERT INTO ${s}.executions (namespace, workflow_id, run_id, state)
           SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::jsonb[])
           ON CONFLICT (namespace, workflow_id, run_id) DO UPDATE SET state = excluded.state RETURNING 1),
         n AS (
           INSERT INTO ${s}.namespaces (name, data)
           SELECT * FROM unnest($10::text[], $11::jsonb[])
           ON CONFLICT (name) DO UPDATE SET data = excluded.data RETURNING 1),
         m AS (
           INSERT INTO ${s}.meta (key, value)
           SELECT 'clock_offset_ms', to_jsonb($12::bigint) WHERE $12::bigint IS NOT NULL
           ON CONFLICT (key) DO UPDATE SET value = excluded.value RETURNING 1),
         sc AS (
           INSERT INTO ${s}.schedules (namespace, schedule_id, data)
           SELECT * FROM unnest($13::text[], $14::text[], $15::jsonb[])
           ON CONFLICT (namespace, schedule_id) DO UPDATE SET data = excluded.data RETURNING 1),
         sd AS (
           DELETE FROM ${s}.schedules WHERE (namespace, schedule_id) IN (SELECT * FROM unnest($16::text[], $17::text[])) RETURNING 1),
         gone AS (SELECT * FROM unnest($18::text[], $19::text[], $20::text[]) AS g(namespace, workflow_id, run_id)),
         dx AS (
           DELETE FROM ${s}.executions x USING gone g
           WHERE (x.namespace, x.workflow_id, x.run_id) = (g.namespace, g.workflow_id, g.run_id) RETURNING 1),
         dh AS (
           DELETE FROM ${s}.history_events x USING gone g
           WHERE (x.namespace, x.workflow_id, x.run_id) = (g.namespace, g.workflow_id, g.run_id) RETURNING 1)
         SELECT (SELECT count(*) FROM h) + (SELECT count(*) FROM e) + (SELECT count(*) FROM n) + (SELECT count(*) FROM m)
           + (SELECT count(*) FROM sc) + (SELECT count(*) FROM sd) + (SELECT count(*) FROM dx) + (SELECT count(*) FROM dh) AS n`,
        [
          hns, hwf, hrun, hid, hdata, ens, ewf, erun, estate, nsNames, nsData, clock,
          live.map((x) => x.ns), live.map((x) => x.id), live.map((x) => JSON.stringify(x.data, replacer)),
          gone.map((x) => x.ns), gone.map((x) => x.id),
          deleted.map((x) => x.ns), deleted.map((x) => x.wf), deleted.map((x) => x.run),
        ],
      );
    } catch (err) {
      // Nothing of the statement committed: its changes go back into the pending sets, so the next commit writes
      // them (history rows again from where they stood; inserting a row that exists does nothing). A change made
      // since, to the same schedule, is newer and stays.
      taken.forEach((e, i) => {
        e.persistedEvents = persistedBefore[i];
        if (!this.deletedRuns.has(e)) this.dirtyExecs.add(e);
      });
      for (const n of nss) this.dirtyNs.add(n);
      if (clock !== null) this.clockDirty = true;
      for (const x of scheds) {
        const key = scheduleKey(x.ns, x.id);
        if (!this.dirtySchedules.has(key)) this.dirtySchedules.set(key, x);
      }
      this.deletedExecs.unshift(...deleted);
      throw err;
    }
  }

  /** Flushes pending changes and closes the pool. */
  async close(): Promise<void> {
    await this.commit().catch(() => undefined);
    await this.pool.end();
  }
}
