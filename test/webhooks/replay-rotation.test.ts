// Test events, single and batch replay, and signing-secret rotation with a grace window, checked against
// real deliveries with the exported verification helper (src/webhooks/verify.ts).
import t, { type Test } from 'tap';
import { HOUR, MINUTE } from '../../src/core/clock.js';
import { computeSignature, verifyWebhookSignature } from '../../src/webhooks/verify.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

interface Delivery {
  id: number;
  eventType: string;
  payload: { type: string; created_at: string; data: Record<string, unknown> };
  statusCode: number | null;
  attempts: number;
  nextRetryAt: string | null;
  deliveredAt: string | null;
  status: string;
}

async function setup(t: Test) {
  const app = await startTestApp(t);
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const hook = await app.request<{ id: number; secret: string }>('POST', '/webhooks', { body: { url: receiver.url, events: ['domain.updated'] } });
  const created = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'acme.example' } });
  let flag = false;
  const fire = async () => {
    flag = !flag;
    await app.request('PATCH', `/domains/${created.body.id}`, { body: { open_tracking: flag } });
    await app.appliance.ctx.jobs.drain();
  };
  const list = async () => (await app.request<{ deliveries: Delivery[] }>('GET', `/webhooks/${hook.body.id}/deliveries?per_page=100`)).body.deliveries;
  return { app, receiver, hook: hook.body, fire, list, domainId: created.body.id };
}

const drain = (app: TestApp) => app.appliance.ctx.jobs.drain();

/** Walks the whole retry schedule so every pending delivery ends failed. */
async function exhaust(app: TestApp) {
  for (let i = 0; i < 7; i++) {
    app.clock.advance(16 * HOUR);
    await drain(app);
  }
}

const bodyOf = (r: WebhookReceiver, id: number) => r.received.filter((x) => x.headers['x-service-webhook-id'] === String(id));

t.test('POST /webhooks/{id}/test sends a test event now and answers with its delivery', async (t) => {
  const { app, receiver, hook, list } = await setup(t);
  const ok = await app.request<{ success: boolean; delivery: Delivery }>('POST', `/webhooks/${hook.id}/test`);
  t.equal(ok.status, 200);
  t.match(ok.body, { success: true, delivery: { eventType: 'webhook.test', statusCode: 200, attempts: 1, status: 'delivered', deliveredAt: '2026-03-01T10:00:00.000Z', nextRetryAt: null } });
  const got = receiver.received.at(-1)!;
  t.match(got.json, { type: 'webhook.test', created_at: '2026-03-01T10:00:00.000Z', data: { webhook_id: hook.id } });
  t.ok(verifyWebhookSignature(got.raw, got.headers['x-service-signature'], hook.secret));

  receiver.answer = 500;
  const bad = await app.request<{ delivery: Delivery }>('POST', `/webhooks/${hook.id}/test`);
  t.match(bad.body.delivery, { statusCode: 500, status: 'failed', nextRetryAt: null }, 'a failed test is reported, not retried');
  app.clock.advance(HOUR);
  await drain(app);
  t.equal(receiver.received.length, 2, 'no retry of a test event');
  t.equal((await list()).length, 2, 'test deliveries are in the log');

  await app.request('PATCH', `/webhooks/${hook.id}`, { body: { enabled: false } });
  receiver.answer = 200;
  const disabled = await app.request<{ delivery: Delivery }>('POST', `/webhooks/${hook.id}/test`);
  t.equal(disabled.body.delivery.statusCode, 200, 'a disabled endpoint can still be tested');
});

t.test('replay: the original payload again, as a new attempt on the same delivery', async (t) => {
  const { app, receiver, hook, fire, list } = await setup(t);
  receiver.answer = 500;
  await fire();
  await exhaust(app);
  const [failed] = await list();
  t.match(failed, { status: 'failed', attempts: 8 });
  app.clock.advance(MINUTE);
  receiver.answer = 200;
  const res = await app.request<{ success: boolean; delivery: Delivery }>('POST', `/webhooks/${hook.id}/deliveries/${failed!.id}/replay`);
  t.match(res.body, { success: true, delivery: { id: failed!.id, attempts: 9, status: 'delivered', statusCode: 200, deliveredAt: app.clock.now().toISOString() } });
  const sent = bodyOf(receiver, failed!.id);
  t.equal(sent.length, 9);
  t.ok(sent.every((s) => s.raw.equals(sent[0]!.raw)), 'the same body bytes every time');
  t.ok(verifyWebhookSignature(sent[8]!.raw, sent[8]!.headers['x-service-signature'], hook.secret));
  t.equal((await app.request('POST', `/webhooks/${hook.id}/deliveries/99999/replay`)).status, 404);
  t.equal((await app.request('POST', `/webhooks/${hook.id}/deliveries/x/replay`)).status, 404);
});

t.test('a failed replay of a delivery still waiting for its first attempt leaves it waiting for that attempt', async (t) => {
  const { app, receiver, hook, list } = await setup(t);
  // As the dispatcher writes a delivery before its first attempt (the attempt is its job's next step).
  const [id] = (await app.appliance.ctx.db('webhook_deliveries').insert({
    webhook_id: hook.id, event_type: 'domain.updated', payload: '{"type":"domain.updated","created_at":"2026-03-01T10:00:00.000Z","data":{}}', status: 'pending', attempts: 0, created_at: app.clock.now().toISOString(),
  })) as [number];
  receiver.answer = 500;
  const replayed = await app.request<{ delivery: Delivery }>('POST', `/webhooks/${hook.id}/deliveries/${id}/replay`);
  t.match(replayed.body.delivery, { id, status: 'pending', attempts: 1, statusCode: 500, nextRetryAt: null }, 'the failed replay is recorded; the delivery still waits for its attempt (a failed one would be skipped by it)');
  t.match((await list())[0], { id, status: 'pending' });
});

t.test('batch replay: failed deliveries only, oldest first, limit, filters, remaining', async (t) => {
  const { app, receiver, hook, fire, list } = await setup(t);
  receiver.answer = 500;
  await fire(); // e1: fails
  app.clock.advance(1000);
  await fire(); // e2: fails
  receiver.answer = 406;
  await fire(); // e3: rejected
  receiver.answer = 200;
  await fire(); // e4: delivered
  receiver.answer = 500;
  await exhaust(app);
  await app.request('POST', `/webhooks/${hook.id}/test`); // a failed webhook.test
  const before = await list();
  const [t5, e4, e3, e2, e1] = before;
  t.same(before.map((d) => d.status), ['failed', 'delivered', 'rejected', 'failed', 'failed']);
  const sentBefore = receiver.received.length;

  const batch = (body: Record<string, unknown>) => app.request<{ success: boolean; replayed: number; remaining: number }>('POST', `/webhooks/${hook.id}/deliveries/batch-replay`, { body });
  receiver.answer = 200;
  t.same((await batch({ limit: 1 })).body, { success: true, replayed: 1, remaining: 2 }, 'one replayed, two remain');
  await drain(app);
  t.equal(receiver.received.length, sentBefore + 1);
  t.equal(receiver.received.at(-1)!.headers['x-service-webhook-id'], String(e1!.id), 'the oldest first');
  t.same((await batch({ withinMinutes: 60 })).body, { success: true, replayed: 1, remaining: 0 }, 'only the recent test delivery is within the hour');
  await drain(app);
  t.equal(receiver.received.at(-1)!.headers['x-service-webhook-id'], String(t5!.id));
  t.same((await batch({ eventType: 'email.sent' })).body, { success: true, replayed: 0, remaining: 0 }, 'filtered by type');

  receiver.answer = 500;
  t.same((await batch({ eventType: 'domain.updated' })).body, { success: true, replayed: 1, remaining: 0 });
  await drain(app);
  let e2now = (await list()).find((d) => d.id === e2!.id)!;
  t.match(e2now, { status: 'failed', attempts: 9, nextRetryAt: null }, 'a replay that fails is failed again, with no retry schedule');
  app.clock.advance(HOUR);
  await drain(app);
  t.equal(bodyOf(receiver, e2!.id).length, 9, 'not retried');

  receiver.answer = 200;
  t.same((await batch({})).body, { success: true, replayed: 1, remaining: 0 }, 'and can be replayed again');
  await drain(app);
  e2now = (await list()).find((d) => d.id === e2!.id)!;
  t.match(e2now, { status: 'delivered', attempts: 10 });
  t.same((await batch({})).body, { success: true, replayed: 0, remaining: 0 }, 'nothing failed is left');
  t.equal(bodyOf(receiver, e3!.id).length, 1, 'the rejected (406) delivery was never replayed');
  t.equal(bodyOf(receiver, e4!.id).length, 1, 'the delivered one was never replayed');
});

t.test('batch replay never re-sends a delivery that succeeded, even after a manual replay of it failed', async (t) => {
  const { app, receiver, hook, fire, list } = await setup(t);
  await fire(); // delivered
  const [delivered] = await list();
  t.match(delivered, { status: 'delivered', attempts: 1 });
  receiver.answer = 500;
  const replayed = await app.request<{ delivery: Delivery }>('POST', `/webhooks/${hook.id}/deliveries/${delivered!.id}/replay`);
  t.match(replayed.body.delivery, { statusCode: 500, attempts: 2, deliveredAt: delivered!.deliveredAt }, 'the manual replay failed');
  receiver.answer = 200;
  const batch = await app.request<{ replayed: number; remaining: number }>('POST', `/webhooks/${hook.id}/deliveries/batch-replay`, { body: {} });
  t.same([batch.body.replayed, batch.body.remaining], [0, 0], 'spec: already-succeeded deliveries are never re-sent');
  await drain(app);
  t.equal(bodyOf(receiver, delivered!.id).length, 2, 'sent once, and once by hand');
});

t.test('batch replay of more than the limit reports what remains', async (t) => {
  const { app, receiver, hook, fire } = await setup(t);
  receiver.answer = 500;
  for (let i = 0; i < 2; i++) await fire();
  await exhaust(app);
  receiver.answer = 200;
  const r = await app.request<{ replayed: number; remaining: number }>('POST', `/webhooks/${hook.id}/deliveries/batch-replay`, { body: { limit: 1 } });
  t.same([r.body.replayed, r.body.remaining], [1, 1]);
  const r2 = await app.request<{ replayed: number; remaining: number }>('POST', `/webhooks/${hook.id}/deliveries/batch-replay`, { body: { limit: 1 } });
  t.same([r2.body.replayed, r2.body.remaining], [1, 0], 'a second call takes the next; the first is no longer failed');
  await drain(app);
  t.equal(receiver.delivered.length, 2);
});

t.test('secret rotation with a 24-hour grace window: both signatures, the new first; then only the new', async (t) => {
  const { app, receiver, hook, fire } = await setup(t);
  const res = await app.request<{ success: boolean; secret: string; previousSecretExpiresAt: string | null }>('POST', `/webhooks/${hook.id}/rotate-secret`, { body: {} });
  t.equal(res.status, 200);
  t.match(res.body, { success: true, secret: /^whsec_/, previousSecretExpiresAt: '2026-03-02T10:00:00.000Z' }, 'default grace: 24 hours');
  t.not(res.body.secret, hook.secret);
  await fire();
  let got = receiver.received.at(-1)!;
  const header = got.headers['x-service-signature'] as string;
  t.same(header.split(','), [`sha256=${computeSignature(got.raw, res.body.secret)}`, `sha256=${computeSignature(got.raw, hook.secret)}`], 'new first, then old');
  t.ok(verifyWebhookSignature(got.raw, header, res.body.secret), 'a receiver with the new secret accepts');
  t.ok(verifyWebhookSignature(got.raw, header, hook.secret), 'a receiver still on the old secret accepts');
  t.ok(verifyWebhookSignature(got.raw, `v9=abc,${header}`, res.body.secret), 'unknown schemes are ignored');
  t.notOk(verifyWebhookSignature(got.raw, header, 'whsec_other'), 'any other secret is refused');
  t.notOk(verifyWebhookSignature(got.raw, 'sha256=abc', res.body.secret), 'a short value is refused');

  app.clock.advance(24 * HOUR - 1);
  await fire();
  t.equal((receiver.received.at(-1)!.headers['x-service-signature'] as string).split(',').length, 2, 'still two a millisecond before the end');
  app.clock.advance(1);
  await fire();
  got = receiver.received.at(-1)!;
  t.equal((got.headers['x-service-signature'] as string).split(',').length, 1, 'one after the window');
  t.ok(verifyWebhookSignature(got.raw, got.headers['x-service-signature'], res.body.secret));
  t.notOk(verifyWebhookSignature(got.raw, got.headers['x-service-signature'], hook.secret), 'the old secret no longer verifies');
});

t.test('secret rotation with graceHours 0 cuts over at once', async (t) => {
  const { app, receiver, hook, fire } = await setup(t);
  const res = await app.request<{ secret: string; previousSecretExpiresAt: string | null }>('POST', `/webhooks/${hook.id}/rotate-secret`, { body: { graceHours: 0 } });
  t.equal(res.body.previousSecretExpiresAt, null);
  await fire();
  const got = receiver.received.at(-1)!;
  t.match(got.headers['x-service-signature'], /^sha256=[0-9a-f]{64}$/, 'one signature');
  t.ok(verifyWebhookSignature(got.raw, got.headers['x-service-signature'], res.body.secret));
  t.notOk(verifyWebhookSignature(got.raw, got.headers['x-service-signature'], hook.secret));
  // A replay made after the rotation is signed with the secret in force now.
  const [d] = (await app.request<{ deliveries: Delivery[] }>('GET', `/webhooks/${hook.id}/deliveries`)).body.deliveries;
  await app.request('POST', `/webhooks/${hook.id}/deliveries/${d!.id}/replay`);
  t.ok(verifyWebhookSignature(receiver.received.at(-1)!.raw, receiver.received.at(-1)!.headers['x-service-signature'], res.body.secret));
});

t.test("docs/API.md's receiver example verifies real deliveries, during a rotation too", async (t) => {
  const { readFileSync } = await import('node:fs');
  const { createHmac, timingSafeEqual } = await import('node:crypto');
  const readme = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
  const start = readme.indexOf('function verify(rawBody, header, secret) {');
  t.ok(start > 0, 'the example is in docs/API.md');
  const end = readme.indexOf('\n}\n', start) + 2;
  const verify = new Function('createHmac', 'timingSafeEqual', `${readme.slice(start, end)}\nreturn verify;`)(createHmac, timingSafeEqual) as (
    raw: Buffer,
    header: unknown,
    secret: string,
  ) => boolean;
  const { app, receiver, hook, fire } = await setup(t);
  await fire();
  let got = receiver.received.at(-1)!;
  t.ok(verify(got.raw, got.headers['x-service-signature'], hook.secret), 'accepts a delivery');
  t.notOk(verify(Buffer.concat([got.raw, Buffer.from(' ')]), got.headers['x-service-signature'], hook.secret), 'refuses altered bytes');
  const rotated = await app.request<{ secret: string }>('POST', `/webhooks/${hook.id}/rotate-secret`, { body: { graceHours: 1 } });
  await fire();
  got = receiver.received.at(-1)!;
  t.ok(verify(got.raw, got.headers['x-service-signature'], rotated.body.secret), 'new secret during the window');
  t.ok(verify(got.raw, got.headers['x-service-signature'], hook.secret), 'old secret during the window');
  t.notOk(verify(got.raw, got.headers['x-service-signature'], 'whsec_wrong'), 'a wrong secret');
  t.notOk(verify(got.raw, undefined, hook.secret), 'no header');
});
