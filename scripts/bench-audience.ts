// Audience benchmark: the real appliance (startAppliance, real clock) and its HTTP API, one request at a time.
//
//   npm run bench:audience -- [--contacts 100000] [--batch 10000] [--runs 50] [--keep]
//
// Imports `--batch` contacts per POST /contacts/import until the team has `--contacts`, each with five
// properties (string, number, date, boolean, string); then, one request at a time: GET /contacts?search=
// (a substring of a name or an address), three dynamic segments' counts (GET /segments/{id}) and first pages
// (GET /segments/{id}/members), and GET /contacts/export read to its end (the body counted, not kept).
// Printed: rows imported per second, each request's p50/p99, the export's time and the process's RSS before
// and at its peak during the export, and whether the targets hold.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { settle, loadAverage } from './bench-cpu.js';

interface Options {
  contacts: number;
  batch: number;
  runs: number;
  keep: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { contacts: 100_000, batch: 10_000, runs: 50, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--contacts') o.contacts = value();
    else if (flag === '--batch') o.batch = value();
    else if (flag === '--runs') o.runs = value();
    else if (flag === '--keep') o.keep = true;
    else throw new Error(`unknown option ${flag}`);
  }
  if (!(o.contacts >= 1 && o.batch >= 1 && o.batch <= 10_000 && o.runs >= 1)) throw new Error('--contacts, --runs ≥ 1; --batch 1..10000');
  return o;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (n: number) => n.toFixed(1);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

const CITIES = ['Berlin', 'Paris', 'Madrid', 'Lisbon', 'Dublin', 'Vienna', 'Prague', 'Warsaw', 'Rome', 'Oslo'];
const FIRST = ['Ann', 'Bob', 'Cid', 'Dee', 'Eve', 'Fay', 'Gus', 'Hal', 'Ida', 'Jon', 'Kim', 'Lea'];
const LAST = ['Smith', 'Jones', 'Brown', 'Lopez', 'Novak', 'Rossi', 'Dubois', 'Silva', 'Berg', 'Costa'];

function csvBatch(from: number, count: number): string {
  const lines = ['email,first_name,last_name,plan,seats,renewal,vip,city'];
  for (let i = from; i < from + count; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    const month = String(1 + (i % 12)).padStart(2, '0');
    lines.push(`user${i}@example${i % 50}.test,${FIRST[i % FIRST.length]},${LAST[(i * 7) % LAST.length]}${i},${['free', 'starter', 'pro'][i % 3]},${i % 100},2026-${month}-${day},${i % 7 === 0},${CITIES[i % CITIES.length]}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-audience-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'bench.appliance.test', logLevel: 'silent', rateLimits: false });
  const appliance = await startAppliance({ config });
  const base = `http://127.0.0.1:${appliance.ports.api.port}`;
  const headers = { authorization: `Bearer ${config.bootstrapApiKey ?? appliance.bootstrap!.issued.token}`, 'content-type': 'application/json' };
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(base + p, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const timed = async (runs: number, request: (i: number) => Promise<unknown>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await request(i);
      out.push(performance.now() - t0);
    }
    return out.sort((a, b) => a - b);
  };
  await settle();
  console.log(`bench:audience  ${o.contacts.toLocaleString('en')} contacts in imports of ${o.batch.toLocaleString('en')}, ${o.runs} runs per request, node ${process.version}; load average ${loadAverage()}`);

  for (const [name, type] of [['plan', 'string'], ['seats', 'number'], ['renewal', 'date'], ['vip', 'boolean'], ['city', 'string']]) await call('POST', '/contact-properties', { name, type });

  // Imports.
  let imported = 0;
  let importMs = 0;
  while (imported < o.contacts) {
    const n = Math.min(o.batch, o.contacts - imported);
    const csv = csvBatch(imported, n);
    const t0 = performance.now();
    const r = await call('POST', '/contacts/import', { csv });
    importMs += performance.now() - t0;
    if (r.created !== n) throw new Error(`import created ${String(r.created)} of ${n}`);
    imported += n;
  }
  const importRate = (imported / importMs) * 1000;
  console.log(`import           ${imported.toLocaleString('en')} rows in ${ms(importMs / 1000)} s: ${Math.round(importRate).toLocaleString('en')} rows/s`);

  // Search, one request at a time.
  const needles = (i: number) => [`${LAST[i % LAST.length]!.toLowerCase()}${(i * 7919) % o.contacts}`, `user${(i * 104729) % o.contacts}@`, 'nobody-at-all'][i % 3]!;
  const search = await timed(o.runs, (i) => call('GET', `/contacts?search=${encodeURIComponent(needles(i))}`));
  console.log(`search           p50 ${ms(pct(search, 50))} ms, p99 ${ms(pct(search, 99))} ms`);

  // Three dynamic segments.
  const shapes: Array<[string, unknown]> = [
    ['one string property', { match: 'all', conditions: [{ field: 'properties.city', operator: 'equals', value: 'lisbon' }] }],
    ['number and date', { match: 'all', conditions: [{ field: 'properties.seats', operator: 'greater_than', value: 50 }, { field: 'properties.renewal', operator: 'after', value: '2026-06-01' }] }],
    ['any: contains, boolean, nested', { match: 'any', conditions: [{ field: 'email', operator: 'contains', value: 'example7.' }, { match: 'all', conditions: [{ field: 'properties.vip', operator: 'equals', value: true }, { field: 'properties.plan', operator: 'not_equals', value: 'free' }] }] }],
  ];
  const segmentFigures: Array<{ name: string; count: number; countP99: number; pageP99: number }> = [];
  for (const [name, rules] of shapes) {
    const created = (await call('POST', '/segments', { name, rules })) as { segment: { id: string } };
    const id = created.segment.id;
    let count = 0;
    const counts = await timed(o.runs, async () => (count = ((await call('GET', `/segments/${id}`)) as { segment: { contact_count: number } }).segment.contact_count));
    const pages = await timed(o.runs, () => call('GET', `/segments/${id}/members`));
    segmentFigures.push({ name, count, countP99: pct(counts, 99), pageP99: pct(pages, 99) });
    console.log(`segment          ${name.padEnd(32)} ${count.toLocaleString('en').padStart(7)} members: count p50 ${ms(pct(counts, 50))} / p99 ${ms(pct(counts, 99))} ms, first page p50 ${ms(pct(pages, 50))} / p99 ${ms(pct(pages, 99))} ms`);
  }

  // Export, read to its end.
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = performance.now();
  const res = await fetch(`${base}/contacts/export`, { headers });
  let bytes = 0;
  let lines = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (const b of chunk) if (b === 0x0a) lines++;
  }
  const exportMs = performance.now() - t0;
  clearInterval(sampler);
  console.log(`export           ${(lines - 1).toLocaleString('en')} contacts, ${mb(bytes)} MB in ${ms(exportMs)} ms; RSS ${mb(rssBefore)} MB before, peak ${mb(peak)} MB (+${mb(peak - rssBefore)} MB)`);

  const targets: Array<[string, boolean]> = [
    [`import ≥ 20,000 rows/s (${Math.round(importRate).toLocaleString('en')})`, importRate >= 20_000],
    [`dynamic segment counted < 200 ms (worst p99 ${ms(Math.max(...segmentFigures.map((s) => s.countP99)))} ms)`, segmentFigures.every((s) => s.countP99 < 200)],
    [`search p99 < 50 ms (${ms(pct(search, 99))} ms)`, pct(search, 99) < 50],
    [`export of ${o.contacts.toLocaleString('en')} < 3 s (${ms(exportMs / 1000)} s)`, exportMs < 3000],
    [`export RSS growth < 50 MB (+${mb(peak - rssBefore)} MB)`, peak - rssBefore < 50 * 1024 * 1024],
  ];
  for (const [what, ok] of targets) console.log(`target           ${ok ? 'met ' : 'MISS'} ${what}`);

  await appliance.stop();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
