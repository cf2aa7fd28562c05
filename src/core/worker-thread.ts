// Starting a worker thread on a module that sits beside its caller: `<name>.ts` when the caller runs under
// tsx (tests, benchmarks), `<name>.js` in dist/. A worker does not inherit tsx's loader hooks on Node 20, so
// under tsx the thread registers them before it imports the module.
import { readlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * The old-generation heap a render or inbound-authentication thread may use. Measured under bench:soak
 * (2026-11-29): a render thread 13–15 MiB used (17–19 MiB total), the auth thread 19–21 MiB (22–24 MiB); the
 * cap leaves room for the largest message (25 MiB of attachments is ~70 MB of strings while it is composed)
 * and stops a runaway thread long before V8's default (a share of the machine's RAM), so that one message
 * cannot grow the process past what the box was sized for.
 */
export const WORKER_OLD_GENERATION_MB = 256;

/**
 * A started, unref'd worker running module `name` from the folder of `callerUrl` (the caller's import.meta.url).
 * `resourceLimits` caps its V8 heap: a thread that goes past it ends with ERR_WORKER_OUT_OF_MEMORY, which its pool
 * treats as any thread's death (rejects what it held, starts another), instead of growing the process.
 */
export function startWorkerBeside(callerUrl: string, name: string, workerData: unknown, resourceLimits?: ResourceLimits): Worker {
  const ext = extname(fileURLToPath(callerUrl));
  const url = new URL(`./${name}${ext}`, callerUrl).href;
  const options = { workerData, ...(resourceLimits ? { resourceLimits } : {}) };
  const worker =
    ext === '.ts'
      ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(url)}); });`, { eval: true, ...options })
      : new Worker(new URL(url), options);
  worker.unref();
  return worker;
}

/**
 * Lowers the calling thread's CPU priority to `nice` (0..19; 0 does nothing). On Linux a thread has its own
 * nice value (setpriority on its thread id, which /proc/thread-self names); elsewhere this is a no-op.
 * Raising one's own nice value needs no privilege; a failure leaves the priority as it was.
 */
export function niceThisThread(nice: number): void {
  if (nice <= 0 || process.platform !== 'linux') return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, nice);
  } catch {
    // not permitted or no /proc: the thread runs at the process's priority
  }
}

/**
 * Names the calling thread (Linux: /proc/thread-self/comm, at most 15 bytes), so that `top -H`, `ps -L` and
 * perf show which thread is which rather than a row of "node". Elsewhere, or when refused, a no-op.
 */
export function nameThisThread(name: string): void {
  if (process.platform !== 'linux') return;
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // no /proc: the thread keeps its name
  }
}
