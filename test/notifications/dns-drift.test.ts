// DNS drift found by the periodic check: a round queues one check job per verified domain, spread over the
// interval on the fake clock; changing the loopback DNS server's answers makes a domain degraded (event,
// alert, sending continues) and restoring them makes it ok again. The node-cron schedule starts rounds.
import t from 'tap';
import { MINUTE } from '../../src/core/clock.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DNS_CHECK_JOB, startDnsCheckRound } from '../../src/services/platform/index.js';
import { startTestApp, TEST_HOSTNAME, type TestApp } from '../helpers/app.js';
import { addVerifiedDomain, type DomainView } from '../helpers/domains.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Drift {
  record: string;
  name: string;
  expected: string;
  found: string[];
  reason: string | null;
  since: string;
}
interface Domain extends DomainView {
  dns_health: 'ok' | 'degraded';
  dns_drift: Drift[];
}
interface EventItem {
  id: number;
  type: string;
  data: Record<string, unknown>;
}

const drain = (app: TestApp) => app.appliance.ctx.jobs.drain();
const get = async (app: TestApp, id: string) => (await app.request<Domain>('GET', `/domains/${id}`)).body;
const events = async (app: TestApp, type: string) => (await app.request<{ data: EventItem[] }>('GET', `/events?type=${type}&per_page=100`)).body.data;
const alerts = async (app: TestApp, kind: string) => (await app.request<{ alerts: Array<{ kind: string; message: string; data: Record<string, unknown> }> }>('GET', `/alerts?kind=${kind}`)).body.alerts;
const checkJobs = async (app: TestApp) => (await app.appliance.ctx.db('jobs').where({ kind: DNS_CHECK_JOB }).orderBy('run_at').select('run_at', 'payload')) as Array<{ run_at: number; payload: string }>;

t.test('a round spreads its checks; drift degrades a domain and its return restores it', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, dnsCheckSchedule: 'off' } });
  const ctx = app.appliance.ctx;
  const drifting = await addVerifiedDomain(app, dns, 'drifting.example');
  const stable = await addVerifiedDomain(app, dns, 'stable.example');
  const inbound = await addVerifiedDomain(app, dns, 'inbound.example');
  t.equal((await app.request('PATCH', `/domains/${inbound.id}`, { body: { inbound_mode: 'webhook' } })).status, 200);
  const pending = await app.request<Domain>('POST', '/domains', { body: { name: 'pending.example' } });
  t.match(await get(app, drifting.id), { status: 'verified', dns_health: 'ok', dns_drift: [] });

  // The round: one job per verified domain (not the pending one), spread evenly over the interval.
  const start = ctx.clock.now().getTime();
  t.equal(await startDnsCheckRound(ctx, 60 * MINUTE), 3, 'three verified domains');
  t.equal(await startDnsCheckRound(ctx, 60 * MINUTE), 0, 'a second round while the first waits queues nothing more');
  const jobs = await checkJobs(app);
  t.same(jobs.map((j) => j.run_at - start), [0, 20 * MINUTE, 40 * MINUTE], 'spread over the hour');
  t.notOk(jobs.some((j) => (JSON.parse(j.payload) as { domainId: string }).domainId === pending.body.id));

  // The customer's DNS changes: SPF replaced, the DKIM key gone; MX gone on both the inbound and the
  // outbound-only domain (only the inbound one watches it).
  const dkim = drifting.dns_records.find((r) => r.record === 'DKIM')!;
  dns.set('TXT', 'drifting.example', ['v=spf1 include:_spf.elsewhere.example -all']);
  dns.remove(dkim.name);
  dns.remove('inbound.example', 'MX');
  dns.remove('stable.example', 'MX');
  await drain(app);
  app.clock.advance(60 * MINUTE);
  await drain(app);
  t.same(await checkJobs(app), [], 'every check ran');

  const d = await get(app, drifting.id);
  t.equal(d.status, 'verified', 'still verified');
  t.equal(d.dns_health, 'degraded');
  const byRecord = Object.fromEntries(d.dns_drift.map((x) => [x.record, x]));
  t.match(byRecord.SPF, { name: 'drifting.example', expected: `v=spf1 a:${TEST_HOSTNAME} ~all`, found: ['v=spf1 include:_spf.elsewhere.example -all'] });
  t.match(byRecord.DKIM, { name: dkim.name, expected: dkim.value, found: [] });
  t.ok(byRecord.SPF!.reason);
  t.match(await get(app, inbound.id), { dns_health: 'degraded', dns_drift: [{ record: 'MX', name: 'inbound.example', expected: `10 ${TEST_HOSTNAME}`, found: [] }] });
  t.match(await get(app, stable.id), { dns_health: 'ok', dns_drift: [] }, 'MX is not watched on a domain that receives no mail');

  const drift = await events(app, 'domain.dns_drift');
  t.equal(drift.length, 2);
  const ev = drift.find((e) => e.data.id === drifting.id)!;
  t.same((ev.data.drift as Drift[]).map((x) => x.record).sort(), ['DKIM', 'SPF'], 'the event names the records');
  t.equal(ev.data.dns_health, 'degraded');
  const raised = await alerts(app, 'dns_drift');
  t.equal(raised.length, 2);
  t.match(raised.find((a) => a.data.domain === 'drifting.example'), { message: /DNS of drifting\.example changed: SPF \(drifting\.example\), DKIM/ });

  // Sending continues while degraded.
  const sent = await app.request('POST', '/emails', { body: { from: 'a@drifting.example', to: ['b@stable.example'], subject: 'still', text: 'sending' } });
  t.equal(sent.status, 202, 'a degraded domain still sends');

  // Another round: still drifted, nothing new reported; an unanswered look-up changes nothing.
  dns.fail('inbound.example');
  await startDnsCheckRound(ctx, 0);
  await drain(app);
  t.equal((await events(app, 'domain.dns_drift')).length, 2, 'no repeat while it stays drifted');
  t.equal((await alerts(app, 'dns_drift')).length, 2);
  t.equal((await get(app, inbound.id)).dns_health, 'degraded', 'a SERVFAIL leaves the state as it was');

  // The records come back.
  dns.set('TXT', 'drifting.example', [`v=spf1 a:${TEST_HOSTNAME} ~all`]);
  dns.set('TXT', dkim.name, [dkim.value]);
  dns.set('MX', 'inbound.example', [{ exchange: TEST_HOSTNAME, priority: 10 }]);
  await startDnsCheckRound(ctx, 0);
  await drain(app);
  t.match(await get(app, drifting.id), { status: 'verified', dns_health: 'ok', dns_drift: [] });
  t.match(await get(app, inbound.id), { dns_health: 'ok' });
  const updated = (await events(app, 'domain.updated')).filter((e) => (e.data.changes as Record<string, unknown> | undefined)?.dns_health);
  t.equal(updated.length, 2);
  t.same(updated[0]!.data.changes, { dns_health: { from: 'degraded', to: 'ok' } });
  t.equal((await alerts(app, 'dns_restored')).length, 2);

  // Partial: one record of two back keeps it degraded, without a new drift report.
  dns.remove(dkim.name);
  await startDnsCheckRound(ctx, 0);
  await drain(app);
  t.equal((await events(app, 'domain.dns_drift')).length, 3);
  dns.set('TXT', dkim.name, [dkim.value]);
  // A verify that finds everything clears it too.
  const v = await app.request<Domain>('POST', `/domains/${drifting.id}/verify`);
  t.match(v.body, { status: 'verified', dns_health: 'ok', dns_drift: [] });
  t.equal((await alerts(app, 'dns_restored')).length, 3);
});

t.test('the schedule: a cron expression or off, validated; a tick starts a round', async (t) => {
  t.throws(() => loadConfig({ MAIL_DNS_CHECK_SCHEDULE: 'every day' }, {}), ConfigError);
  t.equal(loadConfig({ MAIL_DNS_CHECK_SCHEDULE: 'off' }, { dataDir: '/tmp/x' }).dnsCheckSchedule, 'off');
  t.equal(loadConfig({}, { dataDir: '/tmp/x' }).dnsCheckSchedule, '0 3 * * *', 'daily by default');
  const dns = await startDns();
  t.teardown(() => dns.stop());
  // Every second (node-cron's six-field form), on real time: the tick queues the round's jobs.
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], dnsCheckSchedule: '* * * * * *' } });
  await app.appliance.ctx.jobs.stop(); // keep the queued checks in the table to look at them
  await addVerifiedDomain(app, dns, 'ticked.example');
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && (await checkJobs(app)).length === 0) await new Promise((r) => setTimeout(r, 100));
  t.equal((await checkJobs(app)).length, 1, 'a tick queued the check of the verified domain');
});
