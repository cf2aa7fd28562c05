// A stop while a delivery is stuck (the remote never answers the end of DATA) keeps README's promise of a
// stop within about 10 s: running jobs get a grace period, then the render threads running their SMTP
// transactions are closed, aborting them; the job is retried after the restart (at-least-once).
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { until } from '../helpers/process.js';

/** An SMTP server that accepts everything up to the end of DATA and then never answers. */
async function startTarpit(): Promise<{ port: number; stuck: number; closed: number; stop(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const state = { port: 0, stuck: 0, closed: 0, stop: async () => {} };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      state.closed++;
    });
    socket.on('error', () => {});
    let buf = '';
    let inData = false;
    socket.write('220 tarpit.test ESMTP\r\n');
    socket.on('data', (chunk: Buffer) => {
      buf += chunk.toString('latin1');
      for (;;) {
        if (inData) {
          const end = buf.indexOf('\r\n.\r\n');
          if (end < 0) return;
          buf = buf.slice(end + 5);
          inData = false;
          state.stuck++; // and no answer, ever
          continue;
        }
        const nl = buf.indexOf('\r\n');
        if (nl < 0) return;
        const line = buf.slice(0, nl).toUpperCase();
        buf = buf.slice(nl + 2);
        if (line.startsWith('EHLO')) socket.write('250-tarpit.test\r\n250 8BITMIME\r\n');
        else if (line.startsWith('DATA')) {
          inData = true;
          socket.write('354 go ahead\r\n');
        } else if (line.startsWith('QUIT')) socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as net.AddressInfo).port;
  state.stop = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

t.test('stop with a delivery stuck after DATA', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const tarpit = await startTarpit();
  t.teardown(() => tarpit.stop());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: tarpit.port, renderThreads: 1 } });
  await addVerifiedDomain(app, dns, 'send.example');
  const sent = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@send.example', to: ['b@dest.example'], subject: 'stuck', text: 'hi' } });
  t.equal(sent.status, 202);
  await until('the message to be stuck at the end of DATA', () => (tarpit.stuck > 0 ? true : undefined), 60_000);

  // A sanity bound well above the 10 s promised (a loaded machine) and below the SMTP timeouts the stop
  // used to wait for: the stop must not wait for the remote.
  let bound: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    app.stop().then(() => 'stopped'),
    new Promise<string>((resolve) => (bound = setTimeout(() => resolve('still waiting for the remote'), 25_000))),
  ]);
  clearTimeout(bound);
  t.equal(outcome, 'stopped');
  await until('the stuck connection to be closed', () => (tarpit.closed > 0 ? true : undefined), 10_000);
  t.pass('the stuck SMTP transaction was aborted');
});
