// Regressions found by running real third-party POP3 clients (Debian's fetchmail 6.4) against the server:
// each test replays, over a real socket, the exact commands the client sent.
import t from 'tap';
import { parseCommand } from '../../src/pop3/protocol.js';
import { LineClient } from './line-client.js';
import { message, pop3Fixture } from './setup.js';

t.test('codec: USER and PASS arguments are UTF-8', async (t) => {
  // The server reads lines one byte a character (latin1); this is the line as fetchmail's bytes arrive.
  const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
  t.same(parseCommand(wire('PASS pässwört mit leer')), { ok: true, command: { verb: 'PASS', password: 'pässwört mit leer' } });
  t.same(parseCommand(wire('USER zoë@pop.example')), { ok: true, command: { verb: 'USER', name: 'zoë@pop.example' } });
  t.same(parseCommand('PASS plain ascii'), { ok: true, command: { verb: 'PASS', password: 'plain ascii' } });
});

t.test('fetchmail: USER/PASS with a non-ASCII password', async (t) => {
  const f = await pop3Fixture(t);
  const store = f.app.appliance.ctx.mailstore;
  const secret = 'pässwört mit leer';
  const fay = (await store.createAccount({ teamId: f.app.teamId, domainId: f.domainId, address: 'fay@pop.example', password: secret })).id;
  await f.deliver(fay, message('First'));
  const c = await LineClient.connect(f.app.appliance.ports.pop3s.port, { tls: true });
  t.teardown(() => c.close());
  t.match(await c.line(), /^\+OK/);
  // fetchmail 6.4.37, `protocol pop3 uidl auth password` on the implicit TLS port:
  t.match((await c.multi('CAPA')).lines, ['TOP', 'UIDL', 'RESP-CODES', 'AUTH-RESP-CODE', 'PIPELINING', 'EXPIRE NEVER', 'IMPLEMENTATION mail-appliance', 'USER', 'SASL PLAIN']);
  t.match(await c.cmd('USER fay@pop.example'), /^\+OK/);
  // The password as fetchmail sends it: the bytes of its rc file (UTF-8). It used to be read as latin1 and
  // answered "-ERR [AUTH] Invalid username or password" (a failed login counted toward the lockout) while
  // IMAP LOGIN and SMTP AUTH accepted the same password.
  c.write(Buffer.from(`PASS ${secret}\r\n`, 'utf8'));
  t.match(await c.line(), /^\+OK Logged in: 1 messages/);
  t.match(await c.cmd('STAT'), /^\+OK 1 \d+$/);
  t.match((await c.multi('UIDL')).lines, [/^1 \d+\.1$/]);
  t.match(await c.cmd('QUIT'), /^\+OK Bye/);
});
