// The SMTP connection pool on its own: host suspension is per address, shared by every pool to it.
import t from 'tap';
import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import { createTransportPool, type SmtpTarget } from '../../src/mta/transport-pool.js';

t.test('a connection limit hit by a second MX name on the same address suspends a host that is up', async (t) => {
  const open = new Set<string>();
  let connects = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    socketTimeout: 500, // the server drops an idle session after half a second
    onConnect(session, cb) {
      connects++;
      if (open.size >= 1) return cb(Object.assign(new Error('4.7.0 Too many connections from your host'), { responseCode: 421 }));
      open.add(session.id);
      cb();
    },
    onClose(session) {
      open.delete(session.id);
    },
    onData(stream, _s, cb) {
      stream.resume();
      stream.on('end', () => cb());
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as { port: number }).port;
  const pool = createTransportPool({ hostname: 'out.test', timeoutMs: 2000, connectionsPerHost: 2, log: pino({ level: 'silent' }) });
  t.teardown(async () => {
    await pool.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  // Two tenants' MX names on one shared address (Microsoft 365's <tenant>.mail.protection.outlook.com do that).
  const target = (servername: string): SmtpTarget => ({ host: '127.0.0.1', port, servername, implicitTls: false, starttls: 'off' });
  const raw = Buffer.from('Subject: x\r\n\r\nbody\r\n');
  const a = await pool.send(target('tenant-a.mail.test'), { from: 's@x.test', to: ['u@a.test'] }, raw);
  // a's session now waits idle in its pool; b's pool opens its own.
  const b = await pool.send(target('tenant-b.mail.test'), { from: 's@x.test', to: ['u@b.test'] }, raw);
  t.equal(a.ok, true, 'a delivered');
  t.match(b, { ok: false, stage: 'connect' }, 'b refused by the per-client limit (a 421 at the greeting)');
  // The server drops a's idle session; the host is idle and up.
  for (let i = 0; i < 100 && open.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(open.size, 0, 'no session open at the server');
  const before = connects;
  const again = await pool.send(target('tenant-b.mail.test'), { from: 's@x.test', to: ['u@b.test'] }, raw);
  t.equal(again.ok, true, `b delivers now (got: ${again.ok ? 'ok' : again.error.message}; connects tried: ${connects - before})`);
});
