// Abusive peers found by the outside-in resource check, each replayed small: connections that never start their
// TLS handshake or never log in, more connections from one address than it may hold, an APPEND-sized literal
// before login, search keys and lists nested thousands deep, and a client that stops reading a large answer.
import t, { type Test } from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { ImapServer, type ImapServerOptions } from '../../src/imap/server.js';
import { SummaryCache } from '../../src/imap/summary-cache.js';
import { MAX_NESTING_DEPTH, MAX_OTHER_LITERAL_BYTES } from '../../src/imap/protocol/limits.js';
import { SocketClient } from '../helpers/socket-client.js';
import { message, RawClient, setupImap, type ImapFixture } from './setup.js';

/** A raw socket (no greeting awaited) that records when the server closes it. */
class Probe extends SocketClient {
  static async to(port: number, opts: { localAddress?: string } = {}): Promise<Probe> {
    const socket = net.connect({ port, host: '127.0.0.1', ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    return new Probe(socket);
  }
}

async function server(t: Test, f: ImapFixture, opts: Partial<ImapServerOptions>): Promise<{ plain: number; implicit: number; server: ImapServer }> {
  const ctx = f.app.appliance.ctx;
  const s = new ImapServer({ store: ctx.mailstore, guard: new SmtpGuards(ctx.clock), log: ctx.log, hostname: 'test', version: '0', summaries: new SummaryCache(), tls: f.app.appliance.tls, ...opts });
  const plain = (await s.listen(0, '127.0.0.1', false)).port;
  const implicit = (await s.listen(0, '127.0.0.1', true)).port;
  t.teardown(() => s.close());
  return { plain, implicit, server: s };
}

t.test('an implicit-TLS connection that never sends its ClientHello is closed at the handshake deadline', async (t) => {
  const f = await setupImap(t);
  const { implicit } = await server(t, f, { handshakeTimeoutMs: 300 });
  const silent = await Probe.to(implicit);
  const started = Date.now();
  await silent.waitClose();
  t.ok(silent.closed, 'closed by the server (it used to stay open for ever)');
  t.ok(Date.now() - started < 5000, `after ${Date.now() - started} ms`);
});

t.test('a connection that does not log in is closed at the login deadline, whatever it sends meanwhile', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const { plain, implicit } = await server(t, f, { loginTimeoutMs: 400 });
  const chatty = await RawClient.connect(plain, false);
  for (let i = 0; i < 3; i++) t.match(await chatty.command(`n${i}`, 'NOOP'), /OK/);
  t.match(await chatty.waitClose(), /\* BYE Login timeout/, 'NOOPs do not keep a pre-login connection');
  const starttls = await RawClient.connect(plain, false);
  t.match(await starttls.command('s1', 'STARTTLS'), /^s1 OK/m);
  await starttls.waitClose(); // STARTTLS, then no handshake: closed all the same
  t.ok(starttls.closed, 'STARTTLS then silence is closed too');
  const user = await RawClient.connect(implicit, true);
  await user.login(bob.address);
  await new Promise((r) => setTimeout(r, 700));
  t.match(await user.command('a1', 'NOOP'), /^a1 OK/m, 'a logged-in session is not touched by the login deadline');
});

t.test('connections per client address are capped (plain: BYE; implicit TLS: dropped); another address is served', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const { plain, implicit } = await server(t, f, { connectionCaps: { total: 6, perClient: 3 } });
  const held = [await RawClient.connect(plain, false), await RawClient.connect(implicit, true), await RawClient.connect(plain, false)];
  t.teardown(() => held.forEach((c) => c.destroy()));
  const fourth = await Probe.to(plain);
  t.match(await fourth.waitClose(), /^\* BYE \[UNAVAILABLE\] Too many connections from your address/, 'the 4th from 127.0.0.1, over both listeners');
  const fifth = await Probe.to(implicit);
  t.equal(await fifth.waitClose(), '', 'on the implicit-TLS port it is closed without a word');
  const fromElsewhere = tls.connect({ socket: net.connect({ host: '127.0.0.1', port: implicit, localAddress: '127.0.0.2' }), rejectUnauthorized: false });
  const greeting = await new Promise<string>((resolve, reject) => {
    fromElsewhere.once('data', (d: Buffer) => resolve(d.toString()));
    fromElsewhere.once('error', reject);
  });
  fromElsewhere.destroy();
  t.match(greeting, /^\* OK/, 'a client at another address is greeted');
  held[0]!.destroy();
  await held[1]!.login(bob.address); // the held ones work as usual
  const again = await RawClient.connect(plain, false);
  t.match(await again.command('n1', 'NOOP'), /^n1 OK/m, 'a closed connection frees its place');
  again.destroy();
});

t.test('before login, an APPEND literal is held to the small-literal limit (no 50 MB per connection)', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  c.send(`a1 APPEND INBOX {${MAX_OTHER_LITERAL_BYTES + 1}}\r\n`);
  t.match(await c.waitFor(/^a1 [^\n]*\n/m), /^a1 BAD Literal too large/m, 'refused before a byte of it is sent');
  c.send(`a2 APPEND INBOX {${MAX_OTHER_LITERAL_BYTES}}\r\n`);
  await c.waitFor(/^\+ [^\n]*\n/m);
  c.send(Buffer.alloc(MAX_OTHER_LITERAL_BYTES, 0x61));
  c.send('\r\n');
  t.match(await c.waitFor(/^a2 [^\n]*\n/m), /^a2 BAD Log in first/m, 'a small one is read and refused by state');
  await c.login(bob.address);
  c.send(`a3 APPEND INBOX {${MAX_OTHER_LITERAL_BYTES + 1}}\r\n`);
  t.match(await c.waitFor(/^(\+ |a3 )[^\n]*\n/m), /^\+ /m, 'once logged in, a message-sized literal is welcome');
  c.send(Buffer.concat([Buffer.from('Subject: x\r\n\r\n'), Buffer.alloc(MAX_OTHER_LITERAL_BYTES + 1 - 15, 0x61), Buffer.from('\r\n')]));
  t.match(await c.waitFor(/^a3 [^\n]*\n/m), /^a3 OK/m);
  const d = await f.raw({ implicit: true });
  d.send(`b1 APPEND INBOX {${MAX_OTHER_LITERAL_BYTES + 1}+}\r\n`);
  t.match(await d.waitClose(), /\* BYE Literal too large/, 'a non-synchronizing one before login ends the connection');
});

t.test('search keys and lists nested thousands deep: a tagged BAD, not a stack overflow', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  await f.store.deliver(message(), [{ mailboxId: bob.id }]);
  const c = await f.raw({ implicit: true });
  await c.login(bob.address);
  await c.command('s0', 'SELECT INBOX');
  const deep = 20_000;
  t.match(await c.command('s1', `SEARCH ${'('.repeat(deep)}ALL${')'.repeat(deep)}`), /^s1 BAD [^\r]*nested too deeply/m, 'parentheses');
  t.match(await c.command('s2', `SEARCH ${'NOT '.repeat(deep)}ALL`), /^s2 BAD [^\r]*nested too deeply/m, 'NOT chains');
  t.match(await c.command('s3', `SEARCH ${'OR ALL '.repeat(deep / 2)}ALL`), /^s3 BAD [^\r]*nested too deeply/m, 'OR chains');
  t.match(await c.command('s4', `FETCH 1 (${'('.repeat(deep)}${')'.repeat(deep)})`), /^s4 BAD/m, 'FETCH');
  t.match(await c.command('s5', `SEARCH ${'('.repeat(MAX_NESTING_DEPTH - 1)}ALL${')'.repeat(MAX_NESTING_DEPTH - 1)}`), /^\* SEARCH 1\r\ns5 OK/m, 'up to the limit it is a search');
  t.match(await c.command('s6', `SEARCH ${'OR UNSEEN '.repeat(50)}ALL`), /^s6 OK/m, 'a long OR chain of a real client');
  t.match(await c.command('s7', 'NOOP'), /^s7 OK/m, 'the session goes on');
});

t.test('a client that stops reading a large answer is logged out by the idle timer', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const big = Buffer.concat([Buffer.from('Subject: big\r\n\r\n'), Buffer.alloc(12 * 1024 * 1024, 0x61)]);
  await f.store.deliver(big, [{ mailboxId: bob.id }]);
  const { implicit, server: s } = await server(t, f, { idleTimeoutMs: 500 });
  const socket = tls.connect({ host: '127.0.0.1', port: implicit, rejectUnauthorized: false });
  t.teardown(() => socket.destroy());
  let text = '';
  const fetching = new Promise<void>((resolve) => {
    const onData = (d: Buffer) => {
      text += d.toString('latin1');
      if (/^a OK/m.test(text) && !text.includes('#selecting')) {
        socket.write('b SELECT INBOX\r\n');
        text += '#selecting';
      } else if (/^b OK/m.test(text)) {
        socket.off('data', onData);
        socket.write('c FETCH 1 BODY[]\r\n');
        socket.pause(); // and never read again (so it would not see the close either: the server's count tells)
        resolve();
      }
    };
    socket.on('data', onData);
  });
  socket.once('secureConnect', () => socket.write(`a LOGIN ${bob.address} "correct horse battery"\r\n`));
  await fetching;
  t.equal(s.sessionCount, 1);
  const started = Date.now();
  while (s.sessionCount > 0 && Date.now() - started < 15_000) await new Promise((r) => setTimeout(r, 50));
  t.equal(s.sessionCount, 0, `the session was closed after ${Date.now() - started} ms (it used to wait for the client for ever)`);
});
