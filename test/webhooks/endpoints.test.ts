// The webhook endpoints API over real HTTP: create (secret shown once, stored sealed), list, get, patch,
// delete, validation messages, the 20-per-team cap, tenant isolation, key permissions, and the address
// policy (MAIL_WEBHOOK_ALLOW_PRIVATE=false) at creation and at delivery.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DB_FILE } from '../../src/db/index.js';
import { EVENT_TYPES } from '../../src/events/types.js';
import { isPrivateAddress } from '../../src/events/webhook-http.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';

interface Hook {
  id: number;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
  secret?: string;
}

const FORBIDDEN = { error: 'API key does not have permission', code: 'forbidden' };

t.test('create, list, get, patch, delete', async (t) => {
  const app = await startTestApp(t);
  const res = await app.request<Hook>('POST', '/webhooks', { body: { url: 'https://hooks.example/in', events: ['email.sent', 'contact.created', 'broadcast.sent', 'domain.dns_drift'] } });
  t.equal(res.status, 201);
  t.match(res.body, { id: Number, url: 'https://hooks.example/in', events: ['email.sent', 'contact.created', 'broadcast.sent', 'domain.dns_drift'], active: true, createdAt: '2026-03-01T10:00:00.000Z' });
  t.match(res.body.secret, /^whsec_[A-Za-z0-9]{32}$/, 'the signing secret, once');
  const stored = readFileSync(path.join(app.dataDir, DB_FILE)).toString('latin1');
  t.notOk(stored.includes(res.body.secret!), 'the secret is not stored in the clear');

  app.clock.advance(1000);
  const second = await app.request<Hook>('POST', '/webhooks', { body: { url: 'http://127.0.0.1:9/x', events: ['email.bounced', 'email.bounced'] } });
  t.same(second.body.events, ['email.bounced'], 'duplicates collapse');

  const list = await app.request<{ webhooks: Hook[] }>('GET', '/webhooks');
  t.same(list.body.webhooks.map((w) => w.id), [second.body.id, res.body.id], 'newest first');
  t.notOk(list.body.webhooks.some((w) => 'secret' in w), 'the secret is never shown again');
  const one = await app.request<{ webhook: Hook }>('GET', `/webhooks/${res.body.id}`);
  t.same(one.body, { webhook: { id: res.body.id, url: 'https://hooks.example/in', events: res.body.events, active: true, createdAt: res.body.createdAt } });

  const patched = await app.request('PATCH', `/webhooks/${res.body.id}`, { body: { url: 'https://hooks.example/v2', events: ['email.delivered'], enabled: false } });
  t.same(patched.body, { success: true });
  t.match((await app.request<{ webhook: Hook }>('GET', `/webhooks/${res.body.id}`)).body.webhook, { url: 'https://hooks.example/v2', events: ['email.delivered'], active: false });
  t.match((await app.request('PATCH', `/webhooks/${res.body.id}`, { body: {} })).body, { code: 'invalid_request', error: /at least one of: url, events, enabled/ });
  t.match((await app.request('PATCH', `/webhooks/${res.body.id}`, { body: { enabled: 'yes' } })).body, { code: 'invalid_request', error: 'enabled: must be a boolean' });

  t.same((await app.request('DELETE', `/webhooks/${res.body.id}`)).body, { success: true });
  t.same((await app.request('GET', `/webhooks/${res.body.id}`)).body, { error: 'Webhook not found', code: 'not_found' });
  t.equal((await app.request('DELETE', `/webhooks/${res.body.id}`)).status, 404);
  t.equal((await app.request('GET', '/webhooks/abc')).status, 404, 'a non-integer id is simply not found');
  t.equal((await app.request('GET', '/webhooks/999/deliveries')).status, 404);
});

t.test('validation', async (t) => {
  const app = await startTestApp(t);
  const bad = async (body: unknown) => (await app.request('POST', '/webhooks', { body })).body;
  t.same(await bad({}), { error: 'Request body is missing required fields: url, events', code: 'invalid_request' });
  t.same(await bad({ url: 'https://h.example' }), { error: 'Request body is missing required fields: events', code: 'invalid_request' });
  t.same(await bad({ url: 'https://h.example', events: [] }), { error: 'events: must name at least one event type', code: 'invalid_request' });
  t.same(await bad({ url: 'https://h.example', events: ['email.nope'] }), { error: 'events.0: must be a known event type', code: 'invalid_request' });
  t.same(await bad({ url: 'https://h.example', events: 'email.sent' }), { error: 'events: must be an array of event types', code: 'invalid_request' });
  t.same(await bad({ url: 'ftp://h.example/x', events: ['email.sent'] }), { error: 'url: must be an http or https URL', code: 'invalid_request' });
  t.same(await bad({ url: 'not a url', events: ['email.sent'] }), { error: 'url: must be an http or https URL', code: 'invalid_request' });
  t.same(await bad({ url: 'http://h.example:0/x', events: ['email.sent'] }), { error: 'url: port 0 cannot be connected to', code: 'invalid_request' });
  t.same(await bad({ url: 'https://u:p@h.example/', events: ['email.sent'] }), { error: 'url: must not contain credentials', code: 'invalid_request' });
  t.equal((await app.request('POST', '/webhooks', { raw: '{"url":' })).status, 400, 'malformed JSON');
  const ok = await app.request('POST', '/webhooks', { body: { url: 'https://h.example', events: [...EVENT_TYPES] } });
  t.equal(ok.status, 201, 'every kind of both lists is accepted');
  const id = (ok.body as { id: number }).id;
  const rotate = async (body: unknown) => (await app.request('POST', `/webhooks/${id}/rotate-secret`, { body })).body;
  t.same(await rotate({ graceHours: 169 }), { error: 'graceHours: must be an integer between 0 and 168', code: 'invalid_request' });
  t.same(await rotate({ graceHours: -1 }), { error: 'graceHours: must be an integer between 0 and 168', code: 'invalid_request' });
  t.same(await rotate({ graceHours: 1.5 }), { error: 'graceHours: must be an integer between 0 and 168', code: 'invalid_request' });
  const replay = async (body: unknown) => (await app.request('POST', `/webhooks/${id}/deliveries/batch-replay`, { body })).body;
  t.same(await replay({ limit: 1001 }), { error: 'limit: must be an integer between 1 and 1000', code: 'invalid_request' });
  t.same(await replay({ withinMinutes: 0 }), { error: 'withinMinutes: must be an integer between 1 and 525600', code: 'invalid_request' });
  t.same(await replay({ eventType: 5 }), { error: 'eventType: must be a string', code: 'invalid_request' });
  t.equal((await app.request('GET', `/webhooks/${id}/deliveries?per_page=101`)).status, 400, 'paging out of range');
});

t.test('20 per team: the 21st is 403; teams are isolated; sending_access keys are refused', async (t) => {
  const app = await startTestApp(t);
  for (let i = 0; i < 20; i++) {
    const r = await app.request('POST', '/webhooks', { body: { url: `https://h${i}.example/`, events: ['email.sent'] } });
    t.equal(r.status, 201);
  }
  const over = await app.request('POST', '/webhooks', { body: { url: 'https://h21.example/', events: ['email.sent'] } });
  t.equal(over.status, 403);
  t.same(over.body, { error: 'Webhook limit reached: 20 webhooks per team', code: 'forbidden' });

  const other = await createOtherTeam(app);
  const theirs = await app.request<Hook>('POST', '/webhooks', { key: other.apiKey, body: { url: 'https://theirs.example/', events: ['email.sent'] } });
  t.equal(theirs.status, 201, "another team's cap is its own");
  t.equal((await app.request('GET', `/webhooks/${theirs.body.id}`)).status, 404, "another team's webhook is not found");
  t.equal((await app.request('DELETE', `/webhooks/${theirs.body.id}`)).status, 404);
  t.equal((await app.request('POST', `/webhooks/${theirs.body.id}/test`)).status, 404);
  t.equal((await app.request<{ webhooks: Hook[] }>('GET', '/webhooks', { key: other.apiKey })).body.webhooks.length, 1);

  const sender = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 's', permission: 'sending_access' } });
  for (const [method, p] of [['GET', '/webhooks'], ['POST', '/webhooks'], ['GET', '/webhooks/1'], ['PATCH', '/webhooks/1'], ['DELETE', '/webhooks/1'], ['POST', '/webhooks/1/test'], ['GET', '/webhooks/1/deliveries'], ['POST', '/webhooks/1/deliveries/1/replay'], ['POST', '/webhooks/1/deliveries/batch-replay'], ['POST', '/webhooks/1/rotate-secret']] as const) {
    const r = await app.request(method, p, { key: sender.body.token, ...(method === 'GET' ? {} : { body: {} }) });
    t.same([r.status, r.body], [403, FORBIDDEN], `${method} ${p}`);
  }
});

t.test('address policy: private targets refused at creation and at delivery unless allowed', async (t) => {
  t.ok(['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1'].every(isPrivateAddress), 'private ranges');
  t.notOk(['203.0.113.10', '8.8.8.8', '2001:db8::1', '::ffff:8.8.8.8'].some(isPrivateAddress), 'public addresses');

  const dns = await startDns();
  t.teardown(() => dns.stop());
  const receiver = await startWebhookReceiver();
  t.teardown(() => receiver.close());
  const app = await startTestApp(t, { config: { webhookAllowPrivate: false, dnsServers: [dns.server] } });
  const create = (url: string) => app.request<Hook & { error?: string; code?: string }>('POST', '/webhooks', { body: { url, events: ['domain.updated'] } });
  for (const url of [receiver.url, 'http://localhost:8080/', 'http://[::1]/x', 'http://10.0.0.5/', 'http://169.254.169.254/latest/meta-data', 'http://api.internal/']) {
    const r = await create(url);
    t.equal(r.status, 400, `${url} refused`);
    t.match(r.body, { code: 'invalid_request', error: /^url: must not point at a loopback, private or link-local address/ });
  }
  dns.set('A', 'private.example', ['192.168.0.10']);
  t.equal((await create('https://private.example/hook')).status, 400, 'a name resolving to a private address is refused');

  // A name that resolves to a public address at creation and to loopback at delivery (DNS rebinding).
  dns.set('A', 'rebind.example', ['203.0.113.10']);
  const hook = await create(`http://rebind.example:${receiver.port}/hooks`);
  t.equal(hook.status, 201, 'public at creation: accepted');
  dns.set('A', 'rebind.example', ['127.0.0.1']);
  const domain = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'acme.example' } });
  await app.request('PATCH', `/domains/${domain.body.id}`, { body: { open_tracking: true } });
  await app.appliance.ctx.jobs.drain();
  t.equal(receiver.received.length, 0, 'nothing reaches the loopback receiver');
  const d = (await app.request<{ deliveries: Array<{ statusCode: number | null; responseBody: string; status: string }> }>('GET', `/webhooks/${hook.body.id}/deliveries`)).body.deliveries[0]!;
  t.match(d, { statusCode: null, status: 'pending', responseBody: /refused: rebind\.example resolves to 127\.0\.0\.1/ }, 'refused at delivery, a failed attempt');
  const tested = await app.request<{ delivery: { statusCode: number | null; responseBody: string } }>('POST', `/webhooks/${hook.body.id}/test`);
  t.match(tested.body.delivery, { statusCode: null, responseBody: /refused/ }, 'the test event is refused too');
});

t.test('address policy: local names with a trailing dot, and IPv6 forms that carry a private IPv4 address', async (t) => {
  // NAT64 (RFC 6052, RFC 8215), IPv4-compatible (RFC 4291 §2.5.5.1) and 6to4 (RFC 3056) addresses lead to
  // the IPv4 address inside them (a NAT64 gateway translates 64:ff9b::a00:5 to 10.0.0.5).
  const privateForms = ['64:ff9b::7f00:1', '64:ff9b::10.0.0.5', '64:ff9b::a9fe:a9fe', '64:ff9b:1::1', '::7f00:1', '::10.0.0.5', '2002:a00:5::1', '2002:c0a8:101::', '2002:7f00:1::', 'fec0::1'];
  t.same(privateForms.filter((ip) => !isPrivateAddress(ip)), [], 'private IPv4 addresses inside IPv6 ones');
  t.notOk(['64:ff9b::808:808', '2002:808:808::1', '2606:4700::1111', '2001:db8::1'].some(isPrivateAddress), 'public ones stay public');

  const app = await startTestApp(t, { config: { webhookAllowPrivate: false } });
  for (const url of ['http://localhost./', 'http://LOCALHOST../x', 'http://api.internal./', 'http://printer.local./', 'http://[64:ff9b::a00:5]/', 'http://[::127.0.0.1]/', 'http://[2002:7f00:1::]/']) {
    const r = await app.request<{ error: string; code: string }>('POST', '/webhooks', { body: { url, events: ['domain.updated'] } });
    t.equal(r.status, 400, `${url} refused`);
    t.match(r.body, { code: 'invalid_request', error: /^url: must not point at a loopback, private or link-local address/ });
  }
});

t.test('configuration: MAIL_WEBHOOK_ALLOW_PRIVATE and MAIL_WEBHOOK_TIMEOUT_MS', async (t) => {
  const { loadConfig, ConfigError } = await import('../../src/config.js');
  const base = { MAIL_HOSTNAME: 'mx.example.test' };
  t.equal(loadConfig(base).webhookAllowPrivate, false, 'private targets refused by default');
  t.equal(loadConfig(base).webhookTimeoutMs, 10_000, '10 s by default');
  t.equal(loadConfig({ ...base, MAIL_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true);
  t.equal(loadConfig({ ...base, MAIL_WEBHOOK_ALLOW_PRIVATE: 'false' }).webhookAllowPrivate, false);
  t.throws(() => loadConfig({ ...base, MAIL_WEBHOOK_ALLOW_PRIVATE: 'yes' }), new ConfigError("Invalid configuration: MAIL_WEBHOOK_ALLOW_PRIVATE must be true or false (got 'yes')"));
  t.equal(loadConfig({ ...base, MAIL_WEBHOOK_TIMEOUT_MS: '2500' }).webhookTimeoutMs, 2500);
  t.throws(() => loadConfig({ ...base, MAIL_WEBHOOK_TIMEOUT_MS: '50' }), /MAIL_WEBHOOK_TIMEOUT_MS must be at least 100/);
});
