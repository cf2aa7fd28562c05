// Abusive peers found by the outside-in resource check, replayed on submission listeners of the test's own with
// small figures: raw TCP connections to the implicit-TLS port that never start a handshake (smtp-server keeps
// them for its whole socket timeout; 500 from one address filled the listener for everyone), and DATA held in
// memory (sessions that send large DATA and then hold it).
import t from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import { startSubmission } from '../../src/smtp/submission.js';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { ALICE, submissionFixture } from './setup.js';
import { SmtpDataSession } from '../helpers/smtp-data-session.js';

const KB = 1024;

/** What the server says on a new connection before it closes or greets (first line), from `localAddress`. */
function firstWords(port: number, localAddress = '127.0.0.1'): Promise<{ said: string; socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let said = '';
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      said += d.toString('latin1');
      if (said.includes('\r\n')) resolve({ said, socket });
    });
    socket.on('close', () => resolve({ said, socket }));
  });
}

/** An authenticated session on the implicit-TLS port from `localAddress`, walked to DATA with the message header sent. */
async function openSession(port: number, localAddress: string): Promise<SmtpDataSession> {
  const s = new SmtpDataSession(tls.connect({ socket: net.connect({ port, host: '127.0.0.1', localAddress }), rejectUnauthorized: false }));
  await s.reply(/^220/);
  const auth = Buffer.from(`\0${ALICE.user}\0${ALICE.pass}`).toString('base64');
  for (const [c, ok] of [['EHLO client.test', /^250/], [`AUTH PLAIN ${auth}`, /^235/], [`MAIL FROM:<${ALICE.user}>`, /^250/], ['RCPT TO:<bob@dest.example>', /^250/], ['DATA', /^354/]] as const) {
    await s.command(c, ok);
  }
  s.write(`From: ${ALICE.user}\r\nTo: bob@dest.example\r\nSubject: big\r\n\r\n`);
  return s;
}

t.test('submission under abuse', async (t) => {
  const f = await submissionFixture(t);
  const { ctx, tls: material } = f.app.appliance;
  const listeners = await startSubmission({
    ctx,
    store: ctx.mailstore,
    guards: new SmtpGuards(ctx.clock),
    tls: material,
    limits: { maxConnectionsPerClient: 3, maxBufferedBytes: 600 * KB, maxBufferedBytesPerClient: 400 * KB },
  });
  t.teardown(() => listeners.close());
  const plain = listeners.submission.port;
  const implicit = listeners.submissions.port;

  t.test('connections per client address are capped from the TCP accept, over both listeners', async (t) => {
    const held: net.Socket[] = [];
    t.teardown(() => held.forEach((s) => s.destroy()));
    for (let i = 0; i < 3; i++) {
      const s = net.connect(implicit, '127.0.0.1'); // never starts its TLS handshake
      s.on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      held.push(s);
    }
    await new Promise((r) => setTimeout(r, 100));
    const refused = await firstWords(plain);
    held.push(refused.socket);
    t.match(refused.said, /^421 4\.7\.0 Too many connections from your address/, 'the STARTTLS port answers 421');
    const dropped = await firstWords(implicit);
    t.equal(dropped.said, '', 'the implicit-TLS port closes without a word');
    const other = await firstWords(plain, '127.0.0.2');
    held.push(other.socket);
    t.match(other.said, /^220 /, 'another address is greeted');
    held.shift()!.destroy();
    let again = '';
    for (let i = 0; i < 50 && !again.startsWith('220'); i++) {
      const r = await firstWords(plain);
      r.socket.destroy();
      again = r.said;
    }
    t.match(again, /^220 /, 'a closed connection frees its place');
  });

  t.test('DATA held in memory is budgeted: past it 452 4.3.1, given back when sessions end', async (t) => {
    const sessions: SmtpDataSession[] = [];
    t.teardown(() => sessions.forEach((s) => s.destroy()));
    const open = async (ip: string) => {
      const s = await openSession(implicit, ip);
      sessions.push(s);
      return s;
    };
    // Addresses of their own: the sockets of the test above may still be counted for a moment.
    const a = await open('127.0.1.1');
    await a.send(300 * KB);
    const b = await open('127.0.1.1');
    await b.send(200 * KB);
    t.match(await b.finish(), /^452 4\.3\.1 /, 'the same address past its share');
    const c = await open('127.0.1.2');
    await c.send(250 * KB);
    const d = await open('127.0.1.3');
    await d.send(100 * KB);
    t.match(await d.finish(), /^452 4\.3\.1 /, 'past the budget of all sessions');
    t.match(await a.finish(), /^250 /, 'the held messages are accepted');
    t.match(await c.finish(), /^250 /);
    const e = await open('127.0.1.1');
    await e.send(380 * KB);
    t.match(await e.finish(), /^250 /, 'finished sessions gave their share back');
  });
});
