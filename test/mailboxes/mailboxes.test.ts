// Mailboxes API over HTTP: create/list/get/patch/delete/password, the plan gate and caps, shares, filters,
// aliases and catch-alls; and that a mailbox made here logs in and receives through the store.
import t, { type Test } from 'tap';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { MAILBOX_CAPS } from '../../src/limits/table.js';

interface MailboxBody {
  id: number;
  address: string;
  domainId: string;
  displayName: string | null;
  quotaBytes: number;
  usedBytes: number;
  createdAt: string;
  updatedAt: string;
}
interface Paged<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}

async function setup(t: Test) {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const domain = await addVerifiedDomain(app, dns, 'corp.example');
  return { app, dns, domain };
}

const create = (app: TestApp, body: Record<string, unknown>, key?: string) =>
  app.request<MailboxBody>('POST', '/mailboxes', { body, ...(key ? { key } : {}) });

t.test('create, get, list, patch, password, delete', async (t) => {
  const { app, dns, domain } = await setup(t);
  const created = await create(app, { address: 'Alice@Corp.example', password: 'alice-pass-1', displayName: 'Alice', quotaBytes: 1_000_000 });
  t.equal(created.status, 201, created.text);
  t.match(created.body, { address: 'alice@corp.example', domainId: domain.id, displayName: 'Alice', quotaBytes: 1_000_000, usedBytes: 0 });
  t.notOk('password' in created.body || created.text.includes('alice-pass-1') || created.text.includes('scrypt'), 'never the password or its hash');
  const id = created.body.id;

  t.same({ success: true, ...(await app.request('GET', `/mailboxes/${id}`)).body }, created.body, 'the create answers the mailbox and the spec’s success');
  const raw = Buffer.from('From: x@remote.test\r\nTo: alice@corp.example\r\nSubject: hi\r\n\r\nhello\r\n');
  await app.appliance.ctx.mailstore.deliver(raw, [{ mailboxId: id }]);
  t.equal((await app.request<MailboxBody>('GET', `/mailboxes/${id}`)).body.usedBytes, raw.length, 'usedBytes counts what the store holds');
  t.equal((await create(app, { address: 'alice@corp.example', password: 'another-pass' })).status, 409, 'duplicate address');

  // Validation
  const short = await create(app, { address: 'bob@corp.example', password: 'short' });
  t.same(short.body, { error: 'password: must be at least 8 characters', code: 'invalid_request' });
  t.equal((await create(app, { password: 'long-enough' })).status, 400);
  t.equal((await create(app, { address: 'bob@corp.example', password: 'long-enough', quotaBytes: -1 })).status, 400);
  t.equal((await create(app, { address: 'bob@corp.example', password: 'long-enough', displayName: 'Bob\r\nBcc: x@y.test' })).status, 400, 'no header injection');
  t.equal((await create(app, { address: '"bob smith"@corp.example', password: 'long-enough' })).status, 400, 'logins are dot-atoms');

  // Domain must be a verified domain of the team (the send path's 422 messages).
  t.same((await create(app, { address: 'x@nowhere.example', password: 'long-enough' })).body, {
    error: "Domain 'nowhere.example' not found for this team",
    code: 'unprocessable_entity',
  });
  const pending = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'pending.example' } });
  t.same((await create(app, { address: 'x@pending.example', password: 'long-enough' })).body, {
    error: "Domain 'pending.example' is not verified",
    code: 'unprocessable_entity',
  });

  // Paging, newest first, domain filter, deleted omitted.
  const other = await addVerifiedDomain(app, dns, 'other.example');
  app.clock.advance(1000);
  const bob = (await create(app, { address: 'bob@corp.example', password: 'bob-pass-12' })).body;
  app.clock.advance(1000);
  const carol = (await create(app, { address: 'carol@other.example', password: 'carol-pass-1' })).body;
  const all = await app.request<Paged<MailboxBody>>('GET', '/mailboxes?per_page=2');
  t.same(
    all.body.data.map((m) => m.address),
    ['carol@other.example', 'bob@corp.example'],
  );
  t.same(all.body.meta, { page: 1, perPage: 2, total: 3, totalPages: 2 });
  const byDomain = await app.request<Paged<MailboxBody>>('GET', `/mailboxes?domain_id=${other.id}`);
  t.same(
    byDomain.body.data.map((m) => m.id),
    [carol.id],
  );
  t.equal((await app.request('GET', '/mailboxes?per_page=0')).status, 400, 'Form A: out of range answers 400');
  t.same((await app.request<Paged<MailboxBody>>('GET', '/mailboxes?page=9')).body.data, [], 'past the end: empty page');

  // PATCH
  const patched = await app.request<MailboxBody>('PATCH', `/mailboxes/${bob.id}`, { body: { displayName: 'Bob B', quotaBytes: 0 } });
  t.equal(patched.status, 200);
  t.match(patched.body, { displayName: 'Bob B', quotaBytes: 0 });
  t.equal((await app.request('PATCH', `/mailboxes/${bob.id}`, { body: {} })).status, 400, 'empty patch');

  // Password: the store authenticates with the new one only.
  const store = app.appliance.ctx.mailstore;
  t.ok(await store.authenticate('bob@corp.example', 'bob-pass-12'));
  t.same((await app.request('POST', `/mailboxes/${bob.id}/password`, { body: { password: 'bob-pass-new' } })).body, { success: true });
  t.notOk(await store.authenticate('bob@corp.example', 'bob-pass-12'));
  t.ok(await store.authenticate('bob@corp.example', 'bob-pass-new'));

  // DELETE: soft; gone from the API, logins and resolution.
  t.same((await app.request('DELETE', `/mailboxes/${bob.id}`)).body, { success: true });
  t.equal((await app.request('GET', `/mailboxes/${bob.id}`)).status, 404);
  t.equal((await app.request('DELETE', `/mailboxes/${bob.id}`)).status, 404);
  t.equal((await app.request<Paged<MailboxBody>>('GET', '/mailboxes')).body.meta.total, 2);
  t.notOk(await store.authenticate('bob@corp.example', 'bob-pass-new'));
  t.same(await store.resolveAddress('bob@corp.example'), { kind: 'none' });
  t.equal((await app.request('GET', '/mailboxes/abc')).status, 404);
  void pending;
});

t.test('plan gate, caps and team isolation', async (t) => {
  const { app, dns } = await setup(t);
  t.same(MAILBOX_CAPS, { free: 0, starter: 0, pro: 100, scale: 1000, enterprise: Infinity });
  for (const plan of ['free', 'starter'] as const) {
    const { apiKey } = await createOtherTeam(app, plan);
    const res = await app.request('GET', '/mailboxes', { key: apiKey });
    t.same(res.body, { error: 'Mailboxes require the Pro plan or above', code: 'forbidden' }, plan);
    t.equal((await create(app, { address: 'a@corp.example', password: 'long-enough' }, apiKey)).status, 403);
  }

  // Pro: 100 mailboxes, then 403.
  const pro = await createOtherTeam(app, 'pro');
  const d = await addVerifiedDomain(app, dns, 'pro.example', pro.apiKey);
  const store = app.appliance.ctx.mailstore;
  for (let i = 0; i < 99; i++) await store.createAccount({ teamId: pro.teamId, domainId: d.id, address: `u${i}@pro.example`, password: 'x'.repeat(8) });
  t.equal((await create(app, { address: 'last@pro.example', password: 'long-enough' }, pro.apiKey)).status, 201, 'the 100th');
  const over = await create(app, { address: 'over@pro.example', password: 'long-enough' }, pro.apiKey);
  t.same(over.body, { error: 'Mailbox limit reached: the pro plan allows 100 mailboxes', code: 'forbidden' });

  // Another team's mailbox is invisible.
  const mine = (await create(app, { address: 'mine@corp.example', password: 'long-enough' })).body;
  t.equal((await app.request('GET', `/mailboxes/${mine.id}`, { key: pro.apiKey })).status, 404);
  t.equal((await app.request('DELETE', `/mailboxes/${mine.id}`, { key: pro.apiKey })).status, 404);
  t.equal((await create(app, { address: 'x@corp.example', password: 'long-enough' }, pro.apiKey)).status, 422, "another team's domain");

  // A sending_access key may not manage mailboxes.
  const key = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'send', permission: 'sending_access' } });
  t.equal((await app.request('GET', '/mailboxes', { key: key.body.token })).status, 403);
});

t.test('shares', async (t) => {
  const { app } = await setup(t);
  const owner = (await create(app, { address: 'owner@corp.example', password: 'long-enough' })).body;
  const reader = (await create(app, { address: 'reader@corp.example', password: 'long-enough' })).body;
  const added = await app.request('POST', `/mailboxes/${owner.id}/shares`, { body: { targetMailboxId: reader.id, access: 'read' } });
  t.equal(added.status, 201, added.text);
  t.match(added.body, { mailboxId: owner.id, targetMailboxId: reader.id, targetAddress: 'reader@corp.example', access: 'read' });
  await app.request('POST', `/mailboxes/${owner.id}/shares`, { body: { targetMailboxId: reader.id, access: 'read-write' } });
  const list = await app.request<{ shares: Array<{ access: string }> }>('GET', `/mailboxes/${owner.id}/shares`);
  t.same(
    list.body.shares.map((s) => s.access),
    ['read-write'],
  );
  t.same(
    (await app.appliance.ctx.mailstore.sharedWith(reader.id)).map((s) => [s.owner.id, s.access]),
    [[owner.id, 'read-write']],
    'IMAP sees it',
  );
  t.equal((await app.request('POST', `/mailboxes/${owner.id}/shares`, { body: { targetMailboxId: owner.id, access: 'read' } })).status, 422, 'not with itself');
  t.equal((await app.request('POST', `/mailboxes/${owner.id}/shares`, { body: { targetMailboxId: 99999, access: 'read' } })).status, 422);
  t.equal((await app.request('POST', `/mailboxes/${owner.id}/shares`, { body: { targetMailboxId: reader.id, access: 'admin' } })).status, 400);
  t.same((await app.request('DELETE', `/mailboxes/${owner.id}/shares/${reader.id}`)).body, { success: true });
  t.equal((await app.request('DELETE', `/mailboxes/${owner.id}/shares/${reader.id}`)).status, 404);
  t.same((await app.request('GET', `/mailboxes/${owner.id}/shares`)).body, { shares: [] });
});

t.test('filters', async (t) => {
  const { app } = await setup(t);
  const box = (await create(app, { address: 'f@corp.example', password: 'long-enough' })).body;
  t.same((await app.request('GET', `/mailboxes/${box.id}/filters`)).body, { rules: [] });
  const rules = [
    { conditions: [{ field: 'header', name: 'List-Id', op: 'exists' }], actions: [{ type: 'move', folder: 'Lists' }, { type: 'mark_read' }] },
    { conditions: [{ field: 'from', op: 'contains', value: 'boss' }, { field: 'size', op: 'gt', value: 10 }], actions: [{ type: 'flag' }, { type: 'forward', to: 'me@elsewhere.test' }], stop: true },
    { conditions: [{ field: 'subject', op: 'matches', value: '*viagra*' }], actions: [{ type: 'discard' }] },
  ];
  const put = await app.request('PUT', `/mailboxes/${box.id}/filters`, { body: { rules } });
  t.equal(put.status, 200, put.text);
  t.same(put.body, { rules });
  t.same((await app.request('GET', `/mailboxes/${box.id}/filters`)).body, { rules }, 'position order');
  t.same(await app.appliance.ctx.mailstore.getFilters(box.id), rules);

  const bad = [
    { rules: [{ conditions: [], actions: [] }] },
    { rules: [{ conditions: [{ field: 'color', op: 'equals', value: 'red' }], actions: [{ type: 'flag' }] }] },
    { rules: [{ conditions: [], actions: [{ type: 'forward', to: 'not an address' }] }] },
    { rules: [{ conditions: [], actions: [{ type: 'move', folder: 'a//b' }] }] },
    { rules: [{ conditions: [{ field: 'header', name: 'X-A', op: 'equals' }], actions: [{ type: 'flag' }] }] },
    { rules: 'none' },
  ];
  for (const body of bad) t.equal((await app.request('PUT', `/mailboxes/${box.id}/filters`, { body })).status, 400, JSON.stringify(body));
  t.same((await app.request('GET', `/mailboxes/${box.id}/filters`)).body, { rules }, 'unchanged by refused bodies');
  t.same((await app.request('PUT', `/mailboxes/${box.id}/filters`, { body: { rules: [] } })).body, { rules: [] });
});

t.test('aliases and catch-all', async (t) => {
  const { app } = await setup(t);
  const a = (await create(app, { address: 'a@corp.example', password: 'long-enough' })).body;
  const b = (await create(app, { address: 'b@corp.example', password: 'long-enough' })).body;
  const sales = await app.request<{ id: number }>('POST', '/mailboxes/aliases', { body: { address: 'Sales@corp.example', mailboxIds: [b.id, a.id] } });
  t.equal(sales.status, 201, sales.text);
  t.match(sales.body, { address: 'sales@corp.example', mailboxIds: [a.id, b.id] });
  app.clock.advance(1000);
  const all = await app.request('POST', '/mailboxes/aliases', { body: { address: '*@corp.example', mailboxIds: [a.id] } });
  t.equal(all.status, 201);
  t.match(all.body, { address: '*@corp.example' });

  const store = app.appliance.ctx.mailstore;
  t.same(await store.resolveAddress('sales@corp.example'), { kind: 'mailboxes', mailboxIds: [a.id, b.id], via: 'alias' });
  t.same(await store.resolveAddress('anything@corp.example'), { kind: 'mailboxes', mailboxIds: [a.id], via: 'catch-all' });

  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'sales@corp.example', mailboxIds: [a.id] } })).status, 409);
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'a@corp.example', mailboxIds: [b.id] } })).status, 409, 'a mailbox address');
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'x@nowhere.example', mailboxIds: [a.id] } })).status, 422);
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'x@corp.example', mailboxIds: [12345] } })).status, 422);
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'x@corp.example', mailboxIds: [] } })).status, 400);
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'nonsense', mailboxIds: [a.id] } })).status, 400);
  // The addresses the box answers for itself: their mail would never reach a mailbox.
  for (const address of ['dmarc-reports@corp.example', 'Bounces+em_x@corp.example']) {
    const alias = await app.request<{ error: string; code: string }>('POST', '/mailboxes/aliases', { body: { address, mailboxIds: [a.id] } });
    t.equal(alias.status, 422, `alias ${address}`);
    t.match(alias.body.error, /is reserved: the box receives/);
    const mailbox = await app.request('POST', '/mailboxes', { body: { address, password: 'correct horse battery' } });
    t.equal(mailbox.status, 422, `mailbox ${address}`);
  }

  const list = await app.request<Paged<{ address: string }>>('GET', '/mailboxes/aliases');
  t.equal(list.status, 200, 'not taken for a mailbox id');
  t.same(
    list.body.data.map((x) => x.address),
    ['*@corp.example', 'sales@corp.example'],
    'newest first',
  );
  t.same(list.body.meta, { page: 1, perPage: 20, total: 2, totalPages: 1 });
  t.same((await app.request('DELETE', `/mailboxes/aliases/${sales.body.id}`)).body, { success: true });
  t.equal((await app.request('DELETE', `/mailboxes/aliases/${sales.body.id}`)).status, 404);
  t.same(await store.resolveAddress('sales@corp.example'), { kind: 'mailboxes', mailboxIds: [a.id], via: 'catch-all' });
});

t.test('rate limits apply to the mailbox rows of the table', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], rateLimits: true } });
  await addVerifiedDomain(app, dns, 'corp.example');
  const statuses: number[] = [];
  for (let i = 0; i < 11; i++) statuses.push((await create(app, { address: `r${i}@corp.example`, password: 'long-enough' })).status);
  t.same(statuses.slice(0, 10), Array(10).fill(201));
  t.equal(statuses[10], 429, 'POST /mailboxes: 10 per minute');
  const res = await app.request('GET', '/mailboxes');
  t.equal(res.status, 200, 'GET has no row');
});
