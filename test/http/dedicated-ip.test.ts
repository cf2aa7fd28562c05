// Dedicated outbound addresses: POST/DELETE /domains/{id}/ip (errors, plan gate, tenant isolation), the SPF
// record naming the address, the PTR check on verify, and the domain's mail leaving from that address with
// its HELO name — seen by the sink as the peer address of the connection (127.0.0.2 and 127.0.0.3 are local
// addresses on Linux).
import t from 'tap';
import { createOtherTeam, startTestApp, TEST_HOSTNAME, type TestApp } from '../helpers/app.js';
import { addVerifiedDomain, type DomainView } from '../helpers/domains.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Domain extends DomainView {
  dedicated_ip: { ip: string; helo: string; ptr: { status: string; found: string[]; warning: string | null } } | null;
}

t.test('a domain with a dedicated address sends from it', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app: TestApp = await startTestApp(t, {
    config: {
      dnsServers: [dns.server],
      outboundPort: sink.port,
      outboundIps: [
        { ip: '127.0.0.2', helo: 'out2.appliance.test' },
        { ip: '127.0.0.3', helo: 'out3.appliance.test' },
      ],
    },
  });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const scale = await createOtherTeam(app, 'scale');
  const d = await addVerifiedDomain(app, dns, 'dedicated.example', scale.apiKey);
  const shared = await addVerifiedDomain(app, dns, 'shared.example', scale.apiKey);
  const as = { key: scale.apiKey };
  const assign = (id: string, ip: unknown, key = scale.apiKey) => app.request<Domain>('POST', `/domains/${id}/ip`, { key, body: { ip } });

  // Errors.
  t.match(await assign(d.id, 'not-an-ip'), { status: 400, body: { error: /ip: must be an IP address/ } });
  t.match(await app.request('POST', `/domains/${d.id}/ip`, { ...as, body: {} }), { status: 400, body: { error: /ip/ } });
  t.match(await assign(d.id, '192.0.2.77'), { status: 422, body: { code: 'unprocessable_entity', error: "'192.0.2.77' is not one of this box's outbound addresses (127.0.0.2, 127.0.0.3)" } });
  t.match(await assign('nope', '127.0.0.2'), { status: 404 });
  const pro = await createOtherTeam(app, 'pro');
  const proDomain = await app.request<{ id: string }>('POST', '/domains', { key: pro.apiKey, body: { name: 'pro.example' } });
  t.match(await assign(proDomain.body.id, '127.0.0.2', pro.apiKey), { status: 403, body: { code: 'forbidden', error: /Dedicated IPs need the Scale plan or above \(this team is on pro\)/ } });
  t.match(await assign(d.id, '127.0.0.2', pro.apiKey), { status: 404 }, 'another team’s domain: 404');

  // Assigned: the SPF record names it; the HELO name is the configured one; the PTR not checked yet.
  const res = await assign(d.id, '127.0.0.2');
  t.equal(res.status, 200, res.text);
  t.match(res.body.dedicated_ip, { ip: '127.0.0.2', helo: 'out2.appliance.test', ptr: { status: 'unchecked' } });
  const spf = res.body.dns_records.find((r) => r.record === 'SPF')!;
  t.equal(spf.value, `v=spf1 ip4:127.0.0.2 a:${TEST_HOSTNAME} ~all`, 'the SPF record names the address');
  t.equal((await app.request<Domain>('GET', `/domains/${shared.id}`, as)).body.dedicated_ip, null);
  const updated = (await app.request<{ data: Array<{ data: { changes?: Record<string, unknown> } }> }>('GET', '/events?type=domain.updated&per_page=100', as)).body.data;
  t.ok(updated.some((e) => e.data.changes?.dedicated_ip === '127.0.0.2'), 'domain.updated with the change');
  t.match(await assign(shared.id, '127.0.0.2'), { status: 200 }, 'a team may put several of its domains on one address');
  await app.request('DELETE', `/domains/${shared.id}/ip`, as);
  const other = await createOtherTeam(app, 'enterprise');
  const otherDomain = await app.request<{ id: string }>('POST', '/domains', { key: other.apiKey, body: { name: 'other.example' } });
  t.match(await assign(otherDomain.body.id, '127.0.0.2', other.apiKey), { status: 409, body: { error: '127.0.0.2 is dedicated to another team' } });

  // Verify: SPF evaluated from the dedicated address; the PTR compared with the HELO name (a warning).
  dns.set('TXT', 'dedicated.example', [`v=spf1 a:${TEST_HOSTNAME} ~all`]);
  dns.set('A', TEST_HOSTNAME, ['127.0.0.1']);
  let v = (await app.request<Domain>('POST', `/domains/${d.id}/verify`, as)).body;
  t.match(v.dns_records.find((r) => r.record === 'SPF'), { status: 'failed', reason: /does not authorise the domain's dedicated address .*add ip4:127\.0\.0\.2/ });
  dns.set('TXT', 'dedicated.example', [spf.value]);
  dns.set('PTR', '2.0.0.127.in-addr.arpa', ['somebody-else.example']);
  v = (await app.request<Domain>('POST', `/domains/${d.id}/verify`, as)).body;
  t.equal(v.status, 'verified', JSON.stringify(v.dns_records));
  t.match(v.dns_records.find((r) => r.record === 'SPF'), { status: 'verified' });
  t.match(v.dedicated_ip!.ptr, { status: 'mismatch', found: ['somebody-else.example'], warning: /names somebody-else\.example, not the HELO name out2\.appliance\.test/ }, 'a PTR naming another host: a warning, not a block');
  dns.set('PTR', '2.0.0.127.in-addr.arpa', ['out2.appliance.test']);
  v = (await app.request<Domain>('POST', `/domains/${d.id}/verify`, as)).body;
  t.match(v.dedicated_ip!.ptr, { status: 'matches', warning: null });

  // Mail leaves from the address with its HELO name; the shared domain's from the default source.
  const send = async (from: string, subject: string) => {
    const r = await app.request('POST', '/emails', { ...as, body: { from, to: ['user@dest.example'], subject, text: 'hello' } });
    t.equal(r.status, 202, r.text);
  };
  await send('a@dedicated.example', 'dedicated');
  await send('a@shared.example', 'shared');
  await app.appliance.ctx.jobs.drain();
  const seen = (subject: string) => sink.accepted.filter((m) => m.raw.toString('utf8').includes(`Subject: ${subject}`));
  t.equal(seen('dedicated').length, 1);
  t.match(seen('dedicated')[0], { remoteAddress: /^(::ffff:)?127\.0\.0\.2$/, helo: 'out2.appliance.test' }, 'the sink sees the dedicated source address and HELO');
  t.match(seen('shared')[0], { remoteAddress: /^(::ffff:)?127\.0\.0\.1$/, helo: TEST_HOSTNAME }, 'the shared domain: the default source');

  // Moved to the other address, then back to the shared pool.
  t.equal((await assign(d.id, '127.0.0.3')).body.dedicated_ip!.helo, 'out3.appliance.test');
  await send('a@dedicated.example', 'moved');
  await app.appliance.ctx.jobs.drain();
  t.match(seen('moved')[0], { remoteAddress: /127\.0\.0\.3$/, helo: 'out3.appliance.test' });
  const released = await app.request<Domain>('DELETE', `/domains/${d.id}/ip`, as);
  t.equal(released.status, 200);
  t.equal(released.body.dedicated_ip, null);
  t.equal(released.body.dns_records.find((r) => r.record === 'SPF')!.value, `v=spf1 a:${TEST_HOSTNAME} ~all`);
  t.equal((await app.request<Domain>('DELETE', `/domains/${d.id}/ip`, as)).status, 200, 'idempotent');
  await send('a@dedicated.example', 'released');
  await app.appliance.ctx.jobs.drain();
  t.match(seen('released')[0], { remoteAddress: /127\.0\.0\.1$/, helo: TEST_HOSTNAME });
});
