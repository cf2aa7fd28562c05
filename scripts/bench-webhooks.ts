// Webhook benchmark: the real appliance (startAppliance, as `npm start` runs it, real clock) fans out events
// from the events table to 5 local HTTP endpoints and delivers them, signed, through the job queue.
//
//   npm run bench:webhooks -- [--n 10000] [--rate 2000] [--endpoints 5] [--per-tx 20] [--backlog]
//                             [--render-threads <config>] [--queries] [--cpu-profile DIR] [--keep]
//
// One team with `--endpoints` webhooks, each subscribed to its own event kind; N events are recorded (the
// way services record them: recordEvent in a transaction, 20 per transaction) at `--rate` events per second,
// round-robin over the kinds, so each endpoint receives N / endpoints deliveries. The receivers run on a
// worker thread (their JavaScript does not share the appliance's event loop; they still share the CPUs) and
// answer 200 at once. Printed: deliveries per second (first event recorded → last 2xx), p50/p99 latency from
// an event's creation (its created_at) to the receiver's 2xx, and the peak RSS of the process.
// `--backlog` records all N events in one transaction first, then measures delivery alone (from that commit
// to the last 2xx): the delivery capacity, not bounded by how fast this process can record events.
// CPU (the load-insensitive figures): the appliance's CPU time per delivery over the measured span —
// process.cpuUsage (every thread) minus the receivers' thread (/proc/thread-self/stat) — and the main
// thread's alone, with its event-loop utilisation. In live mode that span includes recording the events
// (on the main thread, as a service would).
// `--queries` counts the SQL statements on the writer and the read connections (each statement's first 100
// characters) and prints the most frequent per delivery. `--cpu-profile DIR` writes the main thread's CPU
// profile of the measured span to DIR/webhooks-<live|backlog>.cpuprofile; of the whole run, every thread:
// `node --cpu-prof --cpu-prof-dir=DIR --import tsx scripts/bench-webhooks.ts …` (one file per thread).
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { CpuMeter, loadAverage, mainThreadProfiler, settle, threadCpuMs, threadsCpuMs, threadsCpuSince } from './bench-cpu.js';

interface Options {
  n: number;
  rate: number;
  endpoints: number;
  keep: boolean;
  backlog: boolean;
  perTx: number;
  /** Count the SQL statements run (by their first 100 characters). */
  queries: boolean;
  /** Directory for the main thread's CPU profile of the measured span (node:inspector). */
  cpuProfileDir: string | undefined;
  renderThreads: number | undefined;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 10_000, rate: 2000, endpoints: 5, keep: false, backlog: false, perTx: 20, queries: false, cpuProfileDir: undefined, renderThreads: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--n') o.n = value();
    else if (flag === '--rate') o.rate = value();
    else if (flag === '--endpoints') o.endpoints = value();
    else if (flag === '--keep') o.keep = true;
    else if (flag === '--backlog') o.backlog = true;
    else if (flag === '--per-tx') o.perTx = value();
    else if (flag === '--queries') o.queries = true;
    else if (flag === '--cpu-profile') o.cpuProfileDir = inline ?? argv[++i];
    else if (flag === '--render-threads') o.renderThreads = value();
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.n >= 1 && o.rate >= 1 && o.endpoints >= 1 && o.endpoints <= 20 && o.perTx >= 1)) throw new Error('--n, --rate, --per-tx ≥ 1; --endpoints 1..20');
  return o;
}

// ------------------------------------------------------------------------------- receivers (worker thread)

interface ReceiverReport {
  latencies: number[];
  firstAt: number;
  lastAt: number;
}

async function receivers(count: number): Promise<void> {
  const latencies: number[] = [];
  let firstAt = 0;
  let lastAt = 0;
  const ports: number[] = [];
  for (let i = 0; i < count; i++) {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
        const now = Date.now();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { created_at: string };
        latencies.push(now - Date.parse(body.created_at));
        firstAt ||= now;
        lastAt = now;
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ports.push((server.address() as { port: number }).port);
  }
  parentPort!.postMessage({ ports });
  const progress = setInterval(() => parentPort!.postMessage({ count: latencies.length }), 100);
  parentPort!.on('message', (m: { report?: boolean; cpu?: boolean }) => {
    if (m.cpu) parentPort!.postMessage({ cpuMs: threadCpuMs() });
    if (m.report) {
      clearInterval(progress);
      const report: ReceiverReport = { latencies, firstAt, lastAt };
      parentPort!.postMessage({ report });
    }
  });
}

// ------------------------------------------------------------------------------------ appliance (main)

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const { recordEvent } = await import('../src/events/recorder.js');
  const { EVENT_TYPES } = await import('../src/events/types.js');
  const { createWebhook } = await import('../src/services/notifications/index.js');

  // tsx's loader is not inherited by worker threads: the worker boots through tsx's API.
  const self = JSON.stringify(import.meta.url);
  const worker = new Worker(`import('tsx/esm/api').then((api) => api.tsImport(${self}, ${self}))`, { eval: true, workerData: { endpoints: o.endpoints } });
  let received = 0;
  let report: ReceiverReport | undefined;
  let cpuReply: ((ms: number) => void) | undefined;
  const ports = await new Promise<number[]>((resolve) => {
    worker.on('message', (m: { ports?: number[]; count?: number; report?: ReceiverReport; cpuMs?: number }) => {
      if (m.ports) resolve(m.ports);
      if (m.count !== undefined) received = m.count;
      if (m.report) report = m.report;
      if (m.cpuMs !== undefined) cpuReply?.(m.cpuMs);
    });
  });
  /** The receivers' thread CPU time (ms). */
  const receiverCpuMs = () =>
    new Promise<number>((resolve) => {
      cpuReply = resolve;
      worker.postMessage({ cpu: true });
    });

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-webhooks-'));
  const config = loadConfig(
    {},
    {
      dataDir,
      bind: '127.0.0.1',
      ...ANY_FREE_PORTS,
      hostname: 'bench.appliance.test',
      logLevel: 'silent',
      webhookAllowPrivate: true,
      rateLimits: false,
      ...(o.renderThreads !== undefined ? { renderThreads: o.renderThreads } : {}),
    },
  );
  const appliance = await startAppliance({ config });
  const ctx = appliance.ctx;
  const teamId = appliance.bootstrap!.team.id;
  const kinds = EVENT_TYPES.slice(0, o.endpoints);
  for (const [i, port] of ports.entries()) await createWebhook(ctx, teamId, { url: `http://127.0.0.1:${port}/hook`, events: [kinds[i]!] });

  // The render threads (and the rest of start-up) boot beside the first deliveries otherwise.
  const settledMs = await settle();
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  console.log(
    `bench:webhooks  n=${o.n} events, ${o.endpoints} endpoints, ${o.backlog ? 'backlog' : `offered rate ${o.rate}/s, ${o.perTx} events per transaction`}, render threads ${config.renderThreads} (start-up settled in ${(settledMs / 1000).toFixed(1)} s), node ${process.version}; load average ${loadAverage()}`,
  );

  const qcount = new Map<string, number>();
  if (o.queries) {
    const { readsOf } = await import('../src/db/index.js');
    for (const [name, db] of [['writer', ctx.db], ['reader', readsOf(ctx.db)]] as const) {
      db.on('query', (q: { sql: string }) => {
        const key = `${name} ${q.sql.slice(0, 100)}`;
        qcount.set(key, (qcount.get(key) ?? 0) + 1);
      });
    }
  }

  const profiler = o.cpuProfileDir ? await mainThreadProfiler(o.cpuProfileDir) : undefined;
  let started = Date.now();
  let meter = CpuMeter.start();
  let threads0 = threadsCpuMs();
  let recv0 = await receiverCpuMs();
  const perTx = o.perTx;
  let made = 0;
  if (o.backlog) {
    await ctx.db.transaction(async (trx) => {
      for (; made < o.n; made++) await recordEvent(trx, new Date(), teamId, kinds[made % kinds.length]!, { seq: made, note: 'benchmark event' });
    });
    const rec = meter.read();
    console.log(`backlog of ${o.n} events recorded in ${((Date.now() - started) / 1000).toFixed(2)} s (one transaction, main thread CPU ${(rec.mainMs / o.n).toFixed(3)} ms per event); delivery measured from its commit`);
    started = Date.now();
    meter = CpuMeter.start();
    threads0 = threadsCpuMs();
    recv0 = await receiverCpuMs();
    qcount.clear();
    await profiler?.start();
  }
  if (!o.backlog) await profiler?.start();
  while (made < o.n) {
    // Keep to the offered rate: record what is due by now, then yield.
    const due = Math.min(o.n, Math.floor(((Date.now() - started) / 1000) * o.rate) + perTx);
    while (made < due) {
      const k = Math.min(perTx, due - made);
      await ctx.db.transaction(async (trx) => {
        for (let i = 0; i < k; i++) {
          const n = made + i;
          await recordEvent(trx, new Date(), teamId, kinds[n % kinds.length]!, { seq: n, note: 'benchmark event' });
        }
      });
      made += k;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  const recordedIn = (Date.now() - started) / 1000;
  const deadline = Date.now() + 600_000;
  while (received < o.n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const cpu = meter.read();
  const threads = threadsCpuSince(threads0);
  await profiler?.stop(`webhooks-${o.backlog ? 'backlog' : 'live'}`);
  const receiversMs = (await receiverCpuMs()) - recv0;
  worker.postMessage({ report: true });
  while (!report) await new Promise((r) => setTimeout(r, 10));
  clearInterval(sampler);

  const lat = [...report.latencies].sort((a, b) => a - b);
  const seconds = (report.lastAt - started) / 1000;
  if (!o.backlog) console.log(`recorded ${o.n} events in ${recordedIn.toFixed(2)} s (${(o.n / recordedIn).toFixed(0)}/s)`);
  console.log(`delivered ${lat.length}/${o.n} in ${seconds.toFixed(2)} s: ${(lat.length / seconds).toFixed(0)} deliveries/s`);
  console.log(`latency event created → receiver 2xx: p50 ${pct(lat, 50)} ms, p99 ${pct(lat, 99)} ms, max ${lat.at(-1)} ms`);
  const applianceMs = cpu.processMs - receiversMs;
  console.log(
    `appliance CPU per delivery ${(applianceMs / o.n).toFixed(3)} ms (process minus receivers' thread; main thread ${(cpu.mainMs / o.n).toFixed(3)} ms)${o.backlog ? '' : ', recording included'}; ` +
      `${(applianceMs / cpu.wallMs).toFixed(2)} cores busy, main event-loop utilisation ${(cpu.elu * 100).toFixed(0)}%; receivers ${(receiversMs / o.n).toFixed(3)} ms per delivery`,
  );
  if (o.queries) {
    const total = [...qcount.values()].reduce((a, b) => a + b, 0);
    console.log(`SQL statements: ${(total / o.n).toFixed(2)} per delivery${o.backlog ? '' : ', recording included'}`);
    for (const [k, v] of [...qcount].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${(v / o.n).toFixed(3).padStart(7)}  ${k}`);
  }
  console.log(`CPU by thread (receivers' included): ${threads}`);
  console.log(`load average ${loadAverage()}`);
  console.log(`peak RSS ${(peakRss / 1024 / 1024).toFixed(0)} MB (whole process, receivers' thread included)`);
  console.log(`jobs left: ${JSON.stringify(await ctx.jobs.stats())}`);

  await appliance.stop();
  await worker.terminate();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

if (isMainThread) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else {
  void receivers((workerData as { endpoints: number }).endpoints);
}
