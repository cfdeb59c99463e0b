/**
 * The dev server's own Prometheus metrics, like `temporal server start-dev --metrics-port`: every gRPC call
 * by operation (the real server's `service_requests`, `service_errors`, `service_latency`), in a registry of
 * its own so they never mix with the service's metrics of the same process (`npm start`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Histogram, Registry } from 'prom-client';

export const devServerRegistry = new Registry();

const requests = new Counter({ name: 'service_requests_total', help: 'gRPC calls served by the dev server, by operation', labelNames: ['operation'] as const, registers: [devServerRegistry] });
const errors = new Counter({ name: 'service_errors_total', help: 'gRPC calls the dev server answered with an error, by operation', labelNames: ['operation'] as const, registers: [devServerRegistry] });
const latency = new Histogram({
  name: 'service_latency_seconds',
  help: 'Duration of gRPC calls served by the dev server (long polls included), by operation',
  labelNames: ['operation'] as const,
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
  registers: [devServerRegistry],
});

/**
 * Closed runs whose history was packed off the heap (engine/packedHistory.ts), and the bytes packed: what the server
 * holds for the histories it keeps in memory.
 */
export const historiesPacked = new Counter({ name: 'history_packed_runs_total', help: 'Closed runs whose history the dev server holds packed (encoded, off the V8 heap)', registers: [devServerRegistry] });
export const historyBytesPacked = new Counter({ name: 'history_packed_bytes_total', help: 'Bytes of the histories the dev server packed (encoded HistoryEvent messages)', registers: [devServerRegistry] });

/** Closed runs deleted once their namespace's retention passed (engine/retention.ts). */
export const retentionDeletedRuns = new Counter({ name: 'retention_deleted_runs_total', help: 'Closed runs the dev server deleted once their namespace retention passed', registers: [devServerRegistry] });

/** Starts timing one call of `operation`; the returned function records it (`failed`: counted as an error too). */
export function timeCall(operation: string): (failed: boolean) => void {
  const end = latency.startTimer({ operation });
  requests.inc({ operation });
  return (failed) => {
    end();
    if (failed) errors.inc({ operation });
  };
}

/** Serves `GET /metrics` (Prometheus text) on `host:port` (0 = a free port). */
export async function serveDevServerMetrics(host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    devServerRegistry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': devServerRegistry.contentType }).end(text),
      (err) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
