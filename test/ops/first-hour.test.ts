// The README's "first hour" (issue 37 §6) run as a test, on the trusted-domain path (issue 37 §1): a fresh
// data dir, the admin CLI declares example.com trusted (no public DNS: the loopback DNS has none of its records),
// then the README's API calls in order: the domain and its records, verify (records checked and shown, the
// domain stays verified by the operator), a first email, a mailbox, a login over IMAP from loopback without TLS
// (curl imap://, as the README's shell example but in clear), mail received by the MX and found over IMAP,
// a webhook and its test delivery. MAIL_LOCAL_DOMAINS, the config's way to the same, is checked at the end.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { makeDataDir, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { ROOT } from '../helpers/process.js';

t.setTimeout(240_000);

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function admin(dataDir: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) env[k] = v;
  return run(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], { ...env, MAIL_DATA_DIR: dataDir, MAIL_LOG_LEVEL: 'silent' });
}

/** One SMTP transaction to the MX in clear, as swaks does; resolves with the last reply. */
function smtp(port: number, lines: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buffer = '';
    let step = 0;
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      buffer += d;
      if (!/^\d{3} [^\r]*\r\n$/m.test(buffer.split(/\r\n(?=.)/).pop() ?? '')) return;
      const reply = buffer;
      buffer = '';
      if (step < lines.length) socket.write(lines[step++] + '\r\n');
      else {
        socket.end();
        resolve(reply);
      }
    });
    socket.on('error', reject);
  });
}

interface Domain {
  id: string;
  name: string;
  status: string;
  verification: string | null;
  dns_records: Array<{ record: string; status: string; zone_file_line: string; reason?: string | null }>;
}

t.test('the first hour on a trusted domain', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const hooks = await startWebhookReceiver();
  t.teardown(() => hooks.close());
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const app = await startTestApp(t, { dataDir, config: { dnsServers: [dns.server], outboundPort: sink.port } });
  const { ports } = app.appliance;
  const drain = () => app.appliance.ctx.jobs.drain();

  // 0. The operator declares the domain theirs: `npm run admin -- domains add example.com --trusted`.
  const added = await admin(dataDir, 'domains', 'add', 'example.com', '--trusted');
  t.equal(added.code, 0, added.stderr);
  const cli = JSON.parse(added.stdout) as Domain & { created: boolean; team_id: string };
  t.equal(cli.status, 'verified');
  t.equal(cli.verification, 'operator');
  t.equal(cli.team_id, app.teamId, 'in the box\'s first team');
  t.ok(cli.created);
  const again = JSON.parse((await admin(dataDir, 'domains', 'add', 'example.com', '--trusted')).stdout) as { created: boolean };
  t.equal(again.created, false, 'declaring it again changes nothing');

  // 1. The domain and the records to publish.
  const list = await app.request<{ domains: Domain[] }>('GET', '/domains');
  const domain = list.body.domains.find((d) => d.name === 'example.com')!;
  t.equal(domain.status, 'verified');
  t.equal(domain.verification, 'operator');
  t.ok(domain.dns_records.some((r) => r.record === 'SPF' && /IN TXT "v=spf1/.test(r.zone_file_line)), 'records still shown');

  // 2. Verify: every record looked up (none published here), the domain stays verified by the operator.
  const verified = await app.request<Domain>('POST', `/domains/${domain.id}/verify`);
  t.equal(verified.status, 200);
  t.equal(verified.body.status, 'verified');
  t.equal(verified.body.verification, 'operator');
  t.ok(verified.body.dns_records.filter((r) => r.record === 'SPF' || r.record === 'DKIM').every((r) => r.status === 'failed'), 'records checked and shown as not found');
  const events = await app.request<{ data: Array<{ data: { name: string; verification: string } }> }>('GET', '/events?type=domain.verified');
  const ours = events.body.data.filter((e) => e.data.name === 'example.com');
  t.equal(ours.length, 2, 'domain.verified at creation and at verify');
  t.ok(ours.every((e) => e.data.verification === 'operator'), 'domain.verified says operator');

  // 3. A first email.
  dns.set('MX', 'gmail.example', [{ exchange: 'mx.gmail.example', priority: 10 }]);
  dns.set('A', 'mx.gmail.example', ['127.0.0.1']);
  const sent = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'Me <hello@example.com>', to: ['you@gmail.example'], subject: 'First email', html: '<p>It works.</p>' } });
  t.ok(sent.status === 200 || sent.status === 202, sent.text);
  await drain();
  const email = await app.request<{ status: string }>('GET', `/emails/${sent.body.id}`);
  t.equal(email.body.status, 'delivered');
  t.equal(sink.accepted.length, 1);
  const evs = await app.request<{ events: unknown[] }>('GET', `/emails/${sent.body.id}/events`);
  t.equal(evs.status, 200);

  // 4. A mailbox on the domain.
  const mailbox = await app.request<{ id: number; address: string }>('POST', '/mailboxes', { body: { address: 'alice@example.com', password: 'correct horse battery', displayName: 'Alice' } });
  t.equal(mailbox.status, 201, mailbox.text);

  // 5. A mail client from the box itself: IMAP without TLS from loopback.
  const user = 'alice@example.com:correct horse battery';
  const empty = await run('curl', ['-sS', '--user', user, `imap://127.0.0.1:${ports.imap.port}/INBOX?ALL`]);
  t.equal(empty.code, 0, empty.stderr);
  t.match(empty.stdout, /^\* SEARCH\s*$/m, 'logged in, INBOX empty');

  // 6. Receive mail through the MX, then find it over IMAP.
  const reply = await smtp(ports.mx.port, ['EHLO elsewhere.example', 'MAIL FROM:<friend@elsewhere.example>', 'RCPT TO:<alice@example.com>', 'DATA', 'From: friend@elsewhere.example\r\nTo: alice@example.com\r\nSubject: Hello\r\n\r\nHi Alice.\r\n.', 'QUIT']);
  t.match(reply, /^221 /m);
  await drain();
  const inbox = await run('curl', ['-sS', '--user', user, `imap://127.0.0.1:${ports.imap.port}/INBOX?ALL`]);
  t.match(inbox.stdout, /^\* SEARCH 1\s*$/m, 'the message is in her INBOX');

  // 7. A webhook and its test delivery.
  const hook = await app.request<{ id: number; secret: string }>('POST', '/webhooks', { body: { url: hooks.url, events: ['email.sent', 'email.delivered', 'email.bounced', 'email.inbound'] } });
  t.equal(hook.status, 201, hook.text);
  t.match(hook.body.secret, /^whsec_/);
  const test = await app.request<{ delivery: { status: string; statusCode: number } }>('POST', `/webhooks/${hook.body.id}/test`);
  t.equal(test.status, 200, test.text);
  t.equal(test.body.delivery.status, 'delivered');
  t.ok(hooks.delivered.length >= 1, 'the receiver got it');
});

t.test('MAIL_LOCAL_DOMAINS: trusted at start, usable for mailboxes at once', async (t) => {
  const app = await startTestApp(t, { config: { localDomains: ['home.test'] } });
  const list = await app.request<{ domains: Domain[] }>('GET', '/domains');
  const domain = list.body.domains.find((d) => d.name === 'home.test');
  t.equal(domain?.status, 'verified');
  t.equal(domain?.verification, 'operator');
  const mailbox = await app.request('POST', '/mailboxes', { body: { address: 'me@home.test', password: 'correct horse battery' } });
  t.equal(mailbox.status, 201, mailbox.text);
  const sent = await app.request('POST', '/emails', { body: { from: 'me@home.test', to: ['me@home.test'], subject: 'to myself', text: 'hi' } });
  t.ok(sent.status === 200 || sent.status === 202, sent.text);
});
