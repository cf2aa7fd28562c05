// Latency benchmark (issue 36): what one client waits per command and per connection, with the socket settings
// real clients use (Nagle on, delayed ACK, no pipelining, STARTTLS).
//
//   npm run bench:latency -- [--n 10000] [--repeat 100] [--sessions 20] [--per-session 1000] [--mailboxes 100] [--only python|inbound]
//
// The appliance (startAppliance, real clock) runs in this process with one mailbox of `--n` messages (the mixed
// sizes of bench:imap), one of 10 and `--mailboxes` empty ones. Then:
//   1. scripts/bench-latency.py, Python's imaplib/poplib/smtplib at their defaults over STARTTLS, one command at a
//      time: `--repeat` × FETCH n BODY[], FETCH n (FLAGS), UID STORE, NOOP, APPEND of 2 KB; SELECT of both
//      mailboxes; POP3 RETR and NOOP; connect → greeting → EHLO → QUIT on the MX and on submission (loopback: a
//      trusted client). Printed per command: p50, p99 and max (ms); APPEND also per second.
//   2. Inbound, one message per connection (as smtp-source -s 20 sends it): `--sessions` clients, each
//      `--per-session` times connect → EHLO → MAIL → RCPT → DATA (message and final dot in one write) → QUIT, plain
//      SMTP with Nagle on, 2–20 KB to the mailboxes round-robin; every message authenticated (SPF/DKIM/DMARC
//      against a loopback DNS server) and stored before its 250. Printed: messages stored per second, connect →
//      250 after the dot p50/p99.
// The appliance's memory (RSS and PSS, /proc/self/smaps_rollup) after seeding, after the latency phase, and its
// peak during the inbound phase. The clients run in child processes (their CPU is not the appliance's); the
// machine's cores are shared, so run it a few times.
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { inboundMessage, mailboxMessage, percentile, residentMemory } from './bench-helpers.js';

interface Options {
  n: number;
  repeat: number;
  sessions: number;
  perSession: number;
  mailboxes: number;
  /** Run only this phase (1: python, 2: inbound). */
  only?: 'python' | 'inbound';
}

function parseArgs(argv: string[]): Options {
  const o: Options = { n: 10_000, repeat: 100, sessions: 20, perSession: 1000, mailboxes: 100 };
  const names: Record<string, Exclude<keyof Options, 'only'>> = { '--n': 'n', '--repeat': 'repeat', '--sessions': 'sessions', '--per-session': 'perSession', '--mailboxes': 'mailboxes' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--only') {
      const phase = argv[++i];
      if (phase !== 'python' && phase !== 'inbound') throw new Error('--only takes python or inbound');
      o.only = phase;
      continue;
    }
    const name = names[argv[i]!];
    if (!name) throw new Error(`unknown option ${argv[i]}`);
    const v = Number(argv[++i]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${argv[i - 1]} must be a positive integer`);
    o[name] = v;
  }
  return o;
}

const DOMAIN = 'bench.example';
const SENDER = 'sender.bench';
const BIG = { user: `big@${DOMAIN}`, password: 'bench password big' };
const SMALL = { user: `small@${DOMAIN}`, password: 'bench password small' };
/** SELECTs of each mailbox and connect → QUIT rounds per SMTP listener in the Python phase. */
const SELECTS = 20;
const GREETINGS = 200;
/** Messages of the small mailbox. */
const SMALL_MESSAGES = 10;

// ------------------------------------------------------------------------------ child: DNS + inbound clients

interface InboundResult {
  stored: number;
  refused: number;
  /** Connect → the 250 after the final dot, per message (ms). */
  latenciesMs: number[];
}

/** One line reader over a socket: resolves with each final reply line (`ddd text`), multi-line replies joined. */
function replies(socket: net.Socket): () => Promise<string> {
  let buffer = '';
  const waiting: Array<{ resolve: (l: string) => void; reject: (e: Error) => void }> = [];
  const lines: string[] = [];
  let failed: Error | null = null;
  const pump = () => {
    while (waiting.length && lines.length) waiting.shift()!.resolve(lines.shift()!);
    if (failed) while (waiting.length) waiting.shift()!.reject(failed);
  };
  socket.on('data', (d: Buffer) => {
    buffer += d.toString('latin1');
    let m: RegExpExecArray | null;
    while ((m = /^(\d{3}) [^\r\n]*\r\n/m.exec(buffer))) {
      lines.push(m[0].trim());
      buffer = buffer.slice(m.index + m[0].length);
    }
    pump();
  });
  const fail = (err: Error) => {
    failed ??= err;
    pump();
  };
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('the server closed the connection')));
  return () => new Promise((resolve, reject) => {
    waiting.push({ resolve, reject });
    pump();
  });
}

/** Sends one message on a connection of its own, Nagle on, one command at a time. */
async function sendOne(port: number, to: string, body: string): Promise<{ ok: boolean; ms: number }> {
  const t0 = performance.now();
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(false);
  const reply = replies(socket);
  const command = (c: string) => {
    const p = reply();
    socket.write(c);
    return p;
  };
  try {
    await reply();
    await command('EHLO client.sender.bench\r\n');
    await command(`MAIL FROM:<news@${SENDER}>\r\n`);
    const rcpt = await command(`RCPT TO:<${to}>\r\n`);
    if (!rcpt.startsWith('250')) return { ok: false, ms: performance.now() - t0 };
    await command('DATA\r\n');
    const final = await command(`${body}\r\n.\r\n`);
    const ms = performance.now() - t0;
    await command('QUIT\r\n');
    return { ok: final.startsWith('250'), ms };
  } finally {
    socket.destroy();
  }
}

async function internetMain(): Promise<void> {
  process.once('disconnect', () => process.exit(0));
  const { startDns } = await import('../test/helpers/dns-server.js');
  const dns = await startDns();
  dns.set('TXT', SENDER, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.set('TXT', `_dmarc.${SENDER}`, ['v=DMARC1; p=none']);
  process.send!({ dns: dns.server });
  process.once('message', async (msg: { mxPort: number; opts: Options }) => {
    const { mxPort, opts } = msg;
    const started = performance.now();
    const results = await Promise.all(
      Array.from({ length: opts.sessions }, async (_, c): Promise<InboundResult> => {
        const r: InboundResult = { stored: 0, refused: 0, latenciesMs: [] };
        for (let k = 0; k < opts.perSession; k++) {
          const i = c * opts.perSession + k;
          const to = `user${i % opts.mailboxes}@${DOMAIN}`;
          const { ok, ms } = await sendOne(mxPort, to, inboundMessage(i, SENDER, to, 2048 + ((i * 7919) % (18 * 1024 + 1))));
          if (ok) r.stored++;
          else r.refused++;
          r.latenciesMs.push(ms);
        }
        return r;
      }),
    );
    const elapsedMs = performance.now() - started;
    process.send!({ results, elapsedMs }, () => void dns.stop().then(() => process.exit(0)));
  });
}

// ------------------------------------------------------------------------------ main: the appliance

function runPython(args: object): Promise<Record<string, number[]>> {
  const script = fileURLToPath(new URL('./bench-latency.py', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [script, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Record<string, number[]>) : reject(new Error(`bench-latency.py exited with ${code}`))));
  });
}

const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
function memoryLine(): string {
  const m = residentMemory();
  return m ? `RSS ${mb(m.rss)}, PSS ${mb(m.pss)}` : `RSS ${mb(process.memoryUsage().rss)}`;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const [{ loadConfig, ANY_FREE_PORTS }, { startAppliance }, { newToken }, { createDomain }] = await Promise.all([
    import('../src/config.js'),
    import('../src/appliance.js'),
    import('../src/services/platform/index.js'),
    import('../src/services/platform/index.js'),
  ]);
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--internet'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const dnsServer = await new Promise<{ host: string; port: number }>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { dns: { host: string; port: number } }).dns));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the client process exited (${code})`)));
  });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-latency-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'mx.bench.test', logLevel: 'silent', bootstrapApiKey: newToken('live'), dnsServers: [dnsServer], rateLimits: false });
  const appliance = await startAppliance({ config });
  const { ctx } = appliance;
  try {
    const teamId = appliance.bootstrap!.team.id;
    const domain = await createDomain(ctx, teamId, { name: DOMAIN, region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' });
    const big = await ctx.mailstore.createAccount({ teamId, domainId: domain.id, address: BIG.user, password: BIG.password });
    const small = await ctx.mailstore.createAccount({ teamId, domainId: domain.id, address: SMALL.user, password: SMALL.password });
    await Promise.all(Array.from({ length: opts.mailboxes }, (_, i) => ctx.mailstore.createAccount({ teamId, domainId: domain.id, address: `user${i}@${DOMAIN}`, password: `bench-password-${i}` })));
    const t0 = performance.now();
    for (let i = 0; i < opts.n; i += 200) {
      await Promise.all(Array.from({ length: Math.min(200, opts.n - i) }, (_, j) => ctx.mailstore.deliver(mailboxMessage(i + j + 1, opts.n, BIG.user), [{ mailboxId: big.id }])));
    }
    await Promise.all(Array.from({ length: SMALL_MESSAGES }, (_, j) => ctx.mailstore.deliver(mailboxMessage(j + 1, SMALL_MESSAGES, SMALL.user), [{ mailboxId: small.id }])));
    console.log(`bench:latency  node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)}`);
    console.log(`seeded ${opts.n} + ${SMALL_MESSAGES} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s; appliance ${memoryLine()}`);

    const { ports } = appliance;
    if (opts.only !== 'inbound') {
    const pyCpu0 = process.cpuUsage();
    const lat = await runPython({ host: '127.0.0.1', imapPort: ports.imap.port, pop3Port: ports.pop3.port, mxPort: ports.mx.port, submissionPort: ports.submission.port, big: BIG, small: SMALL, repeat: opts.repeat, selects: SELECTS, greetings: GREETINGS });
    console.log(`\nPython imaplib/poplib/smtplib at defaults (Nagle on), STARTTLS, one command at a time; load ${os.loadavg()[0]!.toFixed(2)}`);
    console.log(`${'command'.padEnd(36)} ${'count'.padStart(6)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'max ms'.padStart(9)}`);
    for (const [name, list] of Object.entries(lat)) {
      if (name.endsWith('per second')) {
        console.log(`${name.padEnd(36)} ${list[0]!.toFixed(0).padStart(6)}`);
        continue;
      }
      const s = [...list].sort((a, b) => a - b);
      console.log(`${name.padEnd(36)} ${String(s.length).padStart(6)} ${percentile(s, 50).toFixed(2).padStart(9)} ${percentile(s, 99).toFixed(2).padStart(9)} ${s.at(-1)!.toFixed(2).padStart(9)}`);
    }
    const pyCpu = process.cpuUsage(pyCpu0);
    console.log(`appliance after the latency phase: ${memoryLine()}; its CPU in the phase ${((pyCpu.user + pyCpu.system) / 1e6).toFixed(2)} s`);
    }
    if (opts.only === 'python') return;

    let peak = residentMemory() ?? { rss: process.memoryUsage().rss, pss: 0 };
    const sampler = setInterval(() => {
      const m = residentMemory();
      if (m) peak = { rss: Math.max(peak.rss, m.rss), pss: Math.max(peak.pss, m.pss) };
    }, 100);
    const cpu0 = process.cpuUsage();
    const done = new Promise<{ results: InboundResult[]; elapsedMs: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { results: InboundResult[]; elapsedMs: number }));
      child.once('exit', (code) => reject(new Error(`the client process exited (${code}) before it reported`)));
    });
    child.send({ mxPort: ports.mx.port, opts });
    const { results, elapsedMs } = await done;
    clearInterval(sampler);
    const cpu = process.cpuUsage(cpu0);
    const accepted = results.reduce((n, r) => n + r.stored, 0);
    const refused = results.reduce((n, r) => n + r.refused, 0);
    let stored = 0;
    for (let i = 0; i < opts.mailboxes; i++) {
      const account = await ctx.mailstore.findAccountByAddress(`user${i}@${DOMAIN}`);
      stored += (account && (await ctx.mailstore.getFolder(account.id, 'INBOX'))?.messages) || 0;
    }
    const l = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
    console.log(`\ninbound, one message per connection: ${opts.sessions} sessions × ${opts.perSession}, plain SMTP, Nagle on, 2–20 KB; load ${os.loadavg()[0]!.toFixed(2)}`);
    console.log(`accepted ${accepted} (${refused} refused), stored in INBOXes ${stored}, in ${(elapsedMs / 1000).toFixed(1)} s: ${(stored / (elapsedMs / 1000)).toFixed(0)} messages/s stored`);
    console.log(`connect → 250 after the dot: p50 ${percentile(l, 50).toFixed(1)} ms, p99 ${percentile(l, 99).toFixed(1)} ms; appliance CPU ${((cpu.user + cpu.system) / 1000 / Math.max(1, accepted)).toFixed(2)} ms a message`);
    console.log(`appliance peak during the inbound phase: RSS ${mb(peak.rss)}, PSS ${mb(peak.pss)}`);
  } finally {
    if (child.exitCode === null) child.kill();
    await appliance.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--internet') {
  void internetMain();
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:latency failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
