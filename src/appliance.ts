// The composition root: config → context → bootstrap → listeners. main.ts runs it for real;
// tests run it on port 0 with a fake clock and a loopback DNS server.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { getHeapStatistics } from 'node:v8';
import type { Config } from './config.js';
import { createContext, type AppContext, type ContextOptions } from './context.js';
import { loadTlsMaterial, type TlsMaterial } from './core/key-material.js';
import { createHttpApp } from './http/app.js';
import { listen, type RunningServer } from './http/server.js';
import { registerSignupJobs, workflowMachinery } from './services/automation/index.js';
import { bootstrapIfEmpty, type BootstrapResult, RETENTION_JOB, runRetention, scheduleBackups, scheduleRetention, startRetentionTimer } from './services/housekeeping/index.js';
import { createDeliveryHandler, DELIVER_JOB, setTextDeriver } from './services/sending/index.js';
import { createMta, mtaOptions } from './mta/deliver.js';
import { RenderPool } from './mta/render-pool.js';
import type { Mta } from './mta/types.js';
import type { DnsResolver } from './dns/resolver.js';
import type { Logger } from './core/logger.js';
import { DISPATCH_JOB, DispatchWaker, WEBHOOK_DELIVER_JOB } from './events/webhook-dispatcher.js';
import { ALERT_DISPATCH_JOB, AlertWaker, deliverNotification, deliverWebhook, NOTIFY_DELIVER_JOB, WebhookSender } from './services/notifications/index.js';
import { checkDomainDns, DKIM_RETIRE_JOB, DNS_CHECK_JOB, retireDkimKeys, scheduleDnsChecks, trustLocalDomains } from './services/platform/index.js';
import { registerCampaignJobs } from './services/campaigns/index.js';
import { startMxListener, type MxListener } from './smtp/mx.js';
import { createInboundReceiver, createLocalDelivery, checkMessage, InboundAuthPool, createMailboxDelivery } from './services/inbound/index.js';
import { cachedLookups } from './dns/cached-lookups.js';
import { SmtpGuards } from './limits/smtp-guards.js';
import { startSubmission, type SubmissionListeners } from './smtp/submission.js';
import { startPop3, type Pop3Listeners } from './pop3/server.js';
import { ImapServer } from './imap/server.js';
import { SummaryCache } from './imap/summary-cache.js';
import { NetworkList } from './core/trusted-networks.js';

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
  ports: { api: AddressInfo; mx: AddressInfo; submission: AddressInfo; submissions: AddressInfo; pop3: AddressInfo; pop3s: AddressInfo; imap: AddressInfo; imaps: AddressInfo };
  /** The one failed-login guard (and per-mailbox submission rate) shared by SMTP submission, POP3 and IMAP. */
  loginGuards: SmtpGuards;
  /** Set on the first start of an empty database. */
  bootstrap: BootstrapResult | null;
  stop(): Promise<void>;
}

/** The outbound MTA as the config describes it (mtaOptions), on the given resolver, logger and clock (the context's). */
export function mtaFromConfig(config: Config, deps: { dns: DnsResolver; log: Logger; now: () => number }): Mta {
  return createMta({ ...mtaOptions(config), ...deps });
}

/** GET /metrics: the process's PSS and each isolate's heap (the worker threads that run now are asked). */
async function recordMemory(ctx: AppContext, pools: Array<{ heapStatistics(): Promise<Array<{ thread: string; used: number; total: number; external: number }>> }>): Promise<void> {
  const h = getHeapStatistics();
  const isolates = [{ thread: 'main', used: h.used_heap_size, total: h.total_heap_size, external: h.external_memory }, ...(await Promise.all(pools.map((p) => p.heapStatistics()))).flat()];
  const m = ctx.metrics;
  for (const g of [m.threadHeapUsed, m.threadHeapTotal, m.threadExternal]) g.reset();
  for (const i of isolates) {
    m.threadHeapUsed.set({ thread: i.thread }, i.used);
    m.threadHeapTotal.set({ thread: i.thread }, i.total);
    m.threadExternal.set({ thread: i.thread }, i.external);
  }
  m.arrayBuffers.set(process.memoryUsage().arrayBuffers);
  const pss = processPss();
  if (pss !== null) m.processPss.set(pss);
}

/** This process's PSS in bytes (Linux; null elsewhere). */
function processPss(): number | null {
  try {
    const kb = /^Pss:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

/** How long a stop waits for running jobs before the threads running them are closed. */
const STOP_JOBS_GRACE_MS = 5_000;
/** After that, how long the aborted jobs get to record their outcome before the database closes. */
const STOP_SETTLE_MS = 1_000;

export async function startAppliance(opts: ApplianceOptions): Promise<Appliance> {
  const { config } = opts;
  const ctx = await createContext(config, { ...opts, jobs: { concurrency: config.deliveryConcurrency, ...opts.jobs } });
  let api: RunningServer | undefined;
  let mx: MxListener | undefined;
  let submission: SubmissionListeners | undefined;
  let pop3: Pop3Listeners | undefined;
  let imap: ImapServer | undefined;
  let mta: Mta | undefined;
  let renderer: RenderPool | undefined;
  let authPool: InboundAuthPool | undefined;
  let stopWebhooks = () => {};
  let closeWebhooks = () => {};
  let stopWorkflows = () => {};
  try {
    const tls = await loadTlsMaterial(config.dataDir, config.hostname, config.tlsCert, config.tlsKey);
    const bootstrap = await bootstrapIfEmpty(ctx);
    // MAIL_LOCAL_DOMAINS: the operator's own domains, trusted (verified by the operator) before any listener opens.
    await trustLocalDomains(ctx, config.localDomains);
    mta = opts.mta ?? mtaFromConfig(config, { dns: ctx.dns, log: ctx.log.child({ component: 'mta' }), now: () => ctx.clock.now().getTime() });
    const outbound = mta;
    // Without an injected MTA, the render threads run the SMTP transactions too (render-pool.ts).
    const render = (renderer = new RenderPool(
      config.renderThreads,
      ctx.log.child({ component: 'render' }),
      opts.mta ? undefined : { settings: mtaOptions(config), logLevel: config.logLevel },
      config.renderThreadNice,
    ));
    // The MX's mailauth checks on their own threads, each with a resolver built from the config; an injected
    // resolver (ContextOptions.dns) cannot be handed to a thread, so then they run on this one.
    const inlineLookup = cachedLookups(ctx.dns, () => ctx.clock.now().getTime());
    const auth = (authPool = new InboundAuthPool(opts.dns ? 0 : config.inboundAuthThreads, { dnsServers: config.dnsServers, dnsTimeoutMs: config.dnsTimeoutMs }, (input) => checkMessage(input, inlineLookup), ctx.log.child({ component: 'mx' })));
    // One receiver for the MX and for mail the box sends to addresses it serves (services/inbound/local-delivery.ts).
    const receiver = createInboundReceiver(ctx, createMailboxDelivery(ctx, ctx.mailstore), auth);
    ctx.jobs.register(DELIVER_JOB, createDeliveryHandler(ctx, outbound, render, createLocalDelivery(ctx, ctx.mailstore, receiver)));
    setTextDeriver(ctx, (html) => render.htmlToText(html));
    const webhookSender = new WebhookSender(config.webhookTimeoutMs);
    const waker = new DispatchWaker(ctx.db, ctx.jobs, (err) => ctx.log.error({ err }, 'webhook dispatcher: could not wake'));
    ctx.jobs.register(DISPATCH_JOB, () => waker.run());
    ctx.jobs.register(WEBHOOK_DELIVER_JOB, (job) => deliverWebhook(ctx, webhookSender, job));
    stopWebhooks = () => {
      waker.stop();
      alertWaker.stop();
    };
    closeWebhooks = () => webhookSender.close();
    const alertWaker = new AlertWaker(ctx, (err) => ctx.log.error({ err }, 'alert dispatcher: could not wake'));
    ctx.jobs.register(ALERT_DISPATCH_JOB, () => alertWaker.run());
    ctx.jobs.register(NOTIFY_DELIVER_JOB, (job) => deliverNotification(ctx, job));
    ctx.jobs.register(RETENTION_JOB, () => runRetention(ctx));
    ctx.jobs.register(DKIM_RETIRE_JOB, (job) => retireDkimKeys(ctx, job));
    ctx.jobs.register(DNS_CHECK_JOB, (job) => checkDomainDns(ctx, job));
    registerCampaignJobs(ctx);
    registerSignupJobs(ctx);
    const workflows = workflowMachinery(ctx);
    stopWorkflows = () => workflows.stop();
    await scheduleRetention(ctx);
    await ctx.jobs.start();
    waker.start(5000);
    alertWaker.start(5000);
    workflows.start(5000);
    api = await listen(createHttpApp(ctx), config.bind, config.apiPort);
    const stopRetention = startRetentionTimer(ctx);
    const stopDnsChecks = scheduleDnsChecks(ctx);
    const stopBackups = await scheduleBackups(ctx);
    ctx.log.info({ listener: 'api', address: api.address.address, port: api.address.port }, 'listening');
    mx = await startMxListener(ctx, { tls, store: ctx.mailstore, receiver });
    ctx.log.info({ listener: 'mx', address: mx.address.address, port: mx.address.port }, 'listening');
    const mxListener = mx;
    const loginGuards = new SmtpGuards(ctx.clock);
    submission = await startSubmission({ ctx, store: ctx.mailstore, guards: loginGuards, tls });
    ctx.log.info({ listener: 'submission', address: submission.submission.address, port: submission.submission.port, tlsPort: submission.submissions.port }, 'listening');
    pop3 = await startPop3({ store: ctx.mailstore, guards: loginGuards, tls, log: ctx.log.child({ component: 'pop3' }), trustedNetworks: new NetworkList(config.trustedNetworks), bind: config.bind, port: config.pop3Port, securePort: config.pop3sPort });
    ctx.log.info({ listener: 'pop3', address: pop3.pop3.address, port: pop3.pop3.port, tlsPort: pop3.pop3s.port }, 'listening');
    const imapServer = (imap = new ImapServer({ store: ctx.mailstore, guard: loginGuards, log: ctx.log.child({ component: 'imap' }), hostname: config.hostname, version: ctx.version, summaries: new SummaryCache(), trustedNetworks: new NetworkList(config.trustedNetworks), tls }));
    const imapAddress = await imapServer.listen(config.imapPort, config.bind, false);
    const imapsAddress = await imapServer.listen(config.imapsPort, config.bind, true);
    ctx.log.info({ listener: 'imap', address: imapAddress.address, port: imapAddress.port, tlsPort: imapsAddress.port }, 'listening');
    const [submissionListeners, pop3Listeners] = [submission, pop3];
    // GET /metrics: the queue read from the database and the IMAP sessions counted, at scrape time only.
    ctx.metrics.onScrape(async () => {
      const now = ctx.clock.now().getTime();
      const [q] = (await ctx.db('jobs').select(
        ctx.db.raw("sum(case when state = 'ready' then 1 else 0 end) as ready"),
        ctx.db.raw("sum(case when state = 'dead' then 1 else 0 end) as dead"),
        ctx.db.raw("sum(case when state = 'ready' and run_at <= ? then 1 else 0 end) as due", [now]),
        ctx.db.raw("min(case when state = 'ready' and run_at <= ? then run_at end) as oldest", [now]),
      )) as Array<{ ready: number | null; dead: number | null; due: number | null; oldest: number | null }>;
      ctx.metrics.jobsReady.set({ state: 'ready' }, Number(q?.ready ?? 0));
      ctx.metrics.jobsReady.set({ state: 'dead' }, Number(q?.dead ?? 0));
      ctx.metrics.jobsDue.set(Number(q?.due ?? 0));
      ctx.metrics.oldestDue.set(q?.oldest == null ? 0 : Math.max(0, (now - Number(q.oldest)) / 1000));
      ctx.metrics.sessions.set({ listener: 'imap' }, imapServer.sessionCount);
      ctx.metrics.sessions.set({ listener: 'pop3' }, pop3Listeners.sessions);
      await recordMemory(ctx, [render, auth]);
    });

    const server = api;
    let stopping: Promise<void> | undefined;
    return {
      ctx,
      tls,
      ports: { api: api.address, mx: mxListener.address, submission: submission.submission, submissions: submission.submissions, pop3: pop3.pop3, pop3s: pop3.pop3s, imap: imapAddress, imaps: imapsAddress },
      loginGuards,
      bootstrap,
      // Stop accepting, let in-flight requests finish, then close the database.
      stop: () =>
        (stopping ??= (async () => {
          await server.close();
          await mxListener.close();
          await auth.close();
          await submissionListeners.close();
          await pop3Listeners.close();
          await imapServer.close();
          stopWebhooks();
          stopWorkflows();
          stopRetention();
          stopDnsChecks();
          stopBackups();
          // README: a stop takes up to 10 s. Running jobs get STOP_JOBS_GRACE_MS; then the render threads
          // close (up to their 3 s QUIT grace), which aborts a stuck SMTP transaction; its job fails over
          // to a retry, or keeps its lease until the next start.
          await ctx.jobs.stop(STOP_JOBS_GRACE_MS);
          await render.close();
          await ctx.jobs.stop(STOP_SETTLE_MS);
          closeWebhooks();
          await outbound.close();
          await ctx.db.destroy();
          ctx.log.info('stopped');
        })()),
    };
  } catch (err) {
    await api?.close(0);
    await mx?.close();
    await authPool?.close();
    await submission?.close();
    await pop3?.close();
    await imap?.close();
    stopWebhooks();
    stopWorkflows();
    await ctx.jobs.stop();
    await renderer?.close();
    closeWebhooks();
    await mta?.close();
    await ctx.db.destroy();
    throw err;
  }
}
