// The application context: built once by a composition root (appliance.ts, the admin CLI) and handed
// down to every service and adapter. No module-level singletons, so a test can build another with a
// fake clock and a loopback DNS server.
import { Metrics } from './core/metrics.js';
import { readFileSync } from 'node:fs';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, type Logger } from './core/logger.js';
import { loadOrCreateMasterKey } from './core/key-material.js';
import { SecretBox } from './core/secrets.js';
import { Signal } from './core/signal.js';
import { openDatabase, timeWriteTransactions, type Db } from './db/index.js';
import { createResolver, type DnsResolver } from './dns/resolver.js';
import { JobQueue, type WorkerOptions } from './jobs/queue.js';
import { createMailStore } from './mailstore/index.js';
import type { MailStore } from './mailstore/types.js';

export interface AppContext {
  readonly config: Config;
  readonly db: Db;
  readonly clock: Clock;
  readonly dns: DnsResolver;
  readonly log: Logger;
  /** Seals private material at rest (DKIM keys, later webhook secrets). */
  readonly secrets: SecretBox;
  /** The durable job queue: services enqueue in their transactions; the appliance runs the worker. */
  readonly jobs: JobQueue;
  readonly version: string;
  /** Mailboxes, folders, messages and their change feed (src/mailstore/); the only way to their tables. */
  readonly mailstore: MailStore;
  /**
   * Emitted after every change (committed or failed) that services/platform/domains.ts makes to a domain, so that
   * caches of domain facts (sender domains, the MX's recipient directory) forget them.
   */
  readonly domainChanges: Signal;
  /**
   * Emitted after every change (committed or failed) to an API key or a team's plan made in this process
   * (services/platform/api-keys.ts, services/platform/teams.ts), so that the keys `authenticate` remembers are forgotten.
   */
  readonly apiKeyChanges: Signal;
  /** Prometheus metrics (`GET /metrics`): counters incremented where things happen, gauges read at scrape time. */
  readonly metrics: Metrics;
}

export interface ContextOptions {
  clock?: Clock;
  logger?: Logger;
  dns?: DnsResolver;
  jobs?: Partial<WorkerOptions>;
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Opens (and migrates) the store and wires the ground services. Close with `ctx.db.destroy()`. */
export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const db = await openDatabase(config.dataDir);
  const clock = opts.clock ?? systemClock;
  const log = opts.logger ?? createLogger(config.logLevel);
  const metrics = new Metrics();
  timeWriteTransactions(db, (wait, held, committed) => {
    metrics.dbWriteLockWait.observe(wait);
    metrics.dbWriteTransaction.observe(held);
    if (!committed) metrics.dbWriteRollbacks.inc();
  });
  const jobs = new JobQueue(db, clock, log, opts.jobs);
  return {
    config,
    db,
    clock,
    dns: countedResolver(opts.dns ?? createResolver(config.dnsServers, config.dnsTimeoutMs), metrics),
    metrics,
    log,
    secrets: new SecretBox(loadOrCreateMasterKey(config.dataDir)),
    jobs,
    version: packageVersion(),
    mailstore: createMailStore({ db, clock, jobs }),
    domainChanges: new Signal(),
    apiKeyChanges: new Signal(),
  };
}

/** The resolver with each look-up counted, and each one the DNS did not answer counted as a failure. */
function countedResolver(inner: DnsResolver, metrics: Metrics): DnsResolver {
  const count = <T>(type: string, p: Promise<T>): Promise<T> => {
    metrics.dnsLookups.inc({ type });
    return p.catch((err: unknown) => {
      const code = (err as { code?: unknown })?.code;
      if (code !== 'ENOTFOUND' && code !== 'ENODATA') metrics.dnsFailures.inc({ type });
      throw err;
    });
  };
  return {
    txt: (name) => count('TXT', inner.txt(name)),
    mx: (name) => count('MX', inner.mx(name)),
    a: (name) => count('A', inner.a(name)),
    aaaa: (name) => count('AAAA', inner.aaaa(name)),
    raw: (name, rrtype) => count(/^[A-Z]{1,10}$/.test(rrtype) ? rrtype : 'other', inner.raw(name, rrtype)),
  };
}
