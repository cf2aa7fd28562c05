// The listeners' shared caps: client addresses (IPv6 by /64), connection counts released on close, stress (entered
// at 80% of the capacity, left below 60%, a lower per-client cap meanwhile), and the memory budget of message data.
import t, { type Test } from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import { ByteBudget, capConnections, clientKey, ConnectionCaps, StressGauge } from '../../src/core/listener-limits.js';
import { sinkTlsMaterial } from '../helpers/smtp-sink.js';

t.test('clientKey: IPv4 as is (also v4-mapped), IPv6 by its /64 whatever the spelling', async (t) => {
  t.equal(clientKey('192.0.2.7'), '192.0.2.7');
  t.equal(clientKey('::ffff:192.0.2.7'), '192.0.2.7');
  t.equal(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(clientKey('2001:0db8:0001:0002:ffff:0:0:9'), '2001:db8:1:2::/64', 'leading zeros do not make another client');
  t.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(clientKey('::1'), '0:0:0:0::/64');
  t.not(clientKey('2001:db8:1:3::1'), clientKey('2001:db8:1:2::1'), 'another /64 is another client');
  t.equal(clientKey(undefined), '');
});

/** A server saying hello behind `caps` (and `gauge`), and a connect from a local address that gives its first line. */
async function cappedServer(t: Test, caps: ConnectionCaps, gauge?: StressGauge) {
  const server = net.createServer((s) => s.write('hello\r\n'));
  capConnections(server, caps, (s, why) => s.end(`refused ${why}\r\n`), gauge);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const { port } = server.address() as net.AddressInfo;
  const open: net.Socket[] = [];
  t.teardown(() => open.forEach((s) => s.destroy()));
  return (localAddress: string) =>
    new Promise<{ socket: net.Socket; first: string }>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1', localAddress });
      open.push(socket);
      socket.once('data', (d: Buffer) => resolve({ socket, first: d.toString().trim() }));
    });
}

t.test('ConnectionCaps over real sockets: per-client and total caps, counted down on close', async (t) => {
  const caps = new ConnectionCaps({ total: 3, perClient: 2 });
  const connect = await cappedServer(t, caps);
  t.equal((await connect('127.0.0.1')).first, 'hello');
  const second = await connect('127.0.0.1');
  t.equal(second.first, 'hello');
  t.equal((await connect('127.0.0.1')).first, 'refused per-client', 'a third from one address');
  t.equal((await connect('127.0.0.2')).first, 'hello', 'another address is served');
  t.equal((await connect('127.0.0.3')).first, 'refused total', 'the total cap');
  t.equal(caps.size, 3);
  second.socket.destroy();
  await new Promise<void>((resolve) => {
    const poll = () => (caps.size === 2 ? resolve() : setTimeout(poll, 5));
    poll();
  });
  t.equal((await connect('127.0.0.1')).first, 'hello', 'a closed socket frees its place');
});

t.test("a socket whose owner strips its listeners to upgrade it to TLS is still counted down when it closes", async (t) => {
  // smtp-server's STARTTLS: removeAllListeners() on the plain socket, then a TLSSocket on it; POP3's STLS:
  // removeAllListeners('close'). Every encrypted session used to keep its place for good (Postfix was refused
  // with 421 after 50 deliveries).
  const { key, cert } = await sinkTlsMaterial();
  for (const strip of [(s: net.Socket) => s.removeAllListeners(), (s: net.Socket) => s.removeAllListeners('close')]) {
    const caps = new ConnectionCaps({ total: 10, perClient: 10 });
    const gauge = new StressGauge(100, () => {});
    const server = net.createServer((plain) => {
      plain.write('ready\r\n');
      plain.once('data', () => {
        plain.write('go ahead\r\n');
        strip(plain);
        const secure = new tls.TLSSocket(plain, { isServer: true, key, cert });
        secure.on('error', () => {});
        secure.on('data', () => {});
      });
    });
    capConnections(server, caps, (s) => s.destroy(), gauge);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve) => {
        const plain = net.connect(port, '127.0.0.1');
        plain.once('data', () => {
          plain.write('STARTTLS\r\n');
          plain.once('data', () => {
            const secure = tls.connect({ socket: plain, rejectUnauthorized: false }, () => secure.end());
            secure.on('error', () => {});
            secure.on('close', () => resolve());
          });
        });
      });
    }
    const until = Date.now() + 3000;
    await new Promise<void>((resolve) => {
      const poll = () => ((caps.size === 0 && gauge.size === 0) || Date.now() > until ? resolve() : setTimeout(poll, 5));
      poll();
    });
    t.same([caps.size, gauge.size], [0, 0], `${strip.toString()}: every place given back`);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

t.test('StressGauge over real sockets: entered at 80% of the capacity, left below 60%, a per-client cap of 2% meanwhile', async (t) => {
  const changes: Array<[boolean, number]> = [];
  const gauge = new StressGauge(100, (stressed, open) => changes.push([stressed, open]));
  t.equal(gauge.perClientUnderStress, 2);
  t.equal(new StressGauge(10, () => {}).perClientUnderStress, 1, 'at least one');
  const caps = new ConnectionCaps({ total: 1000, perClient: 50 });
  const connect = await cappedServer(t, caps, gauge);
  const held: net.Socket[] = [];
  for (let i = 0; i < 79; i++) held.push((await connect(`127.0.1.${1 + (i % 40)}`)).socket); // two per address
  t.notOk(gauge.stressed, '79 of 100: not yet');
  t.equal((await connect('127.0.1.1')).first, 'hello', 'the 80th, a third from one address');
  t.ok(gauge.stressed, 'under stress at 80');
  t.equal((await connect('127.0.1.2')).first, 'refused per-client', 'an address holding two gets no third meanwhile');
  t.equal((await connect('127.0.2.1')).first, 'hello', 'another address gets in');
  const waitSize = (n: number) => new Promise<void>((resolve) => {
    const poll = () => (gauge.size === n ? resolve() : setTimeout(poll, 5));
    poll();
  });
  held.splice(0, 21).forEach((s) => s.destroy());
  await waitSize(60);
  t.ok(gauge.stressed, 'still under stress at 60');
  held.shift()!.destroy();
  await waitSize(59);
  t.notOk(gauge.stressed, 'left below 60');
  t.equal((await connect('127.0.1.30')).first, 'hello', 'the usual per-client cap again');
  t.same(changes, [[true, 80], [false, 59]], 'each change told once');
});

t.test('ByteBudget: a reservation past either figure is refused whole; releases give room back', async (t) => {
  const b = new ByteBudget(100, 60);
  t.ok(b.reserve('127.0.0.1', 50));
  t.notOk(b.reserve('127.0.0.1', 20), 'past the per-client figure');
  t.ok(b.reserve('::ffff:127.0.0.1', 10), 'the same client spelt v4-mapped, within its figure');
  t.ok(b.reserve('2001:db8::1', 40));
  t.notOk(b.reserve('2001:db8::2', 1), 'the same /64 is full');
  t.notOk(b.reserve('192.0.2.1', 1), 'past the total');
  t.equal(b.inUse, 100);
  b.release('127.0.0.1', 60);
  t.equal(b.inUse, 40);
  t.ok(b.reserve('192.0.2.1', 60));
});
