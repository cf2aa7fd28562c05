// The composition root: config → context → bootstrap → listeners. main.ts runs it for real;
// tests run it on port 0 with a fake clock and a loopback DNS server.
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import { createContext, type AppContext, type ContextOptions } from './context.js';
import { loadTlsMaterial, type TlsMaterial } from './core/key-material.js';
import { createHttpApp } from './http/app.js';
import { listen, type RunningServer } from './http/server.js';
import { bootstrapIfEmpty, type BootstrapResult } from './services/bootstrap.js';
import { deliverEmail } from './services/delivery.js';
import { DELIVER_JOB } from './services/emails.js';
import { RETENTION_JOB, runRetention, scheduleRetention, startRetentionTimer } from './services/retention.js';
import { createMta } from './mta/deliver.js';
import type { Mta } from './mta/types.js';
import type { DnsResolver } from './dns/resolver.js';
import type { Logger } from './core/logger.js';

export interface ApplianceOptions extends ContextOptions {
  config: Config;
  /** The outbound MTA; built from the config when omitted. */
  mta?: Mta;
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

/** The outbound MTA as the config describes it. MX answers are reused for 30 s by `now` (the context's clock in tests). */
export function mtaFromConfig(config: Config, deps: { dns: DnsResolver; log: Logger; now: () => number }): Mta {
  return createMta({
    dns: deps.dns,
    hostname: config.hostname,
    outboundPort: config.outboundPort,
    relayUrl: config.relayUrl,
    routes: config.routes,
    connectionsPerHost: config.connectionsPerHost,
    smtpTimeoutMs: config.smtpTimeoutMs,
    dnsCacheMs: 30_000,
    now: deps.now,
    log: deps.log,
  });
}

export async function startAppliance(opts: ApplianceOptions): Promise<Appliance> {
  const { config } = opts;
  const ctx = await createContext(config, { ...opts, jobs: { concurrency: config.deliveryConcurrency, ...opts.jobs } });
  let api: RunningServer | undefined;
  let mta: Mta | undefined;
  try {
    const tls = await loadTlsMaterial(config.dataDir, config.hostname, config.tlsCert, config.tlsKey);
    const bootstrap = await bootstrapIfEmpty(ctx);
    mta = opts.mta ?? mtaFromConfig(config, { dns: ctx.dns, log: ctx.log.child({ component: 'mta' }), now: () => ctx.clock.now().getTime() });
    const outbound = mta;
    ctx.jobs.register(DELIVER_JOB, (job) => deliverEmail(ctx, outbound, job));
    ctx.jobs.register(RETENTION_JOB, () => runRetention(ctx));
    await scheduleRetention(ctx);
    await ctx.jobs.start();
    api = await listen(createHttpApp(ctx), config.bind, config.apiPort);
    const stopRetention = startRetentionTimer(ctx);
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
          stopRetention();
          await ctx.jobs.stop();
          await outbound.close();
          await ctx.db.destroy();
          ctx.log.info('stopped');
        })()),
    };
  } catch (err) {
    await api?.close(0);
    await ctx.jobs.stop();
    await mta?.close();
    await ctx.db.destroy();
    throw err;
  }
}
