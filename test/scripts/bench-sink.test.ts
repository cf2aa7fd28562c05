// bench-send's lean sink MX (scripts/bench-sink.ts) against real clients: the box's own MTA pool (nodemailer,
// STARTTLS, PIPELINING) and Python's smtplib. The benchmark's figures are only worth anything if the sink
// behaves like an MX to the client and counts what it was given.
import { execFile } from 'node:child_process';
import net from 'node:net';
import t from 'tap';
import { pino } from 'pino';
import { createTransportPool } from '../../src/mta/transport-pool.js';
import { startLeanSink } from '../../scripts/bench-sink.js';
import { sinkTlsMaterial } from '../helpers/smtp-sink.js';

async function sink() {
  const { key, cert } = await sinkTlsMaterial();
  const got: Array<{ id: string | undefined; bytes: number }> = [];
  let connections = 0;
  const s = await startLeanSink({ key, cert, tls: true, name: 'sink.test', onMessage: (id, bytes) => got.push({ id, bytes }), onConnect: () => connections++ });
  return { ...s, got, connections: () => connections };
}

t.test('the MTA delivers over STARTTLS with pipelining, one session for many messages', async (t) => {
  const s = await sink();
  const pool = createTransportPool({ hostname: 'out.test', timeoutMs: 5000, connectionsPerHost: 1, log: pino({ level: 'silent' }) });
  t.teardown(async () => {
    await pool.close();
    await s.close();
  });
  const target = { host: '127.0.0.1', port: s.port, servername: 'mx.test', implicitTls: false, starttls: 'required' as const };
  // A body line that starts with a dot (stuffed by the client) and one long enough to span TCP/TLS chunks.
  const message = (i: number) => Buffer.from(`Message-ID: <m${i}@out.test>\r\nSubject: ${i}\r\n\r\n.leading dot\r\n${'x'.repeat(70_000)}\r\nend\r\n`);
  for (let i = 0; i < 5; i++) {
    const r = await pool.send(target, { from: 's@out.test', to: ['a@x.test', 'b@x.test'] }, message(i));
    t.match(r, { ok: true, secure: true, accepted: ['a@x.test', 'b@x.test'] }, `message ${i} accepted over TLS`);
  }
  t.same(
    s.got.map((m) => m.id),
    [0, 1, 2, 3, 4].map((i) => `<m${i}@out.test>`),
    'each message counted once, with its Message-ID',
  );
  t.ok(s.got.every((m) => m.bytes > 70_000), 'the whole body read');
  t.equal(s.connections(), 1, 'one session carried them all');
});

t.test("Python's smtplib: STARTTLS, an empty message, a message without Message-ID, RSET and commands out of order", async (t) => {
  const s = await sink();
  t.teardown(() => s.close());
  const script = `
import smtplib, ssl, sys
c = smtplib.SMTP('127.0.0.1', ${s.port}, timeout=10)
code, _ = c.ehlo()
assert code == 250 and c.has_extn('starttls') and c.has_extn('pipelining'), c.esmtp_features
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
c.starttls(context=ctx)
c.ehlo()
assert not c.has_extn('starttls'), 'STARTTLS offered again after TLS'
print(c.docmd('RCPT TO:<a@x.test>')[0])          # before MAIL: 503
c.sendmail('s@x.test', ['a@x.test'], b'')          # an empty message
c.sendmail('s@x.test', ['a@x.test'], b'Subject: no id\\r\\n\\r\\nhi\\r\\n')
c.mail('s@x.test'); c.rset()
print(c.docmd('DATA')[0])                          # after RSET: 503
print(c.docmd('VRFY x')[0])                        # unknown here: 500
c.quit()
`;
  // Asynchronously: the sink answers on this process's event loop.
  const py = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile('python3', ['-c', script], { timeout: 20_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })),
  );
  t.equal(py.code, 0, py.stderr);
  t.same(py.stdout.trim().split('\n'), ['503', '503', '500'], 'out-of-sequence and unknown commands refused');
  t.equal(s.got.length, 2, 'two messages counted');
  t.same(
    s.got.map((m) => m.id),
    [undefined, undefined],
    'neither had a Message-ID',
  );
});

t.test('commands pipelined in one write are answered in order, and the end of DATA may straddle writes', async (t) => {
  const s = await sink();
  t.teardown(() => s.close());
  const socket = net.connect(s.port, '127.0.0.1');
  let received = '';
  socket.on('data', (c: Buffer) => (received += c.toString('latin1')));
  const until = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out: ${received}`)), 5000);
      const check = () => {
        if (received.split('\r\n').filter((l) => /^\d{3} /.test(l)).length >= n) {
          clearTimeout(timer);
          socket.off('data', check);
          resolve();
        }
      };
      socket.on('data', check);
      check();
    });
  await until(1); // greeting
  socket.write('EHLO c.test\r\nMAIL FROM:<s@x.test>\r\nRCPT TO:<a@x.test>\r\nDATA\r\n');
  await until(5);
  socket.write('Message-ID: <split@x.test>\r\n\r\nbody\r');
  socket.write('\n.');
  socket.write('\r\nQUIT\r\n');
  await until(7);
  socket.destroy();
  const replies = received.split('\r\n').filter((l) => /^\d{3} /.test(l)).map((l) => l.slice(0, 3));
  t.same(replies, ['220', '250', '250', '250', '354', '250', '221'], 'greeting, EHLO, MAIL, RCPT, DATA, end of data, QUIT');
  t.same(s.got, [{ id: '<split@x.test>', bytes: s.got[0]?.bytes }], 'the message counted once');
});
