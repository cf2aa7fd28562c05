// Crash and restart: webhook deliveries live in the store (delivery rows, their jobs, the dispatcher's
// cursor), so a stop or a kill loses none. Deliveries due before the crash go out after it; one the receiver
// already answered 2xx (and that was recorded) is never sent again. The one window for a duplicate is the
// same as for email (README): a 2xx received but not yet recorded when the process dies; the receiver
// de-duplicates by X-Service-Webhook-Id.
import t from 'tap';
import { rmSync } from 'node:fs';
import { FakeClock, SECOND } from '../../src/core/clock.js';
import { openDatabase } from '../../src/db/index.js';
import { newToken } from '../../src/services/platform/api-keys.js';
import { makeDataDir, request, startTestApp } from '../helpers/app.js';
import { ApplianceProcess, restartableEnv, until } from '../helpers/process.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

t.setTimeout(600_000);

/** 2xx answers per delivery id. */
function acks(r: WebhookReceiver): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of r.delivered) m.set(String(x.headers['x-service-webhook-id']), (m.get(String(x.headers['x-service-webhook-id'])) ?? 0) + 1);
  return m;
}

t.test('stopped with a retry due, a delivery held by a dead worker and an event not yet fanned out: all go out after the restart, none twice', async (t) => {
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const clock = new FakeClock('2026-03-01T10:00:00.000Z');
  const config = { bootstrapApiKey: newToken('live') };
  const first = await startTestApp(t, { dataDir, clock, config });
  const hook = await first.request<{ id: number }>('POST', '/webhooks', { body: { url: receiver.url, events: ['domain.updated'] } });
  const domain = await first.request<{ id: string }>('POST', '/domains', { body: { name: 'acme.example' } });
  const fire = async (req: typeof first.request, v: boolean) => req('PATCH', `/domains/${domain.body.id}`, { body: { open_tracking: v } });

  receiver.queue.push(500); // A: fails, retry due in 30 s
  await fire(first.request, true);
  await first.appliance.ctx.jobs.drain();
  await fire(first.request, false); // B: delivered
  await first.appliance.ctx.jobs.drain();
  receiver.answer = 'timeout';
  await first.stop();
  t.equal(receiver.received.length, 2);

  // What a crash can leave: an event committed but not fanned out (C), and a delivery's job leased by a
  // worker that died mid-request (D).
  const db = await openDatabase(dataDir);
  const teamId = ((await db('teams').first('id')) as { id: string }).id;
  await db('events').insert({ team_id: teamId, type: 'domain.updated', data: JSON.stringify({ id: domain.body.id, marker: 'C' }), created_at: clock.now().toISOString() });
  const [dId] = (await db('webhook_deliveries').insert({ webhook_id: hook.body.id, event_id: null, event_type: 'domain.updated', payload: '{"type":"domain.updated","created_at":"2026-03-01T10:00:00.000Z","data":{"marker":"D"}}', status: 'pending', attempts: 0, created_at: clock.now().toISOString() })) as [number];
  await db('jobs').insert({ kind: 'webhook.deliver', payload: JSON.stringify({ deliveryId: dId }), run_at: clock.now().getTime(), attempts: 1, lease_until: clock.now().getTime() + 3_600_000, created_at: clock.now().getTime() });
  const before = (await db('webhook_deliveries').orderBy('id')) as Array<{ id: number; status: string; next_retry_at: string | null }>;
  t.same(before.map((d) => d.status), ['pending', 'delivered', 'pending'], 'A waits for its retry, B delivered, D pending');
  await db.destroy();

  receiver.answer = 200;
  const second = await startTestApp(t, { dataDir, clock, config });
  await until('C fanned out and D sent', async () => {
    await second.appliance.ctx.jobs.drain();
    return receiver.received.length >= 4 ? true : undefined;
  });
  const markers = receiver.received.slice(2).map((r) => r.json.data.marker).sort();
  t.same(markers, ['C', 'D'], 'the event not yet fanned out and the dead worker’s delivery went out at start-up');
  t.equal(receiver.received.length, 4, 'A is not sent before its time');
  clock.advance(30 * SECOND);
  await second.appliance.ctx.jobs.drain();
  t.equal(receiver.received.length, 5, 'A is retried at its time');
  const a = acks(receiver);
  t.equal(a.size, 4, 'four deliveries answered 2xx');
  t.ok([...a.values()].every((n) => n === 1), 'each exactly once: B was not sent again');
  const after = (await second.request<{ deliveries: Array<{ status: string }> }>('GET', `/webhooks/${hook.body.id}/deliveries`)).body.deliveries;
  t.same(after.map((d) => d.status), ['delivered', 'delivered', 'delivered', 'delivered']);
});

// ----------------------------------------------------------------------------------- a real SIGKILL

t.test('killed (SIGKILL) with deliveries in flight: each delivery answered 2xx exactly once after the restart', async (t) => {
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const { env, apiKey } = restartableEnv(t, {
    MAIL_WEBHOOK_ALLOW_PRIVATE: 'true',
    MAIL_WEBHOOK_TIMEOUT_MS: '60000',
  });
  const first = new ApplianceProcess(t, env);
  const port1 = await first.port();
  const req1 = (m: string, p: string, o?: { body?: unknown }) => request(`http://127.0.0.1:${port1}`, apiKey, m, p, o);
  const hook = await req1('POST', '/webhooks', { body: { url: receiver.url, events: ['domain.updated'] } });
  t.equal(hook.status, 201);
  const domain = await req1('POST', '/domains', { body: { name: 'acme.example' } });
  const id = (domain.body as { id: string }).id;
  for (let i = 0; i < 3; i++) await req1('PATCH', `/domains/${id}`, { body: { open_tracking: i % 2 === 0 } });
  await until('three delivered', () => (receiver.delivered.length === 3 ? true : undefined));
  receiver.answer = 'timeout'; // the next ones are held in flight
  for (let i = 0; i < 3; i++) await req1('PATCH', `/domains/${id}`, { body: { open_tracking: i % 2 === 1 } });
  await until('three in flight', () => (receiver.received.length === 6 ? true : undefined));
  await first.kill();

  receiver.answer = 200;
  const second = new ApplianceProcess(t, env);
  await second.port();
  await until('all six answered 2xx', () => (acks(receiver).size === 6 ? true : undefined));
  const a = acks(receiver);
  t.ok([...a.values()].every((n) => n === 1), 'each delivery answered 2xx exactly once');
  t.equal(receiver.received.length, 9, 'the three in flight were sent again; the three delivered were not');
  await second.kill();
});
