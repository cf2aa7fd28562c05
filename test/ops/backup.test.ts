// Backups that restore (issue 37 §3) and the operator's status view (§2). The box is under load (API sends to a
// remote MX and to its own mailbox, IMAP APPENDs over a plain loopback login) while `admin backup` runs as its own
// process; the backup is restored (`admin restore`, run in-process) into a second data dir (never over a non-empty one), a second appliance starts on
// it, and every email accepted, every message appended before the backup began is there, the first box's API key
// works and its sealed DKIM key still signs.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ImapFlow } from 'imapflow';
import { makeDataDir, request, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { ROOT } from '../helpers/process.js';
import { adminInProcess } from '../helpers/admin-cli.js';

t.setTimeout(240_000);

function admin(dataDir: string, args: string[], extra: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) env[k] = v;
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], { cwd: ROOT, env: { ...env, MAIL_DATA_DIR: dataDir, MAIL_LOG_LEVEL: 'silent', ...extra }, timeout: 180_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const PASSWORD = 'correct horse battery';

function imap(port: number): ImapFlow {
  const c = new ImapFlow({ host: '127.0.0.1', port, secure: false, doSTARTTLS: false, auth: { user: 'alice@acme.example', pass: PASSWORD }, logger: false, disableAutoIdle: true });
  c.on('error', () => {});
  return c;
}

t.test('backup under load, restore, a second box finds everything', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const config = { dnsServers: [dns.server], outboundPort: sink.port, localDomains: ['acme.example'] };
  const dirA = makeDataDir();
  t.teardown(() => rmSync(dirA, { recursive: true, force: true }));
  const a = await startTestApp(t, { dataDir: dirA, config });
  const mb = await a.request<{ id: number }>('POST', '/mailboxes', { body: { address: 'alice@acme.example', password: PASSWORD } });
  t.equal(mb.status, 201, mb.text);

  const work = mkdtempSync(path.join(os.tmpdir(), 'mail-backup-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));
  const file = path.join(work, 'box.tar.gz');

  // Load: API sends (remote and local) and IMAP APPENDs, until the backup has finished.
  const accepted: Array<{ id: string; at: number }> = [];
  const appended: Array<{ subject: string; at: number }> = [];
  let stop = false;
  const client = imap(a.appliance.ports.imap.port);
  await client.connect();
  const sender = (async () => {
    for (let i = 0; !stop; i++) {
      const to = i % 2 ? 'someone@dest.example' : 'alice@acme.example';
      const r = await a.request<{ id: string }>('POST', '/emails', { body: { from: 'me@acme.example', to: [to], subject: `load ${i}`, text: 'hello' } });
      if (r.status === 200 || r.status === 202) accepted.push({ id: r.body.id, at: Date.now() });
      if (i % 5 === 0) await a.appliance.ctx.jobs.drain();
    }
  })();
  const appender = (async () => {
    for (let i = 0; !stop; i++) {
      const subject = `appended ${i}`;
      await client.append('INBOX', `From: x@else.example\r\nTo: alice@acme.example\r\nSubject: ${subject}\r\nMessage-ID: <append${i}@else.example>\r\n\r\nbody ${i}\r\n`);
      appended.push({ subject, at: Date.now() });
    }
  })();
  while (accepted.length < 10 || appended.length < 10) await new Promise((r) => setTimeout(r, 20));
  const started = Date.now();
  const backup = await admin(dirA, ['backup', '--to', file]);
  stop = true;
  await Promise.all([sender, appender]);
  await client.logout();
  t.equal(backup.code, 0, backup.stderr);
  const manifest = JSON.parse(backup.stdout) as { files: string[]; bytes: number; file: string };
  t.same(manifest.files.slice(0, 2), ['mail.db', 'master.key']);
  t.ok(manifest.bytes > 0);
  const before = accepted.filter((e) => e.at < started);
  const appendedBefore = appended.filter((e) => e.at < started);
  t.ok(before.length >= 10 && appendedBefore.length >= 10, `load ran: ${accepted.length} sends, ${appended.length} appends`);

  // Restore refuses a non-empty data dir, then restores into an empty one.
  const refused = await adminInProcess(dirA, 'restore', '--from', file, '--data-dir', dirA);
  t.not(refused.code, 0);
  t.match(refused.stderr, /not empty/);
  const dirB = path.join(work, 'restored');
  const restored = await adminInProcess(dirB, 'restore', '--from', file);
  t.equal(restored.code, 0, restored.stderr);
  t.same(readdirSync(dirB).sort(), [...manifest.files].sort(), 'exactly the backed-up files');
  const junk = path.join(work, 'junk');
  rmSync(junk, { force: true, recursive: true });
  writeFileSync(path.join(work, 'not-a-backup.tar.gz'), 'nope');
  t.not((await adminInProcess(junk, 'restore', '--from', path.join(work, 'not-a-backup.tar.gz'), '--data-dir', junk)).code, 0, 'garbage is refused');

  // A second appliance on the restored dir.
  const b = await startTestApp(t, { dataDir: dirB, config });
  const asA = (method: string, p: string, body?: unknown) => request<Record<string, unknown>>(b.url, a.apiKey, method, p, body === undefined ? {} : { body });
  for (const e of before) {
    const got = await asA('GET', `/emails/${e.id}`);
    if (got.status !== 200) t.fail(`email ${e.id} accepted before the backup is missing: ${got.status}`);
  }
  t.pass(`${before.length} emails accepted before the backup are all there, read with the first box's API key`);
  const readB = imap(b.appliance.ports.imap.port);
  await readB.connect();
  await readB.mailboxOpen('INBOX');
  const subjects = new Set<string>();
  for await (const m of readB.fetch('1:*', { envelope: true })) subjects.add(m.envelope?.subject ?? '');
  await readB.logout();
  const missing = appendedBefore.filter((e) => !subjects.has(e.subject));
  t.same(missing, [], `${appendedBefore.length} messages appended before the backup are all in the restored INBOX`);

  // The sealed DKIM key unseals with the restored master key: a send from the restored box is signed.
  const signedBefore = sink.accepted.length;
  const sent = await asA('POST', '/emails', { from: 'me@acme.example', to: ['someone@dest.example'], subject: 'after restore', text: 'hi' });
  t.ok(sent.status === 200 || sent.status === 202, sent.text);
  await b.appliance.ctx.jobs.drain();
  const last = sink.accepted.slice(signedBefore).find((x) => x.raw.toString().includes('Subject: after restore'));
  t.match(last?.raw.toString() ?? '', /DKIM-Signature: .*d=acme\.example/s, 'signed with the restored DKIM key');
});

t.test('admin status: listeners, queue, disk, certificate, last DNS check', async (t) => {
  const dir = makeDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const app = await startTestApp(t, { dataDir: dir });
  const p = app.appliance.ports;
  const env = { MAIL_BIND: '127.0.0.1', MAIL_API_PORT: String(p.api.port), MAIL_MX_PORT: String(p.mx.port), MAIL_SUBMISSION_PORT: String(p.submission.port), MAIL_SUBMISSIONS_PORT: String(p.submissions.port), MAIL_IMAP_PORT: String(p.imap.port), MAIL_IMAPS_PORT: String(p.imaps.port), MAIL_POP3_PORT: String(p.pop3.port), MAIL_POP3S_PORT: '1' };
  const r = await admin(dir, ['status'], env);
  t.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout) as { listeners: Array<{ name: string; state: string }>; queue: { ready: number; dead: number }; disk: { free_bytes: number; database_bytes: number }; certificate: { days_left: number; self_signed: boolean }; dns: { last_check_at: string } };
  t.same(s.listeners.filter((l) => l.state === 'listening').map((l) => l.name), ['api', 'mx', 'submission', 'submissions', 'imap', 'imaps', 'pop3']);
  t.equal(s.listeners.find((l) => l.name === 'pop3s')?.state, 'not answering', 'a port nothing listens on');
  t.type(s.queue.ready, 'number');
  t.equal(s.queue.dead, 0);
  t.ok(s.disk.free_bytes > 0 && s.disk.database_bytes > 0);
  t.ok(s.certificate.self_signed && s.certificate.days_left > 3000, 'the self-signed certificate, ten years');
  t.equal(s.dns.last_check_at, 'never', 'no domain looked up yet');
});
