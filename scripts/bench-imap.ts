// IMAP benchmark: the real appliance (startAppliance, real clock) serves one mailbox of `--n` messages
// (mixed sizes: plain text, multipart/alternative, attachments) to `--sessions` concurrent sessions for
// `--seconds`, each looping over SELECT, FETCH 1:* (FLAGS ENVELOPE), UID SEARCH, UID FETCH BODY.PEEK[] of a
// random message, UID STORE of flags and IDLE (ended by DONE after a new delivery or 500 ms), while one
// message is delivered every 100 ms.
//
//   npm run bench:imap -- [--n 10000] [--sessions 20] [--seconds 20] [--keep] [--profile file.cpuprofile]
//   npm run bench:imap -- --stress [--clients 10] [--n 30] [--seconds 20] [--profile file.cpuprofile]
//
// --stress is the many-session load of an IMAP stress tester (imaptest's default run; issue 35 §3): `--clients`
// clients each connect over TLS, LOGIN, SELECT INBOX, UID FETCH BODY.PEEK[] of a random message, UID STORE a
// flag, APPEND a message (LITERAL+), STORE \Deleted on the first message and EXPUNGE, LOGOUT, and again, for
// `--seconds`, all against one shared mailbox of about `--n` messages (imaptest keeps its mailbox at 30 by
// default: each round appends one and expunges about one). Printed: logins/s, commands/s, protocol errors
// (a NO, BAD or BYE, or a socket error), p50/p99 per command kind, the server's CPU per command and its memory.
// With --profile the V8 CPU profile covers the stress run.
//
// --profile writes a V8 CPU profile of the server process covering the idle-server FETCH 1:* runs (cold and
// warm, from the client's connect to its last response); open it in Chrome DevTools or speedscope.
//
// The clients run in a child process (own CPU time, own memory), over implicit TLS, with a small
// literal-aware client so the figures are the server's, not a client library's parsing. Printed: the time of
// one FETCH 1:* (FLAGS ENVELOPE) of the whole mailbox on an otherwise idle server (first = cold summary
// cache, then warm), operations per second and p50/p99 latency per command during the mixed run, and the
// server process's RSS before, at peak and after the run (sampled every 100 ms).
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import { mailboxMessage, percentile as pct, rssKinds } from './bench-helpers.js';
import { Client } from './bench-imap-client.js';

/** A full garbage collection (for heap figures that show retained memory, not garbage not yet collected). */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

interface Options {
  n: number;
  sessions: number;
  seconds: number;
  keep: boolean;
  profile: string | null;
  stress: boolean;
  /** --stress --sql: the statements run, by shape, a command. */
  sqlShapes: boolean;
  clients: number;
}

function parseArgs(argv: string[]): Options & { client: boolean; port: number } {
  const o: Options & { client: boolean; port: number } = { n: 0, sessions: 20, seconds: 20, keep: false, profile: null, stress: false, sqlShapes: false, clients: 10, client: false, port: 0 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.includes('=') ? argv[i]!.split('=', 2) : [argv[i]!, undefined];
    const value = () => Number(inline ?? argv[++i]);
    if (flag === '--n') o.n = value();
    else if (flag === '--sessions') o.sessions = value();
    else if (flag === '--seconds') o.seconds = value();
    else if (flag === '--keep') o.keep = true;
    else if (flag === '--profile') o.profile = inline ?? argv[++i]!;
    else if (flag === '--client') o.client = true;
    else if (flag === '--port') o.port = value();
    else if (flag === '--stress') o.stress = true;
    else if (flag === '--sql') o.sqlShapes = true;
    else if (flag === '--clients') o.clients = value();
    else throw new Error(`unknown option ${flag}`);
  }
  if (!o.n) o.n = o.stress ? 30 : 10_000;
  if (!(o.clients >= 1)) throw new Error('--clients ≥ 1');
  if (!(o.n >= 1 && o.sessions >= 1 && o.seconds >= 1)) throw new Error('--n, --sessions, --seconds ≥ 1');
  return o;
}

const USER = 'bench@bench.test';
const PASSWORD = 'bench password 1';

// ---------------------------------------------------------------------------------------------- client

async function clientMain(o: Options & { port: number }): Promise<void> {
  // Resolves once the message is written to the IPC channel: the process exits right after its last one.
  const send = (m: unknown) => new Promise<void>((resolve) => process.send!(m, undefined, {}, () => resolve()));
  // One FETCH 1:* (FLAGS ENVELOPE) on an idle server: cold (summaries read from the store), then warm.
  const solo = await Client.connect(o.port);
  await solo.run(`LOGIN "${USER}" "${PASSWORD}"`);
  await solo.run('SELECT INBOX');
  const fetchAll: number[] = [];
  let fetched = 0;
  // The server notes its CPU time at each mark (acknowledged before the next command is sent).
  const mark = () =>
    new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      void send({ mark: true });
    });
  for (let i = 0; i < 3; i++) {
    await mark();
    const t0 = performance.now();
    const r = await solo.run('FETCH 1:* (FLAGS ENVELOPE)');
    fetchAll.push(performance.now() - t0);
    fetched = r.untagged;
  }
  await mark();
  // SEARCH BODY/TEXT of the whole mailbox (the full-text index): a rare needle, a common one, a short one.
  const searches: Array<{ cmd: string; ms: number; hits: number }> = [];
  for (const cmd of [`UID SEARCH TEXT "message ${o.n - 1} of"`, 'UID SEARCH BODY "consectetur adipiscing"', 'UID SEARCH TEXT "Sender 42"', 'UID SEARCH BODY "zq"']) {
    const t0 = performance.now();
    let hits = 0;
    await solo.run(cmd, (line) => (hits = line.trim().split(' ').length - 2));
    searches.push({ cmd, ms: performance.now() - t0, hits });
  }
  solo.close();
  void send({ fetchAll, fetched, searches });

  const lat: Record<string, number[]> = {};
  const record = (name: string, ms: number) => (lat[name] ??= []).push(ms);
  const deadline = performance.now() + o.seconds * 1000;
  let maxUid = o.n;
  const sessions = await Promise.all(Array.from({ length: o.sessions }, () => Client.connect(o.port)));
  await Promise.all(sessions.map((c) => c.run(`LOGIN "${USER}" "${PASSWORD}"`)));
  const started = performance.now();
  await Promise.all(
    sessions.map(async (c, i) => {
      const timed = async (name: string, cmd: string) => {
        const t0 = performance.now();
        const r = await c.run(cmd);
        record(name, performance.now() - t0);
        return r;
      };
      let step = i; // sessions start at different points of the cycle
      while (performance.now() < deadline) {
        const uid = 1 + Math.floor(Math.random() * maxUid);
        switch (step++ % 8) {
          case 0: {
            const r = await timed('SELECT', 'SELECT INBOX');
            void r;
            break;
          }
          case 1:
            await timed('FETCH 1:* (FLAGS ENVELOPE)', 'FETCH 1:* (FLAGS ENVELOPE)');
            break;
          case 2:
            await timed('UID SEARCH', 'UID SEARCH UNSEEN LARGER 4000 NOT DELETED');
            break;
          case 3:
          case 4:
            await timed('UID FETCH BODY.PEEK[]', `UID FETCH ${uid} (UID RFC822.SIZE BODY.PEEK[])`);
            break;
          case 5:
            await timed('UID STORE', `UID STORE ${uid} ${Math.random() < 0.5 ? '+' : '-'}FLAGS.SILENT (\\Seen)`);
            break;
          case 6:
            await timed('NOOP', 'NOOP');
            break;
          case 7: {
            const t0 = performance.now();
            await c.idle(
              new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, 500);
                c.onExists = () => {
                  clearTimeout(timer);
                  resolve();
                };
              }),
            );
            c.onExists = null;
            record('IDLE (until EXISTS or 500 ms)', performance.now() - t0);
            maxUid++;
            break;
          }
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  for (const c of sessions) c.close();
  await send({ lat, seconds });
}

/** --stress: `clients` loops of connect, LOGIN, SELECT, UID FETCH, UID STORE, APPEND, STORE+EXPUNGE, LOGOUT. */
async function stressMain(o: Options & { port: number }): Promise<void> {
  // Resolves once the message is written to the IPC channel: the process exits right after its last one.
  const send = (m: unknown) => new Promise<void>((resolve) => process.send!(m, undefined, {}, () => resolve()));
  const lat: Record<string, number[]> = {};
  const errors: Record<string, number> = {};
  let logins = 0;
  const record = (name: string, ms: number) => (lat[name] ??= []).push(ms);
  const fail = (what: string) => (errors[what] = (errors[what] ?? 0) + 1);
  // The server notes its CPU time and memory when the run starts (acknowledged before the first command).
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    void send({ mark: true });
  });
  const started = performance.now();
  const deadline = started + o.seconds * 1000;
  let appended = 0;
  await Promise.all(
    Array.from({ length: o.clients }, async (_, i) => {
      while (performance.now() < deadline) {
        let c: Client | null = null;
        try {
          let t0 = performance.now();
          c = await Client.connect(o.port);
          record('connect + TLS + greeting', performance.now() - t0);
          const timed = async (name: string, cmd: string | Buffer, onUntagged?: (line: string) => void, expect = 'OK') => {
            t0 = performance.now();
            const r = await c!.run(cmd, onUntagged);
            record(name, performance.now() - t0);
            if (r.status !== expect) fail(`${name} ${r.status}`);
            return r;
          };
          await timed('LOGIN', `LOGIN "${USER}" "${PASSWORD}"`);
          logins++;
          let exists = 0;
          let uidNext = 0;
          await timed('SELECT', 'SELECT INBOX', (line) => {
            const e = /^\* (\d+) EXISTS/.exec(line);
            if (e) exists = Number(e[1]);
            const u = /\[UIDNEXT (\d+)\]/.exec(line);
            if (u) uidNext = Number(u[1]);
          });
          // A UID among the last `exists` (the oldest are expunged first); one expunged meanwhile answers nothing, not an error.
          const uid = Math.max(1, uidNext - 1 - Math.floor(Math.random() * Math.max(1, exists)));
          await timed('UID FETCH BODY.PEEK[]', `UID FETCH ${uid} (UID RFC822.SIZE BODY.PEEK[])`);
          await timed('UID STORE', `UID STORE ${uid} ${Math.random() < 0.5 ? '+' : '-'}FLAGS.SILENT (${Math.random() < 0.5 ? '\\Seen' : '\\Flagged'})`);
          const raw = mailboxMessage(o.n + i * 1_000_000 + ++appended, o.n, USER);
          await timed('APPEND', Buffer.concat([Buffer.from(`APPEND INBOX (\\Seen) {${raw.length}+}\r\n`), raw]));
          await timed('STORE \\Deleted', 'STORE 1 +FLAGS.SILENT (\\Deleted)');
          await timed('EXPUNGE', 'EXPUNGE');
          await timed('LOGOUT', 'LOGOUT');
        } catch (err) {
          fail(`socket: ${(err as Error).message}`);
        } finally {
          c?.close();
        }
      }
    }),
  );
  await send({ stress: { lat, errors, logins, seconds: (performance.now() - started) / 1000 } });
}

// ---------------------------------------------------------------------------------------------- server



/** CPU time (ms) of this process's main thread and of its other threads, from /proc (Linux; zeros elsewhere). */
function threadCpu(): { main: number; other: number } {
  const out = { main: 0, other: 0 };
  try {
    const tick = 10; // ms per clock tick (USER_HZ = 100 on Linux)
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = (Number(f[11]) + Number(f[12])) * tick;
      if (Number(tid) === process.pid) out.main += ms;
      else out.other += ms;
    }
  } catch {
    /* not Linux */
  }
  return out;
}

async function serverMain(o: Options): Promise<void> {
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-imap-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'bench.appliance.test', logLevel: 'silent', rateLimits: false });
  const appliance = await startAppliance({ config });
  const { ctx } = appliance;
  const teamId = appliance.bootstrap!.team.id;
  const now = new Date().toISOString();
  await ctx.db('domains').insert({ id: 'dom_bench', team_id: teamId, name: 'bench.test', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  const account = await ctx.mailstore.createAccount({ teamId, domainId: 'dom_bench', address: USER, password: PASSWORD });
  console.log(`bench:imap${o.stress ? ' --stress' : ''}  ${o.n} messages, ${o.stress ? `${o.clients} clients` : `${o.sessions} sessions`}, ${o.seconds} s, node ${process.version}, ${os.cpus().length} CPUs`);
  let t0 = Date.now();
  let bytes = 0;
  for (let i = 0; i < o.n; i += 200) {
    const batch = [];
    for (let j = i; j < Math.min(o.n, i + 200); j++) {
      const raw = mailboxMessage(j + 1, o.n, USER);
      bytes += raw.length;
      batch.push(ctx.mailstore.deliver(raw, [{ mailboxId: account.id }]));
    }
    await Promise.all(batch);
  }
  console.log(`filled INBOX: ${o.n} messages, ${(bytes / 1024 / 1024).toFixed(1)} MB, in ${((Date.now() - t0) / 1000).toFixed(1)} s; RSS ${rssKinds()}`);
  // The full-text index is written in the background within about half a second of a delivery; the searches
  // below measure a caught-up index (a mailbox filled all at once would otherwise be scanned, not looked up).
  const t1 = Date.now();
  const indexed = await ctx.mailstore.indexText();
  console.log(`full-text index caught up: ${indexed} sources in ${((Date.now() - t1) / 1000).toFixed(1)} s`);

  collectGarbage();
  const memBefore = process.memoryUsage();
  const heapBefore = memBefore.heapUsed;
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const samples: number[] = [];
  const sampler = setInterval(() => {
    const rss = process.memoryUsage().rss;
    samples.push(rss);
    peakRss = Math.max(peakRss, rss);
  }, 100);
  let profiler: inspector.Session | null = null;
  if (o.profile) {
    profiler = new inspector.Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const marks: NodeJS.CpuUsage[] = [];
  let runCpu = process.cpuUsage();
  // --stress: SQL statements by connection (knex's 'query' event, also emitted by the direct path and scripts),
  // write transactions, and the CPU of the main thread apart from the others (SQLite's and libuv's pool threads).
  const { readsOf } = await import('../src/db/index.js');
  const sql = { writer: 0, reads: 0, transactions: 0 };
  const shapes = new Map<string, number>();
  const shape = (text: string | undefined) => {
    if (!o.sqlShapes || !text) return;
    const key = text.replace(/\s+/g, ' ').replace(/\((\?, )+\?\)/g, '(?…)').slice(0, 150);
    shapes.set(key, (shapes.get(key) ?? 0) + 1);
  };
  if (o.stress) {
    ctx.db.on('query', (q: { sql?: string }) => {
      shape(`W ${q.sql}`);
      sql.writer++;
      if (q.sql === 'BEGIN IMMEDIATE;' || q.sql?.startsWith('BEGIN')) sql.transactions++;
    });
    readsOf(ctx.db).on('query', (q: { sql?: string }) => {
      shape(`R ${q.sql}`);
      sql.reads++;
    });
  }
  let sqlAtMark = { ...sql };
  let threadsAtMark = threadCpu();
  let delivering: NodeJS.Timeout | null = null;
  let extra = 0;
  const inFlight = new Set<Promise<unknown>>();
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--client', '--port', String(appliance.ports.imaps.port), '--n', String(o.n), '--sessions', String(o.sessions), '--seconds', String(o.seconds), '--clients', String(o.clients), ...(o.stress ? ['--stress'] : [])],
    { execArgv: ['--import', 'tsx'] },
  );
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
  const profiling: Array<Promise<void>> = [];
  const stopProfile = () => {
    if (!profiler) return;
    const session = profiler;
    profiler = null;
    profiling.push(
      session.post('Profiler.stop').then(({ profile }) => {
        writeFileSync(o.profile!, JSON.stringify(profile));
        console.log(`CPU profile of the ${o.stress ? 'stress run' : 'idle-server FETCHes'} written to ${o.profile}`);
        session.disconnect();
      }),
    );
  };
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => (code ? reject(new Error(`client exited with ${code}`)) : resolve()));
    child.on('message', (m: { mark?: boolean; fetchAll?: number[]; fetched?: number; searches?: Array<{ cmd: string; ms: number; hits: number }>; lat?: Record<string, number[]>; seconds?: number; stress?: StressResult }) => {
      if (m.mark && o.stress) {
        runCpu = process.cpuUsage();
        sqlAtMark = { ...sql };
        threadsAtMark = threadCpu();
        child.send({ ack: true });
        return;
      }
      if (m.stress) {
        const r = m.stress;
        const used = process.cpuUsage(runCpu);
        const ops = Object.entries(r.lat).reduce((n, [name, l]) => n + (name.startsWith('connect') ? 0 : l.length), 0);
        const errors = Object.values(r.errors).reduce((a, b) => a + b, 0);
        console.log(`stress: ${o.clients} clients over TLS for ${r.seconds.toFixed(1)} s against one mailbox of ~${o.n} messages; load ${os.loadavg()[0]!.toFixed(2)}`);
        console.log(`logins/s ${(r.logins / r.seconds).toFixed(1)}   commands/s ${(ops / r.seconds).toFixed(1)} (${ops} commands)   errors ${errors}${errors ? ` ${JSON.stringify(r.errors)}` : ''}`);
        console.log(`server CPU: ${((used.user + used.system) / 1000).toFixed(0)} ms, ${((used.user + used.system) / 1000 / ops).toFixed(3)} ms a command (TLS handshakes included)`);
        const threads = threadCpu();
        const mainMs = threads.main - threadsAtMark.main;
        const otherMs = threads.other - threadsAtMark.other;
        console.log(`  main thread ${(mainMs / ops).toFixed(3)} ms a command, other threads (SQLite's, libuv's pool, GC) ${(otherMs / ops).toFixed(3)} ms`);
        const w = sql.writer - sqlAtMark.writer;
        const rd = sql.reads - sqlAtMark.reads;
        const tx = sql.transactions - sqlAtMark.transactions;
        if (o.sqlShapes) for (const [text, n] of [...shapes].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${(n / ops).toFixed(3).padStart(7)}  ${text}`);
        console.log(`  SQL: ${((w + rd) / ops).toFixed(2)} statements a command (writer ${(w / ops).toFixed(2)}, readers ${(rd / ops).toFixed(2)}), ${(tx / ops).toFixed(3)} write transactions a command`);
        console.log('command                              ops/s     p50 ms    p99 ms');
        for (const [name, list] of Object.entries(r.lat)) {
          list.sort((a, b) => a - b);
          console.log(`${name.padEnd(36)} ${(list.length / r.seconds).toFixed(1).padStart(6)} ${pct(list, 50).toFixed(1).padStart(10)} ${pct(list, 99).toFixed(1).padStart(9)}`);
        }
        stopProfile();
        return;
      }
      if (m.mark) {
        marks.push(process.cpuUsage());
        child.send({ ack: true });
      }
      if (m.fetchAll) {
        const cpu = marks.slice(1).map((c, i) => (c.user + c.system - marks[i]!.user - marks[i]!.system) / 1000);
        stopProfile();
        for (const x of m.searches ?? []) console.log(`${x.cmd} over ${o.n} messages, idle server: ${x.ms.toFixed(1)} ms, ${x.hits} found`);
        const [cold, ...warm] = m.fetchAll.map((x) => x.toFixed(0));
        console.log(`FETCH 1:* (FLAGS ENVELOPE) of ${m.fetched} messages, idle server: ${cold} ms cold, ${warm.join(' / ')} ms warm (wall); server CPU ${cpu.map((x) => x.toFixed(0)).join(' / ')} ms; load ${os.loadavg()[0]!.toFixed(2)}`);
        t0 = Date.now();
        runCpu = process.cpuUsage();
        delivering = setInterval(() => {
          const p = ctx.mailstore.deliver(mailboxMessage(o.n + ++extra, o.n, USER), [{ mailboxId: account.id }]);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        }, 100);
      }
      if (m.lat) {
        if (delivering) clearInterval(delivering);
        const used = process.cpuUsage(runCpu);
        const ops = Object.values(m.lat).reduce((n, l) => n + l.length, 0);
        console.log(`server CPU during the mixed run: ${((used.user + used.system) / 1000).toFixed(0)} ms for ${ops} commands (${((used.user + used.system) / 1000 / ops).toFixed(2)} ms a command, deliveries included); load ${os.loadavg()[0]!.toFixed(2)}`);
        console.log(`mixed run: ${o.sessions} sessions for ${m.seconds!.toFixed(1)} s, ${extra} deliveries meanwhile`);
        console.log('command                              ops/s     p50 ms    p99 ms');
        for (const [name, list] of Object.entries(m.lat)) {
          list.sort((a, b) => a - b);
          console.log(`${name.padEnd(36)} ${(list.length / m.seconds!).toFixed(1).padStart(6)} ${pct(list, 50).toFixed(1).padStart(10)} ${pct(list, 99).toFixed(1).padStart(9)}`);
        }
      }
    });
  });
  clearInterval(sampler);
  await Promise.all(inFlight);
  await Promise.all(profiling);
  collectGarbage();
  const memAfter = process.memoryUsage();
  const heapAfter = memAfter.heapUsed;
  const tail = samples.slice(-10);
  const half = Math.floor(samples.length / 2);
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  console.log(`server RSS: ${mb(rssBefore)} before, peak ${mb(peakRss)}, ${mb(avg(samples.slice(0, half)))} avg first half, ${mb(avg(samples.slice(half)))} avg second half, ${mb(avg(tail))} at the end`);
  console.log(`server JS heap after a full GC: ${mb(heapBefore)} before the run, ${mb(heapAfter)} after (sessions closed)`);
  console.log(`server RSS by kind at the end (/proc/self/status): ${rssKinds()}`);
  console.log(`server memory outside the JS heap after a full GC: buffers ${mb(memBefore.arrayBuffers)} → ${mb(memAfter.arrayBuffers)}, heap reserved ${mb(memBefore.heapTotal)} → ${mb(memAfter.heapTotal)}, RSS ${mb(memBefore.rss)} → ${mb(memAfter.rss)}`);
  await appliance.stop();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

interface StressResult {
  lat: Record<string, number[]>;
  errors: Record<string, number>;
  logins: number;
  seconds: number;
}

const opts = parseArgs(process.argv.slice(2));
if (opts.client) {
  (opts.stress ? stressMain(opts) : clientMain(opts)).then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  serverMain(opts).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
