// CPU figures shared by the benchmarks. Wall-clock rates move with whatever else the machine runs; CPU time
// per operation and the event loop's utilisation move far less, so the benchmarks print them beside the rates.
import { readFileSync } from 'node:fs';
import os from 'node:os';
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

/** "0.9 0.7 0.5 (2 CPUs)" */
export const loadAverage = () => `${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} CPUs)`;
