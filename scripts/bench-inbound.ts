// Inbound benchmark: the real appliance (startAppliance) receiving at its MX port.
//
//   npm run bench:inbound -- [--messages 20000] [--clients 20] [--mailboxes 100]
//
// 20 concurrent SMTP clients (one session each, plain SMTP, one message per transaction) deliver 20,000
// messages of 2–20 KB to 100 mailboxes. Every message goes the whole way: mailauth (SPF, DKIM, DMARC, ARC
// against a loopback DNS server), trace headers, the mailbox's filters, `store.deliver` committed (group
// commit) before the 250. Printed: messages accepted per second, time from the end of DATA (the final dot
// written) to the 250 (p50, p99, max), peak RSS of the process, the appliance's CPU time per message (all its
// threads: process.cpuUsage, so SQLite's and zlib's pool threads count) and its main thread's event-loop
// utilisation (perf_hooks eventLoopUtilization) over the run.
//
// Processes: the appliance runs alone in this process; the "internet" (the DNS server and the SMTP clients)
// runs in a child process, so that neither its JavaScript nor its CPU time is counted as the appliance's
// (the machine's two cores are shared, so wall-clock figures depend on what else runs: the CPU per message
// is the steadier figure). Profile the appliance with `node --cpu-prof --import tsx scripts/bench-inbound.ts`.
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inboundMessage } from './bench-helpers.js';

interface Options {
  messages: number;
  clients: number;
  mailboxes: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { messages: 20_000, clients: 20, mailboxes: 100 };
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.replace(/^--/, '') as keyof Options;
    if (!(name in o)) throw new Error(`unknown option ${argv[i]}`);
    const n = Number(argv[++i]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
    o[name] = n;
  }
  return o;
}

const DOMAIN = 'bench.example';
const SENDER = 'sender.bench';

// ------------------------------------------------------------------------------ child: DNS + clients

interface ClientResult {
  accepted: number;
  refused: number;
  latenciesMs: number[];
}

/** A minimal SMTP client: one session, MAIL/RCPT/DATA per message, timing the final dot → reply. */
async function runClient(port: number, jobs: Array<{ to: string; body: string }>): Promise<ClientResult> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  let buffer = '';
  let waiter: ((line: string) => void) | null = null;
  let failed: Error | null = null;
  let fail: ((err: Error) => void) | null = null;
  const broken = (err: Error) => {
    failed ??= err;
    fail?.(failed);
  };
  socket.on('error', broken);
  socket.on('close', () => broken(new Error('the server closed the connection')));
  socket.on('data', (d: Buffer) => {
    buffer += d.toString('latin1');
    for (;;) {
      const m = /^(\d{3}) [^\r\n]*\r\n/m.exec(buffer);
      if (!m || !waiter) break;
      const end = m.index + m[0].length;
      const line = buffer.slice(m.index, end).trim();
      buffer = buffer.slice(end);
      const w = waiter;
      waiter = null;
      w(line);
    }
  });
  const reply = () =>
    new Promise<string>((resolve, reject) => {
      if (failed) return reject(failed);
      waiter = resolve;
      fail = reject;
    });
  const command = async (c: string) => {
    const p = reply();
    socket.write(c + '\r\n');
    return p;
  };
  await reply(); // greeting
  await command('EHLO client.sender.bench');
  const out: ClientResult = { accepted: 0, refused: 0, latenciesMs: [] };
  for (const job of jobs) {
    await command(`MAIL FROM:<news@${SENDER}>`);
    const rcpt = await command(`RCPT TO:<${job.to}>`);
    if (!rcpt.startsWith('250')) {
      out.refused++;
      await command('RSET');
      continue;
    }
    await command('DATA');
    const p = reply();
    socket.write(job.body);
    const start = performance.now();
    socket.write('\r\n.\r\n');
    const final = await p;
    out.latenciesMs.push(performance.now() - start);
    if (final.startsWith('250')) out.accepted++;
    else out.refused++;
  }
  await command('QUIT');
  socket.destroy();
  return out;
}


async function internetMain(): Promise<void> {
  // Never outlive the appliance's process.
  process.once('disconnect', () => process.exit(0));
  const { startDns } = await import('../test/helpers/dns-server.js');
  const dns = await startDns();
  dns.set('TXT', SENDER, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.set('TXT', `_dmarc.${SENDER}`, ['v=DMARC1; p=none']);
  process.send!({ dns: dns.server });
  process.once('message', async (msg: { mxPort: number; opts: Options }) => {
    const { mxPort, opts } = msg;
    // Sizes 2–20 KB, spread evenly (deterministic), recipients round-robin over the mailboxes.
    const perClient: Array<Array<{ to: string; body: string }>> = Array.from({ length: opts.clients }, () => []);
    for (let i = 0; i < opts.messages; i++) {
      const to = `user${i % opts.mailboxes}@${DOMAIN}`;
      const size = 2048 + ((i * 7919) % (18 * 1024 + 1));
      perClient[i % opts.clients]!.push({ to, body: inboundMessage(i, SENDER, to, size) });
    }
    const started = performance.now();
    const results = await Promise.all(perClient.map((jobs) => runClient(mxPort, jobs)));
    const elapsedMs = performance.now() - started;
    process.send!({ results, elapsedMs, dnsQueries: dns.queries.length }, () => {
      void dns.stop().then(() => process.exit(0));
    });
  });
}

// ------------------------------------------------------------------------------ main: the appliance

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const [{ loadConfig, ANY_FREE_PORTS }, { startAppliance }, { newToken }] = await Promise.all([
    import('../src/config.js'),
    import('../src/appliance.js'),
    import('../src/services/platform/index.js'),
  ]);
  // The child runs this same file through tsx (and is not profiled when this process is).
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--internet'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const dnsServer = await new Promise<{ host: string; port: number }>((resolve, reject) => {
    child.once('message', (m) => resolve((m as { dns: { host: string; port: number } }).dns));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the client process exited (${code})`)));
  });

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'mail-bench-inbound-'));
  const config = loadConfig(
    {},
    { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'mx.bench.test', logLevel: 'silent', bootstrapApiKey: newToken('live'), dnsServers: [dnsServer], rateLimits: false },
  );
  const appliance = await startAppliance({ config });
  const { ctx } = appliance;
  try {
    const teamId = appliance.bootstrap!.team.id;
    // The domain and its mailboxes are set up through the services directly (no DNS verification needed).
    const { createDomain } = await import('../src/services/platform/index.js');
    const domain = await createDomain(ctx, teamId, { name: DOMAIN, region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' });
    await Promise.all(
      Array.from({ length: opts.mailboxes }, (_, i) => ctx.mailstore.createAccount({ teamId, domainId: domain.id, address: `user${i}@${DOMAIN}`, password: `bench-password-${i}` })),
    );

    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
    const done = new Promise<{ results: ClientResult[]; elapsedMs: number; dnsQueries: number }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { results: ClientResult[]; elapsedMs: number; dnsQueries: number }));
      child.once('exit', (code) => reject(new Error(`the client process exited (${code}) before it reported`)));
    });
    const load0 = os.loadavg()[0]!;
    const elu0 = performance.eventLoopUtilization();
    const cpu0 = process.cpuUsage();
    const qcount = new Map<string, number>();
    if (process.env.BENCH_QUERIES) {
      const { readsOf } = await import('../src/db/index.js');
      for (const [name, db] of [['w', ctx.db], ['r', readsOf(ctx.db)]] as const) db.on('query', (q: { sql: string }) => qcount.set(`${name} ${q.sql.slice(0, 90)}`, (qcount.get(`${name} ${q.sql.slice(0, 90)}`) ?? 0) + 1));
    }
    child.send({ mxPort: appliance.ports.mx.port, opts });
    const { results, elapsedMs, dnsQueries } = await done;
    const cpu = process.cpuUsage(cpu0);
    const elu = performance.eventLoopUtilization(elu0);
    // The full-text index is written by a job after the 250 (src/mailstore/text-index.ts): wait for it to catch
    // up and count its CPU too, so the figure per message is the whole cost of storing one.
    const { queryRows } = await import('../src/db/index.js');
    const caughtUp0 = performance.now();
    while ((await queryRows(ctx.db, 'SELECT 1 FROM mail_fts_pending LIMIT 1')).length > 0) await new Promise((r) => setTimeout(r, 20));
    const indexLagMs = performance.now() - caughtUp0;
    const cpuIndexed = process.cpuUsage(cpu0);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);

    for (const [k, v] of [...qcount].sort((a, b) => b[1] - a[1])) process.stdout.write(`${String(v).padStart(7)} ${k}\n`);
    const accepted = results.reduce((n, r) => n + r.accepted, 0);
    const refused = results.reduce((n, r) => n + r.refused, 0);
    const lat = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
    const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? 0;
    let stored = 0;
    for (const a of (await ctx.mailstore.listAccounts({ teamId, offset: 0, limit: opts.mailboxes })).accounts) stored += (await ctx.mailstore.getFolder(a.id, 'INBOX'))?.messages ?? 0;
    const line = (k: string, v: string) => process.stdout.write(`${k.padEnd(28)} ${v}\n`);
    process.stdout.write(`\nbench:inbound — ${opts.messages} messages, ${opts.clients} clients, ${opts.mailboxes} mailboxes, 2–20 KB\n`);
    line('accepted', `${accepted} (${refused} refused)`);
    line('stored in INBOXes', String(stored));
    line('elapsed', `${(elapsedMs / 1000).toFixed(2)} s`);
    line('accepted per second', (accepted / (elapsedMs / 1000)).toFixed(0));
    line('end of DATA → 250, p50', `${pct(50).toFixed(1)} ms`);
    line('end of DATA → 250, p99', `${pct(99).toFixed(1)} ms`);
    line('end of DATA → 250, max', `${(lat.at(-1) ?? 0).toFixed(1)} ms`);
    line('appliance CPU per message', `${((cpu.user + cpu.system) / 1000 / Math.max(1, accepted)).toFixed(2)} ms (user ${(cpu.user / 1e6).toFixed(1)} s, system ${(cpu.system / 1e6).toFixed(1)} s, all threads)`);
    line('… with the index caught up', `${((cpuIndexed.user + cpuIndexed.system) / 1000 / Math.max(1, accepted)).toFixed(2)} ms per message (the index job done ${(indexLagMs / 1000).toFixed(2)} s after the last 250)`);
    line('appliance CPU cores busy', ((cpu.user + cpu.system) / 1000 / elapsedMs).toFixed(2));
    line('main event-loop util.', elu.utilization.toFixed(2));
    line('DNS queries (mailauth)', `${dnsQueries} (cached for 30 s)`);
    line('peak RSS', `${(peakRss / 1024 / 1024).toFixed(0)} MB`);
    line('load average (1 min)', `${load0.toFixed(1)} → ${os.loadavg()[0]!.toFixed(1)} (${os.cpus().length} CPUs)`);
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
    process.stderr.write(`bench:inbound failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
