// Edge limits over real HTTP: per-client-IP token buckets (send paths 10/s burst 20, everything else
// 30/s burst 50) refilled by the fake clock, refused with a small HTML 429 and no rate-limit headers;
// bodies over 36 MB refused with 413 at the edge, before authentication; MAIL_RATE_LIMITS=off.
import t, { type Test } from 'tap';
import http from 'node:http';
import { startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { MAX_BODY_BYTES } from '../../src/http/middleware/body.js';

const LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

function assertEdgeRefusal(t: Test, res: TestResponse, what: string): void {
  t.equal(res.status, 429, `${what}: 429`);
  t.match(res.headers.get('content-type') ?? '', /^text\/html/, `${what}: HTML`);
  t.match(res.text, /<html>.*429 Too Many Requests/s, `${what}: a small HTML body`);
  t.ok(res.text.length < 1024, `${what}: small`);
  t.equal(res.body, undefined, `${what}: not JSON`);
  for (const h of LIMIT_HEADERS) t.equal(res.headers.get(h), null, `${what}: no ${h}`);
}

/** Sends `n` requests one after the other; returns the statuses. */
async function burst(app: TestApp, n: number, method: string, path: string, body?: unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await app.request(method, path, body === undefined ? {} : { body })).status);
  return out;
}

const email = { from: 'a@nowhere.example', to: ['b@dest.example'], subject: 'x', text: 'x' };

t.test('all other paths: 30 per second sustained, burst 50', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  t.same(await burst(app, 50, 'GET', '/health'), Array(50).fill(200), 'a burst of 50 passes');
  assertEdgeRefusal(t, await app.request('GET', '/health'), 'the 51st');
  assertEdgeRefusal(t, await app.request('GET', '/no-such-path', { key: null }), 'any path, any credential or none');
  app.clock.advance(100);
  t.same(await burst(app, 3, 'GET', '/health'), [200, 200, 200], '100 ms refill 3 tokens');
  t.equal((await app.request('GET', '/health')).status, 429, 'and no more');
  app.clock.advance(1000);
  t.same(await burst(app, 30, 'GET', '/health'), Array(30).fill(200), 'one second: 30 more');
  t.equal((await app.request('GET', '/health')).status, 429);
  app.clock.advance(60_000);
  t.same(await burst(app, 50, 'POST', '/emails', email), Array(50).fill(422), 'the bucket refills to its burst, no further; POST /emails is an "other" path');
  t.equal((await app.request('POST', '/emails', { body: email })).status, 429);
});

t.test('POST /emails/send and /emails/batch: 10 per second sustained, burst 20, their own bucket', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  t.same(await burst(app, 12, 'POST', '/emails/send', email), Array(12).fill(422));
  t.same(await burst(app, 8, 'POST', '/emails/batch', { emails: [email] }), Array(8).fill(202), 'batch shares the send bucket');
  assertEdgeRefusal(t, await app.request('POST', '/emails/send', { body: email }), 'the 21st send');
  assertEdgeRefusal(t, await app.request('POST', '/emails/batch', { body: { emails: [email] } }), 'a batch after it');
  t.equal((await app.request('GET', '/health')).status, 200, 'other paths have their own bucket');
  app.clock.advance(500);
  t.same(await burst(app, 5, 'POST', '/emails/send', email), Array(5).fill(422), 'half a second refills 5');
  t.equal((await app.request('POST', '/emails/send', { body: email })).status, 429);
});

t.test('413 at the edge: a declared body over 36 MB is refused before authentication or reading', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  const declare = (length: number, auth: boolean) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${app.url}/emails`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(length), ...(auth ? { authorization: `Bearer ${app.apiKey}` } : {}) },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write('{"from":"');
    });
  for (const auth of [false, true]) {
    const res = await declare(MAX_BODY_BYTES + 1, auth);
    t.equal(res.status, 413, `36 MB + 1 byte declared, ${auth ? 'with' : 'without'} a credential`);
    t.same(JSON.parse(res.body), { error: 'Request body exceeds the 36 MB limit', code: 'payload_too_large' });
  }
});

t.test('MAIL_RATE_LIMITS=off turns the edge off too', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: false } });
  t.same(await burst(app, 80, 'GET', '/health'), Array(80).fill(200));
  t.same(await burst(app, 30, 'POST', '/emails/send', email), Array(30).fill(422));
});

t.test('config: MAIL_RATE_LIMITS is on by default and takes on/off', async (t) => {
  const { loadConfig } = await import('../../src/config.js');
  t.equal(loadConfig({}).rateLimits, true, 'on by default');
  t.equal(loadConfig({ MAIL_RATE_LIMITS: 'off' }).rateLimits, false);
  t.equal(loadConfig({ MAIL_RATE_LIMITS: 'on' }).rateLimits, true);
  t.throws(() => loadConfig({ MAIL_RATE_LIMITS: 'maybe' }), /MAIL_RATE_LIMITS must be on or off/);
});
