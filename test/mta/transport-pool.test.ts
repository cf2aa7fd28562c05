// The SMTP connection pool on its own: host suspension is per address, shared by every pool to it.
import t from 'tap';
import { pino } from 'pino';
import { createTransportPool, type SmtpTarget } from '../../src/mta/transport-pool.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

t.test('a connection limit hit by a second MX name on the same address suspends a host that is up', async (t) => {
  // One session per client; an idle session is dropped after half a second.
  const server = await startSmtpSink({ starttls: false, maxSessions: 1, socketTimeout: 500 });
  const port = server.port;
  const pool = createTransportPool({ hostname: 'out.test', timeoutMs: 2000, connectionsPerHost: 2, log: pino({ level: 'silent' }) });
  t.teardown(async () => {
    await pool.close();
    await server.close();
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
  await server.idle();
  t.pass('no session open at the server');
  const before = server.connections;
  const again = await pool.send(target('tenant-b.mail.test'), { from: 's@x.test', to: ['u@b.test'] }, raw);
  t.equal(again.ok, true, `b delivers now (got: ${again.ok ? 'ok' : again.error.message}; connects tried: ${server.connections - before})`);
});
