// bench-send's lean HTTP client (scripts/bench-client.ts) against node:http's server: the benchmark's
// latencies and counts are only worth anything if its client speaks HTTP/1.1 as a real one does.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { LeanHttpClient } from '../../scripts/bench-client.js';

async function server(t: Test, handler: http.RequestListener) {
  const sockets = new Set<unknown>();
  const s = http.createServer(handler);
  s.on('connection', (c) => sockets.add(c));
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (s.closeAllConnections(), s.close(() => resolve()))));
  return { port: (s.address() as AddressInfo).port, connections: () => sockets.size };
}

const echo: http.RequestListener = (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], got: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
};

t.test('requests go over kept-alive sockets, at most maxSockets of them, each answered its own body', async (t) => {
  const s = await server(t, (req, res) => setTimeout(() => echo(req, res), 5));
  const client = new LeanHttpClient('127.0.0.1', s.port, 4, ['Authorization: Bearer k']);
  t.teardown(() => client.close());
  const bodies = Array.from({ length: 40 }, (_, i) => JSON.stringify({ i, text: `ünïcödé 📨 ${'x'.repeat(i * 100)}` }));
  const answers = await Promise.all(bodies.map((b) => client.post('/emails', b)));
  answers.forEach((a, i) => {
    t.equal(a.status, 202);
    t.same(JSON.parse(a.text), { method: 'POST', url: '/emails', auth: 'Bearer k', type: 'application/json', got: bodies[i] }, `request ${i}`);
  });
  t.equal(s.connections(), 4, 'four sockets carried the forty requests');
  await client.post('/again', '{}');
  t.equal(s.connections(), 4, 'and are kept for the next');
});

t.test('an answer with Connection: close closes its socket; the next request opens another', async (t) => {
  const s = await server(t, (req, res) => {
    res.shouldKeepAlive = false;
    echo(req, res);
  });
  const client = new LeanHttpClient('127.0.0.1', s.port, 1, []);
  t.teardown(() => client.close());
  for (let i = 0; i < 3; i++) t.equal((await client.post('/x', `{"n":${i}}`)).status, 202);
  t.equal(s.connections(), 3);
});

t.test('what it cannot read fails the request, and the client goes on', async (t) => {
  let calls = 0;
  const s = await server(t, (req, res) => {
    calls++;
    if (req.url === '/chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' }); // no length: chunked
      res.end('chunked body');
    } else if (req.url === '/drop') req.socket.destroy();
    else echo(req, res);
  });
  const client = new LeanHttpClient('127.0.0.1', s.port, 1, []);
  t.teardown(() => client.close());
  await t.rejects(client.post('/chunked', '{}'), /does not read: HTTP\/1.1 200/);
  await t.rejects(client.post('/drop', '{}'), /closed before the answer|ECONNRESET/);
  t.equal((await client.post('/fine', '{}')).status, 202, 'a later request is answered');
  t.equal(calls, 3);
  client.close();
  await t.rejects(client.post('/late', '{}'), /client closed/);
});

t.test('a GET carries the extra header lines and no body (bench:tracking)', async (t) => {
  const s = await server(t, (req, res) => {
    const body = JSON.stringify({ method: req.method, url: req.url, ua: req.headers['user-agent'], auth: req.headers.authorization, length: req.headers['content-length'] ?? null });
    res.writeHead(302, { location: 'https://elsewhere.example/', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  const client = new LeanHttpClient('127.0.0.1', s.port, 2, ['Authorization: Bearer k']);
  t.teardown(() => client.close());
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => client.get(`/track/open/${i}`, [`User-Agent: agent ${i}`])));
  answers.forEach((a, i) => {
    t.equal(a.status, 302);
    t.same(JSON.parse(a.text), { method: 'GET', url: `/track/open/${i}`, ua: `agent ${i}`, auth: 'Bearer k', length: null }, `request ${i}`);
  });
  t.ok(s.connections() <= 2, 'over the kept sockets');
});
