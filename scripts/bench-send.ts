// Sending benchmark: the real appliance (startAppliance, the composition root `npm start` uses) against a
// loopback DNS server (dns2) and a fast SMTP sink MX that accepts everything and discards the bodies.
//
//   npm run bench:send -- [--n 10000] [--warmup 20000] [--concurrency 32] [--batch-concurrency 1] [--batch-size 100]
//                         [--delivery-concurrency <config>] [--connections-per-host <config>] [--render-threads <config>]
//                         [--render-nice <config>]
//                         [--phases batch,single,paced] [--rate 500] [--no-tls] [--sink lean|smtp-server] [--split] [--template] [--profile] [--cpu-profile DIR] [--alloc-profile DIR] [--survivors-profile DIR] [--keep]
//
// Three phases, one after the other, each sending N emails (2 KB html, one recipient at a domain whose MX is
// the sink): (a) POST /emails/batch in batches of 100, (b) single POST /emails from C parallel loops, each
// sending its next request when answered (closed loop: at saturation its latency is C ÷ throughput), (c)
// single POST /emails offered at --rate per second whatever the answers (open loop, latency counted from each
// request's due time: the API's latency at that load). For each: accepted per second, API latency p50/p99,
// delivered per second (from the first accept until the sink has every message, and until GET /emails shows
// every one delivered), peak RSS. Before them a warm-up of --warmup emails (20,000; batch, its last quarter single
// POST /emails when a single or paced phase follows), delivered and not
// counted: the figures are those of a box that has been running, not of V8 still compiling its hot paths.
// Measured with --trace-opt: after a warm-up of 2,000, TurboFan still spent ~4.3 s of CPU compiling during the
// next 10,000 emails (the transaction that writes accepted emails alone was re-optimised 7 times, ~200 ms
// each, as the array shapes it meets settle), ~10% of the phase's CPU; after 30,000, ~0.5 s. `--warmup 0`
// measures from a cold start. The header and SUMMARY print the host's RSA-2048 signatures per second per
// core: this shared machine's speed drifts by up to a third over a day.
//
// Threads: the appliance runs alone on the main thread, as it would in production. The "internet" (DNS
// server and sink MX) runs on one worker thread and the API client on another, so that their JavaScript
// does not share the appliance's event loop (they still share the machine's CPUs, and RSS is the whole
// process's). `--profile` adds timings around the MTA and every SQL statement (some overhead).
// CPU: the appliance's CPU time per accepted and per delivered email (process.cpuUsage, which covers every
// thread, minus the client's and the sink's threads, read from /proc/thread-self/stat on Linux), the main
// thread's alone, and its event-loop utilisation. On a shared machine these move far less than the rates.
// For a CPU profile: `node --cpu-prof --cpu-prof-dir=DIR --import tsx scripts/bench-send.ts …` (one file
// per thread).
// `--split` measures intake and delivery apart: every email is accepted scheduled a day ahead (nothing is
// delivered meanwhile), then its job is made due at once and the queue delivers the whole backlog.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { mainThreadProfiler, rsaSignsPerSecond, threadCpuMs, threadsCpuMs, threadsCpuSince } from './bench-cpu.js';
import { nameThisThread } from '../src/core/worker-thread.js';
import { LeanHttpClient } from './bench-client.js';
import { messageIdOf, startLeanSink, type LeanSink, type LeanSinkOptions } from './bench-sink.js';

// ---------------------------------------------------------------------------------------------- options

interface Options {
  n: number;
  /** Emails sent (batch) and delivered before the measured phases, not counted: the figures are the steady state's. */
  warmup: number;
  concurrency: number;
  batchConcurrency: number;
  batchSize: number;
  deliveryConcurrency: number | undefined;
  connectionsPerHost: number | undefined;
  renderThreads: number | undefined;
  renderNice: number | undefined;
  phases: Array<'batch' | 'single' | 'paced'>;
  /** Requests per second offered by the paced phase. */
  rate: number;
  tls: boolean;
  /** The sink MX: bench-sink.ts's lean one (default), or smtp-server (as the figures before session 14 were taken). */
  sink: 'lean' | 'smtp-server';
  split: boolean;
  /** Every email sent by a published template of 10 variables (template_id + variables) instead of subject and html. */
  template: boolean;
  profile: boolean;
  /** Directory for main-thread CPU profiles of each phase's intake and delivery (node:inspector). */
  cpuProfileDir: string | undefined;
  allocProfileDir: string | undefined;
  survivorsProfileDir: string | undefined;
  keep: boolean;
  timeoutS: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    n: 10_000,
    warmup: 20_000,
    concurrency: 32,
    batchConcurrency: 1,
    batchSize: 100,
    deliveryConcurrency: undefined,
    connectionsPerHost: undefined,
    renderThreads: undefined,
    renderNice: undefined,
    phases: ['batch', 'single', 'paced'],
    rate: 500,
    tls: true,
    sink: 'lean',
    split: false,
    template: false,
    profile: false,
    cpuProfileDir: undefined,
    allocProfileDir: undefined,
    survivorsProfileDir: undefined,
    keep: false,
    timeoutS: 600,
  };
  const int = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min} (got ${v ?? 'nothing'})`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--n':
        o.n = int('n', value(), 1);
        break;
      case '--warmup':
        o.warmup = int('warmup', value(), 0);
        break;
      case '--concurrency':
      case '-c':
        o.concurrency = int('concurrency', value(), 1);
        break;
      case '--batch-concurrency':
        o.batchConcurrency = int('batch-concurrency', value(), 1);
        break;
      case '--batch-size':
        o.batchSize = Math.min(100, int('batch-size', value(), 1));
        break;
      case '--delivery-concurrency':
        o.deliveryConcurrency = int('delivery-concurrency', value(), 1);
        break;
      case '--connections-per-host':
        o.connectionsPerHost = int('connections-per-host', value(), 1);
        break;
      case '--render-threads':
        o.renderThreads = int('render-threads', value(), 0);
        break;
      case '--render-nice':
        o.renderNice = int('render-nice', value(), 0);
        break;
      case '--phases': {
        const list = (value() ?? '').split(',').map((s) => s.trim());
        if (!list.length || list.some((p) => p !== 'batch' && p !== 'single' && p !== 'paced')) throw new Error('--phases takes a list of batch, single, paced');
        o.phases = list as Options['phases'];
        break;
      }
      case '--rate':
        o.rate = int('rate', value(), 1);
        break;
      case '--no-tls':
        o.tls = false;
        break;
      case '--sink': {
        const v = value();
        if (v !== 'lean' && v !== 'smtp-server') throw new Error('--sink takes lean or smtp-server');
        o.sink = v;
        break;
      }
      case '--split':
        o.split = true;
        break;
      case '--template':
        o.template = true;
        break;
      case '--profile':
        o.profile = true;
        break;
      case '--cpu-profile':
        o.cpuProfileDir = value();
        break;
      case '--alloc-profile':
        o.allocProfileDir = value();
        break;
      case '--survivors-profile':
        o.survivorsProfileDir = value();
        break;
      case '--keep':
        o.keep = true;
        break;
      case '--timeout':
        o.timeoutS = int('timeout', value(), 1);
        break;
      case '--help':
      case '-h':
        console.log('npm run bench:send -- [--n 10000] [--warmup 20000] [--concurrency 32] [--batch-concurrency 1] [--batch-size 100] [--delivery-concurrency N] [--connections-per-host N] [--render-threads N] [--render-nice N] [--phases batch,single,paced] [--rate 500] [--no-tls] [--sink lean|smtp-server] [--split] [--template] [--profile] [--cpu-profile DIR] [--alloc-profile DIR] [--survivors-profile DIR] [--keep] [--timeout 600]');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${arg} (try --help)`);
    }
  }
  return o;
}

// ------------------------------------------------------------------------------------------ shared bits

const HOSTNAME = 'mx.bench.test';
const SENDER_DOMAIN = 'bench-sender.example';
const DEST_DOMAIN = 'bench-dest.example';
const DEST_MX = 'mx.bench-dest.example';

/** Sink counters, shared with the main thread without messages (Int32Array over a SharedArrayBuffer). */
const ACCEPTED = 0; // messages the sink answered 250 to
const DUPLICATES = 1; // of those, Message-IDs it had already seen
const NO_MESSAGE_ID = 2;
const CONNECTIONS = 3;
const COUNTERS = 4;

type RemoteRequest =
  | { op: 'dns-set'; seq: number; type: 'A' | 'AAAA' | 'TXT' | 'MX'; name: string; values: Array<string | { exchange: string; priority: number }> }
  | { op: 'summary'; seq: number }
  | { op: 'cpu'; seq: number }
  | { op: 'stop'; seq: number };
type RemoteOutcome = { ok: true; value?: unknown } | { ok: false; error: string };
type RemoteReply = RemoteOutcome & { seq: number };
interface RemoteReady {
  ready: true;
  dns: { host: string; port: number };
  sinkPort: number;
}
interface SinkSummary {
  accepted: number;
  distinct: number;
  duplicates: number;
  maxCopies: number;
  bytes: number;
}

interface ClientJob {
  url: string;
  apiKey: string;
  mode: 'batch' | 'single' | 'paced';
  n: number;
  /** Parallel request loops. */
  concurrency: number;
  /** paced: requests per second, each due at first + i / rate whatever the answers to the others. */
  rate: number;
  batchSize: number;
  /** Index of the first email (recipients and subjects are numbered across phases). */
  first: number;
  html: string;
  /** ISO time to schedule every email at (--split); absent: send now. */
  scheduledAt?: string | undefined;
  /** Send by this template (--template) with TEMPLATE_VARIABLES values instead of subject and html. */
  templateId?: string | undefined;
}

/** The variables of --template's template: v0 … v9. */
const TEMPLATE_VARIABLES = Array.from({ length: 10 }, (_, i) => `v${i}`);

/** --template's html: the 2 KB body with the ten variables' merge tags spread through it. */
function templateHtml(html: string): string {
  const cut = html.indexOf('</p>');
  return html.slice(0, cut) + TEMPLATE_VARIABLES.map((v) => ` {{ ${v} }}`).join(',') + html.slice(cut);
}
interface ClientResult {
  /** performance.timeOrigin-based wall-clock ms (comparable across threads). */
  firstRequestAt: number;
  firstAcceptAt: number;
  lastAcceptAt: number;
  accepted: number;
  refused: number;
  errors: string[];
  /** One per HTTP request, ms. */
  latencies: number[];
  /** CPU time of the client thread, ms. */
  cpuMs: number;
}

const wallNow = () => performance.timeOrigin + performance.now();

/** A 2 KB html body (the text part is derived by the appliance). */
function htmlBody(bytes = 2048): string {
  const head = '<!doctype html><html><body><h1>Your order has shipped</h1>';
  const tail = '<p><a href="https://shop.example/orders/12345">Track your parcel</a></p></body></html>';
  let middle = '';
  for (let i = 0; middle.length + head.length + tail.length < bytes; i++) {
    middle += `<p>Item ${i}: a product with a reasonably long description, quantity ${(i % 3) + 1}, price ${(i * 7) % 100}.99 EUR.</p>`;
  }
  return (head + middle).slice(0, bytes - tail.length) + tail;
}

function startWorker(data: unknown): Worker {
  // tsx's loader is not inherited by worker threads: the worker boots through tsx's API.
  const self = import.meta.url;
  const boot = `import('tsx/esm/api').then((api) => api.tsImport(${JSON.stringify(self)}, ${JSON.stringify(self)}))`;
  return new Worker(boot, { eval: true, workerData: data });
}

// ------------------------------------------------------------------------- worker: DNS server + sink MX

async function runRemote(counters: Int32Array, tls: boolean, sinkKind: Options['sink']): Promise<void> {
  const { startDns } = await import('../test/helpers/dns-server.js');
  const { sinkTlsMaterial } = await import('../test/helpers/smtp-sink.js');
  const port = parentPort!;

  // The helper binds UDP on port 0, then TCP on the same number, which another process may hold: retry.
  let dns: Awaited<ReturnType<typeof startDns>> | undefined;
  for (let attempt = 1; !dns; attempt++) {
    try {
      dns = await startDns();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 5) throw err;
    }
  }
  const seen = new Map<string, number>();
  let bytes = 0;
  // Accept everything; keep only the Message-ID (to count duplicates) and the size.
  const onMessage = (id: string | undefined, size: number) => {
    bytes += size;
    if (id) {
      const copies = (seen.get(id) ?? 0) + 1;
      seen.set(id, copies);
      if (copies > 1) Atomics.add(counters, DUPLICATES, 1);
    } else {
      Atomics.add(counters, NO_MESSAGE_ID, 1);
    }
    Atomics.add(counters, ACCEPTED, 1);
  };
  const onConnect = () => void Atomics.add(counters, CONNECTIONS, 1);
  const { key, cert } = await sinkTlsMaterial();
  const sink = sinkKind === 'lean' ? await startLeanSink({ key, cert, tls, name: 'sink.bench.test', onMessage, onConnect }) : await startSmtpServerSink({ key, cert, tls, onMessage, onConnect });
  const sinkPort = sink.port;

  port.on('message', (msg: RemoteRequest) => {
    const reply = (r: RemoteOutcome) => port.postMessage({ seq: msg.seq, ...r });
    try {
      if (msg.op === 'dns-set') {
        dns.set(msg.type, msg.name, msg.values);
        reply({ ok: true });
      } else if (msg.op === 'summary') {
        let duplicates = 0;
        let maxCopies = 0;
        for (const c of seen.values()) {
          duplicates += c - 1;
          maxCopies = Math.max(maxCopies, c);
        }
        const summary: SinkSummary = { accepted: Atomics.load(counters, ACCEPTED), distinct: seen.size, duplicates, maxCopies, bytes };
        reply({ ok: true, value: summary });
      } else if (msg.op === 'cpu') {
        reply({ ok: true, value: threadCpuMs() });
      } else if (msg.op === 'stop') {
        void sink
          .close()
          .then(() => dns.stop())
          .then(() => {
            reply({ ok: true });
            port.close();
          });
      }
    } catch (err) {
      reply({ ok: false, error: String(err) });
    }
  });
  const ready: RemoteReady = { ready: true, dns: dns.server, sinkPort };
  port.postMessage(ready);
}

/** The sink as it was before bench-sink.ts: smtp-server, accepting everything (`--sink smtp-server`). */
async function startSmtpServerSink(o: { key: string; cert: string; tls: boolean; onMessage: LeanSinkOptions['onMessage']; onConnect: () => void }): Promise<LeanSink> {
  const { SMTPServer } = await import('smtp-server');
  const server = new SMTPServer({
    secure: false,
    key: o.key,
    cert: o.cert,
    name: 'sink.bench.test',
    logger: false,
    disableReverseLookup: true,
    authOptional: true,
    disabledCommands: o.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    size: 50 * 1024 * 1024,
    onConnect(_session, callback) {
      o.onConnect();
      callback();
    },
    onData(stream, _session, callback) {
      let header = '';
      let headerDone = false;
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (headerDone) return;
        header += chunk.toString('latin1');
        const end = header.indexOf('\r\n\r\n');
        if (end >= 0 || header.length > 65_536) {
          headerDone = true;
          if (end >= 0) header = header.slice(0, end);
        }
      });
      stream.on('end', () => {
        o.onMessage(messageIdOf(header), size);
        callback(null, 'Ok: queued');
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return { port: (server.server.address() as { port: number }).port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

// ------------------------------------------------------------------------------------ worker: API client

/** Request loops of the paced phase: enough that the client never waits for an answer to send on time. */
const PACED_LOOPS = 512;

async function runClient(job: ClientJob): Promise<ClientResult> {
  const cpuAtStart = threadCpuMs();
  const result: ClientResult = { firstRequestAt: 0, firstAcceptAt: 0, lastAcceptAt: 0, accepted: 0, refused: 0, errors: [], latencies: [], cpuMs: 0 };
  // A lean HTTP/1.1 client (bench-client.ts) rather than fetch or node:http: undici's streams cost the client
  // thread ~0.25 ms of CPU per request and node:http's ~0.3 ms at 500/s, taken from the two cores the
  // appliance runs on (an API client would run elsewhere).
  const target = new URL(job.url);
  const client = new LeanHttpClient(target.hostname, Number(target.port), job.mode === 'paced' ? 64 : job.concurrency, [`Authorization: Bearer ${job.apiKey}`]);
  // Each email as JSON text, the 2 KB html serialised once: the same bytes JSON.stringify would write.
  const html = JSON.stringify(job.html);
  const scheduled = job.scheduledAt ? `,"scheduled_at":${JSON.stringify(job.scheduledAt)}` : '';
  const content = job.templateId
    ? (i: number) => `"template_id":${JSON.stringify(job.templateId)},"variables":{${TEMPLATE_VARIABLES.map((v, k) => `"${v}":"value ${k} of ${i}"`).join(',')}}`
    : (i: number) => `"subject":"Benchmark message ${i}","html":${html}`;
  const email = (i: number) => `{"from":"Bench <news@${SENDER_DOMAIN}>","to":["user${i}@${DEST_DOMAIN}"],${content(i)},"tags":["bench"]${scheduled}}`;
  const unit = job.mode === 'batch' ? job.batchSize : 1;
  const pacedFrom = wallNow();
  const requests = Math.ceil(job.n / unit);
  let next = 0;
  const note = (e: string) => {
    if (result.errors.length < 10) result.errors.push(e);
  };

  async function loop(): Promise<void> {
    for (;;) {
      const r = next++;
      if (r >= requests) return;
      const from = job.first + r * unit;
      const count = Math.min(unit, job.n - r * unit);
      const body =
        job.mode === 'batch'
          ? `{"emails":[${Array.from({ length: count }, (_, k) => email(from + k)).join(',')}]}`
          : email(from);
      const path = job.mode === 'batch' ? '/emails/batch' : '/emails';
      // Paced (open loop): request r is due at a fixed time and its latency counts from then, so that a slow
      // answer is not hidden by the requests it held back (no coordinated omission).
      let started = wallNow();
      if (job.mode === 'paced') {
        const due = pacedFrom + (r * 1000) / job.rate;
        if (due > started) await sleep(due - started);
        started = due;
      }
      if (!result.firstRequestAt) result.firstRequestAt = started;
      let res: { status: number; text: string };
      try {
        res = await client.post(path, body);
      } catch (err) {
        note(`request ${r}: ${String(err)}`);
        result.refused += count;
        continue;
      }
      const done = wallNow();
      result.latencies.push(done - started);
      const text = res.text;
      if (res.status !== 202) {
        note(`request ${r}: ${res.status} ${text.slice(0, 200)}`);
        result.refused += count;
        continue;
      }
      let ok = count;
      if (job.mode === 'batch') {
        const data = (JSON.parse(text) as { data: Array<{ id?: string; error?: string }> }).data;
        ok = data.filter((d) => d.id).length;
        for (const d of data) if (d.error) note(`batch element: ${d.error}`);
      }
      result.accepted += ok;
      result.refused += count - ok;
      if (!result.firstAcceptAt) result.firstAcceptAt = done;
      result.lastAcceptAt = done;
    }
  }
  await Promise.all(Array.from({ length: job.concurrency }, loop));
  client.close();
  result.cpuMs = threadCpuMs() - cpuAtStart;
  return result;
}

// ---------------------------------------------------------------------------------------- main thread

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}
const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface PhaseFigures {
  name: string;
  accepted: number;
  acceptedPerS: number;
  latP50: number;
  latP99: number;
  latMax: number;
  perEmailP50?: number;
  perEmailP99?: number;
  sinkPerS: number;
  dbPerS: number;
  sinkSeconds: number;
  dbSeconds: number;
  peakRss: number;
  loopDelayP99: number;
  elu: number;
  cpuCores: number;
  /** Appliance CPU (process minus the bench's client and sink threads), ms per accepted email while accepting. */
  cpuPerAccepted: number;
  /** Appliance CPU per delivered email: over the delivery of the backlog (--split) or the whole phase. */
  cpuPerDelivered: number;
  /** The same for the main thread alone (the appliance's event loop; the bench's own polling is small). */
  mainCpuPerAccepted: number;
  mainCpuPerDelivered: number;
  intakeElu: number;
}

interface QueryStat {
  n: number;
  ms: number;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  // Before any thread starts (the render threads compile their modules for a second or two on both cores).
  const signsPerS = rsaSignsPerSecond();
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance, mtaFromConfig } = await import('../src/appliance.js');
  const { newToken } = await import('../src/services/platform/index.js');
  const { createLogger } = await import('../src/core/logger.js');
  const { DELIVER_JOB } = await import('../src/services/sending/index.js');

  // RSS: the whole process (appliance, sink and client threads), sampled every 100 ms.
  let peakRss = 0;
  let phasePeakRss = 0;
  const rssTimer = setInterval(() => {
    const rss = process.memoryUsage.rss(); // rss() alone: memoryUsage() also walks the heap, on the appliance's thread
    peakRss = Math.max(peakRss, rss);
    phasePeakRss = Math.max(phasePeakRss, rss);
  }, 100);

  // The "internet": DNS and the sink MX on their own thread.
  const counters = new Int32Array(new SharedArrayBuffer(COUNTERS * Int32Array.BYTES_PER_ELEMENT));
  const remote = startWorker({ role: 'remote', counters, tls: opts.tls, sink: opts.sink });
  const pending = new Map<number, (r: RemoteReply) => void>();
  let seq = 0;
  const ready = await new Promise<RemoteReady>((resolve, reject) => {
    remote.once('error', reject);
    remote.on('message', (m: RemoteReady | RemoteReply) => {
      if ('ready' in m) resolve(m);
      else pending.get(m.seq)?.(m);
    });
  });
  const call = <T>(req: Omit<RemoteRequest, 'seq'> & { op: RemoteRequest['op'] }): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const s = ++seq;
      pending.set(s, (r) => {
        pending.delete(s);
        if (r.ok) resolve(r.value as T);
        else reject(new Error(r.error));
      });
      remote.postMessage({ ...req, seq: s });
    });
  const dnsSet = (type: 'A' | 'TXT' | 'MX', name: string, values: Array<string | { exchange: string; priority: number }>) =>
    call<void>({ op: 'dns-set', type, name, values } as Omit<RemoteRequest, 'seq'> & { op: 'dns-set' });

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-'));
  const apiKey = newToken('live');
  const config = loadConfig(
    {},
    {
      dataDir,
      hostname: HOSTNAME,
      bind: '127.0.0.1',
      // Every listener on a free port: another appliance (or bench) on the machine may hold the defaults.
      ...ANY_FREE_PORTS,
      logLevel: 'silent',
      dnsServers: [ready.dns],
      outboundPort: ready.sinkPort,
      bootstrapApiKey: apiKey,
      rateLimits: false, // benchmarks measure the send path, not the request limits
      ...(opts.deliveryConcurrency ? { deliveryConcurrency: opts.deliveryConcurrency } : {}),
      ...(opts.connectionsPerHost ? { connectionsPerHost: opts.connectionsPerHost } : {}),
      ...(opts.renderThreads !== undefined ? { renderThreads: opts.renderThreads } : {}),
      ...(opts.renderNice !== undefined ? { renderThreadNice: opts.renderNice } : {}),
    },
  );

  // --profile: time the MTA (DNS + SMTP) per delivery, and every SQL statement by shape.
  const mtaTimes: number[] = [];
  const queryStats = new Map<string, QueryStat>();
  let mta: import('../src/mta/types.js').Mta | undefined;
  if (opts.profile) {
    const real = mtaFromConfig(config, {
      dns: (await import('../src/dns/resolver.js')).createResolver(config.dnsServers, config.dnsTimeoutMs),
      log: createLogger('silent'),
      now: Date.now,
    });
    mta = {
      async deliver(req) {
        const t0 = performance.now();
        try {
          return await real.deliver(req);
        } finally {
          mtaTimes.push(performance.now() - t0);
        }
      },
      close: () => real.close(),
    };
  }

  const appliance = await startAppliance({ config, ...(mta ? { mta } : {}) }).catch(async (err: unknown) => {
    clearInterval(rssTimer);
    await remote.terminate();
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const url = `http://127.0.0.1:${appliance.ports.api.port}`;
  const { ctx } = appliance;

  if (opts.profile) {
    const started = new Map<string, number>();
    const shape = (sql: string) =>
      sql
        .replace(/\s+/g, ' ')
        .replace(/\((?:\?, )*\?\)(?:, \((?:\?, )*\?\))*/g, '(?…)')
        .slice(0, 110);
    // The writer's statements, and the read pool's (marked "(read)"); uids are unique per knex instance.
    const { readsOf } = await import('../src/db/index.js');
    for (const [db, mark] of [[ctx.db, ''], [readsOf(ctx.db), '(read) ']] as const) {
      db.on('query', (q: { __knexQueryUid: string }) => started.set(mark + q.__knexQueryUid, performance.now()));
      const done = (_r: unknown, q: { __knexQueryUid: string; sql: string }) => {
        const t0 = started.get(mark + q.__knexQueryUid);
        if (t0 === undefined) return;
        started.delete(mark + q.__knexQueryUid);
        const key = mark + shape(q.sql);
        const s = queryStats.get(key) ?? { n: 0, ms: 0 };
        s.n++;
        s.ms += performance.now() - t0;
        queryStats.set(key, s);
      };
      db.on('query-response', done);
      db.on('query-error', (e: unknown, q: { __knexQueryUid: string; sql: string }) => done(e, q));
    }
  }

  const api = async <T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(url + p, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };

  // --cpu-profile DIR: the main thread's CPU profile per phase (intake, then delivery or the rest), written as
  // DIR/<phase>-<part>.cpuprofile (open in Chrome DevTools or speedscope).
  // --alloc-profile DIR: the main thread's sampled allocations instead, as DIR/<phase>-<part>.heapprofile;
  // --survivors-profile DIR: only those that outlived a scavenge (what the young generation copies and promotes).
  const profiler = opts.cpuProfileDir
    ? await mainThreadProfiler(opts.cpuProfileDir)
    : opts.allocProfileDir
      ? await mainThreadProfiler(opts.allocProfileDir, 'alloc')
      : opts.survivorsProfileDir
        ? await mainThreadProfiler(opts.survivorsProfileDir, 'survivors')
        : undefined;

  let exitCode = 0;
  try {
    // The sending domain, created and verified the way a customer would.
    interface DomainView {
      id: string;
      status: string;
      dns_records: Array<{ type: 'TXT' | 'MX'; name: string; value: string; priority?: number }>;
    }
    const created = await api<DomainView>('POST', '/domains', { name: SENDER_DOMAIN });
    if (created.status !== 201) throw new Error(`POST /domains: ${created.status} ${JSON.stringify(created.body)}`);
    await dnsSet('A', HOSTNAME, ['127.0.0.1']);
    for (const r of created.body.dns_records) {
      if (r.type === 'MX') await dnsSet('MX', r.name, [{ exchange: r.value, priority: r.priority ?? 10 }]);
      else await dnsSet('TXT', r.name, [r.value]);
    }
    const verified = await api<DomainView>('POST', `/domains/${created.body.id}/verify`);
    if (verified.body.status !== 'verified') throw new Error(`${SENDER_DOMAIN} did not verify: ${JSON.stringify(verified.body)}`);
    // The recipients' domain: its MX is the sink.
    await dnsSet('MX', DEST_DOMAIN, [{ exchange: DEST_MX, priority: 10 }]);
    await dnsSet('A', DEST_MX, ['127.0.0.1']);

    console.log(
      `bench-send: n=${opts.n} per phase, 2 KB html${opts.template ? ' by a template of 10 variables' : ''}, 1 recipient; batch size ${opts.batchSize} × ${opts.batchConcurrency} in flight; ` +
        `singles × ${opts.concurrency}; paced ${opts.rate}/s; deliveryConcurrency ${config.deliveryConcurrency}, connectionsPerHost ${config.connectionsPerHost}, renderThreads ${config.renderThreads} (nice ${config.renderThreadNice}), ` +
        `sink ${opts.sink} with STARTTLS ${opts.tls ? 'on' : 'off'}${opts.split ? '; SPLIT: intake first (scheduled), then delivery of the backlog' : ''}; ${os.cpus().length} CPUs, node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; host speed ${signsPerS} RSA-2048 signs/s per core${opts.profile ? '; PROFILING (timings add overhead)' : ''}`,
    );

    const html = htmlBody();
    let templateId: string | undefined;
    if (opts.template) {
      const created = await api<{ template: { id: string } }>('POST', '/templates', { name: 'bench', subject: 'Benchmark message {{ v0 }}', html: templateHtml(html), variables: TEMPLATE_VARIABLES });
      templateId = created.body.template.id;
      await api('POST', `/templates/${templateId}/publish`);
    }
    const figures: PhaseFigures[] = [];
    let sent = 0;
    const deadline = Date.now() + opts.timeoutS * 1000;

    const deliveredInDb = async (): Promise<number> => {
      const r = await api<{ meta: { total: number } }>('GET', '/emails?status=delivered&per_page=1');
      return r.body.meta.total;
    };

    // A warm-up first (unless --warmup 0): V8 compiles the hot paths of the appliance (and of the sink and the
    // client) during the first thousands of emails, on the same two cores; a server runs for days.
    // The single-request path (one POST /emails per email: other routes, other array shapes in the accept
    // transaction) is compiled apart from the batch one: when a single or paced phase is measured, the
    // warm-up's last quarter goes through it (closed loop), or TurboFan compiles it during the measured phase
    // (with --phases paced after a batch-only warm-up of 10,000: ~470 compilations, ~5 s of a helper thread's
    // CPU, during the 20 s at 500/s; after this warm-up, 3).
    const singles = opts.phases.some((p) => p !== 'batch') ? Math.floor(opts.warmup / 4) : 0;
    const plan = [
      ...(opts.warmup - singles > 0 ? [{ phase: 'batch' as const, n: opts.warmup - singles, warmup: true }] : []),
      ...(singles > 0 ? [{ phase: 'single' as const, n: singles, warmup: true }] : []),
      ...opts.phases.map((phase) => ({ phase, n: opts.n, warmup: false })),
    ];
    for (const { phase, n, warmup } of plan) {
      const label =
        phase === 'batch'
          ? `(a) POST /emails/batch × ${opts.batchSize}`
          : phase === 'single'
            ? `(b) POST /emails × ${opts.concurrency} loops (closed loop: each sends its next when answered)`
            : `(c) POST /emails paced at ${opts.rate}/s (open loop: latency from each request's due time)`;
      const sinkBase = Atomics.load(counters, ACCEPTED);
      const dbBase = await deliveredInDb();
      phasePeakRss = process.memoryUsage.rss();
      mtaTimes.length = 0;
      queryStats.clear();
      const loopDelay = monitorEventLoopDelay({ resolution: 10 });
      loopDelay.enable();
      const sinkCpu0 = await call<number>({ op: 'cpu' });
      const elu0 = performance.eventLoopUtilization();
      const cpu0 = process.cpuUsage();
      const main0 = threadCpuMs();
      let threads1 = threadsCpuMs();
      let elu1 = elu0;
      let cpu1 = cpu0;
      let main1 = main0;
      let sinkCpu1 = sinkCpu0;
      const t0 = wallNow();
      await profiler?.start();

      const job: ClientJob = {
        url,
        apiKey,
        mode: phase,
        n: n,
        concurrency: phase === 'batch' ? opts.batchConcurrency : phase === 'single' ? opts.concurrency : PACED_LOOPS,
        rate: opts.rate,
        batchSize: opts.batchSize,
        first: sent,
        html,
        scheduledAt: opts.split ? new Date(Date.now() + 86_400_000).toISOString() : undefined,
        templateId,
      };
      const client = startWorker({ role: 'client', job });
      const clientDone = new Promise<ClientResult>((resolve, reject) => {
        client.once('message', (r: ClientResult) => resolve(r));
        client.once('error', reject);
      });
      sent += n;

      // The sink's count, polled cheaply (shared memory); the database's, through the API, every 250 ms.
      let sinkAllAt = 0;
      let dbAllAt = 0;
      let releasedAt = 0;
      let result: ClientResult | undefined;
      let intake: { elu: number; cpuCores: number; loopDelayP99: number; peakRss: number; applianceCpuMs: number; mainCpuMs: number } | undefined;
      void clientDone.then((r) => (result = r));
      let lastDbPoll = 0;
      let progressAt = Date.now();
      for (;;) {
        const now = wallNow();
        if (result && !intake) {
          // Intake is over: what the appliance's thread and the process used meanwhile.
          const cpu = process.cpuUsage(cpu0);
          const mainCpuMs = threadCpuMs() - main0;
          await profiler?.stop(`${phase}-intake`);
          if (!opts.split) await profiler?.start(); // the rest: delivering what is still queued
          const sinkNow = await call<number>({ op: 'cpu' });
          intake = {
            applianceCpuMs: (cpu.user + cpu.system) / 1e3 - result.cpuMs - (sinkNow - sinkCpu0),
            mainCpuMs,
            elu: performance.eventLoopUtilization(elu0).utilization,
            cpuCores: (cpu.user + cpu.system) / 1e3 / (now - t0),
            loopDelayP99: loopDelay.percentile(99) / 1e6,
            peakRss: phasePeakRss,
          };
          if (opts.split) {
            // Every email waits a day ahead: make them all due now and wake the queue.
            const at = Date.now();
            await ctx.db('jobs').where('kind', DELIVER_JOB).andWhere('run_at', '>', at).update({ run_at: at });
            await ctx.db('emails').where('status', 'queued').whereNotNull('scheduled_at').update({ scheduled_at: null });
            releasedAt = wallNow();
            await profiler?.start();
            ctx.jobs.wake();
            loopDelay.reset();
            elu1 = performance.eventLoopUtilization();
            cpu1 = process.cpuUsage();
            main1 = threadCpuMs();
            threads1 = threadsCpuMs();
            sinkCpu1 = await call<number>({ op: 'cpu' });
          }
        }
        const atSink = Atomics.load(counters, ACCEPTED) - sinkBase;
        if (!sinkAllAt && atSink >= n) sinkAllAt = now;
        // The database is asked (GET /emails?status=delivered, a count over the team's emails) only once the sink
        // has every message (a message reaches the sink before its outcome is recorded), so that the bench's
        // polling does not load the appliance while it delivers.
        if (!dbAllAt && sinkAllAt && now - lastDbPoll >= 50 && (!opts.split || releasedAt)) {
          lastDbPoll = now;
          const inDb = await deliveredInDb();
          if (inDb - dbBase >= n) dbAllAt = wallNow();
        }
        if (result && sinkAllAt && dbAllAt) break;
        if (result && result.accepted < n && result.accepted + result.refused >= n) {
          throw new Error(`only ${result.accepted} of ${n} accepted: ${result.errors.join(' | ')}`);
        }
        if (Date.now() > deadline) {
          throw new Error(`timed out: accepted ${result?.accepted ?? '?'}, at the sink ${atSink}, delivered in the database ${(await deliveredInDb()) - dbBase} of ${n}`);
        }
        if (Date.now() - progressAt >= 5000) {
          progressAt = Date.now();
          console.log(`  … ${phase}: accepted ${result?.accepted ?? '(running)'}, at the sink ${atSink}/${n}, ${fmt((now - t0) / 1000)} s`);
        }
        await sleep(10);
      }
      await client.terminate();
      await profiler?.stop(`${phase}-${opts.split ? 'delivery' : 'rest'}`);
      loopDelay.disable();
      const r = result!;
      const deliveryFrom = opts.split ? releasedAt : r.firstAcceptAt;
      const elu = performance.eventLoopUtilization(elu1);
      const cpu = process.cpuUsage(cpu1);
      const mainDeliveryMs = threadCpuMs() - main1;
      const perThread = threadsCpuSince(threads1);
      const sinkDeliveryMs = (await call<number>({ op: 'cpu' })) - sinkCpu1;
      // Without --split the window is the whole phase, the client's thread included.
      const deliveryCpuMs = (cpu.user + cpu.system) / 1e3 - sinkDeliveryMs - (opts.split ? 0 : result!.cpuMs);
      const deliveryWall = (Math.max(sinkAllAt, dbAllAt) - (opts.split ? releasedAt : t0)) / 1000;

      const lat = [...r.latencies].sort((a, b) => a - b);
      const acceptSeconds = (r.lastAcceptAt - r.firstRequestAt) / 1000;
      const sinkSeconds = (sinkAllAt - deliveryFrom) / 1000;
      const dbSeconds = (dbAllAt - deliveryFrom) / 1000;
      const f: PhaseFigures = {
        name: phase,
        accepted: r.accepted,
        acceptedPerS: r.accepted / acceptSeconds,
        latP50: percentile(lat, 50),
        latP99: percentile(lat, 99),
        latMax: lat[lat.length - 1] ?? NaN,
        sinkPerS: n / sinkSeconds,
        dbPerS: n / dbSeconds,
        sinkSeconds,
        dbSeconds,
        peakRss: phasePeakRss,
        loopDelayP99: loopDelay.percentile(99) / 1e6,
        elu: elu.utilization,
        cpuCores: (cpu.user + cpu.system) / 1e6 / deliveryWall,
        cpuPerAccepted: intake!.applianceCpuMs / result!.accepted,
        cpuPerDelivered: deliveryCpuMs / n,
        mainCpuPerAccepted: intake!.mainCpuMs / result!.accepted,
        mainCpuPerDelivered: mainDeliveryMs / n,
        intakeElu: intake!.elu,
      };
      if (phase === 'batch') {
        const per = lat.map((ms) => ms / opts.batchSize);
        f.perEmailP50 = percentile(per, 50);
        f.perEmailP99 = percentile(per, 99);
      }
      if (warmup) {
        console.log(`  warm-up: ${n} emails (${phase}) accepted and delivered in ${fmt(Math.max(sinkSeconds, dbSeconds), 2)} s, not counted`);
        continue;
      }
      figures.push(f);

      console.log(`\n${label}`);
      console.log(`  accepted        ${r.accepted} in ${fmt(acceptSeconds, 2)} s = ${fmt(f.acceptedPerS, 0)}/s`);
      if (phase === 'batch') {
        console.log(`  API latency     per batch request p50 ${fmt(f.latP50)} ms, p99 ${fmt(f.latP99)} ms, max ${fmt(f.latMax)} ms (${lat.length} requests)`);
        console.log(`                  per email (batch latency / ${opts.batchSize}) p50 ${fmt(f.perEmailP50!, 2)} ms, p99 ${fmt(f.perEmailP99!, 2)} ms`);
      } else {
        console.log(`  API latency     per request p50 ${fmt(f.latP50)} ms, p99 ${fmt(f.latP99)} ms, max ${fmt(f.latMax)} ms (${lat.length} requests)`);
      }
      const since = opts.split ? 'from the release of the backlog' : 'from the first accept';
      console.log(`  delivered       sink has all ${n} after ${fmt(sinkSeconds, 2)} s = ${fmt(f.sinkPerS, 0)}/s; GET /emails shows all delivered after ${fmt(dbSeconds, 2)} s = ${fmt(f.dbPerS, 0)}/s (${since})`);
      console.log(`  peak RSS        ${mb(f.peakRss)}`);
      const i = intake!;
      console.log(`  appliance loop  while accepting: utilisation ${fmt(i.elu * 100, 0)}%, event-loop delay p99 ${fmt(i.loopDelayP99)} ms, process CPU ${fmt(i.cpuCores, 2)} cores`);
      console.log(`                  ${opts.split ? 'while delivering the backlog' : 'whole phase'}: utilisation ${fmt(f.elu * 100, 0)}%, event-loop delay p99 ${fmt(f.loopDelayP99)} ms, process CPU ${fmt(f.cpuCores, 2)} cores; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
      console.log(
        `  appliance CPU   per accepted email (while accepting) ${fmt(f.cpuPerAccepted, 3)} ms (main thread ${fmt(f.mainCpuPerAccepted, 3)} ms); ` +
          `per delivered email (${opts.split ? 'delivering the backlog' : 'whole phase, intake included'}) ${fmt(f.cpuPerDelivered, 3)} ms (main thread ${fmt(f.mainCpuPerDelivered, 3)} ms)`,
      );
      console.log(`  threads' CPU    ${perThread} (the client's and the sink's threads included)`);
      console.log(`  harness CPU     the API client ${fmt(r.cpuMs / r.latencies.length, 3)} ms per request, the DNS server and sink MX ${fmt(sinkDeliveryMs / n, 3)} ms per email`);
      if (r.errors.length) console.log(`  errors          ${r.errors.join(' | ')}`);
      if (opts.profile) printProfile(mtaTimes, queryStats, n, (Math.max(sinkAllAt, dbAllAt) - t0) / 1000);
    }

    // The end state, straight from the database, and the sink's own count.
    const byStatus = (await ctx.db('emails').select('status').count({ n: '*' }).groupBy('status')) as Array<{ status: string; n: number }>;
    const recipientsByStatus = (await ctx.db('email_recipients').select('status').count({ n: '*' }).groupBy('status')) as Array<{ status: string; n: number }>;
    const jobs = await ctx.jobs.stats();
    const sink = await call<SinkSummary>({ op: 'summary' });
    const expected = plan.reduce((sum, p) => sum + p.n, 0);
    const statuses = Object.fromEntries(byStatus.map((r) => [r.status, Number(r.n)]));
    const recips = Object.fromEntries(recipientsByStatus.map((r) => [r.status, Number(r.n)]));
    console.log(`\nend state`);
    console.log(`  emails by status      ${JSON.stringify(statuses)} (expected ${expected} delivered)`);
    console.log(`  recipients by status  ${JSON.stringify(recips)}`);
    console.log(`  jobs                  ready ${jobs.ready}, dead ${jobs.dead}`);
    console.log(`  sink                  ${sink.accepted} accepted, ${sink.distinct} distinct Message-IDs, ${sink.duplicates} duplicates, ${Atomics.load(counters, NO_MESSAGE_ID)} without Message-ID, ${Atomics.load(counters, CONNECTIONS)} connections, ${mb(sink.bytes)} received`);
    const correct = statuses.delivered === expected && sink.distinct === expected && sink.duplicates === 0 && jobs.ready === 0 && jobs.dead === 0;
    if (!correct) exitCode = 1;

    // The targets, each on its own and per phase: ≥ 1,000 delivered/s where the offered load is not capped
    // (batch, single); p99 < 50 ms for a single POST /emails, closed loop (at saturation: latency there is
    // concurrency ÷ throughput) and paced (at the offered rate).
    const verdicts = [
      ...figures.filter((f) => f.name !== 'paced').map((f) => `≥1000 delivered/s (${f.name}) ${Math.min(f.sinkPerS, f.dbPerS) >= 1000 ? 'met' : 'missed'}`),
      ...figures.filter((f) => f.name !== 'batch').map((f) => `p99 < 50 ms (${f.name}) ${f.latP99 < 50 ? 'met' : 'missed'}`),
    ];
    const dlv = (f: PhaseFigures) => fmt(Math.min(f.sinkPerS, f.dbPerS), 0);
    const parts = figures.map((f) =>
      f.name === 'batch'
        ? `batch: ${fmt(f.acceptedPerS, 0)} acc/s, p50/p99 ${fmt(f.latP50, 0)}/${fmt(f.latP99, 0)} ms per batch (${fmt(f.perEmailP50!, 2)}/${fmt(f.perEmailP99!, 2)} per email), ${dlv(f)} dlv/s, ${cpuText(f)}, ${mb(f.peakRss)}`
        : f.name === 'single'
          ? `single×${opts.concurrency}: ${fmt(f.acceptedPerS, 0)} acc/s, p50/p99 ${fmt(f.latP50, 1)}/${fmt(f.latP99, 1)} ms, ${dlv(f)} dlv/s, ${cpuText(f)}, ${mb(f.peakRss)}`
          : `paced ${opts.rate}/s: ${fmt(f.acceptedPerS, 0)} acc/s, p50/p99 ${fmt(f.latP50, 1)}/${fmt(f.latP99, 1)} ms, ${dlv(f)} dlv/s, ${cpuText(f)}`,
    );
    console.log(
      `\nSUMMARY n=${opts.n}${opts.warmup ? ` after a warm-up of ${opts.warmup}` : ''} (host ${signsPerS} RSA signs/s): ${parts.join('; ')}; peak RSS ${mb(peakRss)}; ${correct ? 'all delivered exactly once' : 'NOT ALL DELIVERED EXACTLY ONCE'}; ` +
        `targets: ${verdicts.join(', ')}`,
    );
  } catch (err) {
    console.error(`bench-send failed: ${err instanceof Error ? err.stack : String(err)}`);
    exitCode = 1;
  } finally {
    clearInterval(rssTimer);
    await appliance.stop();
    await call<void>({ op: 'stop' }).catch(() => undefined);
    await remote.terminate();
    if (opts.keep) console.log(`data dir kept: ${dataDir}`);
    else rmSync(dataDir, { recursive: true, force: true });
  }
  process.exitCode = exitCode;
}

/** CPU ms per accepted / per delivered email (main thread in brackets) and the main thread's utilisation while accepting / delivering. */
const cpuText = (f: PhaseFigures) =>
  `CPU ${fmt(f.cpuPerAccepted, 2)} ms/acc (main ${fmt(f.mainCpuPerAccepted, 2)}), ${fmt(f.cpuPerDelivered, 2)} ms/dlv (main ${fmt(f.mainCpuPerDelivered, 2)}), ELU ${fmt(f.intakeElu * 100, 0)}%/${fmt(f.elu * 100, 0)}%`;

function printProfile(mtaTimes: number[], queries: Map<string, QueryStat>, n: number, wallS: number): void {
  const sorted = [...mtaTimes].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  console.log(`  profile: mta.deliver (DNS + SMTP) ${sorted.length} calls, mean ${fmt(sum / sorted.length, 2)} ms, p50 ${fmt(percentile(sorted, 50), 2)} ms, p99 ${fmt(percentile(sorted, 99), 2)} ms`);
  const rows = [...queries].sort((a, b) => b[1].ms - a[1].ms);
  const total = rows.reduce((a, [, s]) => a + s.ms, 0);
  const count = rows.reduce((a, [, s]) => a + s.n, 0);
  console.log(`  profile: SQL ${count} statements (${fmt(count / n, 1)} per email), ${fmt(total / 1000, 2)} s summed latency over ${fmt(wallS, 1)} s wall (the writer's queue on its one connection; "(read)": the read pool's)`);
  for (const [sql, s] of rows.slice(0, 24)) {
    console.log(`    ${String(s.n).padStart(7)} × ${fmt(s.ms / s.n, 3).padStart(7)} ms = ${fmt(s.ms / 1000, 2).padStart(6)} s  ${sql}`);
  }
}

// ------------------------------------------------------------------------------------------ dispatch

type WorkerData = { role: 'remote'; counters: Int32Array; tls: boolean; sink: Options['sink'] } | { role: 'client'; job: ClientJob };

if (isMainThread) {
  await main();
} else {
  const data = workerData as WorkerData;
  nameThisThread(data.role === 'remote' ? 'bench-internet' : 'bench-client');
  if (data.role === 'remote') await runRemote(data.counters, data.tls, data.sink);
  else parentPort!.postMessage(await runClient(data.job));
}
