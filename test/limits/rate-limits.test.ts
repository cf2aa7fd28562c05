// Per-credential request rate limits over real HTTP, table-driven over every row of the spec's table.
// Endpoints that do not exist yet are declared here as stub routes mounted through the real app factory
// (createHttpApp: the same authentication and rate-limit path every route takes); the fake clock moves
// the windows. Each row is driven to its boundary with one endpoint; every endpoint of the row is checked
// for its figure and window through its headers.
import t from 'tap';
import { createOtherTeam, request, startTestApp, type TestResponse } from '../helpers/app.js';
import { createHttpApp } from '../../src/http/app.js';
import { listen } from '../../src/http/server.js';
import { defineRoute, type Method, type Route } from '../../src/http/route.js';
import { allRoutes } from '../../src/http/routes/index.js';
import { HOUR, MINUTE, SECOND } from '../../src/core/clock.js';
import { RATE_LIMITS, rateLimitOf, type RateRule } from '../../src/limits/table.js';
import { AUTH_CACHE_TTL_MS } from '../../src/services/platform/api-keys.js';

const RATE_ERROR = { error: 'Rate limit exceeded. Please try again later.', code: 'rate_limit_exceeded' };

/** The spec's table as written there (paid, free, window, endpoints): the test's own copy of the figures. */
const SPEC_ROWS: Array<{ paid: number; free: number; windowMs: number; endpoints: string[] }> = [
  { paid: 60, free: 30, windowMs: MINUTE, endpoints: ['POST /emails', 'POST /emails/send', 'POST /email-validations', 'POST /templates/{id}/render', 'PUT /workflows/{id}/graph', 'POST /inbound/{id}/reply', 'POST /inbound/{id}/forward', 'POST /inbound/{id}/draft-reply', 'POST /contacts', 'PUT /notification-channels/{id}', 'DELETE /notification-channels/{id}'] },
  { paid: 30, free: 15, windowMs: MINUTE, endpoints: ['POST /emails/preview', 'POST /emails/spam-preview', 'POST /emails/{id}/cancel', 'POST /broadcasts', 'PATCH /broadcasts/{id}', 'POST /templates', 'POST /templates/presets/{presetId}/use', 'PATCH /templates/{id}', 'DELETE /templates/{id}', 'POST /templates/{id}/duplicate', 'POST /templates/{id}/publish', 'POST /templates/{id}/unpublish', 'POST /workflows', 'POST /workflows/{id}/activate', 'POST /workflows/{id}/pause', 'POST /segments', 'POST /contact-properties', 'PATCH /contact-properties/{id}', 'DELETE /contact-properties/{id}', 'POST /subscription-topics', 'PATCH /subscription-topics/{id}', 'DELETE /subscription-topics/{id}', 'POST /subscription-topics/contacts/{contactId}/subscriptions', 'DELETE /subscription-topics/contacts/{contactId}/subscriptions/{topicId}', 'POST /suppressions', 'DELETE /suppressions/{email}', 'POST /signup-forms', 'PATCH /signup-forms/{id}', 'DELETE /signup-forms/{id}'] },
  { paid: 10, free: 5, windowMs: MINUTE, endpoints: ['POST /emails/batch', 'POST /email-validations/batch', 'POST /broadcasts/{id}/send', 'POST /broadcasts/{id}/test', 'POST /broadcasts/{id}/resend', 'POST /broadcasts/{id}/cancel', 'POST /broadcasts/{id}/end-ab-test', 'POST /workflows/{id}/trigger', 'POST /domains', 'POST /domains/{id}/ip', 'DELETE /domains/{id}/ip', 'POST /api-keys', 'POST /api-keys/{id}/rotate', 'DELETE /api-keys/{id}', 'POST /webhooks', 'PATCH /webhooks/{id}', 'DELETE /webhooks/{id}', 'POST /webhooks/{id}/test', 'POST /webhooks/{id}/rotate-secret', 'POST /webhooks/{id}/deliveries/{did}/replay', 'POST /notification-channels/{id}/test', 'POST /notification-channels/{id}/deliveries/{deliveryId}/replay', 'POST /contacts/import', 'POST /segments/preview', 'POST /suppressions/import', 'POST /mailboxes', 'PATCH /mailboxes/{id}', 'DELETE /mailboxes/{id}', 'POST /mailboxes/{id}/password', 'POST /mailboxes/{id}/shares', 'DELETE /mailboxes/{id}/shares/{targetId}', 'PUT /mailboxes/{id}/filters', 'POST /mailboxes/aliases', 'DELETE /mailboxes/aliases/{id}'] },
  { paid: 20, free: 10, windowMs: MINUTE, endpoints: ['POST /notification-channels'] },
  { paid: 300, free: 150, windowMs: MINUTE, endpoints: ['POST /workflows/events'] },
  { paid: 120, free: 60, windowMs: MINUTE, endpoints: ['POST /mcp'] },
  { paid: 5, free: 2, windowMs: MINUTE, endpoints: ['GET /contacts/export'] },
  { paid: 3, free: 1, windowMs: MINUTE, endpoints: ['POST /webhooks/{id}/deliveries/batch-replay'] },
  { paid: 10, free: 5, windowMs: 15 * MINUTE, endpoints: ['POST /domains/{id}/verify'] },
  { paid: 5, free: 2, windowMs: HOUR, endpoints: ['POST /domains/{id}/dkim/rotate'] },
  { paid: 20, free: 10, windowMs: 15 * MINUTE, endpoints: ['POST /domains/{id}/dkim/rotate/activate'] },
  { paid: 10, free: 5, windowMs: HOUR, endpoints: ['DELETE /domains/{id}/dkim/rotate'] },
];

const concrete = (template: string, id = 'x1') => template.replace(/\{[^}]+\}/g, id);

/** A stub for each table entry (both methods for ANY), plus unlisted ones, behind the real middleware. */
function stubRoutes(): Route[] {
  const routes: Route[] = [];
  const add = (method: Method, path: string, access: 'public' | 'sending_access') =>
    routes.push(defineRoute({ method, path, summary: 'stub', tag: 'Stub', access, handle: async () => ({ ok: true }) }));
  for (const r of RATE_LIMITS) {
    const access = r.per === 'ip' ? 'public' : 'sending_access';
    if (r.method === 'ANY') for (const m of ['GET', 'POST', 'DELETE'] as const) add(m, r.path, access);
    else add(r.method, r.path, access);
  }
  add('GET', '/contacts', 'sending_access');
  add('GET', '/broadcasts/{id}', 'sending_access');
  add('POST', '/segments/{id}/contacts', 'sending_access'); // a POST the table does not list
  return routes;
}

t.test('the table holds exactly the rows of the spec', async (t) => {
  const fromSpec = SPEC_ROWS.flatMap((row) => row.endpoints.map((e) => `${e.replace(/^POST \/mcp$/, 'ANY /mcp')} ${row.paid}/${row.windowMs}`));
  fromSpec.push(`POST /signup-forms/{id}/submit 10/${MINUTE}`);
  const table = RATE_LIMITS.map((r) => `${r.method} ${r.path} ${r.paid}/${r.windowMs}`);
  // The spec writes "POST and DELETE under …/subscriptions": the table also covers DELETE on the collection.
  t.same(table.filter((e) => !e.startsWith('DELETE /subscription-topics/contacts/{contactId}/subscriptions ')).sort(), fromSpec.sort());
  for (const row of SPEC_ROWS) for (const e of row.endpoints) {
    const rule = RATE_LIMITS.find((r) => `${r.method} ${r.path}` === e.replace(/^POST \/mcp$/, 'ANY /mcp')) as RateRule;
    t.equal(rateLimitOf(rule, 'free'), row.free, `${e}: Free gets ${row.free}`);
    t.equal(rateLimitOf(rule, 'starter'), row.paid, `${e}: paid plans get ${row.paid}`);
  }
});

t.test('every row, over HTTP, with the fake clock', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  const stub = await listen(createHttpApp(app.appliance.ctx, stubRoutes(), { edge: false }), '127.0.0.1', 0);
  t.teardown(() => stub.close(0));
  const base = `http://127.0.0.1:${stub.address.port}`;
  const free = await createOtherTeam(app, 'free');
  const paid = await createOtherTeam(app, 'pro');
  const call = (key: string | null, endpoint: string, id?: string): Promise<TestResponse> => {
    const [method, path] = endpoint.split(' ') as [string, string];
    return request(base, key, method, concrete(path, id), method === 'GET' ? {} : { body: {} });
  };
  const nowSec = () => app.clock.now().getTime() / 1000;

  for (const [i, row] of SPEC_ROWS.entries()) {
    await t.test(`${row.paid}/${row.free} per ${row.windowMs / MINUTE} min: ${row.endpoints[0]}…`, async (t) => {
      // One endpoint to the boundary.
      const e = row.endpoints[0]!;
      const id = `b${i}`;
      for (let n = 1; n <= row.free; n++) {
        const res = await call(free.apiKey, e, id);
        if (res.status !== 200) t.fail(`request ${n} of ${row.free} refused`);
      }
      const refused = await call(free.apiKey, e, id);
      t.equal(refused.status, 429, `request ${row.free + 1} is refused`);
      t.same(refused.body, RATE_ERROR);
      t.equal(refused.headers.get('x-ratelimit-limit'), String(row.free));
      t.equal(refused.headers.get('x-ratelimit-remaining'), '0');
      t.equal(refused.headers.get('retry-after'), String(row.windowMs / 1000), 'Retry-After: seconds to the window end');
      if (e.includes('{')) t.equal((await call(free.apiKey, e, `${id}-other`)).status, 200, 'another id is another counter');
      t.equal((await call(paid.apiKey, e, id)).headers.get('x-ratelimit-limit'), String(row.paid), 'another credential, on a paid plan: the full figure');

      app.clock.advance(row.windowMs - SECOND);
      const late = await call(free.apiKey, e, id);
      t.equal(late.status, 429, 'still refused a second before the window ends');
      t.equal(late.headers.get('retry-after'), '1');
      app.clock.advance(SECOND);
      const next = await call(free.apiKey, e, id);
      t.equal(next.status, 200, 'the window reset fully at its end');
      t.equal(next.headers.get('x-ratelimit-remaining'), String(row.free - 1));
      app.clock.advance(row.windowMs);
      // Every endpoint of the row: its Free figure and window, on a fresh path (id) per row.
      for (const e of row.endpoints) {
        const res = await call(free.apiKey, e, `r${i}`);
        t.equal(res.status, 200, `${e} answers`);
        t.equal(res.headers.get('x-ratelimit-limit'), String(row.free), `${e}: limit ${row.free} on Free`);
        t.equal(res.headers.get('x-ratelimit-remaining'), String(row.free - 1), `${e}: remaining`);
        t.equal(res.headers.get('x-ratelimit-reset'), String(Math.ceil(nowSec() + row.windowMs / 1000)), `${e}: reset at the window's end`);
        t.equal(res.headers.get('retry-after'), null, 'no Retry-After on an accepted request');
      }
    });
  }

  await t.test('paid figure driven to its boundary', async (t) => {
    for (let n = 1; n <= 10; n++) t.equal((await call(paid.apiKey, 'POST /domains', 'p')).status, 200);
    t.equal((await call(paid.apiKey, 'POST /domains', 'p')).status, 429, 'the 11th POST /domains within a minute on a paid plan');
  });

  await t.test('/mcp: one counter for every method and tool call of a key', async (t) => {
    for (let n = 0; n < 30; n++) await call(free.apiKey, 'POST /mcp');
    for (let n = 0; n < 29; n++) await call(free.apiKey, 'GET /mcp');
    const last = await call(free.apiKey, 'DELETE /mcp');
    t.equal(last.status, 200);
    t.equal(last.headers.get('x-ratelimit-remaining'), '0', 'POST, GET and DELETE counted together');
    const over = await call(free.apiKey, 'GET /mcp');
    t.equal(over.status, 429);
    t.same(over.body, RATE_ERROR);
    app.clock.advance(MINUTE);
  });

  await t.test('signup-form submit: 10 per minute per client IP, on every plan, no credential needed', async (t) => {
    for (let n = 1; n <= 10; n++) {
      const res = await call(null, 'POST /signup-forms/{id}/submit', 'f1');
      t.equal(res.headers.get('x-ratelimit-limit'), '10');
      if (res.status !== 200) t.fail(`submit ${n} refused`);
    }
    const over = await call(free.apiKey, 'POST /signup-forms/{id}/submit', 'f1');
    t.equal(over.status, 429, 'counted per IP whatever the credential');
    t.equal(over.headers.get('x-ratelimit-limit'), '10', 'not halved on Free');
    app.clock.advance(MINUTE);
    t.equal((await call(null, 'POST /signup-forms/{id}/submit', 'f1')).status, 200);
  });

  await t.test('GET requests and unlisted paths carry no rate-limit headers and have no limit', async (t) => {
    for (const e of ['GET /contacts', 'GET /broadcasts/{id}', 'POST /segments/{id}/contacts']) {
      for (let n = 0; n < 40; n++) {
        const res = await call(free.apiKey, e);
        if (res.status !== 200) t.fail(`${e} refused at ${n}`);
      }
      const res = await call(free.apiKey, e);
      t.equal(res.status, 200, `${e}: never limited`);
      for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) t.equal(res.headers.get(h), null, `${e}: no ${h}`);
    }
  });

  await t.test('credentials count separately; an unauthenticated request counts for no one', async (t) => {
    const other = await createOtherTeam(app, 'free');
    for (let n = 0; n < 5; n++) await call(free.apiKey, 'POST /api-keys', 'sep');
    t.equal((await call(free.apiKey, 'POST /api-keys', 'sep')).status, 429);
    t.equal((await call(other.apiKey, 'POST /api-keys', 'sep')).status, 200, 'the other key has its own window');
    const anon = await call(null, 'POST /api-keys', 'sep');
    t.equal(anon.status, 401, 'no credential: 401 before any counting');
    t.equal(anon.headers.get('x-ratelimit-limit'), null);
    app.clock.advance(MINUTE);
  });
});

t.test('real endpoints: counted per method and exact path, refused requests are not processed, plan changes apply', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  const api = await listen(createHttpApp(app.appliance.ctx, allRoutes, { edge: false }), '127.0.0.1', 0);
  t.teardown(() => api.close(0));
  const base = `http://127.0.0.1:${api.address.port}`;
  const free = await createOtherTeam(app, 'free');
  const email = { from: 'a@nowhere.example', to: ['b@dest.example'], subject: 'x', text: 'x' };

  for (let n = 1; n <= 30; n++) {
    const res = await request(base, free.apiKey, 'POST', '/emails', { body: email });
    if (res.status !== 422 || res.headers.get('x-ratelimit-remaining') !== String(30 - n)) t.fail(`POST /emails ${n}: ${res.status}`);
  }
  const over = await request(base, free.apiKey, 'POST', '/emails', { body: email });
  t.equal(over.status, 429, 'the 31st POST /emails in a minute on Free');
  t.same(over.body, RATE_ERROR);
  t.ok(Number(over.headers.get('retry-after')) > 0);
  const bad = await request(base, free.apiKey, 'POST', '/emails', { raw: '{not json' });
  t.equal(bad.status, 429, 'refused before the body is read: a malformed body still gets 429');
  const alias = await request(base, free.apiKey, 'POST', '/emails/send', { body: email });
  t.equal(alias.status, 422, 'POST /emails/send has its own counter');
  t.equal(alias.headers.get('x-ratelimit-remaining'), '29');
  const list = await request(base, free.apiKey, 'GET', '/emails');
  t.equal(list.status, 200);
  t.equal(list.headers.get('x-ratelimit-limit'), null, 'GET /emails: no limit headers');

  // Not processed: a pro team's 11th key request within the minute creates nothing.
  const pro = await createOtherTeam(app, 'pro');
  for (let n = 0; n < 10; n++) t.equal((await request(base, pro.apiKey, 'POST', '/api-keys', { body: { name: `k${n}`, permission: 'sending_access' } })).status, 201);
  const refused = await request(base, pro.apiKey, 'POST', '/api-keys', { body: { name: 'k10', permission: 'sending_access' } });
  t.equal(refused.status, 429);
  const keys = await request<{ keys: unknown[] }>(base, pro.apiKey, 'GET', '/api-keys');
  t.equal(keys.body.keys.length, 11, 'the default key and ten created: the refused request did nothing');

  // Upgrade, as the admin CLI does it from another process (straight to the file): the full figure once the
  // remembered key has expired (a second; a change made in this process applies at once, api-keys.test.ts).
  await app.appliance.ctx.db('teams').where({ id: free.teamId }).update({ plan: 'starter' });
  await new Promise((resolve) => setTimeout(resolve, AUTH_CACHE_TTL_MS + 50));
  const upgraded = await request(base, free.apiKey, 'POST', '/emails', { body: email });
  t.equal(upgraded.headers.get('x-ratelimit-limit'), '60', 'a paid plan gets the full figure within a second');
  t.equal(upgraded.status, 422, 'and the 32nd request of the window is now within it');
});

t.test('MAIL_RATE_LIMITS=off: no limits and no headers', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: false } });
  const free = await createOtherTeam(app, 'free');
  for (let n = 0; n < 70; n++) {
    const res = await app.request('POST', '/emails', { key: free.apiKey, body: { from: 'a@nowhere.example', to: ['b@dest.example'], subject: 'x', text: 'x' } });
    if (res.status !== 422 || res.headers.get('x-ratelimit-limit') !== null) t.fail(`request ${n}: ${res.status}`);
  }
  t.pass('70 requests, none limited, none with headers');
});
