// A crash while an email's remote half waits on a slow MX must not leave a local recipient's copy stored but
// unrecorded: the rerun after the restart would store it again. Local copies are stored last in an attempt,
// right before its outcomes are recorded (services/sending/delivery.ts); before, they were stored at once and the
// rerun after a SIGKILL left two copies in the mailbox.
import t, { type Test } from 'tap';
import net from 'node:net';
import { ImapFlow } from 'imapflow';
import { request } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { publishRecords, type DomainView } from '../helpers/domains.js';
import { ApplianceProcess, restartableEnv, until } from '../helpers/process.js';

t.setTimeout(300_000);

/** Messages in the mailbox's INBOX, over IMAP. */
async function inboxCount(port: number, user: string, pass: string): Promise<number> {
  const client = new ImapFlow({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false }, auth: { user, pass }, logger: false, disableAutoIdle: true });
  client.on('error', () => {});
  await client.connect();
  try {
    const status = await client.status('INBOX', { messages: true });
    return status ? (status.messages ?? 0) : 0;
  } finally {
    await client.logout();
  }
}

t.test('a local recipient is not delivered twice when the job reruns after a crash', async (t: Test) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  // A remote MX that accepts the connection and never greets: the remote half of the delivery hangs.
  const held: net.Socket[] = [];
  const stall = net.createServer((s) => held.push(s));
  await new Promise<void>((r) => stall.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of held) s.destroy();
    stall.close();
  });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const { env, apiKey } = restartableEnv(t, {
    MAIL_DNS_SERVERS: `${dns.server.host}:${dns.server.port}`,
    MAIL_DNS_TIMEOUT_MS: '1000',
    MAIL_RATE_LIMITS: 'off',
    MAIL_OUTBOUND_PORT: String((stall.address() as net.AddressInfo).port),
    MAIL_SMTP_TIMEOUT_MS: '600000',
  });
  const first = new ApplianceProcess(t, env);
  const api1 = await first.port('api');
  const req1 = <T>(m: string, p: string, o?: { body?: unknown }) => request<T>(`http://127.0.0.1:${api1}`, apiKey, m, p, o);
  const created = await req1<DomainView>('POST', '/domains', { body: { name: 'corp.example' } });
  publishRecords(dns, created.body);
  t.equal((await req1<DomainView>('POST', `/domains/${created.body.id}/verify`)).body.status, 'verified');
  const bob = await req1<{ id: number }>('POST', '/mailboxes', { body: { address: 'bob@corp.example', password: 'correct horse battery' } });
  t.equal(bob.status, 201);
  const sent = await req1<{ id: string }>('POST', '/emails', { body: { from: 'alice@corp.example', to: ['bob@corp.example', 'ext@dest.example'], subject: 'Once', text: 'Only once please' } });
  t.equal(sent.status, 202);
  // The attempt is under way: its remote half holds a session that never greets.
  await until('the remote session', () => (held.length > 0 ? true : undefined));
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await req1<{ usedBytes: number }>('GET', `/mailboxes/${bob.body.id}`)).body.usedBytes, 0, 'the local copy waits for the remote half');
  t.same(await first.kill(), { code: null, signal: 'SIGKILL' });

  for (const s of held) s.destroy();
  stall.close(); // the remote now refuses at once: the rerun finishes quickly
  const second = new ApplianceProcess(t, env);
  const api2 = await second.port('api');
  const req2 = <T>(m: string, p: string) => request<T>(`http://127.0.0.1:${api2}`, apiKey, m, p);
  const after = await until('the rerun', async () => {
    const d = (await req2<{ recipients: Array<{ email: string; status: string }> }>('GET', `/emails/${sent.body.id}`)).body;
    const ext = d.recipients.find((r) => r.email === 'ext@dest.example');
    return ext && ext.status !== 'queued' && ext.status !== 'sending' ? d.recipients : undefined;
  }, 60_000);
  t.equal(after.find((r) => r.email === 'bob@corp.example')?.status, 'delivered');
  t.equal(await inboxCount(await second.port('imap'), 'bob@corp.example', 'correct horse battery'), 1, "one copy in bob's INBOX");
  await second.kill();
});
