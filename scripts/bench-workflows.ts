// Workflows benchmark: the real appliance (startAppliance, in this process, rate limits off) with a fake clock,
// so a wait can be made to elapse at once.
//
//   npm run bench:workflows -- [--n 10000] [--concurrency 32]
//
// --n contacts (imported through the audience's CSV import) enter a two-step workflow — wait 1 day, then update
// the contact (a property), then exit — each through its own POST /workflows/events, from --concurrency
// parallel loops of bench-client.ts's lean HTTP/1.1 client (closed loops). Printed:
//  (a) events accepted per second and request latency p50/p99 (target, issue 31: ≥ 1,000/s with p99 < 50 ms),
//      then how long the intake took until every run was waiting;
//  (b) the clock moved past the wait: steps executed per second (run step rows written: the update and the
//      exit of every run; the wait's end is their start) until every run completed (target ≥ 1,000/s);
// and the process's peak RSS (VmHWM). Client and appliance share this process and the machine's two cores.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LeanHttpClient } from './bench-client.js';
import { percentile } from './bench-helpers.js';

function parseArgs(argv: string[]): { n: number; concurrency: number } {
  const o = { n: 10_000, concurrency: 32 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--n') o.n = value();
    else if (flag === '--concurrency') o.concurrency = value();
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.n >= 1 && o.concurrency >= 1)) throw new Error('--n and --concurrency must be ≥ 1');
  return o;
}

function peakRssMb(): number {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.memoryUsage().rss / 1048576;
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const { FakeClock, DAY } = await import('../src/core/clock.js');
  const { importContacts, createProperty } = await import('../src/services/audience/index.js');
  const { createWorkflow, activateWorkflow } = await import('../src/services/automation/index.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-workflows-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'bench.appliance.test', logLevel: 'silent', rateLimits: false });
  const clock = new FakeClock('2026-03-01T10:00:00.000Z');
  const appliance = await startAppliance({ config, clock });
  const ctx = appliance.ctx;
  const teamId = appliance.bootstrap!.team.id;
  const key = config.bootstrapApiKey ?? appliance.bootstrap!.issued.token;
  try {
    const rows = ['email,first_name', ...Array.from({ length: o.n }, (_, i) => `user${i}@bench.example,User${i}`)].join('\n');
    const imported = await importContacts(ctx, teamId, { csv: rows });
    const ids = ((await ctx.db('contacts').where('team_id', teamId).orderBy('pk').select('id')) as Array<{ id: string }>).map((r) => r.id);
    console.log(`contacts: ${ids.length} (imported ${JSON.stringify(imported).slice(0, 80)})`);
    await createProperty(ctx, teamId, { name: 'stage', type: 'string' });
    const wf = await createWorkflow(ctx, teamId, 'live', {
      name: 'Bench',
      graph: {
        trigger: { type: 'event', name: 'signed_up', next: 'wait' },
        steps: [
          { id: 'wait', type: 'wait', duration: { days: 1 }, next: 'mark' },
          { id: 'mark', type: 'update_contact', properties: { stage: 'day-2' }, next: 'end' },
          { id: 'end', type: 'exit' },
        ],
      },
    });
    await activateWorkflow(ctx, teamId, wf.id);

    // (a) events.
    const client = new LeanHttpClient('127.0.0.1', appliance.ports.api.port, o.concurrency, [`Authorization: Bearer ${key}`]);
    const latencies: number[] = [];
    let next = 0;
    let failed = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        for (let i = next++; i < ids.length; i = next++) {
          const s = performance.now();
          const res = await client.post('/workflows/events', JSON.stringify({ name: 'signed_up', contact_id: ids[i], data: { i } }));
          latencies.push(performance.now() - s);
          if (res.status !== 202) failed++;
        }
      }),
    );
    const accepted = performance.now() - t0;
    client.close();
    latencies.sort((a, b) => a - b);
    console.log(`(a) POST /workflows/events: ${ids.length} in ${(accepted / 1000).toFixed(2)} s = ${Math.round((ids.length / accepted) * 1000)} events/s accepted; p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms; ${failed} not 202`);
    const waiting = async () => Number(((await ctx.db('workflow_runs').where({ state: 'waiting' }).count({ n: '*' })) as [{ n: number }])[0].n) >= ids.length;
    await until(waiting, 300_000);
    const entered = performance.now() - t0;
    console.log(`    every run started and waiting ${((entered - accepted) / 1000).toFixed(2)} s after the last answer (${Math.round((ids.length / entered) * 1000)} runs/s from the first event)`);

    // (b) the wait elapses.
    const [{ before }] = (await ctx.db('workflow_run_steps').count({ before: '*' })) as [{ before: number }];
    clock.advance(DAY + 1000);
    const t1 = performance.now();
    ctx.jobs.wake();
    const completed = async () => Number(((await ctx.db('workflow_runs').where({ state: 'completed' }).count({ n: '*' })) as [{ n: number }])[0].n) >= ids.length;
    await until(completed, 600_000);
    const elapsed = performance.now() - t1;
    const [{ after }] = (await ctx.db('workflow_run_steps').count({ after: '*' })) as [{ after: number }];
    const steps = Number(after) - Number(before);
    console.log(`(b) the wait elapsed: ${steps} steps in ${(elapsed / 1000).toFixed(2)} s = ${Math.round((steps / elapsed) * 1000)} steps/s (${Math.round((ids.length / elapsed) * 1000)} runs completed/s)`);
    console.log(`peak RSS ${peakRssMb().toFixed(0)} MB (client and appliance in one process)`);
  } finally {
    await appliance.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
