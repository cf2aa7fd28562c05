// The appliance as a process, started the way `npm start` starts it (src/main.ts): configuration
// errors, the first-start key, the bound port in the log, restarts, and graceful shutdown.
import t, { type Test } from 'tap';
import http from 'node:http';
import { rmSync } from 'node:fs';
import { makeDataDir } from '../helpers/app.js';
import { ApplianceProcess, childEnv, connectOnce } from '../helpers/process.js';
import { openDatabase } from '../../src/db/index.js';

const START_DEADLINE_MS = 60_000;

// Every case starts real processes (tsx compiles on the fly, a TLS certificate is generated).
t.setTimeout(600_000);

const KEY_RE = /sk_(live|test)_[0-9A-Za-z_-]{16,}/g;

function baseEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return childEnv({ MAIL_DATA_DIR: dataDir, MAIL_HOSTNAME: 'mx.test.example', ...extra });
}


function dataDir(t: Test): string {
  const dir = makeDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function get(port: number, key: string | null, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * Retries new connections until one is refused (the listener is closed), with a deadline.
 * The shutdown log line and the close of the listener happen in the same tick of the child, but the
 * parent may read the line a hair earlier: a connection that still gets through is answered, and one that
 * was in the backlog at that instant is reset. Either way, try again until connections are refused.
 */
async function waitRefused(port: number, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = await connectOnce(port);
    if (last !== 'connected' && last !== 'ECONNRESET') return last;
  }
  return last;
}

t.test('a bad MAIL_API_PORT stops start-up with exit 1, naming the variable', async (t) => {
  const dir = dataDir(t);
  for (const bad of ['abc', '70000']) {
    const app = new ApplianceProcess(t, baseEnv(dir, { MAIL_API_PORT: bad }));
    const exit = await app.exitCode(START_DEADLINE_MS);
    t.equal(exit.code, 1, `MAIL_API_PORT=${bad}: exit 1`);
    t.match(app.stderr, /MAIL_API_PORT/, 'stderr names the variable');
    t.match(app.stderr, new RegExp(bad), 'and shows the value');
    t.notMatch(app.stderr, /^\s+at /m, 'no stack trace');
    t.notMatch(app.stdout, KEY_RE, 'no key printed');
  }
  const other = new ApplianceProcess(t, baseEnv(dir, { MAIL_DEFAULT_PLAN: 'gold' }));
  t.equal((await other.exitCode(START_DEADLINE_MS)).code, 1);
  t.match(other.stderr, /MAIL_DEFAULT_PLAN/);
  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  t.same(await db('teams').select('id'), [], 'nothing was bootstrapped by a refused start');
});

t.test('first start prints one key and logs the port; a restart prints none', async (t) => {
  const dir = dataDir(t);
  const first = new ApplianceProcess(t, baseEnv(dir));
  const port = await first.port();
  t.ok(port > 0, `bound port ${port} logged`);
  const listening = first.logs().find((l) => l.msg === 'listening');
  t.equal(listening?.address, '127.0.0.1', 'on MAIL_BIND');
  const key = await first.waitFor('the first-start key', () => /sk_live_[0-9A-Za-z]{32}/.exec(first.stdout)?.[0]);
  t.match(key, /^sk_live_[0-9A-Za-z]{32}$/);
  t.same(new Set(first.stdout.match(KEY_RE)), new Set([key]), 'exactly one key value printed');
  t.notMatch(first.stderr, KEY_RE, 'not on stderr');
  t.match(first.stdout, new RegExp(`localhost:${port}`), 'the hint uses the real port');

  const health = await get(port, null, '/health');
  t.equal(health.status, 200);
  const keys = await get(port, key, '/api-keys');
  t.equal(keys.status, 200, 'the printed key works');
  const list = keys.body.keys as Array<{ name: string; permission: string; mode: string }>;
  t.equal(list.length, 1);
  t.match(list[0], { permission: 'full_access', mode: 'live' });
  t.equal((await get(port, key, '/domains')).status, 200);

  first.signal('SIGTERM');
  t.same(await first.exitCode(), { code: 0, signal: null }, 'SIGTERM: clean exit 0');

  const second = new ApplianceProcess(t, baseEnv(dir));
  const port2 = await second.port();
  t.equal((await get(port2, key, '/api-keys')).status, 200, 'the first key still works after a restart');
  t.notMatch(second.stdout, KEY_RE, 'a second start prints no key');
  t.notMatch(second.stderr, KEY_RE);
  const again = await get(port2, key, '/api-keys');
  t.equal((again.body.keys as unknown[]).length, 1, 'and creates none');
  second.signal('SIGINT');
  t.same(await second.exitCode(), { code: 0, signal: null }, 'SIGINT: clean exit 0');
  t.notMatch(second.stdout, KEY_RE);
});

t.test('MAIL_BOOTSTRAP_API_KEY on an empty box: that exact value works and is never printed', async (t) => {
  const dir = dataDir(t);
  const chosen = 'sk_live_' + 'Ab3'.repeat(8);
  t.equal(chosen.length, 8 + 24);
  const app = new ApplianceProcess(t, baseEnv(dir, { MAIL_BOOTSTRAP_API_KEY: chosen, MAIL_DEFAULT_PLAN: 'free' }));
  const port = await app.port();
  const res = await get(port, chosen, '/api-keys');
  t.equal(res.status, 200, 'the chosen value authenticates');
  const keys = res.body.keys as Array<{ permission: string; mode: string }>;
  t.equal(keys.length, 1);
  t.match(keys[0], { permission: 'full_access', mode: 'live' });
  t.equal((await get(port, 'sk_live_' + 'Zz9'.repeat(8), '/api-keys')).status, 401, 'another value does not');

  // MAIL_DEFAULT_PLAN=free: the default team has the free cap of 5 keys, its first one included.
  for (let i = 2; i <= 6; i++) {
    const made = await fetch(`http://127.0.0.1:${port}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${chosen}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `k${i}`, permission: 'sending_access' }),
    });
    t.equal(made.status, i <= 5 ? 201 : 403, `key ${i} on the free default team`);
    await made.body?.cancel();
  }

  app.signal('SIGTERM');
  t.equal((await app.exitCode()).code, 0);
  t.notOk(app.stdout.includes(chosen), 'the value is not on stdout');
  t.notOk(app.stderr.includes(chosen), 'nor on stderr');
  t.notMatch(app.stdout, KEY_RE, 'no key at all is printed');

  // A test-mode value makes a test-mode key.
  const dir2 = dataDir(t);
  const testKey = 'sk_test_' + 'Qw7'.repeat(8);
  const app2 = new ApplianceProcess(t, baseEnv(dir2, { MAIL_BOOTSTRAP_API_KEY: testKey }));
  const port2 = await app2.port();
  const res2 = await get(port2, testKey, '/api-keys');
  t.equal(res2.status, 200);
  t.match((res2.body.keys as unknown[])[0], { mode: 'test', permission: 'full_access' });
  app2.signal('SIGTERM');
  t.equal((await app2.exitCode()).code, 0);
  t.notOk(app2.stdout.includes(testKey));

  // On a box that is already set up, the variable changes nothing.
  const app3 = new ApplianceProcess(t, baseEnv(dir, { MAIL_BOOTSTRAP_API_KEY: 'sk_live_' + 'Zz9'.repeat(8) }));
  const port3 = await app3.port();
  t.equal((await get(port3, 'sk_live_' + 'Zz9'.repeat(8), '/api-keys')).status, 401, 'not applied to a non-empty box');
  t.equal((await get(port3, chosen, '/api-keys')).status, 200);
  app3.signal('SIGTERM');
  t.equal((await app3.exitCode()).code, 0);
});

t.test('SIGTERM with a request in flight: it is answered, the process exits 0, the database is intact', async (t) => {
  const dir = dataDir(t);
  const app = new ApplianceProcess(t, baseEnv(dir));
  const port = await app.port();
  const key = await app.waitFor('the first-start key', () => /sk_live_[0-9A-Za-z]{32}/.exec(app.stdout)?.[0]);

  const body = JSON.stringify({ name: 'in-flight', permission: 'full_access' });
  let sent = false;
  let continued!: () => void;
  const gotContinue = new Promise<void>((resolve) => (continued = resolve));
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api-keys',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        // The server answers 100 Continue once it has parsed the headers: from then on the request is in flight.
        expect: '100-continue',
      },
    });
    req.on('continue', () => continued());
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.flushHeaders();
    void gotContinue.then(async () => {
      app.signal('SIGTERM');
      await app.waitFor('the shutdown log line', () => (app.logs().some((l) => l.msg === 'shutting down') ? true : undefined));
      t.equal(await waitRefused(port), 'ECONNREFUSED', 'no new connection is accepted while stopping');
      t.equal(app.logs().some((l) => l.msg === 'stopped'), false, 'still waiting for the request in flight');
      sent = true;
      req.end(body);
    });
  });

  const res = await answer;
  t.ok(sent, 'the body was sent after SIGTERM');
  t.equal(res.status, 201, 'the in-flight request completed');
  const issued = JSON.parse(res.text) as { token: string; name: string };
  t.equal(issued.name, 'in-flight');
  t.same(await app.exitCode(), { code: 0, signal: null }, 'exit 0 after the request');
  t.notMatch(app.stderr, /error/i, 'nothing went wrong on the way out');

  // The SQLite file is intact: the check passes and a restart serves the key made during shutdown.
  const db = await openDatabase(dir);
  const check = (await db.raw('PRAGMA integrity_check')) as Array<{ integrity_check: string }>;
  t.same(check, [{ integrity_check: 'ok' }], 'PRAGMA integrity_check');
  t.same(
    (await db('api_keys').select('name').orderBy('created_at')).map((r: { name: string }) => r.name).sort(),
    ['Default key', 'in-flight'],
  );
  await db.destroy();

  const again = new ApplianceProcess(t, baseEnv(dir));
  const port2 = await again.port();
  t.notMatch(again.stdout, KEY_RE, 'no new bootstrap');
  const listed = await get(port2, issued.token, '/api-keys');
  t.equal(listed.status, 200, 'the key made during shutdown works after restart');
  t.same((listed.body.keys as Array<{ name: string }>).map((k) => k.name).sort(), ['Default key', 'in-flight']);
  again.signal('SIGTERM');
  t.equal((await again.exitCode()).code, 0);
});

t.test('SIGTERM on an idle appliance exits 0 and logs its shutdown', async (t) => {
  const dir = dataDir(t);
  const app = new ApplianceProcess(t, baseEnv(dir));
  await app.port();
  app.signal('SIGTERM');
  t.same(await app.exitCode(), { code: 0, signal: null });
  t.ok(app.logs().some((l) => l.msg === 'shutting down'), 'shutting down logged');
  t.ok(app.logs().some((l) => l.msg === 'stopped'), 'stopped logged');
});
