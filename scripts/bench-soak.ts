// Soak benchmark (issue 34): the appliance's memory under a steady mixed load, and idle after start.
//
//   npm run bench:soak -- [--minutes 10] [--after 120] [--sends 300] [--inbound 200] [--imap 20]
//   npm run bench:idle        (= bench:soak --idle) [--settle 30] [--starts 5]
//
// The appliance runs as its own process, started as `npm start` starts it (node scripts/launch.mjs main, the
// compiled dist/), configured through MAIL_* variables only. This process is the rest of the world: a loopback
// DNS server, a lean sink MX (every outgoing message's destination), a webhook receiver, and the clients:
//   - sends: POST /emails paced at --sends per second (open loop, at most 400 in flight), to 50 remote domains
//     whose MX is the sink;
//   - inbound: SMTP sessions at the MX paced at --inbound messages per second, 2–20 KB, to 100 mailboxes
//     (mailauth checks each against the loopback DNS);
//   - IMAP: --imap sessions over implicit TLS doing bench:imap's mix on the first mailbox (which the inbound
//     stream keeps filling);
//   - webhooks: one endpoint for email.delivered and email.inbound, answered 200 by the receiver.
// Every 10 s it prints the appliance's PSS and RSS (/proc/<pid>/smaps_rollup: every thread), each isolate's JS
// heap used/total (GET /metrics with MAIL_METRICS_TOKEN: mail_thread_heap_*), external and array-buffer memory,
// the event-loop lag p99 and each stream's rate. Then the load stops; --after seconds later the PSS is compared
// with the idle figure measured before the load. At the end: a table per minute and the targets.
//
// --idle: five starts on one empty data dir (the first creates it), each measured after --settle seconds and
// stopped with SIGTERM; then one start on a seeded data dir (100,000 sent emails and 10 mailboxes of 10,000
// messages, built once through the appliance's own send path and mail store and kept in the temp dir).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inboundMessage, mailboxMessage, percentile, residentMemory } from './bench-helpers.js';
import { Client } from './bench-imap-client.js';
import { startLeanSink } from './bench-sink.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;
const mib = (b: number) => (b / MiB).toFixed(1);

interface Options {
  minutes: number;
  after: number;
  sends: number;
  inbound: number;
  imap: number;
  idle: boolean;
  settle: number;
  starts: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { minutes: 10, after: 120, sends: 300, inbound: 200, imap: 20, idle: false, settle: 30, starts: 5 };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.replace(/^--/, '') as keyof Options;
    if (!(name in o)) throw new Error(`unknown option ${argv[i]}`);
    if (name === 'idle') o.idle = true;
    else {
      const n = Number(argv[++i]);
      if (!(n >= 0)) throw new Error(`--${name} must be a number ≥ 0`);
      (o[name] as number) = n;
    }
  }
  return o;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** dist/ up to date (what launch.mjs would compile on start, done first so that no start is timed with tsc in it). */
function build(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('build failed');
}

interface Running {
  child: ChildProcess;
  ports: Record<string, number>;
  api: string;
  stop(): Promise<void>;
  /** From spawn to the first answer of GET /health. */
  startMs: number;
}

/** How long a start may take before /health answers (a start on a large data dir of an older version migrates it). */
const startWaitMs = 300_000;

/** The appliance as `npm start` runs it, on `dataDir`, every listener on a free loopback port. */
async function launch(dataDir: string, env: Record<string, string>): Promise<Running> {
  const names = ['API', 'MX', 'SUBMISSION', 'SUBMISSIONS', 'IMAP', 'IMAPS', 'POP3', 'POP3S'];
  const ports: Record<string, number> = {};
  for (const n of names) ports[n] = await freePort();
  const child = spawn(process.execPath, [path.join(root, 'scripts/launch.mjs'), 'main'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      MAIL_DATA_DIR: dataDir,
      MAIL_BIND: '127.0.0.1',
      MAIL_HOSTNAME: 'mx.soak.test',
      MAIL_LOG_LEVEL: 'warn',
      ...Object.fromEntries(names.map((n) => [`MAIL_${n}_PORT`, String(ports[n])])),
      // The allocator's settings when the caller gives them (to compare them): MALLOC_ARENA_MAX=2 …
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_')) as Array<[string, string]>),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4000)));
  const api = `http://127.0.0.1:${ports.API}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const t0 = Date.now();
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the appliance exited (${child.exitCode}): ${out}`);
      const ok = await fetch(`${api}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      if (Date.now() - t0 > startWaitMs) throw new Error(`the appliance did not answer /health in ${startWaitMs / 1000} s`);
      await sleep(100);
    }
  } catch (err) {
    // Never leave it running: it would go on writing to this process's pipe (EPIPE once this process is gone)
    // and into a data dir the caller is about to remove.
    await stop();
    throw err;
  }
  const startMs = Date.now() - t0;
  return { child, ports, api, stop, startMs };
}

/** Idle PSS after `settle` seconds (the mean of the last three 1 s samples). */
async function idlePss(pid: number, settle: number): Promise<{ pss: number; rss: number }> {
  await sleep(Math.max(0, settle - 3) * 1000);
  const samples: Array<{ pss: number; rss: number }> = [];
  for (let i = 0; i < 3; i++) {
    const m = residentMemory(pid);
    if (m) samples.push(m);
    await sleep(1000);
  }
  return { pss: samples.reduce((a, s) => a + s.pss, 0) / samples.length, rss: samples.reduce((a, s) => a + s.rss, 0) / samples.length };
}

// ------------------------------------------------------------------------------------------------ idle

const SEED_VERSION = 1;

/** The seeded data dir (built once per migration set, then copied): 100,000 sent emails, 10 mailboxes × 10,000. */
async function seededDir(): Promise<string> {
  // Keyed by the whole migration list: a seed made by an older schema would be migrated by the measured start
  // (the 100,000 messages' FTS and sort-key backfills), which is an upgrade, not an idle start.
  const migrations = readdirSync(path.join(root, 'src/db/migrations')).sort().join(',');
  const key = createHash('sha256').update(`${SEED_VERSION}:${migrations}`).digest('base64url').slice(0, 16);
  const seed = path.join(os.tmpdir(), `mail-bench-seed-${key}`);
  if (existsSync(path.join(seed, 'done'))) return seed;
  rmSync(seed, { recursive: true, force: true });
  console.log(`seeding ${seed} (once)…`);
  const t0 = Date.now();
  const [{ loadConfig, ANY_FREE_PORTS }, { startAppliance }, { newToken }, { createDomain }] = await Promise.all([
    import('../src/config.js'),
    import('../src/appliance.js'),
    import('../src/services/platform/index.js'),
    import('../src/services/platform/index.js'),
  ]);
  const apiKey = newToken('live');
  const config = loadConfig({}, { dataDir: seed, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'mx.seed.test', logLevel: 'silent', rateLimits: false, bootstrapApiKey: apiKey, localDomains: ['seed.test'] });
  // Outgoing mail is handed to an MTA that accepts everything at once: the emails are stored and delivered by the
  // send path as in production, without a network.
  const mta = {
    deliver: async (req: { recipients: string[] }) => ({ route: { kind: 'direct' as const, name: 'default', tls: false }, outcomes: req.recipients.map((recipient) => ({ recipient, status: 'delivered' as const, reply: { code: 250, message: 'ok' }, code: '2.0.0' })) }),
    close: async () => {},
  };
  const appliance = await startAppliance({ config, mta });
  const { ctx } = appliance;
  const teamId = appliance.bootstrap!.team.id;
  const api = `http://127.0.0.1:${appliance.ports.api.port}`;
  const domain = await createDomain(ctx, teamId, { name: 'boxes.seed.test', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' });
  await ctx.db('domains').where({ id: domain.id }).update({ status: 'verified' });
  for (let b = 0; b < 10; b++) {
    const address = `box${b}@boxes.seed.test`;
    const account = await ctx.mailstore.createAccount({ teamId, domainId: domain.id, address, password: `seed password ${b}` });
    for (let i = 0; i < 10_000; i += 250) {
      await Promise.all(Array.from({ length: Math.min(250, 10_000 - i) }, (_, j) => ctx.mailstore.deliver(mailboxMessage(i + j + 1, 10_000, address), [{ mailboxId: account.id }])));
    }
    process.stdout.write(`  mailbox ${b + 1}/10 filled (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  }
  const html = `<p>${'Seeded message body. '.repeat(40)}</p>`;
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < 100_000; i += 100) {
    const emails = Array.from({ length: 100 }, (_, j) => ({ from: 'News <news@seed.test>', to: [`r${(i + j) % 5000}@remote${(i + j) % 50}.test`], subject: `Seed ${i + j}`, html }));
    const p = fetch(`${api}/emails/batch`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ emails }) }).then(async (r) => {
      if (r.status !== 202) throw new Error(`POST /emails/batch: ${r.status} ${await r.text()}`);
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p)).catch(() => {});
    if (inFlight.size >= 8) await Promise.race(inFlight);
    if (i % 20_000 === 0) process.stdout.write(`  ${i} emails sent (${((Date.now() - t0) / 1000).toFixed(0)} s)\n`);
  }
  await Promise.all(inFlight);
  for (;;) {
    const left = Number(((await ctx.db('jobs').where({ state: 'ready' }).count({ n: '*' })) as Array<{ n: number }>)[0]!.n);
    if (left <= 5) break; // the retention and DNS-check schedules stay
    await sleep(1000);
  }
  const sent = Number(((await ctx.db('emails').count({ n: '*' })) as Array<{ n: number }>)[0]!.n);
  await appliance.stop();
  writeFileSync(path.join(seed, 'done'), `${sent} emails\n`);
  console.log(`seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s: ${sent} emails, 10 mailboxes × 10,000 messages`);
  return seed;
}

async function idleMain(o: Options): Promise<void> {
  build();
  console.log(`bench:idle — idle PSS ${o.settle} s after start; node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}`);
  const rows: Array<{ what: string; pss: number; rss: number; target: number }> = [];
  const empty = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-idle-'));
  try {
    for (let i = 1; i <= o.starts; i++) {
      const app = await launch(empty, {});
      const m = await idlePss(app.child.pid!, o.settle).finally(app.stop);
      rows.push({ what: `empty data dir, start ${i}${i === 1 ? ' (first: creates it)' : ''}`, ...m, target: 120 });
      console.log(`${rows.at(-1)!.what}: PSS ${mib(m.pss)} MiB, RSS ${mib(m.rss)} MiB (/health after ${(app.startMs / 1000).toFixed(1)} s)`);
    }
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
  const seed = await seededDir();
  const copy = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-idle-seeded-'));
  try {
    cpSync(seed, copy, { recursive: true });
    const app = await launch(copy, {});
    const m = await idlePss(app.child.pid!, o.settle).finally(app.stop);
    rows.push({ what: 'seeded: 100,000 emails, 10 × 10,000 messages', ...m, target: 140 });
    console.log(`${rows.at(-1)!.what}: PSS ${mib(m.pss)} MiB, RSS ${mib(m.rss)} MiB (/health after ${(app.startMs / 1000).toFixed(1)} s)`);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
  console.log('\nstart                                                PSS MiB   RSS MiB   target   ');
  for (const r of rows) console.log(`${r.what.padEnd(52)} ${mib(r.pss).padStart(7)} ${mib(r.rss).padStart(9)}   ≤ ${r.target}   ${r.pss <= r.target * MiB ? 'ok' : 'OVER'}`);
  console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)}`);
}

// ------------------------------------------------------------------------------------------------ soak

const SEND_DOMAIN = 'send.soak.test';
const INBOX_DOMAIN = 'inbox.soak.test';
const SENDER = 'sender.soak';
const MAILBOXES = 100;
const REMOTES = 50;

/** A paced stream: `rate` tokens a second, handed out every 100 ms to whoever waits. */
class Pace {
  private tokens = 0;
  private waiters: Array<() => void> = [];
  private readonly timer: NodeJS.Timeout;
  constructor(rate: number) {
    this.timer = setInterval(() => {
      this.tokens = Math.min(this.tokens + rate / 10, rate); // at most a second's worth banked
      while (this.tokens >= 1 && this.waiters.length) {
        this.tokens--;
        this.waiters.shift()!();
      }
    }, 100);
  }
  take(): Promise<void> {
    if (this.tokens >= 1) {
      this.tokens--;
      return Promise.resolve();
    }
    return new Promise((r) => this.waiters.push(r));
  }
  stop(): void {
    clearInterval(this.timer);
    for (const w of this.waiters.splice(0)) w();
  }
}

/** One SMTP session at the MX sending paced messages until `running()` is false. */
async function smtpSession(port: number, pace: Pace, running: () => boolean, counts: { inbound: number; inboundRefused: number }, first: number): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let buffer = '';
  let waiter: ((line: string) => void) | null = null;
  let failed: Error | null = null;
  socket.on('error', (err) => {
    failed = err;
    waiter?.('000 ' + err.message);
  });
  socket.on('close', () => waiter?.('000 closed'));
  socket.on('data', (d: Buffer) => {
    buffer += d.toString('latin1');
    for (;;) {
      const m = /^(\d{3}) [^\r\n]*\r\n/m.exec(buffer);
      if (!m || !waiter) break;
      const line = buffer.slice(m.index, m.index + m[0].length).trim();
      buffer = buffer.slice(m.index + m[0].length);
      const w = waiter;
      waiter = null;
      w(line);
    }
  });
  const reply = () => new Promise<string>((r) => (failed ? r('000') : (waiter = r)));
  const command = (c: string) => {
    const p = reply();
    socket.write(c + '\r\n');
    return p;
  };
  await reply();
  await command('EHLO client.sender.soak');
  for (let i = first; running(); i += 1000) {
    await pace.take();
    if (!running() || failed) break;
    const to = `user${i % MAILBOXES}@${INBOX_DOMAIN}`;
    await command(`MAIL FROM:<news@${SENDER}>`);
    if (!(await command(`RCPT TO:<${to}>`)).startsWith('250')) {
      counts.inboundRefused++;
      await command('RSET');
      continue;
    }
    await command('DATA');
    const p = reply();
    socket.write(inboundMessage(i, SENDER, to, 2048 + ((i * 7919) % (18 * 1024 + 1))) + '\r\n.\r\n');
    if ((await p).startsWith('250')) counts.inbound++;
    else counts.inboundRefused++;
  }
  if (!failed) await command('QUIT');
  socket.destroy();
}

/** One IMAP session doing bench:imap's mix until `running()` is false. */
async function imapSession(port: number, user: string, password: string, running: () => boolean, counts: { imap: number }, offset: number): Promise<void> {
  const c = await Client.connect(port);
  await c.run(`LOGIN "${user}" "${password}"`);
  await c.run('SELECT INBOX');
  let step = offset;
  while (running()) {
    const r = await c.run('SELECT INBOX');
    void r;
    switch (step++ % 7) {
      case 0:
        await c.run('FETCH 1:* (FLAGS ENVELOPE)');
        break;
      case 1:
        await c.run('UID SEARCH UNSEEN LARGER 4000 NOT DELETED');
        break;
      case 2:
      case 3:
        await c.run('FETCH 1:10 (UID RFC822.SIZE BODY.PEEK[])');
        break;
      case 4:
        await c.run(`STORE 1:5 ${Math.random() < 0.5 ? '+' : '-'}FLAGS.SILENT (\\Seen)`);
        break;
      case 5:
        await c.run('NOOP');
        break;
      case 6:
        await c.idle(sleep(500));
        break;
    }
    counts.imap++;
  }
  c.close();
}

interface Sample {
  t: number;
  phase: 'load' | 'after';
  pss: number;
  rss: number;
  heaps: string;
  external: number;
  arrayBuffers: number;
  lagP99: number;
  rates: string;
}

/** GET /metrics, parsed to name{labels} → value. */
async function metrics(api: string, token: string): Promise<Map<string, number>> {
  const text = await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.text());
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

async function soakMain(o: Options): Promise<void> {
  build();
  const { startDns } = await import('../test/helpers/dns-server.js');
  const { sinkTlsMaterial } = await import('../test/helpers/smtp-sink.js');
  const { newToken } = await import('../src/services/platform/index.js');
  const dns = await startDns();
  dns.set('TXT', SENDER, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.set('TXT', `_dmarc.${SENDER}`, ['v=DMARC1; p=none']);
  dns.set('A', 'sink.soak.test', ['127.0.0.1']);
  for (let i = 0; i < REMOTES; i++) dns.set('MX', `remote${i}.soak.test`, [{ exchange: 'sink.soak.test', priority: 10 }]);
  const counts = { sent: 0, sendErrors: 0, sunk: 0, inbound: 0, inboundRefused: 0, imap: 0, hooks: 0 };
  const { key, cert } = await sinkTlsMaterial();
  const sink = await startLeanSink({ key, cert, tls: false, name: 'sink.soak.test', onMessage: () => void counts.sunk++ });
  const hooks = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      counts.hooks++;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  const hookPort = (hooks.address() as net.AddressInfo).port;

  const apiKey = newToken('live');
  const metricsToken = newToken('live');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-soak-'));
  const app = await launch(dataDir, {
    MAIL_BOOTSTRAP_API_KEY: apiKey,
    MAIL_METRICS_TOKEN: metricsToken,
    MAIL_DNS_SERVERS: `${dns.server.host}:${dns.server.port}`,
    MAIL_OUTBOUND_PORT: String(sink.port),
    MAIL_RATE_LIMITS: 'off',
    MAIL_WEBHOOK_ALLOW_PRIVATE: 'true',
    MAIL_LOCAL_DOMAINS: `${SEND_DOMAIN},${INBOX_DOMAIN}`,
    MAIL_MX_GREET_PAUSE_MS: '0',
  });
  const pid = app.child.pid!;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const call = (method: string, p: string, body?: unknown) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(`${app.api}${p}`, { method, agent, headers: { authorization: `Bearer ${apiKey}`, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(data);
    });
  try {
    for (let i = 0; i < MAILBOXES; i++) {
      const r = await call('POST', '/mailboxes', { address: `user${i}@${INBOX_DOMAIN}`, password: `soak password ${i}` });
      if (r.status !== 201) throw new Error(`POST /mailboxes: ${r.status} ${r.body}`);
    }
    const wh = await call('POST', '/webhooks', { url: `http://127.0.0.1:${hookPort}/hook`, events: ['email.delivered', 'email.inbound'] });
    if (wh.status !== 201) throw new Error(`POST /webhooks: ${wh.status} ${wh.body}`);

    console.log(`bench:soak — ${o.sends} sends/s, ${o.inbound} inbound/s to ${MAILBOXES} mailboxes, ${o.imap} IMAP sessions, webhooks; ${o.minutes} min, then ${o.after} s idle; node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}`);
    const idle = await idlePss(pid, 30);
    console.log(`idle before the load (30 s after set-up): PSS ${mib(idle.pss)} MiB, RSS ${mib(idle.rss)} MiB`);

    let running = true;
    const live = () => running;
    const started = Date.now();
    const sendPace = new Pace(o.sends);
    const inboundPace = new Pace(o.inbound);
    const html = `<p>Hello {{name}}, ${'this is the soak benchmark. '.repeat(30)}</p>`;
    const inFlight = new Set<Promise<void>>();
    const sending = (async () => {
      for (let i = 0; running; i++) {
        await sendPace.take();
        if (!running) break;
        if (inFlight.size >= 400) {
          counts.sendErrors++; // dropped: the appliance is 400 behind
          continue;
        }
        const p = call('POST', '/emails', { from: `News <news@${SEND_DOMAIN}>`, to: [`r${i % 1000}@remote${i % REMOTES}.soak.test`], subject: `Soak ${i}`, html: html.replace('{{name}}', `reader ${i}`) }).then(
          (r) => void (r.status === 202 ? counts.sent++ : counts.sendErrors++),
          () => void counts.sendErrors++,
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      await Promise.all(inFlight);
    })();
    const smtp = Array.from({ length: 20 }, (_, i) => smtpSession(app.ports.MX!, inboundPace, live, counts, i).catch((err: unknown) => console.error('smtp session:', err)));
    const imap = Array.from({ length: o.imap }, (_, i) => imapSession(app.ports.IMAPS!, `user0@${INBOX_DOMAIN}`, 'soak password 0', live, counts, i).catch((err: unknown) => console.error('imap session:', err)));

    const samples: Sample[] = [];
    let last = { ...counts };
    let lastT = Date.now();
    const sample = async (phase: Sample['phase']) => {
      const m = residentMemory(pid) ?? { pss: NaN, rss: NaN };
      const x = await metrics(app.api, metricsToken).catch(() => new Map<string, number>());
      const heaps = [...x]
        .filter(([k]) => k.startsWith('mail_thread_heap_used_bytes'))
        .map(([k, used]) => {
          const thread = /thread="([^"]+)"/.exec(k)![1]!;
          return `${thread} ${mib(used)}/${mib(x.get(`mail_thread_heap_total_bytes{thread="${thread}"}`) ?? NaN)}`;
        })
        .join(', ');
      const now = Date.now();
      const s = (now - lastT) / 1000;
      const rate = (k: keyof typeof counts) => ((counts[k] - last[k]) / s).toFixed(0);
      const row: Sample = {
        t: (now - started) / 1000,
        phase,
        pss: m.pss,
        rss: m.rss,
        heaps,
        external: x.get('mail_nodejs_external_memory_bytes') ?? NaN,
        arrayBuffers: x.get('mail_process_array_buffers_bytes') ?? NaN,
        lagP99: (x.get('mail_nodejs_eventloop_lag_p99_seconds') ?? NaN) * 1000,
        rates: `sent ${rate('sent')}/s (errors ${rate('sendErrors')}), sink ${rate('sunk')}/s, inbound ${rate('inbound')}/s (refused ${rate('inboundRefused')}), imap ${rate('imap')} cmds/s, webhooks ${rate('hooks')}/s`,
      };
      last = { ...counts };
      lastT = now;
      samples.push(row);
      console.log(`${row.t.toFixed(0).padStart(5)} s ${phase.padEnd(5)} PSS ${mib(row.pss)} MiB, RSS ${mib(row.rss)} MiB; heap used/total MiB: ${heaps}; external ${mib(row.external)}, array buffers ${mib(row.arrayBuffers)}; lag p99 ${row.lagP99.toFixed(1)} ms; ${row.rates}`);
    };
    const loadEnd = started + o.minutes * 60_000;
    while (Date.now() < loadEnd) {
      await sleep(Math.min(10_000, loadEnd - Date.now()));
      await sample('load');
    }
    running = false;
    sendPace.stop();
    inboundPace.stop();
    await Promise.all([sending, ...smtp, ...imap]);
    const stoppedAt = Date.now();
    while (Date.now() < stoppedAt + o.after * 1000) {
      await sleep(Math.min(10_000, stoppedAt + o.after * 1000 - Date.now()));
      await sample('after');
    }
    const after = await idlePss(pid, 3);

    // Per minute of the load: the mean PSS; the targets.
    const load = samples.filter((s) => s.phase === 'load');
    const minute = (m: number) => load.filter((s) => s.t > (m - 1) * 60 && s.t <= m * 60 + 1);
    const mean = (xs: Sample[]) => xs.reduce((a, s) => a + s.pss, 0) / Math.max(1, xs.length);
    console.log('\nminute   PSS mean MiB   PSS max MiB   RSS max MiB   lag p99 max ms');
    for (let m = 1; m <= Math.ceil(o.minutes); m++) {
      const xs = minute(m);
      if (!xs.length) continue;
      console.log(`${String(m).padStart(6)} ${mib(mean(xs)).padStart(14)} ${mib(Math.max(...xs.map((s) => s.pss))).padStart(13)} ${mib(Math.max(...xs.map((s) => s.rss))).padStart(13)} ${Math.max(...xs.map((s) => s.lagP99)).toFixed(1).padStart(16)}`);
    }
    const peak = Math.max(...load.map((s) => s.pss));
    const third = mean(minute(3));
    const lastMinute = load.filter((s) => s.t > load.at(-1)!.t - 60);
    const flat = o.minutes >= 4 ? Math.abs(mean(lastMinute) - third) / third : NaN;
    const secs = (stoppedAt - started) / 1000;
    console.log(`\nthroughput over the load: sent ${(counts.sent / secs).toFixed(0)}/s (${counts.sendErrors} errors or dropped), sink ${(counts.sunk / secs).toFixed(0)}/s, inbound ${(counts.inbound / secs).toFixed(0)}/s (${counts.inboundRefused} refused), IMAP ${(counts.imap / secs).toFixed(0)} commands/s, webhooks ${(counts.hooks / secs).toFixed(0)}/s; lag p99 median ${percentile(load.map((s) => s.lagP99).sort((a, b) => a - b), 50).toFixed(1)} ms`);
    console.log(`targets: peak PSS ${mib(peak)} MiB ≤ 300: ${peak <= 300 * MiB ? 'ok' : 'NOT MET'}`);
    console.log(`         flat, last minute within 5 % of the third: ${Number.isNaN(flat) ? 'n/a (needs --minutes ≥ 4)' : `${(flat * 100).toFixed(1)} %: ${flat <= 0.05 ? 'ok' : 'NOT MET'}`}`);
    console.log(`         ${o.after} s after the load, within 20 % of idle (${mib(idle.pss)} MiB): ${mib(after.pss)} MiB, ${(((after.pss - idle.pss) / idle.pss) * 100).toFixed(1)} %: ${after.pss <= idle.pss * 1.2 ? 'ok' : 'NOT MET'}${o.after < 120 ? ' (shorter than the 2 minutes of the target)' : ''}`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (${os.cpus().length} CPUs)`);
  } finally {
    await app.stop();
    agent.destroy();
    await sink.close();
    hooks.close();
    await dns.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const opts = parseArgs(process.argv.slice(2));
(opts.idle ? idleMain(opts) : soakMain(opts)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench:soak failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
