// CPU figures shared by the benchmarks. Wall-clock rates move with whatever else the machine runs; CPU time
// per operation and the event loop's utilisation move far less, so the benchmarks print them beside the rates.
import { generateKeyPairSync, sign } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * CPU time (user + system, ms) of the calling thread, from Linux's /proc/thread-self/stat (10 ms ticks);
 * NaN elsewhere. process.cpuUsage() covers every thread of the process, and a bench's client and sink
 * threads live in the same process: their own figures are subtracted to get the appliance's.
 */
export function threadCpuMs(): number {
  try {
    const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Process CPU (all threads), main-thread CPU and event-loop utilisation since `start()`; call from the main thread. */
export class CpuMeter {
  private readonly cpu0 = process.cpuUsage();
  private readonly main0 = threadCpuMs();
  private readonly elu0 = performance.eventLoopUtilization();
  private readonly wall0 = performance.now();

  static start(): CpuMeter {
    return new CpuMeter();
  }

  /** ms of CPU and wall time so far. */
  read(): { processMs: number; mainMs: number; elu: number; wallMs: number } {
    const cpu = process.cpuUsage(this.cpu0);
    return {
      processMs: (cpu.user + cpu.system) / 1000,
      mainMs: threadCpuMs() - this.main0,
      elu: performance.eventLoopUtilization(this.elu0).utilization,
      wallMs: performance.now() - this.wall0,
    };
  }
}

/**
 * The host's speed now: RSA-2048 signatures per second on the calling thread (~0.5 s of work). The same
 * code measured hours apart on this shared machine differs by up to a third; this figure, printed beside
 * the rates, tells a slow hour from a slower build (a DKIM signature is also the largest fixed cost of a send).
 */
export function rsaSignsPerSecond(ms = 500): number {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.alloc(512, 1);
  for (let i = 0; i < 20; i++) sign('sha256', data, privateKey);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    sign('sha256', data, privateKey);
    n++;
  }
  return Math.round((n * 1000) / (performance.now() - t0));
}

/** "0.9 0.7 0.5 (2 CPUs)" */
export const loadAverage = () => `${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} CPUs)`;

/** CPU ms per thread of this process, keyed `tid comm` (Linux; empty elsewhere): where the CPU outside the main thread goes. */
export function threadsCpuMs(): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
        out.set(`${tid} ${comm}`, (Number(fields[11]) + Number(fields[12])) * 10);
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    // not Linux
  }
  return out;
}

/** Per-thread CPU since `before`: "name[tid] ms" for the threads that used any, largest first (the main thread's tid is the pid). */
export function threadsCpuSince(before: Map<string, number>): string {
  const rows: Array<[string, number]> = [];
  for (const [key, ms] of threadsCpuMs()) {
    const [tid, ...name] = key.split(' ');
    const used = ms - (before.get(key) ?? 0);
    if (used > 0) rows.push([`${Number(tid) === process.pid ? 'main' : name.join(' ')}[${tid}]`, used]);
  }
  return rows.sort((a, b) => b[1] - a[1]).map(([k, ms]) => `${k} ${ms.toFixed(0)}`).join(', ') + ' ms';
}

/**
 * The main thread's profile between start() and stop(name): its CPU ('cpu', DIR/<name>.cpuprofile: Chrome DevTools,
 * speedscope) or its sampled allocations ('alloc', 'survivors': DIR/<name>.heapprofile).
 */
export async function mainThreadProfiler(dir: string, kind: 'cpu' | 'alloc' | 'survivors' = 'cpu') {
  const { Session } = await import('node:inspector/promises');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  const session = new Session();
  session.connect();
  if (kind !== 'cpu') {
    // Every allocation sampled (one per 16 KB allocated on average), including the objects the young
    // generation's scavenges and the full collections have freed since: what makes the collector run, not
    // what is still alive at the end. 'survivors' leaves out what a scavenge freed: what the scavenges copy
    // (their cost grows with it) and promote to the old generation.
    await session.post('HeapProfiler.enable');
    return {
      start: () =>
        session.post('HeapProfiler.startSampling', {
          samplingInterval: 16384,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: kind === 'alloc',
        }),
      async stop(name: string) {
        const { profile } = await session.post('HeapProfiler.stopSampling');
        writeFileSync(path.join(dir, `${name}.heapprofile`), JSON.stringify(profile));
      },
    };
  }
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  return {
    start: () => session.post('Profiler.start'),
    async stop(name: string) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    },
  };
}

/**
 * Waits until the process is quiet: a 250 ms window using under `quietShare` of one core (worker threads
 * still booting, JIT, start-up writes), at most `maxMs`. Returns the ms waited. Measuring from a process that
 * is still starting charges its start-up to the operations measured.
 */
export async function settle(maxMs = 15_000, quietShare = 0.05): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const cpu0 = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 250));
    const cpu = process.cpuUsage(cpu0);
    if ((cpu.user + cpu.system) / 1000 < 250 * quietShare || performance.now() - t0 > maxMs) return performance.now() - t0;
  }
}
