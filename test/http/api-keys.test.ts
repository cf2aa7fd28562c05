// API keys over real HTTP: creation, listing without secrets, hashing at rest, rotation, revocation,
// tenant isolation, per-plan caps and the full_access / sending_access permission check.
import t from 'tap';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { readFileSync } from 'node:fs';
import { hashSecret } from '../../src/core/secrets.js';
import { readsOf } from '../../src/db/index.js';
import { AUTH_CACHE_TTL_MS, authenticate } from '../../src/services/platform/api-keys.js';
import { setTeamPlan } from '../../src/services/platform/teams.js';
import { allRoutes } from '../../src/http/routes/index.js';

interface Issued {
  success: true;
  id: string;
  name: string;
  permission: string;
  mode: string;
  token: string;
  token_hint: string;
  created_at: string;
  rotated_at: string | null;
  last_used_at: string | null;
}
interface KeyList {
  keys: Array<Omit<Issued, 'token' | 'success'>>;
}

const LIVE = /^sk_live_[0-9A-Za-z]{32}$/;
const TEST = /^sk_test_[0-9A-Za-z]{32}$/;
const FORBIDDEN = { error: 'API key does not have permission', code: 'forbidden' };
const UNAUTHORIZED = { error: 'Invalid API key', code: 'unauthorized' };

async function createKey(app: TestApp, body: Record<string, unknown>, key?: string) {
  return app.request<Issued>('POST', '/api-keys', { body, ...(key ? { key } : {}) });
}

t.test('API keys', async (t) => {
  const app = await startTestApp(t);

  t.test('POST /api-keys: 201 with the value once, live by default', async (t) => {
    const res = await createKey(app, { name: 'ci', permission: 'full_access' });
    t.equal(res.status, 201);
    t.match(res.body.token, LIVE, 'sk_live_ + 32 base62');
    t.equal(res.body.success, true);
    t.type(res.body.id, 'string');
    t.ok(res.body.id.length > 0);
    t.equal(res.body.name, 'ci');
    t.equal(res.body.permission, 'full_access');
    t.equal(res.body.mode, 'live', 'mode defaults to live');
    t.equal(res.body.created_at, app.clock.now().toISOString(), 'created_at from the clock');
    t.equal(res.body.rotated_at, null);
    t.equal(res.body.last_used_at, null);
    t.notOk(res.body.token_hint.includes(res.body.token.slice(8, 36)), 'the hint is not the secret');
    const used = await app.request('GET', '/api-keys', { key: res.body.token });
    t.equal(used.status, 200, 'the value works as a bearer');
  });

  t.test('mode test gives sk_test_; names are trimmed', async (t) => {
    const res = await createKey(app, { name: '  staging  ', permission: 'sending_access', mode: 'test' });
    t.equal(res.status, 201);
    t.match(res.body.token, TEST);
    t.equal(res.body.mode, 'test');
    t.equal(res.body.permission, 'sending_access');
    t.equal(res.body.name, 'staging');
    const explicit = await createKey(app, { name: 'explicit', permission: 'full_access', mode: 'live' });
    t.match(explicit.body.token, LIVE);
  });

  t.test('each value is different', async (t) => {
    const tokens = new Set<string>();
    for (let i = 0; i < 5; i++) tokens.add((await createKey(app, { name: `n${i}`, permission: 'sending_access' })).body.token);
    t.equal(tokens.size, 5);
  });

  t.test('validation: 400 invalid_request with the spec wording', async (t) => {
    const missing = await app.request('POST', '/api-keys', { body: {} });
    t.equal(missing.status, 400);
    t.same(missing.body, { error: 'Request body is missing required fields: name, permission', code: 'invalid_request' });
    const empty = await app.request('POST', '/api-keys', {});
    t.equal(empty.status, 400, 'no body at all');
    t.same(empty.body, { error: 'Request body is missing required fields: name, permission', code: 'invalid_request' });
    const noPermission = await app.request('POST', '/api-keys', { body: { name: 'x' } });
    t.same(noPermission.body, { error: 'Request body is missing required fields: permission', code: 'invalid_request' });
    const noName = await app.request('POST', '/api-keys', { body: { permission: 'full_access' } });
    t.same(noName.body, { error: 'Request body is missing required fields: name', code: 'invalid_request' });

    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'x', permission: 'admin' }, /^permission: must be one of full_access, sending_access$/],
      [{ name: 'x', permission: 'FULL_ACCESS' }, /^permission:/],
      [{ name: 'x', permission: 1 }, /^permission:/],
      [{ name: 'x', permission: 'full_access', mode: 'prod' }, /^mode: must be one of live, test$/],
      [{ name: 'x', permission: 'full_access', mode: null }, /^mode:/],
      [{ name: '', permission: 'full_access' }, /^name: must not be empty$/],
      [{ name: '   ', permission: 'full_access' }, /^name: must not be empty$/],
      [{ name: 42, permission: 'full_access' }, /^name: must be a string$/],
      [{ name: 'x'.repeat(101), permission: 'full_access' }, /^name: .*100/],
    ];
    for (const [body, message] of bad) {
      const res = await app.request('POST', '/api-keys', { body });
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.code, 'invalid_request', JSON.stringify(body));
      t.match(res.body.error, message, JSON.stringify(body));
    }
  });

  t.test('a body that is not JSON: 400', async (t) => {
    const res = await app.request('POST', '/api-keys', { raw: 'name=x&permission=full_access' });
    t.equal(res.status, 400);
    t.equal(res.body.code, 'invalid_request');
  });
});

t.test('GET /api-keys: oldest first, never a value or a hash; nothing plaintext at rest', async (t) => {
  const app = await startTestApp(t);
  const tokens = [app.apiKey];
  const ids: string[] = [];
  for (const name of ['first', 'second', 'third']) {
    app.clock.advance(1000);
    const res = await createKey(app, { name, permission: name === 'second' ? 'sending_access' : 'full_access', ...(name === 'third' ? { mode: 'test' } : {}) });
    t.equal(res.status, 201);
    tokens.push(res.body.token);
    ids.push(res.body.id);
  }
  const list = await app.request<KeyList>('GET', '/api-keys');
  t.equal(list.status, 200);
  t.same(Object.keys(list.body), ['keys']);
  t.same(
    list.body.keys.map((k) => k.name),
    ['Default key', 'first', 'second', 'third'],
    'oldest first, the bootstrap key included',
  );
  t.same(list.body.keys.slice(1).map((k) => k.id), ids);
  t.same(
    list.body.keys.map((k) => [k.permission, k.mode]),
    [
      ['full_access', 'live'],
      ['full_access', 'live'],
      ['sending_access', 'live'],
      ['full_access', 'test'],
    ],
  );
  const created = list.body.keys.map((k) => Date.parse(k.created_at));
  t.same([...created].sort((a, b) => a - b), created, 'created_at ascending');
  for (const k of list.body.keys) {
    t.notOk('token' in k, `${k.name}: no token field`);
    t.notOk('token_hash' in k, `${k.name}: no token_hash field`);
    t.notOk('team_id' in k, `${k.name}: no team_id`);
    t.match(k.token_hint, /^sk_(live|test)_…[0-9A-Za-z]{4}$/, `${k.name}: hint only`);
  }
  for (const token of tokens) {
    t.notOk(list.text.includes(token), 'the list text has no key value');
    t.notOk(list.text.includes(token.slice(8)), 'not even the random part');
    t.notOk(list.text.includes(hashSecret(token)), 'nor its hash');
  }

  const rows = await app.appliance.ctx.db('api_keys').select('*');
  t.equal(rows.length, 4);
  const dump = JSON.stringify(rows);
  for (const token of tokens) {
    t.notOk(dump.includes(token.slice(8)), 'no plaintext value in the api_keys table');
  }
  t.same(
    new Set(rows.map((r: { token_hash: string }) => r.token_hash)),
    new Set(tokens.map(hashSecret)),
    'only SHA-256 hashes are stored',
  );
  for (const r of rows as Array<{ token_hash: string }>) t.match(r.token_hash, /^[0-9a-f]{64}$/);

  const seen = await app.request<KeyList>('GET', '/api-keys', { key: tokens[1]! });
  const first = seen.body.keys.find((k) => k.name === 'first');
  t.equal(first?.last_used_at, app.clock.now().toISOString(), 'last_used_at records use');
});

t.test('rotate: a new value for the same key, the old one stops working at once', async (t) => {
  const app = await startTestApp(t);
  const made = await createKey(app, { name: 'rotating', permission: 'full_access', mode: 'test' });
  const old = made.body.token;
  t.equal((await app.request('GET', '/api-keys', { key: old })).status, 200);
  app.clock.advance(60_000);

  const rotated = await app.request<Issued>('POST', `/api-keys/${made.body.id}/rotate`);
  t.equal(rotated.status, 200);
  t.equal(rotated.body.success, true);
  t.equal(rotated.body.id, made.body.id, 'same id');
  t.equal(rotated.body.name, 'rotating');
  t.equal(rotated.body.mode, 'test');
  t.equal(rotated.body.permission, 'full_access');
  t.match(rotated.body.token, TEST, 'the mode is kept');
  t.not(rotated.body.token, old);
  t.equal(rotated.body.rotated_at, app.clock.now().toISOString());
  t.equal(rotated.body.created_at, made.body.created_at, 'created_at kept');

  const withOld = await app.request('GET', '/api-keys', { key: old });
  t.equal(withOld.status, 401, 'old value: 401');
  t.same(withOld.body, UNAUTHORIZED);
  const withNew = await app.request<KeyList>('GET', '/api-keys', { key: rotated.body.token });
  t.equal(withNew.status, 200, 'new value works');
  t.equal(withNew.body.keys.length, 2, 'no key was added');
  t.notOk(withNew.text.includes(rotated.body.token));

  const self = await app.request<Issued>('POST', `/api-keys/${made.body.id}/rotate`, { key: rotated.body.token });
  t.equal(self.status, 200, 'a key can rotate itself');
  t.equal((await app.request('GET', '/api-keys', { key: rotated.body.token })).status, 401);
  t.equal((await app.request('GET', '/api-keys', { key: self.body.token })).status, 200);

  const unknown = await app.request('POST', '/api-keys/00000000-0000-0000-0000-000000000000/rotate');
  t.equal(unknown.status, 404);
  t.same(unknown.body, { error: 'API key not found', code: 'not_found' });
});

t.test('authentication remembers a used key: no read per request; a change here forgets it at once', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  let keyReads = 0;
  readsOf(ctx.db).on('query', (q: { sql: string }) => {
    if (q.sql.includes('FROM api_keys AS k')) keyReads++;
  });
  for (let i = 0; i < 5; i++) t.equal((await app.request('GET', '/api-keys')).status, 200);
  t.equal(keyReads, 1, 'one read for five requests');
  t.equal((await app.request('GET', '/api-keys', { key: 'sk_live_' + 'x'.repeat(32) })).status, 401);
  t.equal((await app.request('GET', '/api-keys', { key: 'sk_live_' + 'x'.repeat(32) })).status, 401);
  t.equal(keyReads, 3, 'an unknown token is read every time (never remembered)');

  const before = await authenticate(ctx, app.apiKey);
  const plan = before?.plan === 'free' ? 'enterprise' : 'free';
  await setTeamPlan(ctx, app.teamId, plan);
  t.equal((await authenticate(ctx, app.apiKey))?.plan, plan, 'a plan change in this process is seen at once');

  // Another process's change (written straight to the file, as the admin CLI would) shows within the time.
  await ctx.db('teams').where('id', app.teamId).update({ plan: before!.plan });
  await new Promise((resolve) => setTimeout(resolve, AUTH_CACHE_TTL_MS + 50));
  t.equal((await authenticate(ctx, app.apiKey))?.plan, before!.plan, `seen within ${AUTH_CACHE_TTL_MS} ms`);

  // last_used_at still moves on once a minute while the key is remembered.
  const lastUsed = async () => (await ctx.db('api_keys').where({ token_hash: hashSecret(app.apiKey) }).first('last_used_at')).last_used_at as string;
  const first = await lastUsed();
  app.clock.advance(61_000);
  await app.request('GET', '/api-keys');
  const second = await lastUsed();
  t.not(second, first, 'written again after a minute');
  app.clock.advance(1_000);
  await app.request('GET', '/api-keys');
  t.equal(await lastUsed(), second, 'not within the minute');
});

t.test('DELETE: revoked at once; unknown id 404', async (t) => {
  const app = await startTestApp(t);
  app.clock.advance(1000);
  const made = await createKey(app, { name: 'doomed', permission: 'full_access' });
  t.equal((await app.request('GET', '/api-keys', { key: made.body.token })).status, 200);

  const del = await app.request('DELETE', `/api-keys/${made.body.id}`);
  t.equal(del.status, 200);
  t.same(del.body, { success: true });
  const after = await app.request('GET', '/api-keys', { key: made.body.token });
  t.equal(after.status, 401);
  t.same(after.body, UNAUTHORIZED);
  const list = await app.request<KeyList>('GET', '/api-keys');
  t.same(list.body.keys.map((k) => k.name), ['Default key']);

  const again = await app.request('DELETE', `/api-keys/${made.body.id}`);
  t.equal(again.status, 404, 'deleting twice: 404');
  t.same(again.body, { error: 'API key not found', code: 'not_found' });
  const unknown = await app.request('DELETE', '/api-keys/no-such-key');
  t.equal(unknown.status, 404);
  t.equal(unknown.body.code, 'not_found');
  t.equal((await app.request('POST', `/api-keys/${made.body.id}/rotate`)).status, 404, 'a deleted key cannot be rotated');
  t.equal(await app.appliance.ctx.db('api_keys').where({ id: made.body.id }).first(), undefined, 'the row is gone');

  const selfKey = await createKey(app, { name: 'self', permission: 'full_access' });
  const selfDel = await app.request('DELETE', `/api-keys/${selfKey.body.id}`, { key: selfKey.body.token });
  t.equal(selfDel.status, 200, 'a key can revoke itself');
  t.equal((await app.request('GET', '/api-keys', { key: selfKey.body.token })).status, 401);
});

t.test('tenant isolation: another team\'s keys are 404 and invisible', async (t) => {
  const app = await startTestApp(t);
  const other = await createOtherTeam(app);
  app.clock.advance(1000);
  const theirs = await createKey(app, { name: 'theirs', permission: 'full_access' }, other.apiKey);
  t.equal(theirs.status, 201);
  const ours = await createKey(app, { name: 'ours', permission: 'full_access' });

  const rotate = await app.request('POST', `/api-keys/${theirs.body.id}/rotate`);
  t.equal(rotate.status, 404, 'rotate another team\'s key: 404');
  t.same(rotate.body, { error: 'API key not found', code: 'not_found' });
  const del = await app.request('DELETE', `/api-keys/${theirs.body.id}`);
  t.equal(del.status, 404, 'delete another team\'s key: 404');
  t.equal((await app.request('GET', '/api-keys', { key: theirs.body.token })).status, 200, 'their key still works');
  t.equal((await app.request('DELETE', `/api-keys/${ours.body.id}`, { key: other.apiKey })).status, 404, 'and the other way round');

  const ourList = await app.request<KeyList>('GET', '/api-keys');
  t.same(ourList.body.keys.map((k) => k.name), ['Default key', 'ours']);
  const theirList = await app.request<KeyList>('GET', '/api-keys', { key: other.apiKey });
  t.same(theirList.body.keys.map((k) => k.name), ['Default key', 'theirs']);
  t.notOk(theirList.text.includes(ours.body.id));
});

t.test('per-plan key caps answer 403 forbidden', async (t) => {
  const app = await startTestApp(t);
  for (const [plan, cap] of [
    ['free', 5],
    ['starter', 10],
  ] as const) {
    const team = await createOtherTeam(app, plan);
    // The team's first key counts toward the cap.
    const made: string[] = [];
    for (let i = 2; i <= cap; i++) {
      const res = await createKey(app, { name: `k${i}`, permission: 'sending_access' }, team.apiKey);
      t.equal(res.status, 201, `${plan}: key ${i} of ${cap}`);
      made.push(res.body.id);
    }
    const over = await createKey(app, { name: 'one too many', permission: 'sending_access' }, team.apiKey);
    t.equal(over.status, 403, `${plan}: key ${cap + 1} refused`);
    const overBody = over.body as unknown as { error: string; code: string };
    t.equal(overBody.code, 'forbidden');
    t.match(overBody.error, new RegExp(`\\b${cap}\\b`), 'the message names the limit');
    const list = await app.request<KeyList>('GET', '/api-keys', { key: team.apiKey });
    t.equal(list.body.keys.length, cap, `${plan}: exactly ${cap} keys`);

    // Revoking one frees a slot; rotation does not use one.
    const last = made[made.length - 1]!;
    t.equal((await app.request('POST', `/api-keys/${last}/rotate`, { key: team.apiKey })).status, 200, 'rotation at the cap works');
    t.equal((await app.request('DELETE', `/api-keys/${last}`, { key: team.apiKey })).status, 200);
    t.equal((await createKey(app, { name: 'again', permission: 'sending_access' }, team.apiKey)).status, 201, 'a freed slot can be used');
    t.equal((await createKey(app, { name: 'again2', permission: 'sending_access' }, team.apiKey)).status, 403);
  }
  const pro = await createOtherTeam(app, 'pro');
  for (let i = 2; i <= 11; i++) t.equal((await createKey(app, { name: `p${i}`, permission: 'sending_access' }, pro.apiKey)).status, 201);
  t.pass('pro goes past the starter cap');
});

t.test('permissions: sending_access keys cannot manage the account', async (t) => {
  const app = await startTestApp(t);
  app.clock.advance(1000);
  const sending = (await createKey(app, { name: 'sender', permission: 'sending_access' })).body;
  app.clock.advance(1000);
  const sendingTest = (await createKey(app, { name: 'sender-test', permission: 'sending_access', mode: 'test' })).body;
  app.clock.advance(1000);
  const target = (await createKey(app, { name: 'target', permission: 'full_access' })).body;

  const calls: Array<[string, string, unknown]> = [
    ['GET', '/api-keys', undefined],
    ['POST', '/api-keys', { name: 'escalate', permission: 'full_access' }],
    ['POST', `/api-keys/${target.id}/rotate`, undefined],
    ['POST', `/api-keys/${sending.id}/rotate`, undefined],
    ['DELETE', `/api-keys/${target.id}`, undefined],
    ['DELETE', `/api-keys/${sending.id}`, undefined],
    ['GET', '/domains', undefined],
    ['POST', '/domains', { name: 'nope.example.com' }],
    ['GET', '/events', undefined],
  ];
  for (const key of [sending.token, sendingTest.token]) {
    for (const [method, path, body] of calls) {
      const res = await app.request(method, path, { key, ...(body ? { body } : {}) });
      t.equal(res.status, 403, `${method} ${path}`);
      t.same(res.body, FORBIDDEN, `${method} ${path}: body`);
    }
  }
  const invalidBody = await app.request('POST', '/api-keys', { key: sending.token, body: {} });
  t.equal(invalidBody.status, 403, 'permission is checked before the body');
  t.equal((await app.request('GET', '/api-keys', { key: target.token })).status, 200, 'the target key was not rotated');
  const list = await app.request<KeyList>('GET', '/api-keys');
  t.same(list.body.keys.map((k) => k.name), ['Default key', 'sender', 'sender-test', 'target'], 'nothing was created or deleted');
  t.equal((await app.request('GET', '/health', { key: sending.token })).status, 200, 'public routes still answer');

  // The sending routes are what a sending_access key is for: it passes the permission check there.
  const own = await app.request('GET', '/emails', { key: sending.token });
  t.equal(own.status, 200, 'GET /emails (its own emails)');
  for (const path of ['/emails', '/emails/send']) {
    const send = await app.request('POST', path, {
      key: sending.token,
      body: { from: 'me@not-added.example.com', to: ['you@example.net'], subject: 'hi', text: 'hi' },
    });
    t.not(send.status, 403, `POST ${path} is allowed (refused for the domain, not the key)`);
    t.not(send.status, 401, `POST ${path}: authenticated`);
  }
  const batch = await app.request('POST', '/emails/batch', { key: sending.token, body: { emails: [] } });
  t.not(batch.status, 403, 'POST /emails/batch is allowed');
  // Previews are part of composing a send (docs/API.md's permission table lists them).
  for (const path of ['/emails/preview', '/emails/spam-preview']) {
    const res = await app.request('POST', path, { key: sending.token, body: { from: 'me@not-added.example.com', to: ['you@example.net'], subject: 'hi', text: 'hi' } });
    t.equal(res.status, 200, `POST ${path} is allowed`);
  }
});

t.test('a test-mode full_access key manages and reads', async (t) => {
  const app = await startTestApp(t);
  const key = (await createKey(app, { name: 'test-full', permission: 'full_access', mode: 'test' })).body.token;
  t.match(key, TEST);
  for (const path of ['/api-keys', '/domains', '/events']) {
    const res = await app.request('GET', path, { key });
    t.equal(res.status, 200, `GET ${path}`);
  }
  const made = await createKey(app, { name: 'made-by-test-key', permission: 'sending_access', mode: 'test' }, key);
  t.equal(made.status, 201);
  t.match(made.body.token, TEST);
  t.equal((await app.request('POST', `/api-keys/${made.body.id}/rotate`, { key })).status, 200, 'it rotates a test key');

  // But it never issues a live value: a leaked CI key must not become one that sends for real.
  for (const body of [{ name: 'escalate', permission: 'full_access', mode: 'live' }, { name: 'escalate', permission: 'full_access' }]) {
    const refused = await createKey(app, body, key);
    t.equal(refused.status, 403);
    t.match(refused.body, { code: 'forbidden', error: 'A test-mode API key can only create and rotate test-mode keys' });
  }
  const live = (await app.request<{ keys: Array<{ id: string; mode: string }> }>('GET', '/api-keys')).body.keys.find((k) => k.mode === 'live')!;
  const rotated = await app.request('POST', `/api-keys/${live.id}/rotate`, { key });
  t.equal(rotated.status, 403, 'nor rotates a live key (the answer would carry its new value)');
  t.equal((await app.request('GET', '/api-keys')).status, 200, 'the live key still works');
  t.equal((await createKey(app, { name: 'by-live', permission: 'sending_access', mode: 'live' })).status, 201, 'a live key creates live keys');
});

t.test('a test-mode key revokes only test-mode keys', async (t) => {
  const app = await startTestApp(t);
  const key = (await createKey(app, { name: 'ci', permission: 'full_access', mode: 'test' })).body.token;
  const live = (await createKey(app, { name: 'production', permission: 'sending_access' })).body;
  const refused = await app.request('DELETE', `/api-keys/${live.id}`, { key });
  t.equal(refused.status, 403, 'a leaked CI key cannot take the live keys away');
  t.same(refused.body, { error: 'A test-mode API key can only revoke test-mode keys', code: 'forbidden' });
  t.equal((await app.request('GET', '/emails', { key: live.token })).status, 200, 'the live key still works');
  const bootstrap = (await app.request<KeyList>('GET', '/api-keys')).body.keys.find((k) => k.mode === 'live' && k.permission === 'full_access')!;
  t.equal((await app.request('DELETE', `/api-keys/${bootstrap.id}`, { key })).status, 403, 'nor the full_access live key');
  t.equal((await app.request('GET', '/api-keys')).status, 200);

  const other = (await createKey(app, { name: 'staging', permission: 'sending_access', mode: 'test' }, key)).body;
  t.same((await app.request('DELETE', `/api-keys/${other.id}`, { key })).body, { success: true }, 'it revokes a test key');
  t.equal((await app.request('DELETE', '/api-keys/nope', { key })).status, 404, 'an unknown id stays 404');
  t.equal((await app.request('DELETE', `/api-keys/${live.id}`)).status, 200, 'a live key revokes a live key');
});

t.test('bad credentials: 401 Invalid API key with a Bearer challenge', async (t) => {
  const app = await startTestApp(t);
  const made = (await createKey(app, { name: 'x', permission: 'full_access' })).body.token;
  const cases: Array<[string, Record<string, string>]> = [
    ['no header', {}],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['unknown live key', { authorization: 'Bearer sk_live_00000000000000000000000000000000' }],
    ['unknown test key', { authorization: 'Bearer sk_test_00000000000000000000000000000000' }],
    ['wrong prefix', { authorization: `Bearer pk_live_${made.slice(8)}` }],
    ['mode swapped', { authorization: `Bearer sk_test_${made.slice(8)}` }],
    ['truncated', { authorization: `Bearer ${made.slice(0, -1)}` }],
    ['two tokens', { authorization: `Bearer ${made} ${made}` }],
    ['no scheme', { authorization: made }],
    ['key as a query is not a credential', {}],
  ];
  for (const [name, headers] of cases) {
    const path = name.includes('query') ? `/api-keys?api_key=${made}` : '/api-keys';
    const res = await app.request('GET', path, { key: null, headers });
    t.equal(res.status, 401, name);
    t.same(res.body, UNAUTHORIZED, `${name}: body`);
    t.match(res.headers.get('www-authenticate'), /^Bearer/, `${name}: WWW-Authenticate`);
  }
  for (const [method, path] of [
    ['POST', '/api-keys'],
    ['POST', '/api-keys/x/rotate'],
    ['DELETE', '/api-keys/x'],
    ['GET', '/events'],
  ]) {
    const res = await app.request(method!, path!, { key: null });
    t.equal(res.status, 401, `${method} ${path} without a key`);
    t.same(res.body, UNAUTHORIZED);
  }
});

t.test("docs/API.md's permission table names exactly the routes a sending_access key may call", async (t) => {
  const readme = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
  const row = readme.split('\n').find((l) => l.startsWith('| `sending_access` |'));
  t.ok(row, 'the row is there');
  const listed = [...(row ?? '').matchAll(/`((?:GET|POST|PUT|PATCH|DELETE) \/[^`]*)`/g)].map((m) => m[1]!).sort();
  const code = allRoutes.filter((r) => r.access === 'sending_access').map((r) => `${r.method} ${r.path}`).sort();
  t.same(listed, code);
});
