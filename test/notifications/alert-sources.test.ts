// The alerts the box raises, each from the place that notices it, reaching GET /alerts and a channel:
// the monthly quota at 80 % and 100 % (once a month each), a safety hold, a run of blocking bounces from
// one provider (over real SMTP to the sink), DMARC aggregate reports with failing sources (over real SMTP
// to the MX), a DKIM rotation waiting for activation, and a webhook endpoint disabled.
import t, { type Test } from 'tap';
import { Buffer } from 'node:buffer';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { aggregateXml, reportMail } from '../inbound/fixtures.js';
import { smtpSend } from '../inbound/support.js';
import { PROVIDER_BLOCK_ALERT } from '../../src/services/sending/delivery.js';

interface Alert {
  id: number;
  kind: string;
  message: string;
  data: Record<string, unknown>;
  createdAt: string;
  acknowledgedAt: string | null;
}

const drain = (app: TestApp) => app.appliance.ctx.jobs.drain();

async function setup(t: Test): Promise<{ app: TestApp; dns: TestDns; sink: SmtpSink; receiver: WebhookReceiver }> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  return { app, dns, sink, receiver };
}

const alertsOf = async (app: TestApp, key?: string, query = '') => (await app.request<{ alerts: Alert[] }>('GET', `/alerts${query}`, key ? { key } : {})).body.alerts;

/** A Slack channel of the team on the receiver (path /<team>), subscribed to every kind. */
async function slackChannel(app: TestApp, receiver: WebhookReceiver, key: string, path: string): Promise<void> {
  const res = await app.request('POST', '/notification-channels', { key, body: { name: 'slack', type: 'slack', url: `${new URL(receiver.url).origin}${path}` } });
  if (res.status !== 201) throw new Error(res.text);
}
const slackTexts = (receiver: WebhookReceiver, path: string) => receiver.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.raw.toString('utf8')) as { text: string }).text);

t.test('the monthly quota at 80 % and 100 %, once a month each', async (t) => {
  const { app, dns, receiver } = await setup(t);
  const free = await createOtherTeam(app, 'free');
  await addVerifiedDomain(app, dns, 'quota.example', free.apiKey);
  await slackChannel(app, receiver, free.apiKey, '/quota');
  const month = app.clock.now().toISOString().slice(0, 7);
  const setUsage = (sent: number) => app.appliance.ctx.db.raw('INSERT INTO team_usage (team_id, month, sent) VALUES (?, ?, ?) ON CONFLICT(team_id, month) DO UPDATE SET sent = excluded.sent', [free.teamId, month, sent]);
  const send = () => app.request('POST', '/emails', { key: free.apiKey, body: { from: 'a@quota.example', to: ['b@quota.example'], subject: 'Hi', text: 'Hello' } });

  await setUsage(2398);
  t.equal((await send()).status, 202);
  await drain(app);
  t.same(await alertsOf(app, free.apiKey), [], '2,399 of 3,000: no alert');
  t.equal((await send()).status, 202);
  await drain(app);
  let alerts = await alertsOf(app, free.apiKey);
  t.equal(alerts.length, 1);
  t.match(alerts[0], { kind: 'quota_80', data: { month, used: 2400, allowance: 3000, plan: 'free' }, message: /2,400 of the 3,000 emails included this month/ });
  t.match(slackTexts(receiver, '/quota')[0], /^Monthly sending quota at 80 %/, 'sent to the team’s channel');

  await setUsage(2399);
  t.equal((await send()).status, 202);
  await drain(app);
  t.equal((await alertsOf(app, free.apiKey)).length, 1, 'crossing 80 % again in the same month: no second alert');

  await setUsage(2999);
  t.equal((await send()).status, 202, 'the 3,000th');
  await drain(app);
  alerts = await alertsOf(app, free.apiKey);
  t.match(alerts[0], { kind: 'quota_100', data: { used: 3000, allowance: 3000 }, message: /further sends are refused/ });
  t.equal((await send()).status, 429, 'Free: refused past the allowance');
  await drain(app);
  t.equal((await alertsOf(app, free.apiKey)).length, 2, 'a refused send raises nothing more');
  t.equal(slackTexts(receiver, '/quota').length, 2);
  t.same(await alertsOf(app), [], 'the bootstrap team sees none of them');

  // Enterprise (no allowance): never.
  await setUsage(0);
  const ent = await createOtherTeam(app, 'enterprise');
  await addVerifiedDomain(app, dns, 'ent.example', ent.apiKey);
  t.equal((await app.request('POST', '/emails', { key: ent.apiKey, body: { from: 'a@ent.example', to: ['b@ent.example'], subject: 'Hi', text: 'x' } })).status, 202);
  t.same(await alertsOf(app, ent.apiKey), []);
});

t.test('a safety hold raises sending_on_hold', async (t) => {
  const { app, dns, receiver } = await setup(t);
  const pro = await createOtherTeam(app, 'pro');
  await addVerifiedDomain(app, dns, 'held.example', pro.apiKey);
  await slackChannel(app, receiver, pro.apiKey, '/held');
  const send = () => app.request('POST', '/emails', { key: pro.apiKey, body: { from: 'a@held.example', to: ['someone@dest.example'], subject: 'Hi', text: 'Hello' } });
  for (let i = 0; i < 10; i++) t.equal((await send()).status, 202);
  t.equal((await send()).status, 403, 'the 11th external send of the first hour holds the account');
  t.equal((await send()).status, 403);
  await drain(app);
  const alerts = await alertsOf(app, pro.apiKey, '?kind=sending_on_hold');
  t.equal(alerts.length, 1, 'one alert for the hold (the sends refused while held raise none)');
  t.match(alerts[0], { data: { reason: /10 external sends in the account's first hour/ }, message: /Sending is on hold for safety review/ });
  t.match(slackTexts(receiver, '/held').find((x) => x.startsWith('Sending put on hold')), /on hold/);
});

t.test('a run of blocking bounces from one provider within the hour', async (t) => {
  const { app, dns, sink } = await setup(t);
  await addVerifiedDomain(app, dns, 'sender.example');
  dns.set('MX', 'blocked.example', [{ exchange: 'mx1.blocked.example', priority: 10 }]);
  dns.set('A', 'mx1.blocked.example', ['127.0.0.1']);
  dns.set('MX', 'fine.example', [{ exchange: 'mx.fine.example', priority: 10 }]);
  dns.set('A', 'mx.fine.example', ['127.0.0.1']);
  const send = async (to: string) => {
    const res = await app.request('POST', '/emails', { body: { from: 'a@sender.example', to: [to], subject: 'Hi', text: 'Hello' } });
    if (res.status !== 202) throw new Error(res.text);
  };
  sink.recipients.set('u@fine.example', { code: 550, text: '5.1.1 <u@fine.example>: user unknown' });
  for (let i = 0; i < PROVIDER_BLOCK_ALERT; i++) {
    sink.recipients.set(`u${i}@blocked.example`, { code: 550, text: '5.7.1 Message rejected as spam' });
  }
  for (let i = 0; i < PROVIDER_BLOCK_ALERT - 1; i++) await send(`u${i}@blocked.example`);
  await send('u@fine.example');
  await drain(app);
  await drain(app);
  t.same(await alertsOf(app, undefined, '?kind=provider_blocking'), [], `${PROVIDER_BLOCK_ALERT - 1} blocking bounces (and an unknown user elsewhere): no alert`);
  await send(`u${PROVIDER_BLOCK_ALERT - 1}@blocked.example`);
  await drain(app);
  await drain(app);
  const alerts = await alertsOf(app, undefined, '?kind=provider_blocking');
  t.equal(alerts.length, 1, `the ${PROVIDER_BLOCK_ALERT}th within the hour raises it`);
  t.match(alerts[0], { data: { provider: 'blocked.example', threshold: PROVIDER_BLOCK_ALERT }, message: /blocked\.example is refusing this team's mail/ });
  await send('u0@blocked.example');
  await drain(app);
  await drain(app);
  t.equal((await alertsOf(app, undefined, '?kind=provider_blocking')).length, 1, 'once per provider and hour');
});

t.test('DMARC aggregate reports with failing sources', async (t) => {
  const { app, dns } = await setup(t);
  const acme = await addVerifiedDomain(app, dns, 'acme.example');
  const rua = 'dmarc-reports@acme.example';
  const mxPort = app.appliance.ports.mx.port;
  const report = async (reportId: string, records: Array<{ ip: string; count: number; dkim: 'pass' | 'fail'; spf: 'pass' | 'fail' }>) => {
    const mail = reportMail({ to: rua, filename: `${reportId}.xml`, contentType: 'text/xml', content: Buffer.from(aggregateXml({ domain: 'acme.example', reportId, records })) });
    t.ok((await smtpSend(mxPort, { from: 'noreply-dmarc@receiver.example', to: [rua] }, mail)).ok, `${reportId} accepted`);
    await drain(app);
  };
  await report('clean-1', [{ ip: '192.0.2.10', count: 50, dkim: 'pass', spf: 'pass' }]);
  t.same(await alertsOf(app), [], 'all passing: no alert');
  await report('new-source', [
    { ip: '192.0.2.10', count: 100, dkim: 'pass', spf: 'pass' },
    { ip: '203.0.113.9', count: 2, dkim: 'fail', spf: 'fail' },
  ]);
  let alerts = await alertsOf(app, undefined, '?kind=dmarc_failures');
  t.equal(alerts.length, 1, 'a failing source not seen before raises it (2 % failing)');
  t.match(alerts[0], { data: { domainId: acme.id, domain: 'acme.example', reportId: 'new-source', failing: 2, total: 102, sources: [{ ip: '203.0.113.9', count: 2, new: true }] }, message: /2 of 102 messages failed DMARC, 1 source\(s\) not seen before \(203\.0\.113\.9\)/ });
  await report('known-low', [
    { ip: '192.0.2.10', count: 100, dkim: 'pass', spf: 'pass' },
    { ip: '203.0.113.9', count: 1, dkim: 'fail', spf: 'fail' },
  ]);
  t.equal((await alertsOf(app, undefined, '?kind=dmarc_failures')).length, 1, 'the same source again, at 1 %: no new alert');
  await report('known-high', [
    { ip: '192.0.2.10', count: 10, dkim: 'pass', spf: 'pass' },
    { ip: '203.0.113.9', count: 5, dkim: 'fail', spf: 'fail' },
  ]);
  alerts = await alertsOf(app, undefined, '?kind=dmarc_failures');
  t.equal(alerts.length, 2, 'a failure rate above 10 % raises it');
  t.match(alerts[0], { message: /5 of 15 messages failed DMARC, 33 % of the messages/ });
});

t.test('a DKIM rotation waiting for activation; a webhook endpoint disabled', async (t) => {
  const { app, dns, receiver } = await setup(t);
  const domain = await addVerifiedDomain(app, dns, 'rotate.example');
  const rotated = await app.request('POST', `/domains/${domain.id}/dkim/rotate`);
  t.ok(rotated.status === 200 || rotated.status === 201, `rotate: ${rotated.status}`);
  await drain(app);
  const [pending] = await alertsOf(app, undefined, '?kind=dkim_rotation_pending');
  t.match(pending, { data: { domainId: domain.id, domain: 'rotate.example' }, message: new RegExp(`POST /domains/${domain.id}/dkim/rotate/activate`) });
  t.ok(Array.isArray(pending!.data.records) && (pending!.data.records as unknown[]).length > 0, 'carries the record(s) to publish');

  // A webhook channel subscribed to webhook_disabled gets the alert when an endpoint is disabled.
  const origin = new URL(receiver.url).origin;
  const channel = await app.request<{ channel: { secret: string } }>('POST', '/notification-channels', { body: { name: 'ops', type: 'webhook', url: `${origin}/ops`, alerts: ['webhook_disabled'] } });
  const hook = await app.request<{ id: number }>('POST', '/webhooks', { body: { url: `${origin}/failing`, events: ['domain.updated'] } });
  receiver.answer = 500;
  receiver.queue.length = 0;
  for (let i = 0; i < 20; i++) {
    await app.request('PATCH', `/domains/${domain.id}`, { body: { open_tracking: i % 2 === 0 } });
    await drain(app);
  }
  t.equal((await app.request<{ webhook: { active: boolean } }>('GET', `/webhooks/${hook.body.id}`)).body.webhook.active, false, 'disabled');
  receiver.answer = 200;
  await drain(app);
  // The channel's first attempt may have met the 500 answer; its retry comes 30 s later.
  app.clock.advance(30_000);
  await drain(app);
  const got = receiver.received.filter((r) => r.path === '/ops' && r.answer === 200);
  t.equal(got.length, 1, 'the ops channel got the alert');
  const body = JSON.parse(got[0]!.raw.toString('utf8')) as { type: string; data: Alert };
  t.equal(body.type, 'alert.webhook_disabled');
  t.match(body.data.data, { webhookId: hook.body.id, consecutiveFailures: 20 });
  t.ok(channel.body.channel.secret);
});
