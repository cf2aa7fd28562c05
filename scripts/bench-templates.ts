// Template rendering benchmark: the real appliance (startAppliance, real clock) answering
// POST /templates/{id}/render for a template of 10 variables (a 2 KB html body, its subject and text),
// from a lean HTTP client in this process with `--concurrency` requests in flight.
//
//   npm run bench:templates -- [--n 20000] [--concurrency 16]
//
// Printed: renders per second, request latency p50/p99, and the process's RSS (appliance and client).
// The send path with a template is measured by `npm run bench:send -- --template`.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LeanHttpClient } from './bench-client.js';
import { loadAverage, settle } from './bench-cpu.js';

function parseArgs(argv: string[]): { n: number; concurrency: number } {
  const o = { n: 20_000, concurrency: 16 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = Number(inline ?? argv[++i]);
    if (flag === '--n') o.n = value;
    else if (flag === '--concurrency') o.concurrency = value;
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.n >= 1 && o.concurrency >= 1)) throw new Error('--n and --concurrency ≥ 1');
  return o;
}

const VARIABLES = Array.from({ length: 10 }, (_, i) => `v${i}`);

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-templates-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'bench.appliance.test', logLevel: 'silent', rateLimits: false });
  const appliance = await startAppliance({ config });
  const port = appliance.ports.api.port;
  const key = config.bootstrapApiKey ?? appliance.bootstrap!.issued.token;
  const client = new LeanHttpClient('127.0.0.1', port, o.concurrency, [`Authorization: Bearer ${key}`]);
  let paragraphs = '';
  for (let i = 0; paragraphs.length < 1800; i++) paragraphs += `<p>Item ${i}: a product with a reasonably long description, quantity ${(i % 3) + 1}.</p>`;
  const html = `<html><body><h1>Hello {{ v0 }}</h1>${paragraphs}<p>${VARIABLES.map((v) => `{{ ${v} }}`).join(', ')}</p></body></html>`;
  const created = JSON.parse((await client.post('/templates', JSON.stringify({ name: 'bench', subject: 'Order {{ v1 }} for {{ v0 }}', html, text: 'Hi {{ v0 }}, order {{ v1 }}.', variables: VARIABLES }))).text) as { template: { id: string } };
  const renderPath = `/templates/${created.template.id}/render`;
  const body = (i: number) => JSON.stringify({ variables: Object.fromEntries(VARIABLES.map((v, k) => [v, `value ${k} <${i}>`])) });
  await settle();
  console.log(`bench:templates  n=${o.n}, ${o.concurrency} in flight, template of 10 variables (2 KB html), node ${process.version}; load average ${loadAverage()}`);

  // A warm-up of a tenth, not counted.
  for (let i = 0; i < o.n / 10; i += o.concurrency) await Promise.all(Array.from({ length: o.concurrency }, (_, k) => client.post(renderPath, body(i + k))));
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (next < o.n) {
        const i = next++;
        const s = performance.now();
        const res = await client.post(renderPath, body(i));
        latencies.push(performance.now() - s);
        if (res.status !== 200) failed++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);
  const rate = o.n / seconds;
  console.log(`render           ${Math.round(rate).toLocaleString('en')}/s; latency p50 ${pct(50)} ms, p99 ${pct(99)} ms; ${failed} failed; peak RSS ${(peakRss / 1048576).toFixed(0)} MB (appliance and client)`);
  console.log(`target           ${rate >= 2000 && failed === 0 ? 'met ' : 'MISS'} render ≥ 2,000/s`);
  client.close();
  await appliance.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
