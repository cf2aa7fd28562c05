// The in-memory caches are bounded by bytes as well as entries (issue 34 §4, docs/PERFORMANCE.md "Caches and
// their ceilings"): filled with values that grow with their input, each stays under its byte ceiling, and a value
// too large for it is answered but not kept. The byte estimate itself is checked against the heap it measures.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import t from 'tap';
import { approxBytes } from '../../src/core/byte-size.js';
import { ForgetfulCache } from '../../src/core/forgetful-cache.js';
import { OPENED_MAX_BYTES, SecretBox } from '../../src/core/secrets.js';
import { cachedLookups } from '../../src/dns/cached-lookups.js';
import type { DnsResolver } from '../../src/dns/resolver.js';
import { SummaryCache } from '../../src/imap/summary-cache.js';
import { sharedLookups } from '../../src/mta/dns-cache.js';

/** V8's full collection, without --expose-gc on the command line. */
function collector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

const KiB = 1024;
const MiB = 1024 * KiB;

t.test('approxBytes: strings, buffers, objects, maps and shared objects; the walk stops at the limit', async (t) => {
  t.ok(approxBytes('x'.repeat(10_000)) >= 10_000);
  t.ok(approxBytes(Buffer.alloc(50_000)) >= 50_000);
  const shared = { text: 'y'.repeat(100_000) };
  const twice = approxBytes({ a: shared, b: shared });
  t.ok(twice >= 100_000 && twice < 110_000, 'an object referred to twice is counted once');
  const rows = Array.from({ length: 1000 }, (_, i) => ({ id: i, name: `name ${i}`, tags: ['a', 'b'] }));
  const m = new Map(rows.map((r) => [r.id, r]));
  t.ok(approxBytes(m) > 1000 * 40, 'a map of objects counts every entry');
  t.equal(approxBytes('z'.repeat(1_000_000), 4096), 4096, 'capped at the limit');
  // Against the heap: 2,000 objects of ~1 KiB of strings measure within a factor of two of what V8 holds
  // (a full collection before each reading, so that garbage collected in between does not count).
  const gc = collector();
  gc();
  const before = process.memoryUsage().heapUsed;
  const objs = Array.from({ length: 2000 }, (_, i) => ({ subject: `${'s'.repeat(200)}${i}`, body: `${'b'.repeat(800)}${i}`, n: i }));
  gc();
  const heap = process.memoryUsage().heapUsed - before;
  const est = approxBytes(objs);
  t.ok(est > heap / 2 && est < heap * 2, `estimate ${est} vs heap ${heap}`);
});

t.test('ForgetfulCache: kept bytes stay under the ceiling; a value over an eighth of it is not kept', async (t) => {
  const cache = new ForgetfulCache<string, string>(60_000, 100_000, 256 * KiB);
  for (let i = 0; i < 2000; i++) await cache.get(`k${i}`, async () => 'v'.repeat(1000 + (i % 7) * 500));
  t.ok(cache.size.bytes <= 256 * KiB, `kept ${cache.size.bytes} bytes`);
  t.ok(cache.size.entries > 20, 'still keeps what fits');
  let loads = 0;
  const big = async () => (loads++, 'B'.repeat(40 * KiB));
  t.equal((await cache.get('big', big)).length, 40 * KiB, 'a large value is answered');
  await cache.get('big', big);
  t.equal(loads, 2, 'and read again: it was not kept');
  const one = new ForgetfulCache<string, string[]>(60_000, 1, 1 * MiB);
  let reads = 0;
  const names = async () => (reads++, Array.from({ length: 5000 }, (_, i) => `domain-${i}.example`));
  await one.get('all', names);
  await one.get('all', names);
  t.equal(reads, 1, 'a one-entry cache keeps a value up to its whole ceiling');
});

t.test('SummaryCache: a bounded number of bytes of IMAP summaries, the oldest first', async (t) => {
  const cache = new SummaryCache(50_000, 1 * MiB);
  const structure = (parts: number) => `(${'("text" "plain" ("charset" "utf-8") NIL NIL "7bit" 10 1 NIL NIL NIL NIL)'.repeat(parts)} "mixed")`;
  for (let i = 0; i < 5000; i++) cache.set(`blob${i}`, { envelope: `("date" "subject ${i}" NIL NIL NIL NIL NIL NIL NIL "<${i}@x>")`, bodystructure: structure(1 + (i % 10)) });
  t.ok(cache.size.bytes <= 1 * MiB, `kept ${cache.size.bytes} bytes`);
  t.ok(cache.get('blob4999'), 'the newest is kept');
  t.notOk(cache.get('blob0'), 'the oldest went first');
  cache.set('huge', { bodystructure: structure(3000) }); // ~230 KiB: a message of 3,000 parts
  t.notOk(cache.get('huge'), 'a summary over an eighth of the ceiling is not kept');
  t.ok(cache.get('blob4999'), 'and pushed nothing out');
});

function fakeDns(answer: (name: string) => unknown): DnsResolver & { calls: number } {
  const r = {
    calls: 0,
    txt: async () => [],
    mx: async (name: string) => (r.calls++, answer(name) as Awaited<ReturnType<DnsResolver['mx']>>),
    a: async (name: string) => (r.calls++, answer(name) as string[]),
    aaaa: async () => [],
    raw: async (name: string) => (r.calls++, answer(name)),
  };
  return r as unknown as DnsResolver & { calls: number };
}

t.test("mailauth's DNS answer cache: bounded in bytes, a huge TXT answer not kept", async (t) => {
  const dns = fakeDns((name) => [[`v=spf1 ${'include:spf.example.net '.repeat(name.startsWith('huge') ? 20_000 : 40)}-all`]]);
  const lookup = cachedLookups(dns, () => 0, 30_000, 10_000, 256 * KiB);
  for (let i = 0; i < 1000; i++) await lookup(`d${i}.example`, 'TXT');
  t.equal(dns.calls, 1000);
  await lookup('d999.example', 'TXT');
  t.equal(dns.calls, 1000, 'the newest answer came from the cache');
  await lookup('d0.example', 'TXT');
  t.equal(dns.calls, 1001, 'the oldest had gone: ~1 KiB answers, 256 KiB kept');
  await lookup('huge.example', 'TXT');
  await lookup('huge.example', 'TXT');
  t.equal(dns.calls, 1003, 'a ~480 KiB answer is asked again, not kept');
});

t.test("the MTA's DNS cache: bounded in bytes", async (t) => {
  const dns = fakeDns((name) => Array.from({ length: 8 }, (_, i) => ({ exchange: `mx${i}.${name}`, priority: i })));
  const lookups = sharedLookups(dns, 60_000, () => 0);
  for (let i = 0; i < 9000; i++) await lookups.mx(`a-fairly-long-domain-name-number-${i}.example`);
  const again = dns.calls;
  await lookups.mx('a-fairly-long-domain-name-number-8999.example');
  t.equal(dns.calls, again, 'the last answer is kept');
  await lookups.mx('a-fairly-long-domain-name-number-0.example');
  t.equal(dns.calls, again + 1, '9,000 answers of ~1 KiB do not all fit in 2 MiB: the first was dropped');
});

t.test('SecretBox: opened values bounded in bytes; a large one is opened each time, not kept', async (t) => {
  const box = new SecretBox(Buffer.alloc(32, 7));
  const sealed = Array.from({ length: 600 }, (_, i) => box.seal(`-----BEGIN PRIVATE KEY-----${'k'.repeat(3000)}${i}`));
  for (const s of sealed) box.open(s);
  t.ok(box.openedSize.bytes <= OPENED_MAX_BYTES, `kept ${box.openedSize.bytes} bytes`);
  const big = box.seal('p'.repeat(OPENED_MAX_BYTES / 4));
  t.equal(box.open(big).length, OPENED_MAX_BYTES / 4);
  const kept = box.openedSize.entries;
  box.open(big);
  t.equal(box.openedSize.entries, kept, 'not kept');
});
