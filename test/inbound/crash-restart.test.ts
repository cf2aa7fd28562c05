// Kill-and-restart at the MX: the appliance runs as its own process (`src/main.ts`, as `npm start` runs it);
// a message is answered 250, the process is SIGKILLed at once (no handler runs, nothing is flushed), and
// after a restart on the same data directory the message is there: in the mailbox and as an inbound email.
import t, { type Test } from 'tap';
import { request } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { publishRecords, type DomainView } from '../helpers/domains.js';
import { ApplianceProcess, restartableEnv } from '../helpers/process.js';
import { buildMessage, smtpSend } from './support.js';

t.setTimeout(300_000);

const start = async (t: Test, env: NodeJS.ProcessEnv) => {
  const proc = new ApplianceProcess(t, env);
  return { proc, ports: { api: await proc.port('api'), mx: await proc.port('mx') } };
};

t.test('a message answered 250 survives a SIGKILL right after', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const { env, apiKey } = restartableEnv(t, {
    MAIL_DNS_SERVERS: `${dns.server.host}:${dns.server.port}`,
    MAIL_DNS_TIMEOUT_MS: '1000',
    MAIL_RATE_LIMITS: 'off',
  });

  const { proc: first, ports: p1 } = await start(t, env);
  const req1 = <T>(m: string, p: string, o?: { body?: unknown }) => request<T>(`http://127.0.0.1:${p1.api}`, apiKey, m, p, o);
  const created = await req1<DomainView>('POST', '/domains', { body: { name: 'corp.example' } });
  publishRecords(dns, created.body);
  t.equal((await req1<DomainView>('POST', `/domains/${created.body.id}/verify`)).body.status, 'verified');
  t.equal((await req1('PATCH', `/domains/${created.body.id}`, { body: { inbound_mode: 'mailbox_and_webhook' } })).status, 200);
  const mailbox = await req1<{ id: number }>('POST', '/mailboxes', { body: { address: 'alice@corp.example', password: 'correct horse battery' } });
  t.equal(mailbox.status, 201);

  const res = await smtpSend(p1.mx, { from: 'a@nodmarc.example', to: ['alice@corp.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'alice@corp.example', subject: 'Durable', messageId: '<durable@nodmarc.example>' }));
  t.match(res.response, /^250 2\.0\.0 Ok: queued as/, '250');
  t.same(await first.kill(), { code: null, signal: 'SIGKILL' }, 'killed right after the 250');

  const { proc: second, ports: p2 } = await start(t, env);
  const req2 = <T>(m: string, p: string) => request<T>(`http://127.0.0.1:${p2.api}`, apiKey, m, p);
  const list = await req2<{ data: Array<{ subject: string; messageId: string }> }>('GET', '/inbound');
  t.same(list.body.data.map((d) => [d.subject, d.messageId]), [['Durable', '<durable@nodmarc.example>']], 'the inbound email is there');
  const box = await req2<{ usedBytes: number }>('GET', `/mailboxes/${mailbox.body.id}`);
  t.ok(box.body.usedBytes > 0, 'and the mailbox copy');
  await second.kill();
});
