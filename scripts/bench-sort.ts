// IMAP SORT and THREAD benchmark (RFC 5256): the real appliance (startAppliance, real clock) with one mailbox of
// `--n` messages in threads of 1–8 (Message-ID, References, "Re:" subjects, 97 senders), one client over
// implicit TLS on an otherwise idle server timing `--runs` of each of SORT (DATE), SORT (SUBJECT),
// SORT (REVERSE ARRIVAL), SORT (DISPLAYFROM), THREAD REFERENCES and THREAD ORDEREDSUBJECT over the whole folder
// (wall time from sending the command to its tagged OK, the first run and the median of the rest; CPU ms: the
// median of the rest, this process's CPU during the command: the appliance's, with the client's TLS reads).
//
//   npm run bench:sort -- [--n 10000] [--runs 5] [--keep]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { percentile } from './bench-helpers.js';

const USER = 'bench@bench.test';
const PASSWORD = 'bench password 1';

function parseArgs(argv: string[]): { n: number; runs: number; keep: boolean } {
  const o = { n: 10_000, runs: 5, keep: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--n') o.n = Number(argv[++i]);
    else if (argv[i] === '--runs') o.runs = Number(argv[++i]);
    else if (argv[i] === '--keep') o.keep = true;
  }
  return o;
}

/**
 * Message `i` (1-based): a block of 8 starts at each 8k+1 and opens a thread of 1–8 messages, each replying to the
 * one before; the rest of the block are new messages with the thread's subject (threads joined by subject).
 */
function threadedMessage(i: number): Buffer {
  const root = i - ((i - 1) % 8);
  const len = 1 + (((root - 1) / 8) % 8);
  const first = i === root || i - root >= len;
  const refs = first ? [] : Array.from({ length: i - root }, (_, k) => `<s${root + k}@bench.test>`);
  return Buffer.from(
    [
      `From: "Sender ${i % 97}" <sender${i % 97}@remote.test>`,
      `To: ${USER}`,
      `Subject: ${first ? '' : 'Re: '}Thread ${root}${i % 13 === 0 ? ' (fwd)' : ''}`,
      `Date: ${new Date(Date.UTC(2026, 0, 1) + ((i * 7919) % 100_000) * 60_000).toUTCString()}`,
      `Message-ID: <s${i}@bench.test>`,
      ...(refs.length ? [`References: ${refs.join(' ')}`, `In-Reply-To: ${refs[refs.length - 1]}`] : []),
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Body of message ${i}. ${'Lorem ipsum dolor sit amet. '.repeat(1 + (i % 40))}`,
      '',
    ].join('\r\n'),
  );
}

/** A line client: sends a tagged command, reads to its tagged response. */
async function connect(port: number) {
  const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false });
  await new Promise((resolve, reject) => socket.once('secureConnect', resolve).once('error', reject));
  let buf = '';
  let waiter: (() => void) | null = null;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    buf += d;
    waiter?.();
  });
  let n = 0;
  const until = async (re: RegExp): Promise<string> => {
    for (;;) {
      const m = re.exec(buf);
      if (m) {
        const out = buf.slice(0, m.index + m[0].length);
        buf = buf.slice(m.index + m[0].length);
        return out;
      }
      await new Promise<void>((resolve) => (waiter = resolve));
      waiter = null;
    }
  };
  await until(/\r\n/);
  return {
    async run(cmd: string): Promise<string> {
      const tag = `b${++n}`;
      socket.write(`${tag} ${cmd}\r\n`);
      const r = await until(new RegExp(`^${tag} (OK|NO|BAD)[^\\r]*\\r\\n`, 'm'));
      if (!new RegExp(`^${tag} OK`, 'm').test(r)) throw new Error(`${cmd}: ${r.slice(-200)}`);
      return r;
    },
    close: () => socket.destroy(),
  };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const { loadConfig, ANY_FREE_PORTS } = await import('../src/config.js');
  const { startAppliance } = await import('../src/appliance.js');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'bench-sort-'));
  const config = loadConfig({}, { dataDir, bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: 'bench.appliance.test', logLevel: 'silent', rateLimits: false });
  const appliance = await startAppliance({ config });
  const { ctx } = appliance;
  const teamId = appliance.bootstrap!.team.id;
  const now = new Date().toISOString();
  await ctx.db('domains').insert({ id: 'dom_bench', team_id: teamId, name: 'bench.test', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  const account = await ctx.mailstore.createAccount({ teamId, domainId: 'dom_bench', address: USER, password: PASSWORD });
  console.log(`bench:sort  ${o.n} messages, ${o.runs} runs a command, node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)}`);
  const t0 = Date.now();
  for (let i = 0; i < o.n; i += 200) {
    const batch = [];
    for (let j = i; j < Math.min(o.n, i + 200); j++) batch.push(ctx.mailstore.deliver(threadedMessage(j + 1), [{ mailboxId: account.id }]));
    await Promise.all(batch);
  }
  console.log(`filled INBOX in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  if (o.keep) console.log(`data in ${dataDir}`);
  const c = await connect(appliance.ports.imaps.port);
  await c.run(`LOGIN "${USER}" "${PASSWORD}"`);
  await c.run('EXAMINE INBOX');
  console.log('command                                   first ms  median ms  CPU ms  load');
  for (const cmd of ['SORT (DATE) UTF-8 ALL', 'UID SORT (SUBJECT) UTF-8 ALL', 'SORT (REVERSE ARRIVAL) UTF-8 ALL', 'SORT (DISPLAYFROM) UTF-8 ALL', 'THREAD REFERENCES UTF-8 ALL', 'THREAD ORDEREDSUBJECT UTF-8 ALL', 'SORT (DATE) UTF-8 UNSEEN']) {
    const times: number[] = [];
    const cpus: number[] = [];
    let bytes = 0;
    for (let r = 0; r < o.runs; r++) {
      const s = performance.now();
      const cpu0 = process.cpuUsage();
      bytes = (await c.run(cmd)).length;
      times.push(performance.now() - s);
      const cpu = process.cpuUsage(cpu0);
      cpus.push((cpu.user + cpu.system) / 1000);
    }
    const rest = times.slice(1).sort((a, b) => a - b);
    const restCpu = cpus.slice(1).sort((a, b) => a - b);
    const cpuMs = percentile(restCpu.length ? restCpu : cpus, 50);
    console.log(`${cmd.padEnd(40)} ${times[0]!.toFixed(0).padStart(9)} ${percentile(rest.length ? rest : times, 50).toFixed(0).padStart(10)} ${cpuMs.toFixed(0).padStart(7)}  ${os.loadavg()[0]!.toFixed(2)}  (${(bytes / 1024).toFixed(0)} KB)`);
  }
  c.close();
  await appliance.stop();
  if (!o.keep) rmSync(dataDir, { recursive: true, force: true });
  else console.log(`data kept in ${dataDir}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
