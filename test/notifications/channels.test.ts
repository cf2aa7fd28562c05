// Notification channels over real sockets: the API (errors, limits, tenant isolation), alerts raised by the
// box fanned out to a signed webhook, Slack, Discord (a local HTTP receiver records the JSON shapes) and an
// e-mail address (through the send path to the SMTP sink), with retries on the fake clock and replay.
import t, { type Test } from 'tap';
import { simpleParser } from 'mailparser';
import { SECOND, MINUTE } from '../../src/core/clock.js';
import { verifyWebhookSignature } from '../../src/webhooks/verify.js';
import { ALERT_KINDS } from '../../src/services/platform/index.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

interface Channel {
  id: number;
  name: string;
  type: string;
  target: string;
  alerts: string[];
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
  secret: string | null;
}
interface Alert {
  id: number;
  kind: string;
  message: string;
  data: Record<string, unknown>;
  createdAt: string;
  acknowledgedAt: string | null;
}
interface Delivery {
  id: number;
  channelId: number;
  alertId: number | null;
  alertKind: string;
  payload: Alert;
  status: string;
  statusCode: number | null;
  responseBody: string | null;
  attempts: number;
  nextRetryAt: string | null;
  deliveredAt: string | null;
}
interface DeliveryPage {
  deliveries: Delivery[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}

const drain = (app: TestApp) => app.appliance.ctx.jobs.drain();

async function setup(t: Test, config: Record<string, unknown> = {}) {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, ...config } });
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  return { app, dns, sink, receiver };
}

async function create(app: TestApp, body: Record<string, unknown>, key?: string): Promise<Channel> {
  const res = await app.request<{ channel: Channel }>('POST', '/notification-channels', { body, ...(key ? { key } : {}) });
  if (res.status !== 201) throw new Error(`POST /notification-channels: ${res.status} ${res.text}`);
  return res.body.channel;
}

/** A domain created and verified against an empty DNS: fails, which raises `domain_verification_failed`. */
async function failVerification(app: TestApp, name: string): Promise<string> {
  const created = await app.request<{ id: string }>('POST', '/domains', { body: { name } });
  if (created.status !== 201) throw new Error(created.text);
  const verified = await app.request<{ status: string }>('POST', `/domains/${created.body.id}/verify`);
  if (verified.body.status !== 'failed') throw new Error(`expected failed: ${verified.text}`);
  return created.body.id;
}

const deliveries = async (app: TestApp, id: number, query = '') => (await app.request<DeliveryPage>('GET', `/notification-channels/${id}/deliveries${query}`)).body;
const origin = (r: WebhookReceiver) => new URL(r.url).origin;
const byPath = (r: WebhookReceiver, path: string) => r.received.filter((x) => x.path === path);

t.test('the API: create each type, list newest first, PUT, DELETE, errors, the cap and tenant isolation', async (t) => {
  const { app, receiver } = await setup(t);
  const hook = await create(app, { name: 'Ops hook', type: 'webhook', url: `${origin(receiver)}/hook`, alerts: ['dns_drift', 'webhook_disabled'] });
  t.match(hook, { name: 'Ops hook', type: 'webhook', target: `${origin(receiver)}/hook`, alerts: ['dns_drift', 'webhook_disabled'], enabled: true });
  t.match(hook.secret, /^whsec_[A-Za-z0-9]{32}$/, 'a webhook channel’s secret is shown once');
  const slack = await create(app, { name: 'Slack', type: 'slack', url: `${origin(receiver)}/services/T000/B000/XXXXSECRET` });
  t.equal(slack.secret, null);
  t.equal(slack.target, `${origin(receiver)}/…`, 'a Slack URL (a credential) is shown only up to its host');
  t.same(slack.alerts, [...ALERT_KINDS], 'every alert kind when `alerts` is omitted');
  const mail = await create(app, { name: 'On-call', type: 'email', email: 'oncall@example.com' });
  t.equal(mail.target, 'oncall@example.com');

  const list = await app.request<{ channels: Channel[] }>('GET', '/notification-channels');
  t.same(list.body.channels.map((c) => c.id), [mail.id, slack.id, hook.id], 'newest first');
  t.notOk(list.body.channels.some((c) => 'secret' in c), 'the list shows no secret');
  t.notOk(list.text.includes('XXXXSECRET'), 'nor the Slack URL’s token');

  // Errors.
  const post = (body: unknown) => app.request('POST', '/notification-channels', { body });
  t.match(await post({ type: 'slack', url: receiver.url }), { status: 400, body: { code: 'invalid_request', error: /name/ } });
  t.match(await post({ name: 'x', type: 'pager', url: receiver.url }), { status: 400, body: { error: /type/ } });
  t.match(await post({ name: 'x', type: 'slack' }), { status: 400, body: { error: 'Request body is missing required fields: url' } });
  t.match(await post({ name: 'x', type: 'email' }), { status: 400, body: { error: 'Request body is missing required fields: email' } });
  t.match(await post({ name: 'x', type: 'email', email: 'not an address' }), { status: 400, body: { error: /email/ } });
  t.match(await post({ name: 'x', type: 'discord', url: 'ftp://example.com/x' }), { status: 400, body: { error: /url: must be an http or https URL/ } });
  t.match(await post({ name: 'x', type: 'discord', url: receiver.url, alerts: ['nope'] }), { status: 400, body: { error: /alerts/ } });
  t.match(await post({ name: 'x', type: 'discord', url: receiver.url, alerts: [] }), { status: 400, body: { error: /at least one alert kind/ } });
  t.match(await app.request('POST', '/notification-channels', { raw: '{' }), { status: 400 });

  // PUT.
  const put = await app.request<{ channel: Channel }>('PUT', `/notification-channels/${hook.id}`, { body: { name: 'Renamed', alerts: ['quota_80'], enabled: false } });
  t.equal(put.status, 200);
  t.match(put.body.channel, { id: hook.id, name: 'Renamed', alerts: ['quota_80'], enabled: false, target: `${origin(receiver)}/hook` });
  t.match(await app.request('PUT', `/notification-channels/${hook.id}`, { body: { type: 'slack' } }), { status: 422, body: { code: 'unprocessable_entity', error: /cannot be changed/ } });
  t.match(await app.request('PUT', `/notification-channels/${hook.id}`, { body: {} }), { status: 400, body: { error: /at least one of/ } });
  t.match(await app.request('PUT', `/notification-channels/${mail.id}`, { body: { url: receiver.url } }), { status: 400, body: { error: /not used by an email channel/ } });
  t.match(await app.request('PUT', '/notification-channels/999999', { body: { name: 'x' } }), { status: 404, body: { code: 'not_found', error: 'Notification channel not found' } });
  t.match(await app.request('PUT', '/notification-channels/abc', { body: { name: 'x' } }), { status: 404 });

  // Tenant isolation: the other team sees none of these and cannot touch them.
  const other = await createOtherTeam(app);
  const theirs = await app.request<{ channels: Channel[] }>('GET', '/notification-channels', { key: other.apiKey });
  t.same(theirs.body.channels, [], 'another team lists none of them');
  for (const [method, path] of [
    ['PUT', `/notification-channels/${hook.id}`],
    ['DELETE', `/notification-channels/${hook.id}`],
    ['POST', `/notification-channels/${hook.id}/test`],
    ['GET', `/notification-channels/${hook.id}/deliveries`],
    ['POST', `/notification-channels/${hook.id}/deliveries/1/replay`],
  ] as const) {
    const res = await app.request(method, path, { key: other.apiKey, ...(method === 'PUT' ? { body: { name: 'mine' } } : {}) });
    t.equal(res.status, 404, `${method} ${path} of another team: 404`);
  }
  t.equal((await app.request<{ channels: Channel[] }>('GET', '/notification-channels')).body.channels.length, 3, 'still there');

  // DELETE.
  t.match(await app.request('DELETE', `/notification-channels/${slack.id}`), { status: 200, body: { success: true } });
  t.match(await app.request('DELETE', `/notification-channels/${slack.id}`), { status: 404 });

  // The cap: 20 per team (403), counted per team.
  for (let i = 0; i < 18; i++) await create(app, { name: `c${i}`, type: 'email', email: `c${i}@example.com` });
  t.match(await post({ name: 'one too many', type: 'email', email: 'x@example.com' }), { status: 403, body: { code: 'forbidden', error: 'Notification channel limit reached: 20 channels per team' } });
  await create(app, { name: 'theirs', type: 'email', email: 'x@example.com' }, other.apiKey);

  // A sending_access key may not manage channels.
  const keyRes = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'sender', permission: 'sending_access' } });
  t.match(await app.request('GET', '/notification-channels', { key: keyRes.body.token }), { status: 403 });
});

t.test('the private-address policy of webhooks applies to channel URLs', async (t) => {
  const app = await startTestApp(t, { config: { webhookAllowPrivate: false } });
  for (const url of ['http://127.0.0.1:9/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest', 'http://localhost/x']) {
    const res = await app.request('POST', '/notification-channels', { body: { name: 'x', type: 'slack', url } });
    t.match(res, { status: 400, body: { error: /url: must not point at a loopback, private or link-local address/ } }, url);
  }
});

t.test('an alert reaches each kind of channel in its own format', async (t) => {
  const { app, dns, sink, receiver } = await setup(t);
  const hook = await create(app, { name: 'hook', type: 'webhook', url: `${origin(receiver)}/hook`, alerts: ['domain_verification_failed'] });
  await create(app, { name: 'slack', type: 'slack', url: `${origin(receiver)}/slack`, alerts: ['domain_verification_failed'] });
  await create(app, { name: 'discord', type: 'discord', url: `${origin(receiver)}/discord`, alerts: ['domain_verification_failed'] });
  const mail = await create(app, { name: 'mail', type: 'email', email: 'oncall@ops.example', alerts: ['domain_verification_failed'] });
  const quiet = await create(app, { name: 'quota only', type: 'slack', url: `${origin(receiver)}/quiet`, alerts: ['quota_80'] });
  const off = await create(app, { name: 'disabled', type: 'slack', url: `${origin(receiver)}/off`, enabled: false });
  dns.set('MX', 'ops.example', [{ exchange: 'mx.ops.example', priority: 10 }]);
  dns.set('A', 'mx.ops.example', ['127.0.0.1']);

  const domainId = await failVerification(app, 'broken.example');
  await drain(app);

  // The alert itself.
  const alerts = await app.request<{ alerts: Alert[]; meta: { total: number } }>('GET', '/alerts');
  t.equal(alerts.status, 200);
  t.equal(alerts.body.meta.total, 1);
  const alert = alerts.body.alerts[0]!;
  t.match(alert, { kind: 'domain_verification_failed', message: /Verification of broken\.example failed/, data: { domainId, domain: 'broken.example' }, acknowledgedAt: null });

  // Signed webhook.
  const [h] = byPath(receiver, '/hook');
  t.ok(h, 'the webhook channel got it');
  const body = JSON.parse(h!.raw.toString('utf8')) as { type: string; created_at: string; data: Alert };
  t.equal(body.type, 'alert.domain_verification_failed');
  t.same(body.data, alert, 'the body carries the alert as GET /alerts shows it');
  t.ok(verifyWebhookSignature(h!.raw, String(h!.headers['x-service-signature']), hook.secret!), 'signed with the channel secret, as webhook events are');
  t.equal(h!.headers['x-service-event'], 'alert.domain_verification_failed');

  // Slack: text + blocks (mrkdwn).
  const [s] = byPath(receiver, '/slack');
  const slack = JSON.parse(s!.raw.toString('utf8')) as { text: string; blocks: Array<{ type: string; text?: { type: string; text: string }; elements?: unknown[] }> };
  t.match(slack.text, /^Domain verification failed: Verification of broken\.example failed/);
  t.same(slack.blocks.map((b) => b.type), ['header', 'section', 'section', 'context']);
  t.match(slack.blocks[0], { text: { type: 'plain_text', text: 'Domain verification failed' } });
  t.match(slack.blocks[1], { text: { type: 'mrkdwn', text: /broken\.example/ } });
  t.match(slack.blocks[2]!.text!.text, /\*domain:\* broken\.example/);

  // Discord: content + embeds, mentions disabled.
  const [d] = byPath(receiver, '/discord');
  const discord = JSON.parse(d!.raw.toString('utf8')) as { username: string; content: string; embeds: Array<Record<string, unknown>>; allowed_mentions: unknown };
  t.equal(discord.content, '**Domain verification failed**');
  t.match(discord.embeds[0], { title: 'Domain verification failed', description: /broken\.example/, timestamp: alert.createdAt, color: 0xe74c3c, footer: { text: /domain_verification_failed/ } });
  t.match((discord.embeds[0]!.fields as Array<{ name: string; value: string }>).find((f) => f.name === 'domain'), { value: 'broken.example' });
  t.same(discord.allowed_mentions, { parse: [] }, 'no @everyone from an alert’s text');

  t.equal(byPath(receiver, '/quiet').length, 0, 'a channel not subscribed to the kind gets nothing');
  t.equal(byPath(receiver, '/off').length, 0, 'a disabled channel gets nothing');
  t.equal((await deliveries(app, quiet.id)).meta.total, 0);
  t.equal((await deliveries(app, off.id)).meta.total, 0);

  // E-mail: through the send path, from notifications@<MAIL_HOSTNAME>, to the sink.
  await drain(app);
  const m = sink.accepted.find((x) => x.to.includes('oncall@ops.example'));
  t.ok(m, 'the e-mail channel’s address got it over SMTP');
  const parsed = await simpleParser(m!.raw);
  t.match(parsed.subject, /Domain verification failed/);
  t.match(parsed.text, /Verification of broken\.example failed/);
  t.match(parsed.from?.value[0]?.address, /^notifications@/);
  const mailLog = await deliveries(app, mail.id);
  t.match(mailLog.deliveries[0], { status: 'delivered', statusCode: 202, responseBody: /^accepted as email / });

  // Acknowledge.
  const ack = await app.request<{ alert: Alert }>('POST', `/alerts/${alert.id}/acknowledge`);
  t.equal(ack.status, 200);
  t.ok(ack.body.alert.acknowledgedAt);
  const again = await app.request<{ alert: Alert }>('POST', `/alerts/${alert.id}/acknowledge`);
  t.equal(again.body.alert.acknowledgedAt, ack.body.alert.acknowledgedAt, 'idempotent');
  t.equal((await app.request<{ alerts: Alert[] }>('GET', '/alerts?acknowledged=false')).body.alerts.length, 0);
  t.equal((await app.request<{ alerts: Alert[] }>('GET', '/alerts?acknowledged=true')).body.alerts.length, 1);
  t.match(await app.request('GET', '/alerts?acknowledged=maybe'), { status: 400, body: { error: /acknowledged/ } });
  t.match(await app.request('GET', '/alerts?per_page=0'), { status: 400, body: { error: /per_page/ } });
  t.match(await app.request('POST', '/alerts/999999/acknowledge'), { status: 404, body: { error: 'Alert not found' } });
  const other = await createOtherTeam(app);
  t.equal((await app.request<{ alerts: Alert[] }>('GET', '/alerts', { key: other.apiKey })).body.alerts.length, 0, 'another team sees none');
  t.match(await app.request('POST', `/alerts/${alert.id}/acknowledge`, { key: other.apiKey }), { status: 404 });
});

t.test('a failing channel is retried on the webhook schedule; test and replay are single attempts', async (t) => {
  const { app, receiver } = await setup(t);
  const ch = await create(app, { name: 'discord', type: 'discord', url: `${origin(receiver)}/discord`, alerts: ['domain_verification_failed'] });
  receiver.answer = 500;
  await failVerification(app, 'flaky.example');
  await drain(app);
  let [d] = (await deliveries(app, ch.id)).deliveries;
  t.match(d, { status: 'pending', statusCode: 500, attempts: 1, alertKind: 'domain_verification_failed' });
  t.equal(new Date(d!.nextRetryAt!).getTime() - app.clock.now().getTime(), 30 * SECOND, 'first retry after 30 s');

  app.clock.advance(30 * SECOND);
  await drain(app);
  [d] = (await deliveries(app, ch.id)).deliveries;
  t.match(d, { status: 'pending', attempts: 2 });
  t.equal(new Date(d!.nextRetryAt!).getTime() - app.clock.now().getTime(), 2 * MINUTE, 'then after 2 min');

  receiver.answer = 204; // Discord answers 204
  app.clock.advance(2 * MINUTE);
  await drain(app);
  [d] = (await deliveries(app, ch.id)).deliveries;
  t.match(d, { status: 'delivered', statusCode: 204, attempts: 3, nextRetryAt: null });
  t.equal(byPath(receiver, '/discord').length, 3);
  const bodies = byPath(receiver, '/discord').map((r) => r.raw.toString('utf8'));
  t.equal(new Set(bodies).size, 1, 'every attempt sends the same message');

  // Replay: the same alert again, one attempt on the same delivery.
  const replay = await app.request<{ delivery: Delivery }>('POST', `/notification-channels/${ch.id}/deliveries/${d!.id}/replay`);
  t.equal(replay.status, 200);
  t.match(replay.body.delivery, { id: d!.id, status: 'delivered', attempts: 4 });
  t.equal(byPath(receiver, '/discord').at(-1)!.raw.toString('utf8'), bodies[0], 'the replay re-sends the original message');
  receiver.answer = 500;
  const failedReplay = await app.request<{ delivery: Delivery }>('POST', `/notification-channels/${ch.id}/deliveries/${d!.id}/replay`);
  t.match(failedReplay.body.delivery, { status: 'failed', attempts: 5, nextRetryAt: null }, 'a failed replay is not retried');
  t.match(await app.request('POST', `/notification-channels/${ch.id}/deliveries/999999/replay`), { status: 404, body: { error: 'Delivery not found' } });

  // Test: one attempt recorded in the log.
  receiver.answer = 200;
  const test = await app.request<{ delivery: Delivery }>('POST', `/notification-channels/${ch.id}/test`);
  t.match(test.body.delivery, { alertKind: 'test', alertId: null, status: 'delivered', statusCode: 200, attempts: 1 });
  t.match(JSON.parse(byPath(receiver, '/discord').at(-1)!.raw.toString('utf8')), { embeds: [{ title: 'Test notification', description: /test notification for channel "discord"/ }] });
  receiver.answer = 500;
  const failedTest = await app.request<{ delivery: Delivery }>('POST', `/notification-channels/${ch.id}/test`);
  t.match(failedTest.body.delivery, { status: 'failed', statusCode: 500, nextRetryAt: null });

  // The log: newest first, Form A.
  const page = await deliveries(app, ch.id, '?per_page=2&page=1');
  t.same(page.meta, { page: 1, perPage: 2, total: 3, totalPages: 2 });
  t.same(page.deliveries.map((x) => x.alertKind), ['test', 'test']);
  t.match(await app.request('GET', `/notification-channels/${ch.id}/deliveries?page=x`), { status: 400, body: { error: /page/ } });

  // Retries give up after 8 attempts.
  await failVerification(app, 'flaky2.example');
  await drain(app);
  for (const wait of [30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, 2 * 60 * MINUTE, 8 * 60 * MINUTE, 16 * 60 * MINUTE]) {
    app.clock.advance(wait);
    await drain(app);
  }
  const last = (await deliveries(app, ch.id)).deliveries.find((x) => x.payload.data.domain === 'flaky2.example');
  t.match(last, { status: 'failed', attempts: 8, nextRetryAt: null });

  // Deleting the channel drops a scheduled retry: nothing more is sent.
  receiver.answer = 500;
  await failVerification(app, 'flaky3.example');
  await drain(app);
  const before = receiver.received.length;
  t.match(await app.request('DELETE', `/notification-channels/${ch.id}`), { status: 200 });
  app.clock.advance(MINUTE);
  await drain(app);
  t.equal(receiver.received.length, before, 'a deleted channel gets no retry');
});

t.test('the spec’s rate limits on the real routes', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  const free = await createOtherTeam(app, 'free');
  const paid = await createOtherTeam(app, 'pro');
  const post = (key: string, i: number) => app.request('POST', '/notification-channels', { key, body: { name: `c${i}`, type: 'email', email: `c${i}@example.com` } });
  for (let i = 0; i < 10; i++) t.equal((await post(free.apiKey, i)).status, 201);
  const refused = await post(free.apiKey, 10);
  t.match(refused, { status: 429, body: { code: 'rate_limit_exceeded' } }, 'POST /notification-channels: 10 a minute on Free');
  t.equal(refused.headers.get('x-ratelimit-limit'), '10');
  t.equal((await post(paid.apiKey, 0)).headers.get('x-ratelimit-limit'), '20', '20 on paid plans');
  const id = ((await app.request<{ channels: Channel[] }>('GET', '/notification-channels', { key: paid.apiKey })).body.channels[0]!).id;
  t.equal((await app.request('POST', `/notification-channels/${id}/test`, { key: paid.apiKey })).headers.get('x-ratelimit-limit'), '10', 'test: 10 a minute');
  t.equal((await app.request('PUT', `/notification-channels/${id}`, { key: paid.apiKey, body: { name: 'x' } })).headers.get('x-ratelimit-limit'), '60', 'PUT: 60 a minute');
  t.equal((await app.request('GET', '/notification-channels', { key: paid.apiKey })).headers.get('x-ratelimit-limit'), null, 'GET: no limit');
  app.clock.advance(60_000);
  t.equal((await post(free.apiKey, 11)).status, 201, 'the window resets');
});
