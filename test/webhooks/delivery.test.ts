// Webhook delivery over real sockets: events recorded by the API are fanned out by the dispatcher, signed,
// POSTed to a local receiver, and retried on the spec's schedule by the durable job queue on a fake clock.
import t, { type Test } from 'tap';
import { HOUR, MINUTE, SECOND } from '../../src/core/clock.js';
import { verifyWebhookSignature } from '../../src/webhooks/verify.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

interface Created {
  id: number;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
  secret: string;
}
interface Delivery {
  id: number;
  webhookId: number;
  eventType: string;
  payload: { type: string; created_at: string; data: Record<string, unknown> };
  statusCode: number | null;
  responseBody: string | null;
  attempts: number;
  nextRetryAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  status: string;
}
interface DeliveryPage {
  deliveries: Delivery[];
  pagination: { page: number; perPage: number; total: number; totalPages: number };
}

async function setup(t: Test, config: Record<string, unknown> = {}) {
  const app = await startTestApp(t, { config });
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  return { app, receiver };
}

async function createHook(app: TestApp, receiver: WebhookReceiver, events: string[]): Promise<Created> {
  const res = await app.request<Created>('POST', '/webhooks', { body: { url: receiver.url, events } });
  if (res.status !== 201) throw new Error(`POST /webhooks: ${res.status} ${res.text}`);
  return res.body;
}

/** One domain, then `domain.updated` events on demand (cheap: no key generation). */
async function domainEvents(app: TestApp) {
  const created = await app.request<{ id: string }>('POST', '/domains', { body: { name: `d${Math.random().toString(36).slice(2, 8)}.example` } });
  if (created.status !== 201) throw new Error(created.text);
  let flag = false;
  return async () => {
    flag = !flag;
    const res = await app.request('PATCH', `/domains/${created.body.id}`, { body: { open_tracking: flag } });
    if (res.status !== 200) throw new Error(res.text);
  };
}

const drain = (app: TestApp) => app.appliance.ctx.jobs.drain();
const deliveries = async (app: TestApp, id: number, q = '') => (await app.request<DeliveryPage>('GET', `/webhooks/${id}/deliveries${q}`)).body;

t.test('an event is delivered once, signed, with the spec payload and headers', async (t) => {
  const { app, receiver } = await setup(t);
  const hook = await createHook(app, receiver, ['domain.created']);
  const other = await startWebhookReceiver();
  t.teardown(() => other.close());
  await createHook(app, other, ['email.sent']); // not subscribed to domain events
  const res = await app.request<{ id: string; name: string }>('POST', '/domains', { body: { name: 'acme.example' } });
  t.equal(res.status, 201);
  await drain(app);

  t.equal(receiver.received.length, 1, 'one request');
  t.equal(other.received.length, 0, 'an endpoint not subscribed to the kind gets nothing');
  const r = receiver.received[0]!;
  t.equal(r.method, 'POST');
  t.equal(r.path, '/hooks');
  t.equal(r.headers['content-type'], 'application/json');
  t.same(Object.keys(r.json), ['type', 'created_at', 'data'], 'body is { type, created_at, data }');
  t.equal(r.json.type, 'domain.created');
  t.equal(r.json.created_at, '2026-03-01T10:00:00.000Z', 'created_at with milliseconds');
  t.equal(r.json.data.id, res.body.id, 'data is the domain as the API returns it');
  t.equal(r.json.data.name, 'acme.example');
  t.match(r.headers['x-service-signature'], /^sha256=[0-9a-f]{64}$/, 'one signature outside a rotation');
  t.ok(verifyWebhookSignature(r.raw, r.headers['x-service-signature'], hook.secret), 'the signature verifies over the raw body');
  t.notOk(verifyWebhookSignature(Buffer.from(r.raw.toString().replace('acme', 'acmf')), r.headers['x-service-signature'], hook.secret), 'and not over altered bytes');
  t.equal(r.headers['x-service-timestamp'], String(Date.parse('2026-03-01T10:00:00.000Z') / 1000), 'timestamp header: unix seconds on the clock');
  t.equal(r.headers['x-service-event'], 'domain.created');

  const page = await deliveries(app, hook.id);
  t.equal(page.deliveries.length, 1);
  const d = page.deliveries[0]!;
  t.equal(r.headers['x-service-webhook-id'], String(d.id), 'id header: the delivery id');
  t.same(
    { webhookId: d.webhookId, eventType: d.eventType, statusCode: d.statusCode, responseBody: d.responseBody, attempts: d.attempts, nextRetryAt: d.nextRetryAt, deliveredAt: d.deliveredAt, status: d.status },
    { webhookId: hook.id, eventType: 'domain.created', statusCode: 200, responseBody: 'ok', attempts: 1, nextRetryAt: null, deliveredAt: '2026-03-01T10:00:00.000Z', status: 'delivered' },
  );
  t.same(d.payload, r.json, 'the record holds the payload sent');
  t.same(page.pagination, { page: 1, perPage: 20, total: 1, totalPages: 1 });

  await drain(app);
  t.equal(receiver.received.length, 1, 'nothing is sent twice');
});

t.test('email events carry email_id, from, to, subject, and bounce details', async (t) => {
  const { startDns } = await import('../helpers/dns-server.js');
  const { addVerifiedDomain } = await import('../helpers/domains.js');
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const { app, receiver } = await setup(t, { dnsServers: [dns.server] });
  await addVerifiedDomain(app, dns, 'acme.example');
  await createHook(app, receiver, ['email.sent', 'email.delivered', 'email.bounced']);
  const key = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'test', permission: 'full_access', mode: 'test' } });
  const ok = await app.request<{ id: string }>('POST', '/emails', { key: key.body.token, body: { from: 'Acme <news@acme.example>', to: ['alice@dest.example'], subject: 'Hello', text: 'Hi' } });
  const bad = await app.request<{ id: string }>('POST', '/emails', { key: key.body.token, body: { from: 'news@acme.example', to: ['bounced@dest.example'], subject: 'Bounce me', text: 'Hi' } });
  t.equal(ok.status, 202);
  await drain(app);
  await drain(app);
  const byType = (type: string, id: string) => receiver.received.find((r) => r.json.type === type && r.json.data.email_id === id)?.json.data;
  t.match(byType('email.sent', ok.body.id), { email_id: ok.body.id, from: '"Acme" <news@acme.example>', to: ['alice@dest.example'], subject: 'Hello' });
  t.match(byType('email.delivered', ok.body.id), { email_id: ok.body.id, subject: 'Hello' });
  t.match(byType('email.bounced', bad.body.id), {
    email_id: bad.body.id,
    from: 'news@acme.example',
    to: ['bounced@dest.example'],
    subject: 'Bounce me',
    bounce_code: '5.1.1',
    bounce_category: 'invalid_mailbox',
    bounce_message: /does not exist/,
  });
});

t.test('the retry schedule: 30 s, 2 min, 10 min, 30 min, 2 h, 8 h, 16 h, 8 attempts in all', async (t) => {
  const { app, receiver } = await setup(t);
  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  receiver.answer = 500;
  await fire();
  await drain(app);
  const start = app.clock.now().getTime();
  const waits = [30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, 2 * HOUR, 8 * HOUR, 16 * HOUR];
  let elapsed = 0;
  for (const [i, wait] of waits.entries()) {
    const d = (await deliveries(app, hook.id)).deliveries[0]!;
    t.equal(d.attempts, i + 1, `attempt ${i + 1} made`);
    t.equal(d.status, 'pending');
    t.equal(d.statusCode, 500);
    t.equal(d.nextRetryAt, new Date(start + elapsed + wait).toISOString(), `next retry ${wait / 1000} s later`);
    // One millisecond early: nothing happens.
    app.clock.advance(wait - 1);
    await drain(app);
    t.equal(receiver.received.length, i + 1, 'not before its time');
    app.clock.advance(1);
    await drain(app);
    t.equal(receiver.received.length, i + 2, 'on time');
    elapsed += wait;
  }
  const last = (await deliveries(app, hook.id)).deliveries[0]!;
  t.match(last, { attempts: 8, status: 'failed', nextRetryAt: null, deliveredAt: null, statusCode: 500 }, 'given up after 8 attempts');
  app.clock.advance(48 * HOUR);
  await drain(app);
  t.equal(receiver.received.length, 8, 'no ninth attempt');
  t.same(await app.appliance.ctx.jobs.stats(), { ready: 0, dead: 0, due: 0 }, 'no job left');
  const ids = new Set(receiver.received.map((r) => r.headers['x-service-webhook-id']));
  t.equal(ids.size, 1, 'every attempt carries the same id header');
});

t.test('a retry that succeeds: delivered, nextRetryAt null; 406 is not retried; timeouts and closed sockets are retried', async (t) => {
  const { app, receiver } = await setup(t, { webhookTimeoutMs: 300 });
  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);

  receiver.queue.push('timeout', 'close', 200);
  await fire();
  await drain(app);
  let d = (await deliveries(app, hook.id)).deliveries[0]!;
  t.match(d, { attempts: 1, status: 'pending', statusCode: null, responseBody: /timed out after 300 ms/ }, 'a timeout is a failed attempt');
  app.clock.advance(30 * SECOND);
  await drain(app);
  d = (await deliveries(app, hook.id)).deliveries[0]!;
  t.match(d, { attempts: 2, status: 'pending', statusCode: null, responseBody: /connection|closed|socket/ }, 'a closed socket is a failed attempt');
  app.clock.advance(2 * MINUTE);
  await drain(app);
  d = (await deliveries(app, hook.id)).deliveries[0]!;
  t.match(d, { attempts: 3, status: 'delivered', statusCode: 200, nextRetryAt: null, deliveredAt: app.clock.now().toISOString() });

  receiver.queue.push(406);
  await fire();
  await drain(app);
  d = (await deliveries(app, hook.id)).deliveries[0]!;
  t.match(d, { attempts: 1, status: 'rejected', statusCode: 406, nextRetryAt: null, deliveredAt: null }, '406: rejected');
  app.clock.advance(HOUR);
  await drain(app);
  t.equal(receiver.received.length, 4, '406 is never retried');
});

t.test("one delivery's retries and replays are one failed delivery toward the streak, not eight", async (t) => {
  // Spec: "20 consecutive failed deliveries". Counting attempts, two events failing through their retries
  // (plus a few test sends) disabled an endpoint (black-box audit).
  const { app, receiver } = await setup(t);
  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  receiver.answer = 500;
  const streak = async () => ((await app.appliance.ctx.db('webhooks').where({ id: hook.id }).first('consecutive_failures')) as { consecutive_failures: number }).consecutive_failures;
  await fire();
  await drain(app);
  for (let i = 0; i < 8; i++) {
    app.clock.advance(17 * HOUR);
    await drain(app);
  }
  const [d] = (await deliveries(app, hook.id)).deliveries;
  t.match(d, { attempts: 8, status: 'failed' }, 'all eight attempts made');
  for (let i = 0; i < 3; i++) t.equal((await app.request('POST', `/webhooks/${hook.id}/deliveries/${d!.id}/replay`)).status, 200);
  t.equal(await streak(), 1, 'one failed delivery');
  const active = (await app.request<{ webhook: { active: boolean } }>('GET', `/webhooks/${hook.id}`)).body.webhook.active;
  t.equal(active, true);
  await fire();
  await drain(app);
  t.equal(await streak(), 2, 'another event that fails is the second');
});

t.test('20 consecutive failed deliveries (406 not counted) disable the endpoint, raise an alert and e-mail the owner', async (t) => {
  const { startDns } = await import('../helpers/dns-server.js');
  const { startSmtpSink } = await import('../helpers/smtp-sink.js');
  const { listAlerts } = await import('../../src/services/platform/alerts.js');
  const { simpleParser } = await import('mailparser');
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const { app, receiver } = await setup(t, { dnsServers: [dns.server], outboundPort: sink.port });
  // The bootstrap team's owner is postmaster@<MAIL_HOSTNAME>; its mail goes to the sink.
  const owner = (await app.appliance.ctx.db('teams').where({ id: app.teamId }).first('owner_email')) as { owner_email: string };
  const ownerDomain = owner.owner_email.split('@')[1]!;
  dns.set('MX', ownerDomain, [{ exchange: `mx.${ownerDomain}`, priority: 10 }]);
  dns.set('A', `mx.${ownerDomain}`, ['127.0.0.1']);

  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  const active = async () => (await app.request<{ webhook: { active: boolean } }>('GET', `/webhooks/${hook.id}`)).body.webhook.active;
  receiver.answer = 500;
  for (let i = 0; i < 10; i++) {
    await fire();
    await drain(app);
  }
  receiver.queue.push(406);
  await fire();
  await drain(app);
  for (let i = 0; i < 9; i++) {
    await fire();
    await drain(app);
  }
  t.equal(receiver.received.length, 20, '20 attempts: 19 failed, one 406');
  t.equal(await active(), true, '19 consecutive failures: still active (the 406 did not count)');
  t.same(await listAlerts(app.appliance.ctx, app.teamId), [], 'no alert yet');
  t.equal(sink.accepted.length, 0, 'no e-mail yet');

  await fire();
  await drain(app);
  t.equal(receiver.received.length, 21);
  t.equal(await active(), false, 'the 20th consecutive failure disables it');
  const alerts = await listAlerts(app.appliance.ctx, app.teamId);
  t.equal(alerts.length, 1, 'one alert recorded');
  t.match(alerts[0], { kind: 'webhook_disabled', data: { webhookId: hook.id, url: receiver.url, consecutiveFailures: 20 }, message: /disabled after 20 consecutive failed deliveries/ });
  await drain(app);
  t.equal(sink.accepted.length, 1, 'the owner is e-mailed through our own send path');
  const mail = sink.accepted[0]!;
  t.same(mail.to, [owner.owner_email]);
  const parsed = await simpleParser(mail.raw);
  t.equal(parsed.from?.value[0]?.address, `notifications@${ownerDomain}`, 'from notifications@<MAIL_HOSTNAME>');
  t.match(parsed.subject, /Webhook endpoint disabled/);
  t.match(parsed.text, new RegExp(`PATCH /webhooks/${hook.id}`));
  t.notOk(parsed.headers.has('dkim-signature'), 'a system e-mail has no team domain key: unsigned');

  // Disabled: its scheduled retries are dropped at once (not when they come due).
  const atDisable = (await deliveries(app, hook.id, '?per_page=100')).deliveries;
  t.ok(atDisable.every((d) => d.status !== 'pending' && d.nextRetryAt === null), 'no retry left scheduled at the moment it is disabled');

  // While disabled: pending retries are dropped, new events are not delivered.
  await fire();
  await drain(app);
  app.clock.advance(HOUR);
  await drain(app);
  t.equal(receiver.received.length, 21, 'nothing is sent to a disabled endpoint, retries included');
  const failed = (await deliveries(app, hook.id, '?per_page=100')).deliveries;
  t.equal(failed.length, 21, 'no delivery is created for an event while disabled');
  t.ok(failed.every((d) => d.status !== 'pending'), 'no delivery left pending');

  // Re-enabled: only events from then on.
  receiver.answer = 200;
  t.equal((await app.request('PATCH', `/webhooks/${hook.id}`, { body: { enabled: true } })).status, 200);
  t.equal(await active(), true);
  await drain(app);
  t.equal(receiver.received.length, 21, 'the event that occurred while disabled is lost');
  await fire();
  await drain(app);
  t.equal(receiver.received.length, 22, 'a new event is delivered');
  t.equal(receiver.received[21]!.answer, 200);

  // Deleted: nothing further.
  receiver.answer = 500;
  await fire();
  await drain(app);
  t.equal(receiver.received.length, 23);
  t.equal((await app.request('DELETE', `/webhooks/${hook.id}`)).status, 200);
  app.clock.advance(HOUR);
  await fire();
  await drain(app);
  t.equal(receiver.received.length, 23, 'no retry and no new event after DELETE');
  t.equal((await app.request('GET', `/webhooks/${hook.id}`)).status, 404);
});

t.test('disabling an endpoint drops its scheduled retries: re-enabled before they are due, they are not sent', async (t) => {
  const { app, receiver } = await setup(t);
  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  receiver.answer = 500;
  await fire();
  await drain(app);
  t.equal(receiver.received.length, 1);
  t.match((await deliveries(app, hook.id)).deliveries[0], { status: 'pending', nextRetryAt: /^\d{4}-/ }, 'a retry in 30 s');

  t.equal((await app.request('PATCH', `/webhooks/${hook.id}`, { body: { enabled: false } })).status, 200);
  t.match((await deliveries(app, hook.id)).deliveries[0], { status: 'failed', nextRetryAt: null }, 'dropped when disabled');
  t.equal((await app.request('PATCH', `/webhooks/${hook.id}`, { body: { enabled: true } })).status, 200);
  receiver.answer = 200;
  app.clock.advance(HOUR);
  await drain(app);
  t.equal(receiver.received.length, 1, 'the dropped retry is not sent after re-enabling');
  t.match((await deliveries(app, hook.id)).deliveries[0], { status: 'failed' }, 'still replayable as failed');
});

t.test('a 2xx resets the failure streak', async (t) => {
  const { app, receiver } = await setup(t);
  const hook = await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  receiver.answer = 500;
  for (let i = 0; i < 19; i++) {
    await fire();
    await drain(app);
  }
  receiver.queue.push(204);
  await fire();
  await drain(app);
  for (let i = 0; i < 19; i++) {
    await fire();
    await drain(app);
  }
  t.equal(receiver.received.length, 39);
  t.equal((await app.request<{ webhook: { active: boolean } }>('GET', `/webhooks/${hook.id}`)).body.webhook.active, true, '19 + 2xx + 19: still active');
});

t.test('deliveries to different endpoints proceed in parallel; one endpoint is limited', async (t) => {
  const { EndpointSlots } = await import('../../src/services/notifications/webhook-delivery.js');
  const slots = new EndpointSlots(2, 1);
  t.equal(await slots.acquire(1), true);
  t.equal(await slots.acquire(1), true);
  let third = false;
  const waiting = slots.acquire(1).then((v) => (third = v));
  t.equal(await slots.acquire(1), false, 'beyond the limit and the waiting room: put back');
  t.equal(await slots.acquire(2), true, 'another endpoint is not held up');
  t.equal(third, false, 'the third waits');
  slots.release(1);
  await waiting;
  t.equal(third, true, 'and gets the slot released');

  // Over sockets: a slow endpoint (holding every request) does not hold up a fast one.
  const { app, receiver } = await setup(t, { webhookTimeoutMs: 2000 });
  const slow = await startWebhookReceiver();
  t.teardown(() => slow.close());
  slow.answer = 'timeout';
  await createHook(app, slow, ['domain.updated']);
  await createHook(app, receiver, ['domain.updated']);
  const fire = await domainEvents(app);
  for (let i = 0; i < 20; i++) await fire();
  const until = Date.now() + 20_000;
  while (receiver.received.length < 20 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  t.equal(receiver.received.length, 20, 'the fast endpoint got every event');
  t.ok(slow.received.length <= 16, `the slow one holds at most its slots and waiting room (${slow.received.length})`);
  await drain(app);
});

t.test('with no active endpoint on the box, events cost the dispatcher nothing; an endpoint created later gets only later events', async (t) => {
  const { app, receiver } = await setup(t);
  await drain(app);
  let dispatchJobs = 0;
  app.appliance.ctx.db.on('query', (q: { sql: string; bindings?: unknown[] }) => {
    if (q.sql.startsWith('insert into `jobs`') && (q.bindings ?? []).includes('webhook.dispatch')) dispatchJobs++;
  });
  const fire = await domainEvents(app);
  for (let i = 0; i < 5; i++) await fire();
  await drain(app);
  t.equal(dispatchJobs, 0, 'no dispatch job while no endpoint exists');
  await createHook(app, receiver, ['domain.updated']);
  await drain(app);
  t.equal(receiver.received.length, 0, 'earlier events are not delivered to a new endpoint');
  await fire();
  await drain(app);
  t.equal(dispatchJobs, 1, 'one dispatch job once an endpoint exists');
  t.equal(receiver.received.length, 1, 'and the new event is delivered');
});
