// POP3 corners over raw sockets (what clients rarely send) and the pure codec, table-driven: parsing,
// byte-stuffing and line ends, STLS injection, AUTH PLAIN, the mailbox lock, deletions only at QUIT,
// the failed-login lockout shared through the appliance's guard, limits and the idle timeout.
import t from 'tap';
import { startPop3 } from '../../src/pop3/server.js';
import { decodeSaslPlain, messageBody, parseCommand, POP3_LIMITS } from '../../src/pop3/protocol.js';
import { MINUTE } from '../../src/core/clock.js';
import { LineClient } from './line-client.js';
import { message, password, pop3Fixture } from './setup.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('codec: command parsing', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['USER alice@pop.example', { verb: 'USER', name: 'alice@pop.example' }],
    ['user Alice', { verb: 'USER', name: 'Alice' }],
    ['PASS with spaces inside', { verb: 'PASS', password: 'with spaces inside' }],
    ['STAT', { verb: 'STAT' }],
    ['list', { verb: 'LIST', msg: null }],
    ['LIST 3', { verb: 'LIST', msg: 3 }],
    ['UIDL', { verb: 'UIDL', msg: null }],
    ['RETR 1', { verb: 'RETR', msg: 1 }],
    ['TOP 2 0', { verb: 'TOP', msg: 2, lines: 0 }],
    ['DELE 7', { verb: 'DELE', msg: 7 }],
    ['AUTH', { verb: 'AUTH', mechanism: null, initial: null }],
    ['AUTH plain', { verb: 'AUTH', mechanism: 'PLAIN', initial: null }],
    [`AUTH PLAIN ${b64('\0a@b.c\0pw')}`, { verb: 'AUTH', mechanism: 'PLAIN', initial: b64('\0a@b.c\0pw') }],
    ['CAPA', { verb: 'CAPA' }],
    ['STLS', { verb: 'STLS' }],
    ['QUIT', { verb: 'QUIT' }],
  ];
  for (const [line, command] of cases) t.same(parseCommand(line), { ok: true, command }, line);
  const bad = ['', 'RETR', 'RETR 0', 'RETR -1', 'RETR x', 'RETR 1 2', 'TOP 1', 'TOP 1 -1', 'DELE 99999999999', 'STAT now', 'LIST 1 2', 'USER', 'PASS', 'XYZZY', 'APOP a b', 'RETR 1\u0000', 'AUTH A B C'];
  for (const line of bad) t.equal(parseCommand(line).ok, false, JSON.stringify(line));
});

t.test('codec: SASL PLAIN and message bodies', async (t) => {
  t.same(decodeSaslPlain(b64('\0alice@x.example\0s3cret')), { username: 'alice@x.example', password: 's3cret' });
  t.same(decodeSaslPlain(b64('alice@x.example\0alice@x.example\0s3cret')), { username: 'alice@x.example', password: 's3cret' }, 'authzid = authcid');
  for (const bad of [b64('bob\0alice\0pw'), b64('\0alice'), b64('\0\0pw'), 'not base64!', 'abc']) t.equal(decodeSaslPlain(bad), null, bad);

  const raw = Buffer.from('Subject: x\nFrom: a@b.c\n\n.dot first\r\nmiddle\rlast without end', 'latin1');
  t.equal(messageBody(raw).toString('latin1'), 'Subject: x\r\nFrom: a@b.c\r\n\r\n..dot first\r\nmiddle\r\nlast without end\r\n.\r\n', 'CRLF everywhere, dot-stuffed, terminated');
  t.equal(messageBody(raw, 1).toString('latin1'), 'Subject: x\r\nFrom: a@b.c\r\n\r\n..dot first\r\n.\r\n', 'TOP n: header, blank line, n body lines');
  t.equal(messageBody(raw, 0).toString('latin1'), 'Subject: x\r\nFrom: a@b.c\r\n\r\n.\r\n');
  const eight = Buffer.from([0x53, 0x3a, 0x20, 0xe9, 0x0d, 0x0a, 0x0d, 0x0a, 0xff, 0x0d, 0x0a]);
  t.same(messageBody(eight), Buffer.concat([eight, Buffer.from('.\r\n')]), '8-bit bytes pass unchanged');
});

t.test('over raw sockets', async (t) => {
  const f = await pop3Fixture(t, { trustedNetworks: [] }); // an untrusted client (loopback is trusted by default)
  const { ports } = f.app.appliance;
  const bob = await f.mailbox('bob');
  await f.deliver(bob, Buffer.from('From: x@else.example\nSubject: Bare LF\n\n.leading dot\nnext\n..two dots\n', 'latin1'));
  await f.deliver(bob, message('Second'));
  await f.deliver(bob, message('Third'));
  const clients: LineClient[] = [];
  t.teardown(() => clients.forEach((c) => c.close()));
  const connect = async (secure = true) => {
    const c = await LineClient.connect(secure ? ports.pop3s.port : ports.pop3.port, { tls: secure });
    clients.push(c);
    t.match(await c.line(), /^\+OK/, 'greeting');
    return c;
  };
  const login = async (c: LineClient, user = 'bob') => {
    t.match(await c.cmd(`USER ${user}@pop.example`), /^\+OK/);
    return c.cmd(`PASS ${password(user)}`);
  };

  t.test('plain port: no login before STLS; STLS discards pipelined plaintext', async (t) => {
    const c = await connect(false);
    const capa = await c.multi('CAPA');
    t.ok(capa.lines.includes('STLS'));
    t.notOk(capa.lines.includes('USER'));
    t.notOk(capa.lines.some((l) => l.startsWith('SASL')));
    t.match(await c.cmd('USER bob@pop.example'), /^-ERR \[AUTH\] Authentication requires TLS/);
    t.match(await c.cmd(`AUTH PLAIN ${b64('\0bob@pop.example\0' + password('bob'))}`), /^-ERR \[AUTH\] Authentication requires TLS/);
    // An attacker-injected command after STLS, in the same packet: must not run inside the TLS session.
    c.write('STLS\r\nUSER injected@pop.example\r\n');
    t.match(await c.line(), /^\+OK Begin TLS/);
    await c.startTls();
    t.match(await c.cmd('NOOP'), /^\+OK$/, 'the first answer inside TLS is to our NOOP, not to the injected USER');
    t.match(await c.cmd('STLS'), /^-ERR/, 'no second STLS');
    const after = await c.multi('CAPA');
    t.ok(after.lines.includes('USER') && after.lines.includes('SASL PLAIN'));
    t.match(await login(c), /^\+OK Logged in: 3 messages/);
    t.match(await c.cmd('QUIT'), /^\+OK/);
    await c.whenClosed();
  });

  t.test('AUTH PLAIN: continuation, initial response, cancel', async (t) => {
    const c = await connect();
    const mechs = await c.multi('AUTH');
    t.same(mechs.lines, ['PLAIN']);
    t.equal(await c.cmd('AUTH PLAIN'), '+ ');
    t.match(await c.cmd('*'), /^-ERR Authentication cancelled/);
    t.match(await c.cmd('AUTH CRAM-MD5'), /^-ERR Unsupported/);
    t.equal(await c.cmd('AUTH PLAIN'), '+ ');
    t.match(await c.cmd(b64('\0bob@pop.example\0' + password('bob'))), /^\+OK Logged in/);
    t.match(await c.cmd('QUIT'), /^\+OK Bye: 0/);
    const d = await connect();
    t.match(await d.cmd(`AUTH PLAIN ${b64('\0BOB@Pop.Example\0' + password('bob'))}`), /^\+OK Logged in/, 'initial response; the login ignores case');
    t.match(await d.cmd('QUIT'), /^\+OK/);
  });

  t.test('RETR: CRLF line ends and byte-stuffing; TOP; LIST/UIDL of one; errors', async (t) => {
    const c = await connect();
    t.match(await login(c), /^\+OK/);
    const first = await c.cmd('RETR 1');
    t.match(first, /^\+OK \d+ octets$/);
    const body = (await c.block()).toString('latin1');
    t.equal(body, 'From: x@else.example\r\nSubject: Bare LF\r\n\r\n..leading dot\r\nnext\r\n...two dots\r\n', 'bare LF to CRLF, lines starting with "." get one more');
    // RFC 1939 §11: the size counts each line end as the CRLF RETR sends (the message was delivered with bare
    // LFs: LIST and STAT said 68 where RETR sent 74 octets, as for an IMAP APPEND of a Unix file).
    const sent = Buffer.byteLength(body.replace(/^\./gm, ''), 'latin1');
    t.equal(first, `+OK ${sent} octets`);
    t.equal(await c.cmd('LIST 1'), `+OK 1 ${sent}`, 'LIST counts the octets RETR sends');
    const top = await c.multi('TOP 1 1');
    t.same(top.lines, ['From: x@else.example', 'Subject: Bare LF', '', '..leading dot']);
    t.match(await c.cmd('LIST 2'), /^\+OK 2 \d+$/);
    t.match(await c.cmd('UIDL 3'), /^\+OK 3 \d+\.\d+$/);
    t.match(await c.cmd('RETR 4'), /^-ERR No such message/);
    t.match(await c.cmd('TOP 1'), /^-ERR Syntax/);
    t.match(await c.cmd('USER again'), /^-ERR USER is not valid in this state/);
    t.match(await c.cmd('QUIT'), /^\+OK/);
  });

  t.test('the mailbox lock: a second session gets [IN-USE] until the first ends', async (t) => {
    const a = await connect();
    t.match(await login(a), /^\+OK/);
    const b = await connect(false);
    t.match(await b.cmd('STLS'), /^\+OK/);
    await b.startTls();
    t.equal(await login(b), '-ERR [IN-USE] The mailbox is already open in another POP3 session', 'the plain and TLS listeners share the lock');
    t.match(await a.cmd('QUIT'), /^\+OK/);
    await a.whenClosed();
    t.match(await login(b), /^\+OK Logged in/, 'free again after QUIT');
    b.close(); // dropped without QUIT: the lock is released all the same
    await b.whenClosed();
    const c = await connect();
    let answer = await login(c);
    for (let i = 0; i < 50 && answer.includes('IN-USE'); i++) answer = await login(c); // the server may see the close a moment later
    t.match(answer, /^\+OK Logged in/);
    t.match(await c.cmd('QUIT'), /^\+OK/);
  });

  t.test('deletions: only at QUIT; RSET and a dropped connection keep everything', async (t) => {
    const before = await f.inbox(bob);
    const a = await connect();
    t.match(await login(a), /^\+OK/);
    t.match(await a.cmd('DELE 1'), /^\+OK/);
    t.match(await a.cmd('DELE 1'), /^-ERR Message 1 already deleted/);
    t.match(await a.cmd('RETR 1'), /^-ERR No such message/);
    t.match(await a.cmd('STAT'), /^\+OK 2 \d+$/, 'STAT leaves deleted messages out');
    t.same((await a.multi('LIST')).lines.map((l) => l.split(' ')[0]), ['2', '3'], 'LIST too, numbers unchanged');
    t.match(await a.cmd('RSET'), /^\+OK 3 messages/);
    t.match(await a.cmd('STAT'), /^\+OK 3 /);
    t.match(await a.cmd('DELE 2'), /^\+OK/);
    a.close();
    await a.whenClosed();
    t.same(await f.inbox(bob), before, 'no QUIT, no UPDATE state: nothing deleted');

    const b = await connect();
    let answer = await login(b);
    for (let i = 0; i < 50 && answer.includes('IN-USE'); i++) answer = await login(b);
    t.match(answer, /^\+OK/);
    t.match(await b.cmd('DELE 2'), /^\+OK/);
    t.match(await b.cmd('QUIT'), /^\+OK Bye: 1 messages deleted/);
    t.same(await f.inbox(bob), [before[0], before[2]]);
  });

  t.test('the session works on the INBOX as it was at login', async (t) => {
    const a = await connect();
    t.match(await login(a), /^\+OK Logged in: 2 messages/);
    await f.deliver(bob, message('Arrived later'));
    t.match(await a.cmd('STAT'), /^\+OK 2 /, 'new mail is not in this session');
    const store = f.app.appliance.ctx.mailstore;
    const folder = await store.getFolder(bob, 'INBOX');
    const uids = await f.inbox(bob);
    await store.expunge(folder!.id, [uids[0]!]); // another client (IMAP) removes message 1
    t.match(await a.cmd('RETR 1'), /^-ERR Message was removed by another session/);
    t.match(await a.cmd('QUIT'), /^\+OK/);
  });

  t.test('bad input: -ERR, then a closed connection; never a crash', async (t) => {
    const a = await connect();
    for (let i = 1; i < POP3_LIMITS.maxBadCommands; i++) t.match(await a.cmd(i % 2 ? 'XYZZY' : 'RETR nope'), /^-ERR/);
    t.match(await a.cmd('FOO'), /^-ERR Too many bad commands/);
    await a.whenClosed();
    t.ok(a.closed);

    const b = await connect();
    b.write(`USER ${'x'.repeat(POP3_LIMITS.maxLineBytes + 10)}\r\n`);
    t.match(await b.line(), /^-ERR Line too long/);
    await b.whenClosed();

    const c = await connect();
    c.write(Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x0d, 0x0a]));
    t.match(await c.line(), /^-ERR/, 'binary garbage');
    c.write('\r\n');
    t.match(await c.line(), /^-ERR Empty command/);
    // Pipelined commands are answered in order.
    c.write('NOOP\r\nCAPA\r\nNOOP\r\n');
    t.equal(await c.line(), '+OK');
    t.match(await c.line(), /^\+OK Capability/);
    await c.block();
    t.equal(await c.line(), '+OK');
    t.match(await c.cmd('QUIT'), /^\+OK Bye/);

    const d = await connect();
    t.match(await login(d), /^\+OK/, 'the listener still serves');
    t.match(await d.cmd('QUIT'), /^\+OK/);
  });

  t.test('failed logins: 10 per IP or username block further attempts for the window', async (t) => {
    const carol = await f.mailbox('carol');
    void carol;
    const c = await connect();
    for (let i = 0; i < 10; i++) {
      t.match(await c.cmd('USER carol@pop.example'), /^\+OK/);
      t.match(await c.cmd('PASS wrong'), /^-ERR \[AUTH\]/);
    }
    t.match(await login(c, 'carol'), /^-ERR \[SYS\/TEMP\] Too many failed logins/, 'the right password is refused now');
    t.ok(f.app.appliance.loginGuards.loginBlocked('127.0.0.1', 'someone-else'), 'the IP is blocked, through the appliance-wide guard');
    f.app.clock.advance(15 * MINUTE);
    t.match(await login(c, 'carol'), /^\+OK Logged in/, 'after the window');
    t.match(await c.cmd('QUIT'), /^\+OK/);
  });
});

t.test('idle timeout closes the connection without applying deletions', async (t) => {
  const f = await pop3Fixture(t, { trustedNetworks: [] }); // an untrusted client (loopback is trusted by default)
  const dave = await f.mailbox('dave');
  await f.deliver(dave, message('Keep me'));
  const { ctx, tls } = f.app.appliance;
  // A listener of its own with a short autologout timer (the appliance's is RFC 1939's 10 minutes).
  const server = await startPop3({ store: ctx.mailstore, guards: f.app.appliance.loginGuards, tls, log: ctx.log, bind: '127.0.0.1', port: 0, securePort: 0, idleTimeoutMs: 300 });
  t.teardown(() => server.close());
  t.equal(POP3_LIMITS.idleTimeoutMs, 10 * MINUTE);
  const c = await LineClient.connect(server.pop3s.port, { tls: true });
  t.teardown(() => c.close());
  t.match(await c.line(), /^\+OK/);
  t.match(await c.cmd('USER dave@pop.example'), /^\+OK/);
  t.match(await c.cmd(`PASS ${password('dave')}`), /^\+OK Logged in: 1/);
  t.match(await c.cmd('DELE 1'), /^\+OK/);
  await c.whenClosed();
  t.ok(c.closed, 'closed by the server');
  t.equal((await f.inbox(dave)).length, 1, 'the marked message is still there');
  t.notOk(server.locks.isLocked(dave), 'the lock went with the session');
});
