// What an APPEND may cost the server, decided before its literal is read (RFC 3501 §7.5): over the mailbox's
// quota (RFC 9208 §5.2 OVERQUOTA), over the memory budget shared by all connections (RFC 5530 LIMIT), over
// APPENDLIMIT (RFC 7889 TOOBIG). A synchronizing literal is refused before its `+`; a non-synchronizing one
// (LITERAL+, RFC 7888) comes anyway and is read and dropped, never held. All of it is judged once the commands
// ahead of the APPEND have run (a pipelined LOGIN raises the limit), and answered in tag order. And the
// date-time an APPEND gives comes back from FETCH INTERNALDATE in the zone it was written in, which is the day
// SEARCH ON/BEFORE/SINCE compare.
import t, { type Test } from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import v8 from 'node:v8';
import vm from 'node:vm';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { ImapServer, type ImapServerOptions } from '../../src/imap/server.js';
import { SummaryCache } from '../../src/imap/summary-cache.js';
import { MAX_APPEND_LITERAL_BYTES } from '../../src/imap/protocol/limits.js';
import { message, PASSWORD, RawClient, setupImap, type ImapFixture } from './setup.js';

/** A raw implicit-TLS client that can stream a large literal with backpressure, from a chosen local address. */
class Uploader extends RawClient {
  static async to(port: number, localAddress = '127.0.0.1'): Promise<Uploader> {
    const socket = tls.connect({ socket: net.connect({ host: '127.0.0.1', port, localAddress }), rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    const c = new Uploader(socket);
    await c.waitFor(/^\* OK .*\r\n/m);
    return c;
  }

  /** Writes `total` bytes (one reused chunk, so the test itself holds little), waiting for each write to drain. */
  async stream(total: number, chunk = Buffer.alloc(1024 * 1024, 0x61)): Promise<void> {
    for (let sent = 0; sent < total; ) {
      const n = Math.min(chunk.length, total - sent);
      if (!this.socket.write(chunk.subarray(0, n))) await new Promise((resolve) => this.socket.once('drain', resolve));
      sent += n;
    }
  }
}

async function server(t: Test, f: ImapFixture, opts: Partial<ImapServerOptions> = {}): Promise<{ port: number; server: ImapServer }> {
  const ctx = f.app.appliance.ctx;
  const s = new ImapServer({ store: ctx.mailstore, guard: new SmtpGuards(ctx.clock), log: ctx.log, hostname: 'test', version: '0', summaries: new SummaryCache(), tls: f.app.appliance.tls, ...opts });
  const port = (await s.listen(0, '127.0.0.1', true)).port;
  t.teardown(() => s.close());
  return { port, server: s };
}

async function loggedIn(t: Test, port: number, user: string, localAddress?: string): Promise<Uploader> {
  const c = await Uploader.to(port, localAddress);
  t.teardown(() => c.destroy());
  await c.login(user, PASSWORD);
  return c;
}

/** The first `+` continuation or tagged answer for `tag`. */
const answer = (c: RawClient, tag: string) => c.waitFor(new RegExp(`^(\\+ |${tag} )[^\\n]*\\n`, 'm'));

/** Expects `tag`'s literal refused before its `+`; a `+` ends the test (the session then waits for the literal). */
async function refused(t: Test, c: RawClient, tag: string, re: RegExp, what: string): Promise<void> {
  const got = await answer(c, tag);
  t.match(got, re, what);
  if (got.startsWith('+')) throw new Error(`${tag}: the server asked for the literal`);
}

/** Expects `tag`'s literal asked for with a `+`; anything else ends the test (nothing more would come). */
async function continued(t: Test, c: RawClient, tag: string, what: string): Promise<void> {
  const last = (await answer(c, tag)).trimEnd().split('\n').at(-1) ?? '';
  t.match(last, /^\+ /, what);
  if (!last.startsWith('+')) throw new Error(`${tag}: ${last}`);
}

async function until(what: string, cond: () => boolean): Promise<void> {
  const started = Date.now();
  while (!cond()) {
    if (Date.now() - started > 5000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

t.test('an APPEND over quota is answered NO [OVERQUOTA] before its literal is read', async (t) => {
  const f = await setupImap(t);
  const q = await f.account('quota', { quotaBytes: 200 * 1024 });
  await f.store.deliver(Buffer.concat([message(), Buffer.alloc(150 * 1024, 0x61)]), [{ mailboxId: q.id }]);
  const c = await loggedIn(t, f.imapsPort, q.address);

  c.send('a1 APPEND INBOX {60000}\r\n');
  await refused(t, c, 'a1', /^a1 NO \[OVERQUOTA\]/m, 'synchronizing: no `+`, the literal is never sent');
  t.match(await c.command('a2', 'NOOP'), /^a2 OK/m, 'the session goes on (the server does not wait for the literal)');
  const small = message({ subject: 'fits' });
  c.send(`a3 APPEND INBOX {${small.length}}\r\n`);
  t.match(await answer(c, 'a3'), /^\+ /m, 'a message that fits is welcome');
  c.send(Buffer.concat([small, Buffer.from('\r\n')]));
  t.match(await c.waitFor(/^a3 [^\n]*\n/m), /^a3 OK \[APPENDUID/m);
  c.send('a4 APPEND Nowhere {100}\r\n');
  await refused(t, c, 'a4', /^a4 NO \[TRYCREATE\]/m, 'a missing mailbox is said before the literal too');
});

t.test('a non-synchronizing APPEND over quota is read and dropped as it comes, then answered NO [OVERQUOTA]', async (t) => {
  const f = await setupImap(t);
  const q = await f.account('quota', { quotaBytes: 1024 * 1024 });
  const c = await loggedIn(t, f.imapsPort, q.address);
  // Non-synchronizing: the bytes come anyway. They are read and dropped as they arrive: with 36 MB of a 40 MB
  // literal sent, the process holds no more than a few MB of it (it used to hold all of it, then answer).
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const size = 40 * 1024 * 1024;
  gc();
  const before = process.memoryUsage().arrayBuffers;
  c.send(`b1 APPEND INBOX {${size}+}\r\n`);
  await c.stream(36 * 1024 * 1024);
  // Let the server read what is in flight (on a loaded machine that takes more than a moment): measured until
  // it holds little, or 5 s have passed. A server that kept the bytes never gets there.
  let held = Number.POSITIVE_INFINITY;
  for (const until = Date.now() + 5000; held >= 12 * 1024 * 1024 && Date.now() < until; ) {
    await new Promise((r) => setTimeout(r, 100));
    gc();
    held = process.memoryUsage().arrayBuffers - before;
  }
  t.ok(held < 12 * 1024 * 1024, `${(held / 1048576).toFixed(1)} MB held with 36 MB of an over-quota literal sent`);
  await c.stream(size - 36 * 1024 * 1024);
  c.send('\r\n');
  t.match(await c.waitFor(/^b1 [^\n]*\n/m), /^b1 NO \[OVERQUOTA\]/m, 'answered once it has all come');
  t.match(await c.command('b2', 'STATUS INBOX (MESSAGES)'), /MESSAGES 0\)/, 'nothing was stored');
});

t.test('APPEND literals share a memory budget: one that does not fit is refused (NO [LIMIT]) and its bytes given back', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const { port, server: s } = await server(t, f, { appendBudget: { total: 1_000_000, perClient: 800_000 } });
  const a = await loggedIn(t, port, bob.address);
  const b = await loggedIn(t, port, bob.address);
  const other = await loggedIn(t, port, bob.address, '127.0.0.2');

  const big = Buffer.concat([message({ subject: 'big' }), Buffer.alloc(700_000 - 200, 0x61)]).subarray(0, 700_000);
  a.send(`a1 APPEND INBOX {${big.length}}\r\n`);
  t.match(await answer(a, 'a1'), /^\+ /m);
  a.send(big.subarray(0, 100_000)); // and holds the rest back

  b.send('b1 APPEND INBOX {200000}\r\n');
  await refused(t, b, 'b1', /^b1 NO \[LIMIT\]/m, 'over the client address share: refused before the `+`');
  t.equal(s.appendBudget.inUse, 700_000, 'the announced size of the first is reserved (before its `+`)');
  b.send(`b2 APPEND INBOX {200000+}\r\n`);
  await b.stream(200_000);
  b.send('\r\n');
  t.match(await b.waitFor(/^b2 [^\n]*\n/m), /^b2 NO \[LIMIT\]/m, 'non-synchronizing: read, dropped, refused');
  t.equal(s.appendBudget.inUse, 700_000, 'the dropped literal reserved nothing');
  other.send('o1 APPEND INBOX {400000}\r\n');
  await refused(t, other, 'o1', /^o1 NO \[LIMIT\]/m, 'another address, over the total');
  other.send('o2 APPEND INBOX {250000}\r\n');
  t.match(await answer(other, 'o2'), /^\+ /m, 'another address, within the total: welcome');
  other.send(Buffer.concat([message({ body: 'x'.repeat(250_000) }).subarray(0, 250_000), Buffer.from('\r\n')]));
  t.match(await other.waitFor(/^o2 [^\n]*\n/m), /^o2 OK/m);

  a.send(Buffer.concat([big.subarray(100_000), Buffer.from('\r\n')]));
  t.match(await a.waitFor(/^a1 [^\n]*\n/m), /^a1 OK \[APPENDUID/m);
  await until('the budget to be given back', () => s.appendBudget.inUse === 0);
  b.send('b3 APPEND INBOX {200000}\r\n');
  t.match(await answer(b, 'b3'), /^\+ /m, 'room again once the first APPEND is done');
  b.send(Buffer.concat([message({ body: 'y'.repeat(200_000) }).subarray(0, 200_000), Buffer.from('\r\n')]));
  t.match(await b.waitFor(/^b3 [^\n]*\n/m), /^b3 OK/m);

  // A client that leaves in the middle of its literal gives its reservation back.
  a.send('a2 APPEND INBOX {700000}\r\n');
  t.match(await answer(a, 'a2'), /^\+ /m);
  a.send(Buffer.alloc(1000, 0x61));
  await until('the reservation', () => s.appendBudget.inUse === 700_000);
  a.destroy();
  await until('the reservation of a closed connection to be given back', () => s.appendBudget.inUse === 0);
  t.pass('given back');
});

t.test('APPENDLIMIT is advertised once logged in, and an APPEND over it is answered NO [TOOBIG] before the `+`', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  t.notMatch(await c.command('c1', 'CAPABILITY'), /APPENDLIMIT/, 'not before login (no APPEND is possible then)');
  c.send(`L1 LOGIN "${bob.address}" "${PASSWORD}"\r\n`);
  t.match(await c.waitFor(/^L1 [^\n]*\n/m), new RegExp(`^L1 OK \\[CAPABILITY [^\\]]* APPENDLIMIT=${MAX_APPEND_LITERAL_BYTES}[ \\]]`, 'm'), 'in the LOGIN answer');
  t.match(await c.command('c2', 'CAPABILITY'), new RegExp(`^\\* CAPABILITY .* APPENDLIMIT=${MAX_APPEND_LITERAL_BYTES}( |\\r)`, 'm'));
  c.send(`t1 APPEND INBOX {${MAX_APPEND_LITERAL_BYTES + 1}}\r\n`);
  await refused(t, c, 't1', /^t1 NO \[TOOBIG\]/m, 'over the limit: NO [TOOBIG], no `+`');
  t.match(await c.command('t2', 'NOOP'), /^t2 OK/m);
});

t.test('the commands before an APPEND run before its literal is judged (pipelined CREATE, LOGIN)', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  const m = message({ subject: 'pipelined' });
  c.send(`L1 LOGIN "${bob.address}" "${PASSWORD}"\r\nc1 CREATE Projects\r\nc2 APPEND Projects {${m.length}}\r\n`);
  t.match(await answer(c, 'c2'), /^\+ /m, 'the folder created just before is there (no TRYCREATE)');
  c.send(Buffer.concat([m, Buffer.from('\r\n')]));
  t.match(await c.waitFor(/^c2 [^\n]*\n/m), /^c2 OK \[APPENDUID/m);
  c.send(`c3 APPEND Projects {${m.length}+}\r\n${m.toString('latin1')}\r\nc4 NOOP\r\n`);
  t.match(await c.waitFor(/^c4 [^\n]*\n/m), /c3 OK \[APPENDUID[^]*c4 OK/, 'LITERAL+ pipelined, answered in order');
});

t.test('an APPEND over 64 KB pipelined behind LOGIN is judged once LOGIN has run; before login it stays refused', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const m = Buffer.concat([message({ subject: 'big' }), Buffer.alloc(100_000, 0x61)]);
  const login = `L1 LOGIN "${bob.address}" "${PASSWORD}"\r\n`;

  const d = await f.raw({ implicit: true });
  d.send(Buffer.concat([Buffer.from(`${login}d2 APPEND INBOX {${m.length}+}\r\n`), m, Buffer.from('\r\nd3 NOOP\r\n')]));
  t.match(await d.waitFor(/^(\* BYE|d3 )[^\n]*\n/m), /^d2 OK \[APPENDUID[^]*^d3 OK/m, 'non-synchronizing: stored (it was BYE Literal too large)');

  const c = await f.raw({ implicit: true });
  c.send(`${login}c2 APPEND INBOX {${m.length}}\r\n`);
  await continued(t, c, 'c2', 'synchronizing: the `+` (it was BAD Literal too large, the pre-login limit)');
  c.send(Buffer.concat([m, Buffer.from('\r\n')]));
  t.match(await c.waitFor(/^c2 [^\n]*\n/m), /^c2 OK \[APPENDUID/m);

  const e = await f.raw({ implicit: true });
  e.send(`e1 APPEND INBOX {${m.length}}\r\n`);
  t.match(await answer(e, 'e1'), /^e1 BAD Literal too large/m, 'not logged in: BAD before the literal is sent');
  e.send(`L1 LOGIN "${bob.address}" "wrong"\r\ne2 APPEND INBOX {${m.length}+}\r\n`);
  t.match(await e.waitClose(), /^L1 NO[^]*^\* BYE Literal too large/m, 'still not logged in after a failed LOGIN: BYE for a non-synchronizing one');
  t.match(await c.command('c3', 'STATUS INBOX (MESSAGES)'), /MESSAGES 2\)/);
});

t.test('NO [TOOBIG] comes after the answers of the commands pipelined ahead of the APPEND', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  await c.login(bob.address);
  c.send(`x1 SELECT INBOX\r\nx2 APPEND INBOX {${MAX_APPEND_LITERAL_BYTES + 1}}\r\n`);
  const got = await answer(c, 'x2');
  t.match(got, /^x1 OK [^]*^x2 NO \[TOOBIG\]/m, 'x1 answered first (x2 NO [TOOBIG] was written at once, before it)');
  t.match(await c.command('x3', 'NOOP'), /^x3 OK/m);
});

/** APPEND of a small message (LITERAL+) with the given date-time. */
const appendDated = (c: RawClient, tag: string, dateTime: string) => {
  const m = message();
  return c.command(tag, `APPEND INBOX "${dateTime}" {${m.length}+}\r\n${m.toString('latin1')}`);
};

t.test("APPEND's date-time comes back from FETCH INTERNALDATE as written, zone included (also after COPY)", async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  await c.login(bob.address);
  t.match(await appendDated(c, 'd1', '14-Jul-2026 02:44:25 -0700'), /^d1 OK/m);
  t.match(await appendDated(c, 'd2', ' 5-Jan-2026 23:30:00 +0530'), /^d2 OK/m);
  t.match(await appendDated(c, 'd3', '05-Jan-2026 10:00:00 +0000'), /^d3 OK/m);
  await c.command('d4', 'SELECT INBOX');
  const fetched = await c.command('d5', 'FETCH 1:3 INTERNALDATE');
  t.match(fetched, /^\* 1 FETCH \(INTERNALDATE "14-Jul-2026 02:44:25 -0700"\)/m, 'the same instant, in its own zone');
  t.match(fetched, /^\* 2 FETCH \(INTERNALDATE "05-Jan-2026 23:30:00 \+0530"\)/m);
  t.match(fetched, /^\* 3 FETCH \(INTERNALDATE "05-Jan-2026 10:00:00 \+0000"\)/m);
  const [meta] = await f.store.listMessages((await f.store.getFolder(bob.id, 'INBOX'))!.id, { uids: [1] });
  t.equal(meta!.internalDate.toISOString(), '2026-07-14T09:44:25.000Z', 'the store answers the instant');
  t.match(await c.command('d6', 'COPY 1 Archive'), /^d6 OK/m);
  await c.command('d7', 'SELECT Archive');
  t.match(await c.command('d8', 'FETCH 1 INTERNALDATE'), /INTERNALDATE "14-Jul-2026 02:44:25 -0700"/, 'a copy keeps it');
  t.match(await c.command('d9', 'SEARCH ON 14-Jul-2026'), /^\* SEARCH 1\r\n/m);
});

t.test('SEARCH ON, BEFORE and SINCE compare the day INTERNALDATE shows, in its own zone (RFC 3501 §6.4.4)', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  // UTC 15-Jul-2026 05:00 and 4-Jan-2026 20:00: the day of the instant in UTC is not the day written.
  await f.store.deliver(message({ subject: 'delivered' }), [{ mailboxId: bob.id }], { internalDate: new Date('2026-07-14T23:30:00Z') });
  const c = await f.raw({ implicit: true });
  await c.login(bob.address);
  t.match(await appendDated(c, 'd1', '14-Jul-2026 22:00:00 -0700'), /^d1 OK/m);
  t.match(await appendDated(c, 'd2', ' 5-Jan-2026 01:30:00 +0530'), /^d2 OK/m);
  await c.command('d3', 'SELECT INBOX');
  const fetched = await c.command('d4', 'FETCH 1:3 INTERNALDATE');
  t.match(fetched, /^\* 1 FETCH \(INTERNALDATE "14-Jul-2026 23:30:00 \+0000"\)/m, 'delivered: UTC');
  t.match(fetched, /^\* 2 FETCH \(INTERNALDATE "14-Jul-2026 22:00:00 -0700"\)/m);
  t.match(fetched, /^\* 3 FETCH \(INTERNALDATE "05-Jan-2026 01:30:00 \+0530"\)/m);
  const cases: Array<[string, string]> = [
    ['ON 14-Jul-2026', '1 2'],
    ['ON 15-Jul-2026', ''],
    ['BEFORE 15-Jul-2026', '1 2 3'],
    ['SINCE 15-Jul-2026', ''],
    ['SINCE 14-Jul-2026', '1 2'],
    ['ON 5-Jan-2026', '3'],
    ['ON 4-Jan-2026', ''],
    ['BEFORE 5-Jan-2026', ''],
  ];
  let n = 0;
  for (const [key, hits] of cases) {
    t.match(await c.command(`s${++n}`, `SEARCH ${key}`), new RegExp(`^\\* SEARCH${hits ? ' ' + hits : ''}\r\n`, 'm'), key);
  }
});
