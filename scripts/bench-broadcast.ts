// Broadcast benchmark: the real appliance (startAppliance, real clock) sends one broadcast to a segment of
// --contacts contacts (default 100,000) through a loopback DNS server and the lean sink MX (bench-sink.ts),
// while transactional POST /emails arrive at --rate per second.
//
//   npm run bench:broadcast -- [--contacts 100000] [--rate 20] [--page <MAIL_BROADCAST_PAGE_SIZE>] [--in-flight <MAIL_BROADCAST_MAX_IN_FLIGHT>] [--no-tls] [--keep]
//
// The "internet" (DNS server, sink MX) and the transactional client run on a worker thread, so their
// JavaScript does not share the appliance's event loop (they share the machine's two CPUs). Printed:
// contacts imported per second; the fan-out rate (recipients handed to the send path per second, from
// POST /send to the last recipient queued); delivered per second and the time to the last delivery (from
// POST /send until the sink has every recipient's message); POST /emails p50/p99 while the broadcast runs (and
// how long after its accept each transactional email reached the sink); the process's RSS before the broadcast
// and its peak during it; the appliance's CPU per message sent (all its threads, and its main thread alone:
// steadier than the rates on a shared machine); duplicates seen by the sink (by Message-ID).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { percentile } from './bench-helpers.js';
import { threadCpuMs } from './bench-cpu.js';
import { startLeanSink } from './bench-sink.js';

const HOSTNAME = 'mx.bench.test';
const SENDER_DOMAIN = 'bench-sender.example';
const DEST_DOMAIN = 'bench-dest.example';
const DEST_MX = 'mx.bench-dest.example';
const METRICS_TOKEN = 'bench-broadcast-metrics-token';

interface Options {
  contacts: number;
  rate: number;
  page: number | undefined;
  inFlight: number | undefined;
  tls: boolean;
  keep: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { contacts: 100_000, rate: 20, page: undefined, inFlight: undefined, tls: true, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--contacts') o.contacts = value();
    else if (flag === '--rate') o.rate = value();
    else if (flag === '--page') o.page = value();
    else if (flag === '--in-flight') o.inFlight = value();
    else if (flag === '--no-tls') o.tls = false;
    else if (flag === '--keep') o.keep = true;
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.contacts >= 1 && o.rate > 0)) throw new Error('--contacts ≥ 1, --rate > 0');
  return o;
}

// ------------------------------------------------------------------ worker: DNS, sink MX, transactional client

type Req =
  | { op: 'dns-set'; type: 'A' | 'TXT' | 'MX'; name: string; values: Array<string | { exchange: string; priority: number }> }
  | { op: 'tx-start'; url: string; apiKey: string; rate: number }
  | { op: 'tx-stop' }
  | { op: 'summary' }
  | { op: 'cpu' }
  | { op: 'stop' };

async function runRemote(tls: boolean): Promise<void> {
  const { startDns } = await import('../test/helpers/dns-server.js');
  const { sinkTlsMaterial } = await import('../test/helpers/smtp-sink.js');
  const port = parentPort!;
  let dns: Awaited<ReturnType<typeof startDns>> | undefined;
  for (let attempt = 1; !dns; attempt++) {
    try {
      dns = await startDns();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 5) throw err;
    }
  }
  const seen = new Set<string>();
  let accepted = 0;
  let duplicates = 0;
  let last = 0;
  /** Transactional emails: Message-ID → when accepted by the API (ms, performance clock of this thread). */
  const txAccepted = new Map<string, number>();
  const txLatency: number[] = [];
  const txDelivery: number[] = [];
  const { key, cert } = await sinkTlsMaterial();
  const sink = await startLeanSink({
    key,
    cert,
    tls,
    name: 'sink.bench.test',
    onMessage(id) {
      accepted++;
      last = performance.now();
      if (!id) return;
      if (seen.has(id)) duplicates++;
      seen.add(id);
      const t0 = txAccepted.get(id);
      if (t0 !== undefined) {
        txDelivery.push(performance.now() - t0);
        txAccepted.delete(id);
      }
    },
  });
  let txTimer: NodeJS.Timeout | undefined;
  let txSent = 0;
  port.on('message', (msg: Req & { seq: number }) => {
    const reply = (value?: unknown) => port.postMessage({ seq: msg.seq, value });
    if (msg.op === 'dns-set') {
      dns.set(msg.type, msg.name, msg.values);
      reply();
    } else if (msg.op === 'tx-start') {
      // Paced: one POST /emails every 1/rate s, whatever the answers (open loop).
      const every = 1000 / msg.rate;
      const started = performance.now();
      let next = 0;
      const tick = () => {
        const now = performance.now();
        while (started + next * every <= now) {
          const i = txSent++;
          next++;
          const t0 = performance.now();
          void fetch(`${msg.url}/emails`, {
            method: 'POST',
            headers: { authorization: `Bearer ${msg.apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ from: `Shop <orders@${SENDER_DOMAIN}>`, to: [`customer${i}@${DEST_DOMAIN}`], subject: `Your order ${i}`, html: `<p>Order ${i} confirmed.</p>` }),
          })
            .then(async (res) => {
              const body = (await res.json()) as { id?: string };
              const done = performance.now();
              txLatency.push(done - t0);
              if (res.status === 202 && body.id) txAccepted.set(`<${body.id}@${HOSTNAME}>`, done);
            })
            .catch(() => txLatency.push(Infinity));
        }
        txTimer = setTimeout(tick, Math.max(1, every / 2));
      };
      tick();
      reply();
    } else if (msg.op === 'tx-stop') {
      clearTimeout(txTimer);
      reply();
    } else if (msg.op === 'cpu') {
      reply(threadCpuMs());
    } else if (msg.op === 'summary') {
      reply({ accepted, duplicates, distinct: seen.size, last, txSent, txLatency: [...txLatency], txDelivery: [...txDelivery], txUndelivered: txAccepted.size, now: performance.now() });
    } else if (msg.op === 'stop') {
      clearTimeout(txTimer);
      void sink.close().then(() => dns.stop()).then(() => {
        reply();
        port.close();
      });
    }
  });
  port.postMessage({ ready: true, dns: dns.server, sinkPort: sink.port });
}

interface Summary {
  accepted: number;
  duplicates: number;
  distinct: number;
  last: number;
  txSent: number;
  txLatency: number[];
  txDelivery: number[];
  txUndelivered: number;
  now: number;
}

function startWorker(data: unknown): Worker {
  const self = import.meta.url;
  const boot = `import('tsx/esm/api').then((api) => api.tsImport(${JSON.stringify(self)}, ${JSON.stringify(self)}))`;
  return new Worker(boot, { eval: true, workerData: data });
}

// ------------------------------------------------------------------------------------------------- main

const mb = (b: number) => (b / 1024 / 1024).toFixed(0);
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'failed');

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const { newToken } = await import('../src/services/platform/index.js');

  const remote = startWorker({ remote: true, tls: o.tls });
  const ready = await new Promise<{ dns: { host: string; port: number }; sinkPort: number }>((resolve, reject) => {
    remote.once('message', resolve);
    remote.once('error', reject);
  });
  let seq = 0;
  const pending = new Map<number, (v: unknown) => void>();
  remote.on('message', (m: { seq?: number; value?: unknown }) => {
    if (m.seq !== undefined) pending.get(m.seq)?.(m.value);
  });
  const call = <T>(req: Req) =>
    new Promise<T>((resolve) => {
      const s = ++seq;
      pending.set(s, (v) => {
        pending.delete(s);
        resolve(v as T);
      });
      remote.postMessage({ ...req, seq: s });
    });

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-broadcast-'));
  const apiKey = newToken('live');
  const config = loadConfig(
    {},
    {
      dataDir,
      hostname: HOSTNAME,
      bind: '127.0.0.1',
      ...ANY_FREE_PORTS,
      logLevel: 'silent',
      dnsServers: [ready.dns],
      outboundPort: ready.sinkPort,
      bootstrapApiKey: apiKey,
      rateLimits: false,
      metricsToken: METRICS_TOKEN,
      ...(o.page ? { broadcastPageSize: o.page } : {}),
      ...(o.inFlight ? { broadcastMaxInFlight: o.inFlight } : {}),
    },
  );
  const appliance = await startAppliance({ config });
  const url = `http://127.0.0.1:${appliance.ports.api.port}`;
  const api = async <T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
  };
  // Where the memory is: each isolate's V8 heap (reserved) and external memory (GET /metrics), the process's
  // anonymous memory (one read of smaps_rollup: not in the sampling loop, see below).
  const memory = async (): Promise<string> => {
    const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const per = (name: string) =>
      [...text.matchAll(new RegExp(`^${name}\\{thread="([^"]+)"\\} (\\S+)$`, 'gm'))].map((m) => `${m[1]} ${mb(Number(m[2]))}`).join(', ');
    const anon = /^Anonymous:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1];
    return `heap total MB: ${per('mail_thread_heap_total_bytes')}; external MB: ${per('mail_thread_external_bytes')}; anonymous ${anon ? mb(Number(anon) * 1024) : '?'} MB, RSS ${mb(process.memoryUsage.rss())} MB`;
  };
  // RSS sampled from /proc/self/stat (process.memoryUsage.rss): reading smaps_rollup instead (residentMemory)
  // walks every mapping of the process with its memory map locked; every 100 ms it took a third of the
  // appliance's main thread on a loaded machine, and stalled the other threads' page faults.
  let peakRss = 0;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
  let exitCode = 0;
  try {
    const created = await api<{ id: string; dns_records: Array<{ type: 'TXT' | 'MX'; name: string; value: string; priority?: number }> }>('POST', '/domains', { name: SENDER_DOMAIN });
    await call({ op: 'dns-set', type: 'A', name: HOSTNAME, values: ['127.0.0.1'] });
    for (const r of created.body.dns_records) {
      if (r.type === 'MX') await call({ op: 'dns-set', type: 'MX', name: r.name, values: [{ exchange: r.value, priority: r.priority ?? 10 }] });
      else if (r.type === 'TXT') await call({ op: 'dns-set', type: 'TXT', name: r.name, values: [r.value] });
    }
    const verified = await api<{ status: string }>('POST', `/domains/${created.body.id}/verify`);
    if (verified.body.status !== 'verified') throw new Error(`${SENDER_DOMAIN} did not verify`);
    await call({ op: 'dns-set', type: 'MX', name: DEST_DOMAIN, values: [{ exchange: DEST_MX, priority: 10 }] });
    await call({ op: 'dns-set', type: 'A', name: DEST_MX, values: ['127.0.0.1'] });
    console.log(
      `bench-broadcast: ${o.contacts} contacts; transactional POST /emails at ${o.rate}/s during the broadcast; page ${config.broadcastPageSize}, in flight ≤ ${config.broadcastMaxInFlight}; ` +
        `deliveryConcurrency ${config.deliveryConcurrency}, renderThreads ${config.renderThreads}, STARTTLS ${o.tls ? 'on' : 'off'}; ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`,
    );

    // The audience.
    await api('POST', '/contact-properties', { name: 'plan', type: 'string' });
    const seg = (await api<{ segment: { id: string } }>('POST', '/segments', { name: 'Everyone' })).body.segment.id;
    const t0 = performance.now();
    for (let from = 0; from < o.contacts; from += 10_000) {
      const lines = ['email,first_name,plan'];
      for (let i = from; i < Math.min(o.contacts, from + 10_000); i++) lines.push(`reader${i}@${DEST_DOMAIN},Reader${i},${['free', 'pro', 'team'][i % 3]}`);
      const r = await api('POST', '/contacts/import', { csv: lines.join('\n'), segment_id: seg });
      if (r.status !== 200) throw new Error(`import: ${r.status} ${JSON.stringify(r.body)}`);
    }
    console.log(`imported ${o.contacts} contacts in ${((performance.now() - t0) / 1000).toFixed(1)} s (${Math.round(o.contacts / ((performance.now() - t0) / 1000))}/s)`);

    const html = `<!doctype html><html><body><h1>Hello {{ contact.first_name }}</h1>${'<p>This month: new features, fixes and a story worth reading. Your plan: {{ contact.plan }}.</p>'.repeat(12)}<p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p></body></html>`;
    const b = (await api<{ broadcast: { id: string } }>('POST', '/broadcasts', { name: 'Bench', from: `News <news@${SENDER_DOMAIN}>`, subject: 'News for {{ contact.first_name }}', html, segment_ids: [seg] })).body.broadcast;
    const { db } = appliance.ctx;
    const pk = ((await db('broadcasts').where({ id: b.id }).first('pk')) as { pk: number }).pk;
    global.gc?.();
    const rssBefore = process.memoryUsage.rss();
    const memoryBefore = await memory();
    peakRss = rssBefore;
    const before = await call<Summary>({ op: 'summary' });
    const start = performance.now();
    const cpu0 = process.cpuUsage();
    const main0 = threadCpuMs();
    const remote0 = await call<number>({ op: 'cpu' });
    const sendAt = before.now; // the worker's clock at (about) the same moment
    const sent = await api('POST', `/broadcasts/${b.id}/send`);
    if (sent.status !== 200) throw new Error(`send: ${sent.status} ${JSON.stringify(sent.body)}`);
    await call({ op: 'tx-start', url, apiKey, rate: o.rate });
    let fanoutDone = 0;
    let status = 'sending';
    const deadline = start + Math.max(600_000, o.contacts * 20);
    for (;;) {
      await new Promise((r) => setTimeout(r, 250));
      if (!fanoutDone) {
        const [row] = (await db('broadcast_recipients').where({ broadcast_pk: pk }).whereNot('status', 'pending').count({ n: '*' })) as Array<{ n: number }>;
        const frozen = ((await db('broadcasts').where({ pk }).first('frozen', 'recipient_count')) as { frozen: number; recipient_count: number });
        if (frozen.frozen && Number(row?.n ?? 0) >= frozen.recipient_count) fanoutDone = performance.now();
      }
      status = ((await db('broadcasts').where({ pk }).first('status')) as { status: string }).status;
      const s = await call<Summary>({ op: 'summary' });
      if (status !== 'sending' && s.accepted - before.accepted >= o.contacts) break;
      if (performance.now() > deadline) throw new Error(`timed out: status ${status}, ${s.accepted - before.accepted} delivered`);
    }
    await call({ op: 'tx-stop' });
    const memoryAfter = await memory();
    // The appliance's CPU (every thread but the "internet" worker's), per message it sent (broadcast + transactional).
    const cpu = process.cpuUsage(cpu0);
    const mainCpu = threadCpuMs() - main0;
    const remoteCpu = (await call<number>({ op: 'cpu' })) - remote0;
    const end = await call<Summary>({ op: 'summary' });
    const messages = end.accepted - before.accepted;
    const applianceCpu = (cpu.user + cpu.system) / 1000 - remoteCpu;
    const lastDelivery = end.last - sendAt;
    const fanoutS = (fanoutDone - start) / 1000;
    const lat = end.txLatency.sort((a, b2) => a - b2);
    const del = end.txDelivery.sort((a, b2) => a - b2);
    const growth = peakRss - rssBefore;
    console.log(`broadcast ${status}: ${o.contacts} recipients`);
    console.log(`fan-out: ${fanoutS.toFixed(1)} s, ${Math.round(o.contacts / fanoutS)} recipients queued/s`);
    console.log(`delivered: ${Math.round(o.contacts / (lastDelivery / 1000))}/s; last delivery ${(lastDelivery / 1000).toFixed(1)} s after POST /send; sink duplicates ${end.duplicates}`);
    console.log(`transactional POST /emails during the broadcast: ${lat.length} requests, p50 ${ms(percentile(lat, 50))} ms, p99 ${ms(percentile(lat, 99))} ms; accept→sink p50 ${ms(percentile(del, 50))} ms, p99 ${ms(percentile(del, 99))} ms (${end.txUndelivered} not yet delivered at the end)`);
    console.log(`RSS: ${mb(rssBefore)} MB before, peak ${mb(peakRss)} MB (+${mb(growth)} MB)`);
    console.log(`memory before: ${memoryBefore}`);
    console.log(`memory at the end: ${memoryAfter}`);
    console.log(`appliance CPU: ${(applianceCpu / messages).toFixed(2)} ms per message sent (${messages}), main thread ${(mainCpu / messages).toFixed(2)} ms; the internet thread ${(remoteCpu / messages).toFixed(2)} ms`);
    console.log(
      `SUMMARY contacts=${o.contacts} fanout_per_s=${Math.round(o.contacts / fanoutS)} delivered_per_s=${Math.round(o.contacts / (lastDelivery / 1000))} last_delivery_s=${(lastDelivery / 1000).toFixed(1)} ` +
        `tx_p99_ms=${ms(percentile(lat, 99))} rss_growth_mb=${mb(growth)} cpu_ms_per_msg=${(applianceCpu / messages).toFixed(2)} main_ms_per_msg=${(mainCpu / messages).toFixed(2)} duplicates=${end.duplicates} targets: delivered≥1000/s ${o.contacts / (lastDelivery / 1000) >= 1000 ? 'yes' : 'no'}, p99<100ms ${percentile(lat, 99) < 100 ? 'yes' : 'no'}, rss<100MB ${growth < 100 * 1024 * 1024 ? 'yes' : 'no'}`,
    );
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    clearInterval(rssTimer);
    await appliance.stop();
    await call({ op: 'stop' });
    await remote.terminate();
    if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
    else console.log(`data kept in ${dataDir}`);
  }
  process.exit(exitCode);
}

if (isMainThread) void main();
else if ((workerData as { remote?: boolean })?.remote) void runRemote((workerData as { tls: boolean }).tls);
