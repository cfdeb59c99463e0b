/**
 * A plain node:http listener serving only the HTTP API (the real server's own HTTP port,
 * gRPC port + 10 by default, temporalio/proposals api/http-api.md "Embedding into Server").
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpApiHandler } from './gateway';

/** A running HTTP API listener. */
export interface HttpApiServer {
  /** `http://host:port`. */
  url: string;
  close(): Promise<void>;
}

/** Serves `handler` on `host:port` (0 = a free port). Rejects when the port cannot be bound. */
export async function serveHttpApi(handler: HttpApiHandler, host: string, port: number): Promise<HttpApiServer> {
  const server = http.createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
