import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface RunningServer {
  address: AddressInfo;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes what is left. */
  close(graceMs?: number): Promise<void>;
}

/** How long an idle kept-alive HTTP connection stays open. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export async function listen(koa: Koa, bind: string, port: number): Promise<RunningServer> {
  const server = http.createServer(koa.callback());
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
