// The composition root: config → context → bootstrap → listeners. main.ts runs it for real;
// tests run it on port 0 with a fake clock and a loopback DNS server.
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { createContext, type AppContext, type ContextOptions } from './context.js';
import { loadTlsMaterial, type TlsMaterial } from './core/key-material.js';
import { createHttpApp } from './http/app.js';
import { listen, type RunningServer } from './http/server.js';
import { bootstrapIfEmpty, type BootstrapResult } from './services/bootstrap.js';

export interface ApplianceOptions extends ContextOptions {
  config: Config;
}

export interface Appliance {
  ctx: AppContext;
  /** Certificate for STARTTLS and implicit TLS on the mail listeners. */
  tls: TlsMaterial;
  /** What each listener actually bound (port 0 picks a free one). */
  ports: { api: AddressInfo };
  /** Set on the first start of an empty database. */
  bootstrap: BootstrapResult | null;
  stop(): Promise<void>;
}

export async function startAppliance(opts: ApplianceOptions): Promise<Appliance> {
  const { config } = opts;
  const ctx = await createContext(config, opts);
  let api: RunningServer | undefined;
  try {
    const tls = await loadTlsMaterial(config.dataDir, config.hostname, config.tlsCert, config.tlsKey);
    const bootstrap = await bootstrapIfEmpty(ctx);
    await ctx.jobs.start();
    api = await listen(createHttpApp(ctx), config.bind, config.apiPort);
    ctx.log.info({ listener: 'api', address: api.address.address, port: api.address.port }, 'listening');

    const server = api;
    let stopping: Promise<void> | undefined;
    return {
      ctx,
      tls,
      ports: { api: api.address },
      bootstrap,
      // Stop accepting, let in-flight requests finish, then close the database.
      stop: () =>
        (stopping ??= (async () => {
          await server.close();
          await ctx.jobs.stop();
          await ctx.db.destroy();
          ctx.log.info('stopped');
        })()),
    };
  } catch (err) {
    await api?.close(0);
    await ctx.jobs.stop();
    await ctx.db.destroy();
    throw err;
  }
}
