// Abusive peers found by the outside-in resource check, replayed small on a POP3 listener of the test's own:
// an implicit-TLS connection that never starts its handshake, more connections from one address than it may
// hold, and a client that stops reading a large RETR (it held its socket and the mailbox lock for ever).
import t from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import { startPop3, type Pop3Options } from '../../src/pop3/server.js';
import { LineClient } from './line-client.js';
import { password, pop3Fixture, type Pop3Fixture } from './setup.js';
import type { Test } from 'tap';

async function listener(t: Test, f: Pop3Fixture, opts: Partial<Pop3Options>) {
  const { ctx, tls: material, loginGuards } = f.app.appliance;
  const server = await startPop3({ store: ctx.mailstore, guards: loginGuards, tls: material, log: ctx.log, bind: '127.0.0.1', port: 0, securePort: 0, ...opts });
  t.teardown(() => server.close());
  return server;
}

/** Resolves when the server closes a socket that sends nothing, with what it said. */
function closeOf(socket: net.Socket): Promise<string> {
  let said = '';
  socket.on('data', (d: Buffer) => (said += d.toString('latin1')));
  socket.on('error', () => {});
  return new Promise((resolve) => socket.once('close', () => resolve(said)));
}

t.test('an implicit-TLS connection that never sends its ClientHello is closed at the handshake deadline', async (t) => {
  const f = await pop3Fixture(t);
  const server = await listener(t, f, { handshakeTimeoutMs: 300 });
  const silent = net.connect(server.pop3s.port, '127.0.0.1');
  t.teardown(() => silent.destroy());
  const started = Date.now();
  await closeOf(silent);
  t.ok(Date.now() - started < 5000, `closed by the server after ${Date.now() - started} ms (it used to stay open for ever)`);
});

t.test('connections per client address are capped over both listeners; another address is served', async (t) => {
  const f = await pop3Fixture(t);
  const server = await listener(t, f, { connectionCaps: { total: 5, perClient: 2 } });
  const held = [await LineClient.connect(server.pop3.port), await LineClient.connect(server.pop3s.port, { tls: true })];
  t.teardown(() => held.forEach((c) => c.close()));
  for (const c of held) t.match(await c.line(), /^\+OK/);
  t.match(await closeOf(net.connect(server.pop3.port, '127.0.0.1')), /^-ERR \[SYS\/TEMP\] Too many connections from your address/, 'plain: -ERR, closed');
  t.equal(await closeOf(net.connect(server.pop3s.port, '127.0.0.1')), '', 'implicit TLS: closed without a word');
  const other = tls.connect({ socket: net.connect({ port: server.pop3s.port, host: '127.0.0.1', localAddress: '127.0.0.2' }), rejectUnauthorized: false });
  t.teardown(() => other.destroy());
  const greeting = await new Promise<string>((resolve, reject) => {
    other.once('data', (d: Buffer) => resolve(d.toString()));
    other.once('error', reject);
  });
  t.match(greeting, /^\+OK/, 'another address is greeted');
  held[0]!.close();
  await held[0]!.whenClosed();
  let again = '';
  for (let i = 0; i < 50 && !again.startsWith('+OK'); i++) {
    const c = await LineClient.connect(server.pop3.port);
    again = await c.line().catch(() => '');
    c.close();
  }
  t.match(again, /^\+OK/, 'a closed connection frees its place');
});

t.test('STLS sessions give their place back: more of them than one address may hold, one after another', async (t) => {
  // STLS strips the plain socket's 'close' listeners: the cap's with them, so every session that had
  // upgraded kept its place for good and the address was refused after perClient of them.
  const f = await pop3Fixture(t);
  const server = await listener(t, f, { connectionCaps: { total: 5, perClient: 2 } });
  for (let i = 0; i < 5; i++) {
    const c = await LineClient.connect(server.pop3.port);
    t.match(await c.line(), /^\+OK/, `session ${i + 1} of 5 greeted (2 per address)`);
    t.match(await c.cmd('STLS'), /^\+OK/);
    await c.startTls();
    t.match(await c.cmd('QUIT'), /^\+OK/);
    c.close();
    await c.whenClosed();
  }
});

t.test('a client that stops reading a large RETR is closed by the idle timer, and the mailbox lock is freed', async (t) => {
  const f = await pop3Fixture(t);
  const bob = await f.mailbox('bob');
  await f.deliver(bob, Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(12 * 1024 * 1024, 0x61)]));
  const server = await listener(t, f, { idleTimeoutMs: 500 });
  const socket = tls.connect({ host: '127.0.0.1', port: server.pop3s.port, rejectUnauthorized: false });
  t.teardown(() => socket.destroy());
  let text = '';
  await new Promise<void>((resolve) => {
    const onData = (d: Buffer) => {
      text += d.toString('latin1');
      if ((text.match(/^\+OK/gm) ?? []).length === 3) {
        socket.off('data', onData);
        socket.write('RETR 1\r\n');
        socket.pause(); // and never read again
        resolve();
      }
    };
    socket.on('data', onData);
    socket.once('secureConnect', () => socket.write(`USER bob@pop.example\r\nPASS ${password('bob')}\r\n`));
  });
  t.ok(server.locks.isLocked(bob), 'the stalled session holds the mailbox');
  const started = Date.now();
  while (server.locks.isLocked(bob) && Date.now() - started < 15_000) await new Promise((r) => setTimeout(r, 50));
  t.notOk(server.locks.isLocked(bob), `the lock was freed after ${Date.now() - started} ms (it was held for ever)`);
  const c = await LineClient.connect(server.pop3s.port, { tls: true });
  t.teardown(() => c.close());
  t.match(await c.line(), /^\+OK/);
  t.match(await c.cmd('USER bob@pop.example'), /^\+OK/);
  t.match(await c.cmd(`PASS ${password('bob')}`), /^\+OK Logged in/, 'the owner can log in again');
});
