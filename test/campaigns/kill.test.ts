// A broadcast's fan-out when the process is killed (SIGKILL) in the middle of it: the appliance runs as a
// real child process (src/main.ts under tsx, real clock), is killed once part of the audience has been
// delivered, and is started again on the same data directory. Every contact then has exactly one email of the
// broadcast, and the remote MX received one message (one Message-ID) per contact. (A message whose 250 came
// just before the kill may reach the MX twice under its one Message-ID: the delivery queue's documented
// at-least-once window, not the fan-out's.)
import t from 'tap';
import { request, type TestResponse } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { publishRecords, type DomainView } from '../helpers/domains.js';
import { ApplianceProcess, restartableEnv, until } from '../helpers/process.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

t.setTimeout(600_000);

const CONTACTS = 300;

t.test('killed mid-fan-out and started again: every contact gets one message', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const { env, apiKey } = restartableEnv(t, {
    MAIL_DNS_SERVERS: `${dns.server.host}:${dns.server.port}`,
    MAIL_DNS_TIMEOUT_MS: '1000',
    MAIL_RATE_LIMITS: 'off',
    MAIL_OUTBOUND_PORT: String(sink.port),
    MAIL_BROADCAST_PAGE_SIZE: '10',
    MAIL_DELIVERY_CONCURRENCY: '2',
    MAIL_CONNECTIONS_PER_HOST: '1',
  });
  type Req = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => Promise<TestResponse<T>>;
  const requester = (port: number): Req => (method, path, body) => request(`http://127.0.0.1:${port}`, apiKey, method, path, body === undefined ? {} : { body });

  const first = new ApplianceProcess(t, env);
  const req1 = requester(await first.port());
  const created = await req1<DomainView>('POST', '/domains', { name: 'acme.example' });
  publishRecords(dns, created.body);
  t.equal((await req1<DomainView>('POST', `/domains/${created.body.id}/verify`)).body.status, 'verified');
  const seg = (await req1<{ segment: { id: string } }>('POST', '/segments', { name: 'All' })).body.segment.id;
  const csv = ['email,first_name', ...Array.from({ length: CONTACTS }, (_, i) => `k${i}@dest.example,K${i}`)].join('\n');
  t.equal((await req1('POST', '/contacts/import', { csv, segment_id: seg })).status, 200);
  const b = (await req1<{ broadcast: { id: string } }>('POST', '/broadcasts', { name: 'Kill', from: 'news@acme.example', subject: 'For {{ contact.first_name }}', html: '<p>Hi {{ contact.first_name }}</p>', segment_ids: [seg] })).body.broadcast;
  t.equal((await req1('POST', `/broadcasts/${b.id}/send`)).status, 200);
  await until('part of the audience delivered', () => (sink.accepted.length >= 20 ? true : undefined), 120_000);
  t.same(await first.kill(), { code: null, signal: 'SIGKILL' }, 'killed');
  const atKill = sink.accepted.length;
  t.ok(atKill < CONTACTS, `killed mid-way (${atKill} of ${CONTACTS} delivered)`);

  const second = new ApplianceProcess(t, env);
  const req2 = requester(await second.port());
  const status = async () => (await req2<{ broadcast: { status: string; recipients: number } }>('GET', `/broadcasts/${b.id}`)).body.broadcast;
  const done = await until('the broadcast sent', async () => ((await status()).status === 'sent' ? status() : undefined), 300_000);
  t.equal(done.recipients, CONTACTS);
  await until('every message at the MX', () => (new Set(sink.accepted.map((tx) => tx.to[0])).size >= CONTACTS ? true : undefined), 60_000);
  const idsByContact = new Map<string, Set<string>>();
  for (const tx of sink.accepted) {
    const id = /^Message-ID: (<[^>]+>)/im.exec(tx.raw.toString('latin1'))?.[1] ?? '';
    const set = idsByContact.get(tx.to[0]!) ?? new Set<string>();
    set.add(id);
    idsByContact.set(tx.to[0]!, set);
  }
  t.equal(idsByContact.size, CONTACTS, 'every contact reached');
  t.ok([...idsByContact.values()].every((s) => s.size === 1), 'one email (Message-ID) per contact: none lost, none doubled by the fan-out');
  const emails = await req2<{ meta: { total: number } }>('GET', '/emails?per_page=1&subject=For%20K');
  t.equal(emails.body.meta.total, CONTACTS, 'one email per contact in the store');
  await second.kill();
});
