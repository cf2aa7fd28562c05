// Tracking benchmark: the appliance as `npm start` runs it (src/main.ts, in a process of its own, rate limits
// off), answering open-pixel and click hits whose URLs come from messages it really delivered.
//
//   npm run bench:tracking -- [--emails 200] [--n 60000] [--warmup 10000] [--concurrency 32] [--cpu-profile DIR] [--keep]
//
// Set-up (not measured): a verified sending domain with open and click tracking (a loopback DNS server, dns2,
// serves its records and the destination's MX), --emails emails of five links each sent through the API and
// delivered to a loopback SMTP sink (test/helpers/smtp-sink.ts); their tracking URLs are read from the
// received messages (mailparser). Measured: --n hits (3 opens for 2 clicks, over every URL, six user agents:
// Gmail's and Yahoo's proxies, Apple Mail and MPP, a phone and a desktop browser) from --concurrency closed
// loops (each sends its next request when answered) through bench-client.ts's lean HTTP/1.1 client, after
// --warmup hits not counted (the first hit loads the GeoIP table; V8 compiles the hot paths). Reported: hits
// per second, latency p50/p99, the appliance's CPU time per hit and its RSS (before the first hit, after it,
// peak: /proc/<pid>/status), and the timeline entries written (every hit is one).
// Target (issue 30): ≥ 5,000 hits/s with p99 < 20 ms on the 2-core machine.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { simpleParser } from 'mailparser';
import { LeanHttpClient } from './bench-client.js';
import { loadAverage } from './bench-cpu.js';
import { percentile } from './bench-helpers.js';
import { CONFIG_ENV, formatDnsServer, type Config } from '../src/config.js';
import { newToken } from '../src/services/platform/index.js';
import { startDns, type TestDns } from '../test/helpers/dns-server.js';
import { publishRecords, type DomainView } from '../test/helpers/domains.js';
import { startSmtpSink } from '../test/helpers/smtp-sink.js';

interface Options {
  emails: number;
  n: number;
  warmup: number;
  concurrency: number;
  keep: boolean;
  /** Directory for the appliance's CPU profile of the whole run (node --cpu-prof, written when it stops). */
  cpuProfileDir: string | undefined;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { emails: 200, n: 60_000, warmup: 10_000, concurrency: 32, keep: false, cpuProfileDir: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--emails') o.emails = value();
    else if (flag === '--n') o.n = value();
    else if (flag === '--warmup') o.warmup = value();
    else if (flag === '--concurrency') o.concurrency = value();
    else if (flag === '--keep') o.keep = true;
    else if (flag === '--cpu-profile') o.cpuProfileDir = inline ?? argv[++i];
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.emails >= 1 && o.n >= 1 && o.warmup >= 0 && o.concurrency >= 1)) throw new Error('--emails, --n, --concurrency ≥ 1; --warmup ≥ 0');
  return o;
}

const AGENTS = [
  'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
  'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'Mozilla/5.0',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
];

const html = (i: number) =>
  `<!DOCTYPE html><html><body><h1>Issue ${i}</h1>` +
  Array.from({ length: 5 }, (_, k) => `<p>Story ${k}: <a href="https://news.example/${i}/story-${k}?utm_source=mail&amp;utm_campaign=bench">read more</a></p>`).join('') +
  `<p><a href="mailto:editor@acme.example">Write to us</a></p></body></html>`;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface ProcStatus {
  rssMb: number;
  peakMb: number;
  cpuMs: number;
}

function procStatus(pid: number): ProcStatus {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024, cpuMs: (Number(stat[11]) + Number(stat[12])) * 10 };
}

async function startApplianceProcess(dns: TestDns, sinkPort: number, dataDir: string, apiPort: number, key: string, cpuProfileDir?: string): Promise<ChildProcess> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const settings: Partial<Record<keyof Config, string>> = {
    dataDir,
    bind: '127.0.0.1',
    hostname: 'mx.appliance.test',
    apiPort: String(apiPort),
    publicUrl: `http://127.0.0.1:${apiPort}`,
    mxPort: '0',
    submissionPort: '0',
    submissionsPort: '0',
    imapPort: '0',
    imapsPort: '0',
    pop3Port: '0',
    pop3sPort: '0',
    outboundPort: String(sinkPort),
    dnsServers: formatDnsServer(dns.server),
    bootstrapApiKey: key,
    logLevel: 'warn',
    rateLimits: 'off',
  };
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MAIL_')));
  for (const [k, v] of Object.entries(settings)) env[CONFIG_ENV[k as keyof Config]] = v;
  const profile = cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', path.join(root, 'src/main.ts')], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the appliance exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${apiPort}/health`)).ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the appliance did not answer /health within a minute');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const dns = await startDns();
  const sink = await startSmtpSink();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-tracking-'));
  const key = newToken('live');
  const apiPort = await freePort();
  const child = await startApplianceProcess(dns, sink.port, dataDir, apiPort, key, o.cpuProfileDir);
  const pid = child.pid!;
  const base = `http://127.0.0.1:${apiPort}`;
  const api = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await fetch(base + p, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };

  // A verified domain with open and click tracking, and a destination whose MX is the sink.
  const domain = await api<DomainView>('POST', '/domains', { name: 'acme.example', open_tracking: true, click_tracking: true });
  publishRecords(dns, domain);
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const verified = await api<DomainView>('POST', `/domains/${domain.id}/verify`);
  if (verified.status !== 'verified') throw new Error(`the domain did not verify: ${JSON.stringify(verified.dns_records)}`);
  for (let i = 0; i < o.emails; i += 100) {
    const emails = Array.from({ length: Math.min(100, o.emails - i) }, (_, k) => ({ from: 'News <news@acme.example>', to: `reader${i + k}@dest.example`, subject: `Issue ${i + k}`, html: html(i + k) }));
    await api('POST', '/emails/batch', { emails });
  }
  const deadline = Date.now() + 120_000;
  while (sink.accepted.length < o.emails) {
    if (Date.now() > deadline) throw new Error(`only ${sink.accepted.length} of ${o.emails} messages delivered in 2 minutes`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const opens: string[] = [];
  const clicks: string[] = [];
  for (const tx of sink.accepted) {
    const parsed = await simpleParser(tx.raw);
    for (const m of String(parsed.html).matchAll(/"https?:\/\/[^/"]+(\/track\/(open|click)\/[a-z2-7]{48})"/g)) (m[2] === 'open' ? opens : clicks).push(m[1]!);
  }
  if (opens.length !== o.emails || clicks.length !== o.emails * 5) throw new Error(`expected ${o.emails} pixels and ${o.emails * 5} links, found ${opens.length} and ${clicks.length}`);

  const client = new LeanHttpClient('127.0.0.1', apiPort, o.concurrency, []);
  const hit = (i: number) => {
    const ua = `User-Agent: ${AGENTS[i % AGENTS.length]}`;
    return i % 5 < 3 ? client.get(opens[(i * 7) % opens.length]!, [ua]) : client.get(clicks[(i * 13) % clicks.length]!, [ua]);
  };
  const run = async (from: number, count: number): Promise<{ seconds: number; latencies: number[] }> => {
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (next < count) {
          const i = from + next++;
          const t0 = performance.now();
          const res = await hit(i);
          latencies.push(performance.now() - t0);
          const want = i % 5 < 3 ? 200 : 302;
          if (res.status !== want) throw new Error(`hit ${i} answered ${res.status} (wanted ${want}): ${res.text.slice(0, 200)}`);
        }
      }),
    );
    return { seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) };
  };

  const before = procStatus(pid);
  console.log(
    `bench:tracking  ${o.emails} emails delivered (${opens.length} pixels, ${clicks.length} links), ${o.concurrency} closed loops, ${AGENTS.length} user agents; ` +
      `node ${process.version}; load average ${loadAverage()}; appliance RSS before the first hit ${before.rssMb.toFixed(0)} MB`,
  );
  if (o.warmup > 0) await run(0, o.warmup);
  const warm = procStatus(pid);
  console.log(`warm-up: ${o.warmup} hits (the first loads the GeoIP table); appliance RSS ${warm.rssMb.toFixed(0)} MB (+${(warm.rssMb - before.rssMb).toFixed(0)} MB)`);
  const r = await run(o.warmup, o.n);
  const end = procStatus(pid);
  const rate = o.n / r.seconds;
  const p99 = percentile(r.latencies, 99);
  const entries = await api<{ events: unknown[] }>('GET', `/emails/${(await api<{ data: Array<{ publicId: string }> }>('GET', '/emails?per_page=1')).data[0]!.publicId}/events`);
  console.log(
    `measured: ${o.n} hits in ${r.seconds.toFixed(2)} s = ${rate.toFixed(0)} hits/s; latency p50 ${percentile(r.latencies, 50).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${r.latencies[r.latencies.length - 1]!.toFixed(1)} ms; ` +
      `appliance CPU ${(((end.cpuMs - warm.cpuMs) / o.n) * 1000).toFixed(0)} µs per hit; RSS ${end.rssMb.toFixed(0)} MB (peak ${end.peakMb.toFixed(0)} MB)` +
      `${rate >= 5000 && p99 < 20 ? '' : '  BELOW the target (5,000/s, p99 < 20 ms)'}`,
  );
  console.log(`one email's timeline after the run: ${entries.events.length} entries (queued, sending, sent, delivered, then one per hit)`);
  console.log(`SUMMARY ${rate.toFixed(0)} hits/s, p50 ${percentile(r.latencies, 50).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms; appliance RSS ${end.rssMb.toFixed(0)} MB, peak ${end.peakMb.toFixed(0)} MB; load average ${loadAverage()}`);

  client.close();
  child.kill('SIGTERM');
  await new Promise((res) => child.once('exit', res));
  await sink.close();
  await dns.stop();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
