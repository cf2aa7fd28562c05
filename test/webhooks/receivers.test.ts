// Receivers that misbehave or share a host, over real sockets: found by black-box testing against the
// README ("endpoints do not hold each other up"; a response body is kept to its first 2,048 characters).
import http from 'node:http';
import type { Socket } from 'node:net';
import t, { type Test } from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.js';

interface Delivery {
  id: number;
  statusCode: number | null;
  responseBody: string | null;
  status: string;
  attempts: number;
}

/** One HTTP server, answering per path: `handlers[path](req, res)` once the request body is read. */
async function pathServer(t: Test, handlers: Record<string, (res: http.ServerResponse) => void>) {
  const sockets = new Set<Socket>();
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(req.url ?? '');
      const handle = handlers[req.url ?? ''];
      if (handle) handle(res);
      else res.end('ok');
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { base: `http://127.0.0.1:${port}`, seen };
}

async function createHook(app: TestApp, url: string, events: string[]): Promise<number> {
  const res = await app.request<{ id: number }>('POST', '/webhooks', { body: { url, events } });
  if (res.status !== 201) throw new Error(`POST /webhooks: ${res.status} ${res.text}`);
  return res.body.id;
}

async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
}

t.test('endpoints on one host (same host and port, other paths) do not hold each other up', async (t) => {
  const app = await startTestApp(t, { config: { webhookTimeoutMs: 4000 } });
  const held: http.ServerResponse[] = [];
  const server = await pathServer(t, { '/slow': (res) => held.push(res) });
  t.teardown(() => held.forEach((res) => res.destroy()));
  await createHook(app, `${server.base}/slow`, ['domain.updated']);
  const fastId = await createHook(app, `${server.base}/fast`, ['domain.created']);

  const domain = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'acme.example' } });
  let flag = false;
  for (let i = 0; i < 16; i++) {
    flag = !flag;
    await app.request('PATCH', `/domains/${domain.body.id}`, { body: { open_tracking: flag } });
  }
  await until(() => held.length >= 16, 5000);
  t.equal(held.length, 16, 'the slow endpoint holds 16 requests');

  // Another endpoint (another customer, say) on the same host: its event goes out at once.
  await app.request('POST', '/domains', { body: { name: 'other.example' } });
  const fast = async () => (await app.request<{ deliveries: Delivery[] }>('GET', `/webhooks/${fastId}/deliveries`)).body.deliveries[0];
  const end = Date.now() + 2500;
  while ((await fast())?.status !== 'delivered' && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  t.match(await fast(), { statusCode: 200, status: 'delivered' }, 'the other endpoint got its event while the slow one holds its requests');
  t.equal(held.length, 16, 'the slow requests are still held');
  for (const res of held) res.end('ok');
  await app.appliance.ctx.jobs.drain();
});

t.test('a 2xx whose body goes on and on is delivered once the first 2,048 characters are in', async (t) => {
  const app = await startTestApp(t, { config: { webhookTimeoutMs: 2000 } });
  const open: http.ServerResponse[] = [];
  const server = await pathServer(t, {
    '/stream': (res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('x'.repeat(4096)); // and never ends
      open.push(res);
    },
  });
  t.teardown(() => open.forEach((res) => res.destroy()));
  const id = await createHook(app, `${server.base}/stream`, ['domain.updated']);
  const started = Date.now();
  const res = await app.request<{ delivery: Delivery }>('POST', `/webhooks/${id}/test`);
  t.equal(res.status, 200);
  t.match(res.body.delivery, { statusCode: 200, status: 'delivered' }, 'the answer is the status line: 200');
  t.equal(res.body.delivery.responseBody?.length, 2048, 'the first 2,048 characters are kept');
  t.ok(Date.now() - started < 1500, 'without waiting for the deadline');
});
