// COMPRESS=DEFLATE (RFC 4978): raw DEFLATE both ways after `COMPRESS DEFLATE`, over STARTTLS and on a trusted
// plaintext connection, through IDLE; each response one compressed write (Z_SYNC_FLUSH); imapflow negotiates it by
// itself, and its traffic is really smaller.
import net from 'node:net';
import zlib from 'node:zlib';
import t from 'tap';
import { session, setupImap, type RawClient } from './setup.js';

/** Writes made by server-side sockets whose local port is watched (as one-write.test.ts counts them). */
const watched = new Set<number>();
let writes = 0;
const localPortOf = (s: net.Socket): number | undefined => s.localPort ?? (s as { _parent?: net.Socket })._parent?.localPort;
const write = net.Socket.prototype.write as (this: net.Socket, ...a: unknown[]) => boolean;
net.Socket.prototype.write = function (this: net.Socket, chunk: unknown, ...rest: unknown[]): boolean {
  if (watched.has(localPortOf(this) ?? -1) && this.remotePort !== undefined && watched.has(-this.remotePort)) writes++;
  return write.call(this, chunk, ...rest);
} as typeof net.Socket.prototype.write;

/** A compressed IMAP conversation over a raw client's socket (after the client's COMPRESS DEFLATE was answered OK). */
class Deflated {
  private text = '';
  private waiters: Array<() => void> = [];
  private readonly deflate = zlib.createDeflateRaw();
  private readonly inflate = zlib.createInflateRaw();
  bytesIn = 0;
  constructor(socket: net.Socket) {
    socket.removeAllListeners('data');
    socket.on('data', (chunk: Buffer | string) => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk;
      this.bytesIn += b.length;
      this.inflate.write(b);
    });
    this.inflate.on('data', (d: Buffer) => {
      this.text += d.toString('latin1');
      for (const w of this.waiters.splice(0)) w();
    });
    this.deflate.on('data', (d: Buffer) => socket.write(d));
  }
  send(line: string): void {
    this.deflate.write(line);
    this.deflate.flush(zlib.constants.Z_SYNC_FLUSH);
  }
  async waitFor(re: RegExp): Promise<string> {
    for (;;) {
      const m = re.exec(this.text);
      if (m) {
        const out = this.text.slice(0, m.index + m[0].length);
        this.text = this.text.slice(m.index + m[0].length);
        return out;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
  command(tag: string, text: string): Promise<string> {
    this.send(`${tag} ${text}\r\n`);
    return this.waitFor(new RegExp(`^${tag} (OK|NO|BAD)[^\\r]*\\r\\n`, 'm'));
  }
}

const socketOf = (c: RawClient): net.Socket => (c as unknown as { socket: net.Socket }).socket;

t.test('COMPRESS=DEFLATE', async (t) => {
  const f = await setupImap(t); // loopback is a trusted network by default: plaintext login works
  const user = await f.account('cz');
  const big = Buffer.from(`Subject: big\r\n\r\n${'All work and no play makes Jack a dull boy.\r\n'.repeat(5000)}`);
  await f.store.deliver(big, [{ mailboxId: user.id }]);
  watched.add(f.imapPort);

  await t.test('offered once logged in; unknown mechanism BAD; over STARTTLS with zlib on the socket; one write per response', async (t) => {
    const pre = await f.raw();
    t.notMatch(await pre.command('p1', 'CAPABILITY'), /COMPRESS/, 'not before login');
    pre.destroy();
    const c = await session(f, user.address);
    t.match(await c.command('a1', 'CAPABILITY'), /COMPRESS=DEFLATE/);
    t.match(await c.command('a2', 'COMPRESS GZIP'), /^a2 BAD/m);
    t.match(await c.command('a3', 'COMPRESS'), /^a3 BAD/m);
    t.match(await c.command('a4', 'COMPRESS DEFLATE'), /^a4 OK [^\r]*\r\n$/m, 'the OK itself is not compressed');
    const raw = socketOf(c);
    watched.add(-raw.localPort!);
    const z = new Deflated(raw);
    t.match(await z.command('b1', 'CAPABILITY'), /^\* CAPABILITY [^\r]*\r\nb1 OK/m);
    t.notMatch(await z.command('b2', 'CAPABILITY'), /COMPRESS=DEFLATE/, 'not offered while active');
    t.match(await z.command('b3', 'COMPRESS DEFLATE'), /^b3 NO \[COMPRESSIONACTIVE\]/m);
    writes = 0;
    const sel = await z.command('b4', 'SELECT INBOX');
    t.match(sel, /\* 1 EXISTS[^]*b4 OK \[READ-WRITE\]/);
    t.equal(writes, 1, 'SELECT: its responses in one (compressed) write');
    const before = z.bytesIn;
    writes = 0;
    const body = await z.command('b5', 'FETCH 1 BODY.PEEK[]');
    t.ok(body.includes(big.toString('latin1')), 'the message arrives whole');
    t.ok(z.bytesIn - before < big.length / 10, `compressed: ${z.bytesIn - before} octets on the wire for ${big.length}`);
    // A large FETCH goes out in pieces of ~64 KiB of protocol text (RESPONSE_WRITE_BYTES), each one compressed write.
    t.ok(writes >= 1 && writes <= Math.ceil(big.length / (64 * 1024)) + 1, `a 220 KB FETCH: ${writes} writes, one per 64 KiB piece`);
    writes = 0;
    t.match(await z.command('b7', 'FETCH 1 (FLAGS RFC822.SIZE)'), /\* 1 FETCH \(FLAGS \([^)]*\) RFC822.SIZE \d+\)\r\nb7 OK/);
    t.equal(writes, 1, 'a small FETCH: one write');
    // IDLE: the continuation and the pushed EXISTS come compressed.
    z.send('i1 IDLE\r\n');
    await z.waitFor(/^\+ [^\r]*\r\n/m);
    await f.store.deliver(Buffer.from('Subject: pushed\r\n\r\nhi\r\n'), [{ mailboxId: user.id }]);
    t.match(await z.waitFor(/^\* 2 EXISTS\r\n/m), /2 EXISTS/);
    z.send('DONE\r\n');
    t.match(await z.waitFor(/^i1 [^\r]*\r\n/m), /^i1 OK/m);
    t.match(await z.command('b6', 'LOGOUT'), /\* BYE[^]*b6 OK/);
  });

  await t.test('on a plaintext connection (a trusted network, no TLS)', async (t) => {
    const c = await f.raw();
    await c.login(user.address);
    t.match(await c.command('a1', 'COMPRESS DEFLATE'), /^a1 OK/m);
    const z = new Deflated(socketOf(c));
    t.match(await z.command('b1', 'STATUS INBOX (MESSAGES)'), /\* STATUS "INBOX" \(MESSAGES 2\)\r\nb1 OK/);
    c.destroy();
  });

  await t.test('imapflow negotiates it and its traffic is compressed', async (t) => {
    const client = await f.client(user.address);
    t.ok((client as unknown as { _inflate?: unknown })._inflate, 'imapflow switched to DEFLATE');
    const socket = (client as unknown as { socket: net.Socket }).socket;
    await client.mailboxOpen('INBOX');
    const before = socket.bytesRead;
    const msg = await client.fetchOne('1', { source: true });
    t.ok(msg && msg.source?.equals(big), 'the same bytes');
    t.ok(socket.bytesRead - before < big.length / 10, `compressed: ${socket.bytesRead - before} octets read for ${big.length}`);
    await client.logout();
  });
});
