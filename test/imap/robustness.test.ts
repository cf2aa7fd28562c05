// Hostile and broken clients: over-long lines, oversized literals (both kinds), garbage, unknown commands,
// runs of BAD, a client that leaves mid-literal, pipelining floods (also behind STARTTLS), the autologout
// timer, shutdown with open sessions, and the failed-login lockout. Every case ends in BAD/NO/BYE, never a crash.
import t from 'tap';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { ImapServer } from '../../src/imap/server.js';
import { SummaryCache } from '../../src/imap/summary-cache.js';
import { MAX_APPEND_LITERAL_BYTES, MAX_BAD_COMMANDS, MAX_LINE_BYTES, MAX_OTHER_LITERAL_BYTES, MAX_QUEUED_COMMANDS } from '../../src/imap/protocol/limits.js';
import { PASSWORD, RawClient, setupImap } from './setup.js';

/** `p`, or a rejection after `ms`: a session that stalls fails the test at once instead of hanging it. */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)));
  try {
    return await Promise.race([p, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('limits and malformed input', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw({ implicit: true });
  await c.login(bob.address);

  t.match(await c.command('r1', 'FROB'), /^r1 BAD/m, 'unknown command');
  t.match(await c.command('r2', 'SELECT (INBOX'), /^r2 BAD/m, 'unbalanced parenthesis');
  c.send('\r\n');
  t.match(await c.waitFor(/^\* BAD [^\n]*\n/m), /\* BAD/, 'an empty line');
  c.send('\x00\x01\x02 \xff\xfe\r\n');
  t.match(await c.waitFor(/BAD [^\n]*\n/), /BAD/, 'binary garbage');
  c.send(`r3 NOOP ${'x'.repeat(MAX_LINE_BYTES + 1)}\r\n`);
  t.match(await c.waitFor(/^r3 BAD [^\n]*\n/m), /Line too long/);
  t.match(await c.command('r4', 'NOOP'), /^r4 OK/m, 'the session goes on after an over-long line');
  c.send(`r5 LOGIN {${MAX_OTHER_LITERAL_BYTES + 1}}\r\n`);
  t.match(await c.waitFor(/^r5 [^\n]*\n/m), /^r5 BAD Literal too large/m, 'refused before the client sends it');
  c.send(`r6 APPEND INBOX {${MAX_APPEND_LITERAL_BYTES + 1}}\r\n`);
  t.match(await c.waitFor(/^r6 [^\n]*\n/m), /^r6 NO \[TOOBIG\]/m, 'an APPEND over APPENDLIMIT: NO [TOOBIG] before it is sent (RFC 7889)');
  t.match(await c.command('r7', 'NOOP'), /^r7 OK/m);

  // A flood of pipelined commands is answered in order (the socket is paused and resumed meanwhile).
  let flood = '';
  for (let i = 0; i < 200; i++) flood += `p${i} NOOP\r\n`;
  c.send(flood);
  const answers = await c.waitFor(/^p199 OK[^\n]*\n/m);
  t.equal((answers.match(/^p\d+ OK/gm) ?? []).length, 200);

  c.send(`r8 LOGIN {${MAX_OTHER_LITERAL_BYTES + 1}+}\r\n`);
  t.match(await c.waitClose(), /\* BYE Literal too large/, 'an oversized non-synchronizing literal ends the connection');

  const d = await f.raw({ implicit: true });
  let bads = '';
  for (let i = 0; i < MAX_BAD_COMMANDS; i++) bads += `b${i} FROB\r\n`;
  d.send(bads);
  t.match(await d.waitClose(), /\* BYE Too many invalid commands/);

  // A client that leaves in the middle of an APPEND literal: nothing is stored, the server carries on.
  const e = await f.raw({ implicit: true });
  await e.login(bob.address);
  e.send('x1 APPEND INBOX {1000}\r\n');
  await e.waitFor(/^\+ [^\n]*\n/m);
  e.send('From: half@remote.test\r\nSubject: half');
  e.destroy();
  const g = await f.raw({ implicit: true });
  await g.login(bob.address);
  t.match(await g.command('g1', 'STATUS INBOX (MESSAGES)'), /MESSAGES 0/);
  t.match(await g.command('g2', 'LOGOUT'), /\* BYE[^]*g2 OK/);
  await g.waitClose();
});

t.test('STARTTLS with a flood and an APPEND pipelined behind it: the plaintext is dropped, the TLS session works', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await f.raw();
  // Enough commands behind STARTTLS to pause reading (backpressure), and an APPEND whose literal waits to be
  // judged: both used to leave the TLS socket paused for good.
  const flood = Array.from({ length: MAX_QUEUED_COMMANDS + 4 }, (_, i) => `n${i} NOOP\r\n`).join('');
  c.send(`S1 STARTTLS\r\n${flood}a1 APPEND INBOX {5}\r\n`);
  await c.waitFor(/^S1 OK[^\n]*\n/m);
  await c.upgradeTls();
  const got = await within(5000, c.command('c1', 'NOOP'));
  t.match(got, /^c1 OK/m, 'a command over TLS is answered');
  t.notMatch(got, /^(n\d+|a1) /m, 'none of the pipelined plaintext was run (RFC 3501 §6.2.1)');
  await c.login(bob.address);
  t.match(await c.command('c2', 'SELECT INBOX'), /^c2 OK/m);
});

t.test('autologout and shutdown', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const ctx = f.app.appliance.ctx;
  const server = new ImapServer({ store: ctx.mailstore, guard: new SmtpGuards(ctx.clock), log: ctx.log, hostname: 'test', version: '0', summaries: new SummaryCache(), tls: f.app.appliance.tls, idleTimeoutMs: 500 });
  const port = (await server.listen(0, '127.0.0.1', true)).port;
  t.teardown(() => server.close());
  const idle = await RawClient.connect(port, true);
  await idle.login(bob.address);
  t.match(await idle.waitClose(), /\* BYE Autologout/, 'an idle session is logged out');
  const open = await RawClient.connect(port, true);
  await open.login(bob.address);
  await open.command('o1', 'SELECT INBOX');
  await server.close();
  t.match(await open.waitClose(), /\* BYE Server shutting down/);
  t.equal(server.sessionCount, 0);
});

t.test('failed logins lock the user and the address out', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  let failures = 0;
  while (failures < 10) {
    const c = await f.raw({ implicit: true });
    for (let i = 0; i < 3 && failures < 10; i++) {
      const r = await c.command(`x${i}`, `LOGIN ${bob.address} wrong-password`);
      t.match(r, /NO \[AUTHENTICATIONFAILED\]/);
      failures++;
    }
    c.destroy();
  }
  const c = await f.raw({ implicit: true });
  t.match(await c.command('y1', `LOGIN ${bob.address} "${PASSWORD}"`), /^y1 NO \[UNAVAILABLE\]/m, 'the right password is refused while blocked');
  const b64 = Buffer.from(`\0${bob.address}\0${PASSWORD}`).toString('base64');
  t.match(await c.command('y2', `AUTHENTICATE PLAIN ${b64}`), /^y2 NO \[UNAVAILABLE\]/m, 'AUTHENTICATE too');
  f.app.clock.advance(16 * 60 * 1000);
  t.match(await c.command('y3', `LOGIN ${bob.address} "${PASSWORD}"`), /^y3 OK/m, 'the block ends with its window');
});
