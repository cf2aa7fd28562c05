import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { capConnections, ConnectionCaps, refuseWith, type ConnectionCapLimits } from '../core/listener-limits.js';

export interface RunningServer {
  address: AddressInfo;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes what is left. */
  close(graceMs?: number): Promise<void>;
}

/** How long an idle kept-alive HTTP connection stays open. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * Connections at once. Idle ones are closed after 30–60 s (headersTimeout), but one client opening thousands
 * within that time used up the process's file descriptors, and with them every listener of the box. Per client
 * address (an IPv6 /64) far more than a pooled client or a busy integration keeps open.
 */
export const API_CONNECTION_CAPS: ConnectionCapLimits = { total: 8192, perClient: 1024 };

/** The answer to a connection over a cap, in the API's error shape (spec, Errors: 503 service_unavailable). */
function refusal(why: 'total' | 'per-client'): string {
  const body = JSON.stringify({ error: why === 'total' ? 'Too many connections, try again later' : 'Too many connections from your address', code: 'service_unavailable' });
  return `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`;
}

export async function listen(koa: Koa, bind: string, port: number, caps: ConnectionCapLimits = API_CONNECTION_CAPS): Promise<RunningServer> {
  // TCP_NODELAY (Node's default for HTTP servers since 18, stated here): a response's head and body may be two writes.
  const server = http.createServer({ noDelay: true }, koa.callback());
  capConnections(server, new ConnectionCaps(caps), (socket, why) => refuseWith(refusal(why))(socket));
  server.requestTimeout = 120_000;
  server.headersTimeout = 30_000;
  // An idle kept-alive connection stays open 65 s (Node's default is 5 s). A client that reuses a connection
  // just as the server closes it gets ECONNRESET on a request that was never read; clients that ignore the
  // `Keep-Alive: timeout=65` hint (Node's http.Agent, most HTTP libraries' pools) keep idle connections for
  // longer than 5 s, and bench:send's paced phase lost a request that way. 65 s outlasts the usual client and
  // load-balancer idle timeouts (60 s), so it is the client or the balancer that closes first.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    address: server.address() as AddressInfo,
    close: (graceMs = 10_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), graceMs);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
