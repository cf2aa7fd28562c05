// Connections at once to the API, per client address (API_CONNECTION_CAPS): one client that opened thousands of
// idle connections (each kept ~30–60 s until headersTimeout) used up the process's file descriptors, and with
// them every listener of the box. Past its share a client gets 503 in the API's error shape; others are served.
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.js';
import { createHttpApp } from '../../src/http/app.js';
import { API_CONNECTION_CAPS, listen } from '../../src/http/server.js';

/** Sends one request on a new connection from `localAddress` and resolves with the raw answer. */
function get(port: number, localAddress: string, path = '/health'): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    let text = '';
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    s.on('data', (d: Buffer) => (text += d.toString('latin1')));
    s.on('error', () => {});
    s.on('close', () => resolve(text));
  });
}

t.test('past its share of connections a client gets 503 service_unavailable; other addresses are served', async (t) => {
  t.ok(API_CONNECTION_CAPS.perClient >= 256, 'the real figure leaves room for pooled clients and benchmarks');
  const app = await startTestApp(t);
  const server = await listen(createHttpApp(app.appliance.ctx), '127.0.0.1', 0, { total: 4, perClient: 2 });
  t.teardown(() => server.close(0));
  const port = server.address.port;
  const idle: net.Socket[] = [];
  t.teardown(() => idle.forEach((s) => s.destroy()));
  for (let i = 0; i < 2; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    await new Promise((r) => s.once('connect', r));
    idle.push(s);
  }
  await new Promise((r) => setTimeout(r, 100));
  const refused = await get(port, '127.0.0.1');
  t.match(refused, /^HTTP\/1\.1 503 Service Unavailable\r\n/, 'the third connection from one address');
  const body = JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4)) as { code: string; error: string };
  t.same(body, { error: 'Too many connections from your address', code: 'service_unavailable' }, 'in the error shape');
  t.match(await get(port, '127.0.0.2'), /^HTTP\/1\.1 200 OK/, 'another address is served meanwhile');
  idle.shift()!.destroy();
  let again = '';
  for (let i = 0; i < 50 && !again.startsWith('HTTP/1.1 200'); i++) again = await get(port, '127.0.0.1');
  t.match(again, /^HTTP\/1\.1 200 OK/, 'a closed connection frees its place');
});
