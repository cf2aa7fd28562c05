// Email validation benchmark: the appliance as `npm start` runs it (src/main.ts, in a process of its own, rate
// limits off), validating addresses at 20 domains whose answers it already keeps (a loopback DNS server, dns2,
// serves them once), through the API.
//
//   npm run bench:validation -- [--batch-n 200000] [--batch-size 1000] [--batch-concurrency 2]
//                                [--single-n 30000] [--concurrency 32] [--warmup 50000] [--cpu-profile DIR] [--keep]
//
// Two phases after a warm-up (not counted: V8 compiles the hot paths, the domains' answers are fetched once):
// (a) POST /email-validations/batch, --batch-size addresses a request from --batch-concurrency parallel loops;
// (b) single POST /email-validations from --concurrency parallel loops (closed loops: each sends its next
// request when answered). For each: validations per second, request latency p50/p99, the appliance's CPU time
// per validation and its RSS (its own process: /proc/<pid>/status; peak = VmHWM). The client (bench-client.ts's
// lean HTTP/1.1 client) and the DNS server run in this process and share the machine's two cores with it.
// Target (issue 31): ≥ 5,000 validations/s for cached domains, batch and single.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { LeanHttpClient } from './bench-client.js';
import { loadAverage } from './bench-cpu.js';
import { CONFIG_ENV, formatDnsServer, type Config } from '../src/config.js';
import { newToken } from '../src/services/platform/index.js';
import { startDns } from '../test/helpers/dns-server.js';

interface Options {
  batchN: number;
  batchSize: number;
  batchConcurrency: number;
  singleN: number;
  concurrency: number;
  warmup: number;
  keep: boolean;
  /** Directory for the appliance's CPU profile of the whole run (node --cpu-prof, written when it stops). */
  cpuProfileDir: string | undefined;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { batchN: 200_000, batchSize: 1000, batchConcurrency: 2, singleN: 30_000, concurrency: 32, warmup: 50_000, keep: false, cpuProfileDir: undefined };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--batch-n') o.batchN = value();
    else if (flag === '--batch-size') o.batchSize = value();
    else if (flag === '--batch-concurrency') o.batchConcurrency = value();
    else if (flag === '--single-n') o.singleN = value();
    else if (flag === '--concurrency') o.concurrency = value();
    else if (flag === '--warmup') o.warmup = value();
    else if (flag === '--keep') o.keep = true;
    else if (flag === '--cpu-profile') o.cpuProfileDir = inline ?? argv[++i];
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.batchN >= 0 && o.singleN >= 0 && o.warmup >= 0 && o.batchSize >= 1 && o.batchSize <= 1000 && o.batchConcurrency >= 1 && o.concurrency >= 1)) {
    throw new Error('--batch-n, --single-n, --warmup ≥ 0; --batch-size 1..1000; --batch-concurrency, --concurrency ≥ 1');
  }
  return o;
}

const DOMAINS = Array.from({ length: 20 }, (_, i) => `d${i}.bench.example`);
/** Mostly people, some role accounts, a few that are not addresses: every check runs. */
function address(n: number): string {
  if (n % 97 === 0) return `not-an-address-${n}`;
  if (n % 31 === 0) return `info+${n}@${DOMAINS[n % 20]}`;
  return `user.${n}@${DOMAINS[n % 20]}`;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

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

/** The appliance process's RSS, peak RSS (VmHWM) and CPU time (user + system) so far. */
function procStatus(pid: number): ProcStatus {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024, cpuMs: (Number(stat[11]) + Number(stat[12])) * 10 };
}

async function startApplianceProcess(dnsServer: Config['dnsServers'][number], dataDir: string, apiPort: number, key: string, cpuProfileDir?: string): Promise<ChildProcess> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const settings: Partial<Record<keyof Config, string>> = {
    dataDir,
    bind: '127.0.0.1',
    hostname: 'bench.appliance.test',
    apiPort: String(apiPort),
    mxPort: '0',
    submissionPort: '0',
    submissionsPort: '0',
    imapPort: '0',
    imapsPort: '0',
    pop3Port: '0',
    pop3sPort: '0',
    dnsServers: formatDnsServer(dnsServer),
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

interface PhaseResult {
  validations: number;
  seconds: number;
  latencies: number[];
}

/** `loops` closed loops sending `requests` requests in all; each answer must be 200 with `per(i)` validations. */
async function closedLoops(loops: number, requests: number, send: (i: number) => Promise<{ status: number; text: string }>, per: (i: number) => number): Promise<PhaseResult> {
  const latencies: number[] = [];
  let next = 0;
  let validations = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < requests) {
        const i = next++;
        const t0 = performance.now();
        const res = await send(i);
        latencies.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`request ${i} answered ${res.status}: ${res.text.slice(0, 200)}`);
        validations += per(i);
      }
    }),
  );
  return { validations, seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const dns = await startDns();
  for (const d of DOMAINS) dns.set('MX', d, [{ exchange: `mx1.${d}`, priority: 10 }, { exchange: `mx2.${d}`, priority: 20 }]);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-validation-'));
  const key = newToken('live');
  const apiPort = await freePort();
  const child = await startApplianceProcess(dns.server, dataDir, apiPort, key, o.cpuProfileDir);
  const pid = child.pid!;
  const client = new LeanHttpClient('127.0.0.1', apiPort, Math.max(o.concurrency, o.batchConcurrency), [`Authorization: Bearer ${key}`]);
  const batchBody = (i: number, size: number) => JSON.stringify({ emails: Array.from({ length: size }, (_, k) => address(i * size + k)) });
  const singleBody = (i: number) => JSON.stringify({ email: address(i) });

  console.log(
    `bench:validation  ${DOMAINS.length} domains (answers kept by the appliance), batches of ${o.batchSize} × ${o.batchConcurrency} in parallel, ` +
      `single requests × ${o.concurrency} in parallel; node ${process.version}; load average ${loadAverage()}; appliance RSS at start ${procStatus(pid).rssMb.toFixed(0)} MB`,
  );

  // Warm-up: the domains' answers fetched, the hot paths compiled. Not counted.
  const warmBatches = Math.ceil(o.warmup / 2 / o.batchSize);
  await closedLoops(o.batchConcurrency, warmBatches, (i) => client.post('/email-validations/batch', batchBody(i, o.batchSize)), () => o.batchSize);
  await closedLoops(o.concurrency, Math.ceil(o.warmup / 2), (i) => client.post('/email-validations', singleBody(i)), () => 1);
  const asked = dns.queries.length;
  console.log(`warm-up: ${warmBatches * o.batchSize + Math.ceil(o.warmup / 2)} validations; DNS questions asked so far: ${asked} (${DOMAINS.length} domains)`);

  const report = (name: string, r: PhaseResult, cpu0: number) => {
    const s = procStatus(pid);
    const rate = r.validations / r.seconds;
    console.log(
      `${name}: ${r.validations} validations in ${r.seconds.toFixed(2)} s = ${rate.toFixed(0)} validations/s (${(r.latencies.length / r.seconds).toFixed(0)} requests/s); ` +
        `latency p50 ${pct(r.latencies, 50).toFixed(2)} ms, p99 ${pct(r.latencies, 99).toFixed(2)} ms; ` +
        `appliance CPU ${((s.cpuMs - cpu0) / r.validations * 1000).toFixed(1)} µs per validation; RSS ${s.rssMb.toFixed(0)} MB (peak ${s.peakMb.toFixed(0)} MB)` +
        `${rate >= 5000 ? '' : '  BELOW the 5,000/s target'}`,
    );
    return rate;
  };

  let cpu0 = procStatus(pid).cpuMs;
  const batches = Math.ceil(o.batchN / o.batchSize);
  const batch = batches > 0 ? await closedLoops(o.batchConcurrency, batches, (i) => client.post('/email-validations/batch', batchBody(warmBatches + i, o.batchSize)), () => o.batchSize) : undefined;
  const batchRate = batch ? report('batch ', batch, cpu0) : NaN;

  cpu0 = procStatus(pid).cpuMs;
  const single = o.singleN > 0 ? await closedLoops(o.concurrency, o.singleN, (i) => client.post('/email-validations', singleBody(o.warmup + i)), () => 1) : undefined;
  const singleRate = single ? report('single', single, cpu0) : NaN;

  const extra = dns.queries.length - asked;
  const end = procStatus(pid);
  console.log(`DNS questions during the measured phases: ${extra} (answers are kept a minute: a phase past it asks each domain again)`);
  console.log(`SUMMARY batch ${batchRate.toFixed(0)}/s, single ${singleRate.toFixed(0)}/s; appliance peak RSS ${end.peakMb.toFixed(0)} MB; load average ${loadAverage()}`);

  client.close();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await dns.stop();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
