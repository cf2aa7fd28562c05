// DKIM rotation across live sends: POST /emails → the queue → the render threads → a loopback SMTP sink, each
// received message verified by mailauth against the loopback DNS as it is at that moment. Before the rotation
// the old key signs, while the activation switches keys every message carries exactly one signature that
// verifies, after it the new key signs, and once the old record is removed the new signatures still verify
// (and an old one no longer does). A domain on Ed25519 signs twice (Ed25519 and RSA), both verified.
import t from 'tap';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { DAY } from '../../src/core/clock.js';
import { startTestApp, TEST_HOSTNAME } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain, publishRecords, type DomainView } from '../helpers/domains.js';
import { startSmtpSink, type SinkTransaction } from '../helpers/smtp-sink.js';

interface Rotation {
  selectors: { new: string[]; old: string[] };
  records: Array<{ name: string; value: string }>;
}

t.test('DKIM rotation across live sends', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const drain = () => app.appliance.ctx.jobs.drain();
  let n = 0;
  const send = async (from: string, tag: string) => {
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from, to: [`r${++n}@dest.example`], subject: `${tag} ${n}`, html: `<p>${tag}</p>` } });
    if (res.status !== 202) throw new Error(`send: ${res.status} ${res.text}`);
    return res.body.id;
  };
  const sendMany = (from: string, tag: string, count: number) => Promise.all(Array.from({ length: count }, () => send(from, tag)));
  /** mailauth's verdicts of a message, by the DNS as it is now: [selector, algorithm, result] per signature. */
  const verdicts = async (tx: SinkTransaction) =>
    (await dkimVerify(tx.raw, { resolver: (name: string, rr: string) => app.appliance.ctx.dns.raw(name, rr) as Promise<string[][]>, curTime: app.clock.now() })).results.map(
      // mailauth's result names the a= tag `algo` (its typings say `algorithm`, which it does not set).
      (r) => [r.selector, (r as { algo?: string }).algo, r.status.result] as [string, string, string],
    );
  /** The transactions received since `from`, once `expected` have arrived. */
  const received = (from: number, expected: number) => {
    const got = sink.accepted.slice(from);
    if (got.length !== expected) throw new Error(`expected ${expected} messages, got ${got.length}`);
    return got;
  };

  t.test('RSA: before, across and after the activation, and after retirement', async (t) => {
    const domain = await addVerifiedDomain(app, dns, 'acme.example');
    const oldSelector = domain.dns_records.find((r) => r.record === 'DKIM')!.name.split('.')[0]!;
    const from = 'news@acme.example';

    // Before any rotation: the old key.
    let mark = sink.accepted.length;
    await sendMany(from, 'before', 3);
    await drain();
    for (const tx of received(mark, 3)) t.same(await verdicts(tx), [[oldSelector, 'rsa-sha256', 'pass']], 'before: the old key');
    const signedBefore = sink.accepted[mark]!;

    // Rotated, the new record published, not activated: the pending key does not sign.
    const rotation = (await app.request<Rotation>('POST', `/domains/${domain.id}/dkim/rotate`)).body;
    const newSelector = rotation.selectors.new[0]!;
    for (const r of rotation.records) dns.set('TXT', r.name, [r.value]);
    mark = sink.accepted.length;
    await sendMany(from, 'pending', 3);
    await drain();
    for (const tx of received(mark, 3)) t.same(await verdicts(tx), [[oldSelector, 'rsa-sha256', 'pass']], 'pending: still the old key');

    // Across the switch: deliveries under way while the activation commits, and sends after it.
    mark = sink.accepted.length;
    await sendMany(from, 'across', 20);
    const draining = drain();
    const activated = await app.request('POST', `/domains/${domain.id}/dkim/rotate/activate`);
    t.equal(activated.status, 200, activated.text);
    const afterIds = await sendMany(from, 'after', 10);
    await draining;
    await drain();
    const across = received(mark, 30);
    const seen = new Set<string>();
    for (const tx of across) {
      const v = await verdicts(tx);
      t.equal(v.length, 1, 'exactly one signature');
      t.equal(v[0]![2], 'pass', `verified: ${JSON.stringify(v)}`);
      t.ok([oldSelector, newSelector].includes(v[0]![0]), 'by the old key or the new one');
      seen.add(v[0]![0]);
      // A message sent once the activation answered is signed by the new key.
      if (afterIds.some((id) => tx.from.includes(id))) t.equal(v[0]![0], newSelector, 'sent after the activation: the new key');
    }
    t.ok(seen.has(newSelector));

    // Retired at retire_after (7 days by default): the customer removes the old record; mail still verifies.
    app.clock.advance(7 * DAY);
    await drain();
    const d = (await app.request<DomainView & { dkim_rotation: unknown }>('GET', `/domains/${domain.id}`)).body;
    t.equal(d.dkim_rotation, null, 'the rotation completed');
    dns.remove(`${oldSelector}._domainkey.acme.example`, 'TXT');
    mark = sink.accepted.length;
    await sendMany(from, 'retired', 3);
    await drain();
    for (const tx of received(mark, 3)) t.same(await verdicts(tx), [[newSelector, 'rsa-sha256', 'pass']], 'after retirement: the new key');
    t.not((await verdicts(signedBefore))[0]![2], 'pass', 'a message of the old key no longer verifies against the DNS of now');
  });

  t.test('Ed25519 with RSA beside it: two signatures, both verified; and rotated', async (t) => {
    const created = await app.request<DomainView>('POST', '/domains', { body: { name: 'edge.example', dkim_key_type: 'ed25519' } });
    t.equal(created.status, 201, created.text);
    publishRecords(dns, created.body);
    dns.set('A', TEST_HOSTNAME, ['127.0.0.1']);
    t.equal((await app.request<DomainView>('POST', `/domains/${created.body.id}/verify`)).body.status, 'verified');
    const selectors = created.body.dns_records.filter((r) => r.record === 'DKIM').map((r) => r.name.split('.')[0]!);
    const from = 'hello@edge.example';

    let mark = sink.accepted.length;
    await sendMany(from, 'dual', 2);
    await drain();
    for (const tx of received(mark, 2)) {
      t.same(await verdicts(tx), [[selectors[1], 'rsa-sha256', 'pass'], [selectors[0], 'ed25519-sha256', 'pass']], 'RSA on top, then Ed25519; both pass');
    }

    const rotation = (await app.request<Rotation>('POST', `/domains/${created.body.id}/dkim/rotate`)).body;
    t.equal(rotation.records.length, 2, 'a new pair');
    for (const r of rotation.records) dns.set('TXT', r.name, [r.value]);
    t.equal((await app.request('POST', `/domains/${created.body.id}/dkim/rotate/activate`, { body: { retire_after_days: 1 } })).status, 200);
    mark = sink.accepted.length;
    await sendMany(from, 'dual-rotated', 2);
    await drain();
    const [ed, rsa] = rotation.selectors.new;
    for (const tx of received(mark, 2)) t.same(await verdicts(tx), [[rsa, 'rsa-sha256', 'pass'], [ed, 'ed25519-sha256', 'pass']], 'the new pair signs');
  });
});
