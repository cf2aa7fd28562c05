// Issue 36: a response is one write on a socket with TCP_NODELAY, so that a client with Nagle's algorithm and
// delayed ACKs (imaplib's defaults) does not wait ~40 ms per command for the second write of an answer. The server's
// writes are counted on its own side (every socket write in this process whose local port is the listener's), and
// TCP_NODELAY is read from the accepted TCP socket (Node keeps it in the socket's kSetNoDelay field). POP3, the MX,
// submission and the API are checked for TCP_NODELAY too: they answer each command with one write already.
import net from 'node:net';
import tls from 'node:tls';
import t from 'tap';
import { message, session, setupImap, type RawClient } from './setup.js';
import { LineClient } from '../pop3/line-client.js';

/** Sockets accepted by any server in this process, by the client's port. */
const accepted = new Map<number, net.Socket>();
const emit = net.Server.prototype.emit as (this: net.Server, event: string | symbol, ...args: unknown[]) => boolean;
net.Server.prototype.emit = function (this: net.Server, event: string | symbol, ...args: unknown[]): boolean {
  if (event === 'connection' && args[0] instanceof net.Socket && args[0].remotePort) accepted.set(args[0].remotePort, args[0]);
  return emit.call(this, event, ...args);
} as typeof net.Server.prototype.emit;

/** Writes made by server-side sockets (TLS or plain) whose local port is one we watch. */
const watched = new Set<number>();
let writes: string[] = [];
/** The local port of a socket, or of the TCP socket under a TLS socket made over it (STARTTLS). */
const localPortOf = (s: net.Socket): number | undefined => s.localPort ?? (s as { _parent?: net.Socket })._parent?.localPort;
const write = net.Socket.prototype.write as (this: net.Socket, ...a: unknown[]) => boolean;
net.Socket.prototype.write = function (this: net.Socket, chunk: unknown, ...rest: unknown[]): boolean {
  if (watched.has(localPortOf(this) ?? -1)) writes.push(Buffer.isBuffer(chunk) ? chunk.toString('latin1') : String(chunk));
  return write.call(this, chunk, ...rest);
} as typeof net.Socket.prototype.write;

/** Whether Node set TCP_NODELAY on the socket (its own record of setNoDelay, kept since Node 18). */
function noDelay(socket: net.Socket): boolean {
  const field = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'kSetNoDelay');
  if (!field) throw new Error('this Node keeps no kSetNoDelay field on sockets');
  return (socket as unknown as Record<symbol, unknown>)[field] === true;
}

/** The server's side of a client socket (its local port is the server socket's remote port). */
function serverSide(client: net.Socket): net.Socket {
  const socket = accepted.get(client.localPort!);
  if (!socket) throw new Error(`no accepted socket for client port ${client.localPort}`);
  return socket;
}

/** A raw client's socket (SocketClient keeps it protected). */
function socketOf(c: RawClient | LineClient): net.Socket {
  return (c as unknown as { socket: net.Socket }).socket;
}

/** Runs a command and returns the server's writes from sending it to its tagged answer. */
async function writesOf(c: RawClient, tag: string, command: string): Promise<{ response: string; writes: string[] }> {
  writes = [];
  const response = await c.command(tag, command);
  return { response, writes: [...writes] };
}

t.test('IMAP: multi-line responses are one write, TCP_NODELAY plain and after STARTTLS', async (t) => {
  const f = await setupImap(t);
  watched.add(f.imapPort);
  watched.add(f.imapsPort);
  const user = await f.account('writes');
  for (let i = 0; i < 5; i++) await f.store.deliver(message({ subject: `m${i}` }), [{ mailboxId: user.id }]);

  const c = await f.raw();
  const tcp = serverSide(socketOf(c));
  t.ok(noDelay(tcp), 'the accepted plaintext socket has TCP_NODELAY');
  await c.starttls();
  await c.login(user.address);
  t.ok(noDelay(tcp), 'the TCP socket under the STARTTLS session still has it');
  t.notOk(tcp.destroyed, 'and is the one carrying the TLS session');

  const select = await writesOf(c, 'A1', 'SELECT INBOX');
  t.match(select.response, /\* 5 EXISTS[\s\S]*A1 OK \[READ-WRITE\]/, 'SELECT answered');
  t.equal(select.writes.length, 1, `SELECT: ${select.response.split('\r\n').length - 1} lines in one write`);

  const fetch = await writesOf(c, 'A2', 'FETCH 1:5 (FLAGS BODY.PEEK[])');
  t.equal(fetch.response.match(/^\* \d FETCH/gm)?.length, 5, 'five messages fetched');
  t.equal(fetch.writes.length, 1, 'FETCH of five messages and its tagged OK: one write');

  const store = await writesOf(c, 'A3', 'UID STORE 1:3 +FLAGS (\\Flagged)');
  t.equal(store.response.match(/^\* \d FETCH/gm)?.length, 3, 'three flag updates');
  t.equal(store.writes.length, 1, 'UID STORE: one write');

  // APPEND with a synchronizing literal: the continuation request is one write, the answer after the literal another.
  writes = [];
  const body = message({ subject: 'appended' });
  c.send(`A4 APPEND INBOX {${body.length}}\r\n`);
  await c.waitFor(/^\+ [^\r\n]*\r\n/m);
  t.equal(writes.length, 1, 'the continuation request: one write');
  writes = [];
  c.send(Buffer.concat([body, Buffer.from('\r\n')]));
  const appended = await c.waitFor(/^A4 (OK|NO|BAD)[^\r\n]*\r\n/m);
  t.match(appended, /A4 OK \[APPENDUID/, 'appended');
  t.equal(writes.length, 1, 'the answer after the literal: one write');

  // The next command reports a message delivered meanwhile (untagged EXISTS, RECENT) with its own answer, in one write.
  await f.store.deliver(message({ subject: 'delivered' }), [{ mailboxId: user.id }]);
  const noop = await writesOf(c, 'A5', 'NOOP');
  t.match(noop.response, /\* 7 EXISTS[\s\S]*A5 OK/, 'the delivered message is announced');
  t.equal(noop.writes.length, 1, 'NOOP with its updates: one write');

  // A large FETCH still goes out in bounded pieces (backpressure), not as one buffer of everything.
  for (let i = 0; i < 3; i++) await f.store.deliver(message({ subject: `big${i}`, body: 'x'.repeat(70) + '\r\n'.repeat(1) + ('y'.repeat(998) + '\r\n').repeat(60) }), [{ mailboxId: user.id }]);
  const big = await writesOf(c, 'A6', 'FETCH 1:* (BODY.PEEK[])');
  t.match(big.response, /A6 OK/, 'large FETCH answered');
  t.ok(big.writes.length >= 2, `about 190 KB in ${big.writes.length} writes of at most 64 KiB each`);
  t.ok(big.writes.every((w) => w.length <= 2 * 64 * 1024), 'no write far past the piece size');

  const implicit = await f.raw({ implicit: true });
  t.ok(noDelay(serverSide(socketOf(implicit))), 'the implicit-TLS listener\'s accepted TCP socket has TCP_NODELAY');
});

t.test('IMAP: IDLE pushes go out while the command runs, and its end is one write', async (t) => {
  const f = await setupImap(t);
  watched.add(f.imapPort);
  const user = await f.account('idler');
  await f.store.deliver(message(), [{ mailboxId: user.id }]);
  const c = await session(f, user.address);
  await c.command('B1', 'SELECT INBOX');
  c.send('B2 IDLE\r\n');
  await c.waitFor(/^\+ idling\r\n/m);
  await f.store.deliver(message({ subject: 'while idling' }), [{ mailboxId: user.id }]);
  const pushed = await c.waitFor(/^\* 2 EXISTS\r\n/m);
  t.match(pushed, /\* 2 EXISTS/, 'the new message is pushed during IDLE, not held for its tagged answer');
  writes = [];
  c.send('DONE\r\n');
  await c.waitFor(/^B2 OK[^\r\n]*\r\n/m);
  t.equal(writes.length, 1, 'the end of IDLE: one write');
});

t.test('IMAP: a literal sent apart from the end of its line (imaplib, Nagle on) is answered before that end', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('nagle');
  const c = await session(f, user.address);
  socketOf(c).setNoDelay(false);
  const body = message({ subject: 'two sends', body: 'z'.repeat(2000) });

  // The server speaks once the literal is in, without waiting for the CRLF: that write carries the ACK a client
  // with Nagle on waits for before it sends the CRLF (~40 ms of delayed ACK otherwise).
  c.send(`C1 APPEND INBOX {${body.length}}\r\n`);
  await c.waitFor(/^\+ [^\r\n]*\r\n/m);
  c.send(body);
  t.match(await c.waitFor(/^\* OK [^\r\n]*\r\n/m), /\* OK Literal received/, 'an untagged OK follows the literal');
  c.send('\r\n');
  t.match(await c.waitFor(/^C1 (OK|NO|BAD)[^\r\n]*\r\n/m), /C1 OK \[APPENDUID/, 'then the APPEND is answered');

  // Literal and CRLF in one send: nothing more is said.
  c.send(`C2 APPEND INBOX {${body.length}}\r\n`);
  await c.waitFor(/^\+ [^\r\n]*\r\n/m);
  c.send(Buffer.concat([body, Buffer.from('\r\n')]));
  t.match(await c.waitFor(/^C2 (OK|NO|BAD)[^\r\n]*\r\n/m), /^C2 OK/, 'answered with no untagged OK before it');
});

t.test('POP3, MX, submission and the API accept with TCP_NODELAY; a POP3 answer is one write', async (t) => {
  const f = await setupImap(t);
  const { pop3, pop3s, mx, submission, submissions, api } = f.app.appliance.ports;
  watched.add(pop3.port);
  const user = await f.account('pop');
  await f.store.deliver(message({ subject: 'pop me' }), [{ mailboxId: user.id }]);

  const p = await LineClient.connect(pop3.port);
  t.ok(noDelay(serverSide(socketOf(p))), 'POP3 (STLS listener)');
  await p.line();
  writes = [];
  const capa = await p.multi('CAPA');
  t.ok(capa.lines.length > 1, 'CAPA lists several capabilities');
  t.equal(writes.length, 1, 'POP3 CAPA, a multi-line answer: one write');
  p.destroy();

  for (const [name, port, secure] of [['POP3S', pop3s.port, true], ['MX', mx.port, false], ['submission', submission.port, false], ['submissions', submissions.port, true], ['API', api.port, false]] as const) {
    const socket = secure ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }) : net.connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once(secure ? 'secureConnect' : 'connect', resolve));
    t.ok(noDelay(serverSide(socket)), `${name}: the accepted socket has TCP_NODELAY`);
    socket.destroy();
  }
});
