// Mail store benchmark (no network): the store itself, as the MX listener and IMAP would drive it.
//
//   npx tsx scripts/bench-mailstore.ts [--n 20000] [--mailboxes 100] [--concurrency 64] [--list 10000]
//
// (a) deliver: N messages of 2–20 KB to random mailboxes, `concurrency` calls in flight (the group-commit
//     writer batches them); prints messages stored per second and p99 call latency.
// (b) list: a folder of `list` messages, `listMessages(folder, { withSummary: true })` (what IMAP's
//     FETCH 1:* (FLAGS ENVELOPE) needs), best of 5.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config.js';
import { createContext } from '../src/context.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? dflt : Number(process.argv[i + 1]);
};
const N = arg('n', 20000);
const MAILBOXES = arg('mailboxes', 100);
const CONCURRENCY = arg('concurrency', 64);
const LIST = arg('list', 10000);

function message(i: number, size: number): Buffer {
  const head = [
    `From: "Sender ${i}" <sender${i}@remote.test>`,
    `To: user${i % MAILBOXES}@bench.test`,
    `Subject: Message number ${i}`,
    'Date: Fri, 01 May 2026 10:00:00 +0000',
    `Message-ID: <${i}.${Date.now()}@remote.test>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    '',
  ].join('\r\n');
  const line = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.\r\n';
  return Buffer.from(head + line.repeat(Math.max(1, Math.floor((size - head.length) / line.length))));
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-mailstore-'));
const ctx = await createContext(loadConfig({}, { dataDir, logLevel: 'silent', hostname: 'mx.bench.test' }));
const store = ctx.mailstore;
const now = new Date().toISOString();
await ctx.db('teams').insert({ id: 'team_bench', name: 'Bench', plan: 'pro', owner_email: 'o@bench.test', created_at: now });
await ctx.db('domains').insert({ id: 'dom_bench', team_id: 'team_bench', name: 'bench.test', status: 'verified', region: 'eu-west-1', tls_mode: 'opportunistic', created_at: now, updated_at: now });
const ids = await Promise.all(
  Array.from({ length: MAILBOXES }, (_, i) => store.createAccount({ teamId: 'team_bench', domainId: 'dom_bench', address: `user${i}@bench.test`, password: 'bench-password' })),
).then((a) => a.map((x) => x.id));

// (a) deliver
const bodies = Array.from({ length: N }, (_, i) => message(i, 2048 + Math.floor(Math.random() * 18 * 1024)));
const latencies: number[] = [];
let next = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < N) {
      const i = next++;
      const s = performance.now();
      await store.resolveAddress(`user${i % MAILBOXES}@bench.test`);
      await store.deliver(bodies[i]!, [{ mailboxId: ids[i % MAILBOXES]! }]);
      latencies.push(performance.now() - s);
    }
  }),
);
const secs = (performance.now() - t0) / 1000;
latencies.sort((a, b) => a - b);
console.log(`deliver: ${N} messages (2–20 KB) to ${MAILBOXES} mailboxes, ${CONCURRENCY} in flight: ${(N / secs).toFixed(0)} msg/s, p50 ${latencies[Math.floor(N * 0.5)]!.toFixed(1)} ms, p99 ${latencies[Math.floor(N * 0.99)]!.toFixed(1)} ms`);

// (b) list a big folder
const big = await store.createAccount({ teamId: 'team_bench', domainId: 'dom_bench', address: 'big@bench.test', password: 'bench-password' });
for (let i = 0; i < LIST; i += 500) {
  await Promise.all(Array.from({ length: Math.min(500, LIST - i) }, (_, k) => store.deliver(message(100000 + i + k, 3000), [{ mailboxId: big.id }])));
}
const inbox = (await store.getFolder(big.id, 'INBOX'))!;
let best = Infinity;
let bestPlain = Infinity;
for (let r = 0; r < 5; r++) {
  let s = performance.now();
  const list = await store.listMessages(inbox.id, { withSummary: true });
  best = Math.min(best, performance.now() - s);
  if (list.length !== LIST) throw new Error(`listed ${list.length}`);
  s = performance.now();
  await store.listMessages(inbox.id);
  bestPlain = Math.min(bestPlain, performance.now() - s);
}
console.log(`listMessages: ${LIST} messages with summaries ${best.toFixed(0)} ms, without ${bestPlain.toFixed(0)} ms (best of 5)`);
console.log(`peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
await ctx.db.destroy();
rmSync(dataDir, { recursive: true, force: true });
