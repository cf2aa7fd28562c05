// What src/smtp/listener-guard.ts adds to the submission listeners, on listeners of the test's own with small
// figures: stress (idle squatters that fill a listener are shed, those already open included, and a sender that
// talks gets through; fewer errors and sessions per address tolerated meanwhile), the 552 5.3.4 of RFC 1870 for a
// message over the advertised SIZE (declared at MAIL FROM or sent), and one short log line per failed TLS
// handshake instead of a stack trace.
import t from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import nodemailer from 'nodemailer';
import { startSubmission, SUBMISSION_MAX_BYTES } from '../../src/smtp/submission.js';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { ALICE, submissionFixture } from './setup.js';
import { SmtpDataSession } from '../helpers/smtp-data-session.js';
import { until } from '../helpers/process.js';
import { capturedLog, squat, within, type Squatter } from '../helpers/squatters.js';

const KB = 1024;
const SIZE_EXCEEDED = /^552 5\.3\.4 Message size exceeds fixed maximum message size$/;

t.test('submission listeners: stress, SIZE, failed TLS handshakes', async (t) => {
  const f = await submissionFixture(t);
  const { ctx, tls: material } = f.app.appliance;
  const { log, lines } = capturedLog();
  const start = (limits: Parameters<typeof startSubmission>[0]['limits']) => startSubmission({ ctx: { ...ctx, log }, store: ctx.mailstore, guards: new SmtpGuards(ctx.clock), tls: material, limits });
  // Ten sessions per listener (stress from 8, until below 6), 1 s of idleness under stress, 5 minutes otherwise.
  const listeners = await start({ maxConnections: 10, stressSocketTimeoutMs: 1000, maxMessageBytes: 64 * KB });
  t.teardown(() => listeners.close());

  /** A nodemailer client that retries once every 200 ms until its message is accepted (or `withinMs` passes). */
  async function sendRetrying(implicit: boolean, withinMs: number): Promise<{ response: string; refusals: string[] }> {
    const refusals: string[] = [];
    const deadline = Date.now() + withinMs;
    for (;;) {
      const port = implicit ? listeners.submissions.port : listeners.submission.port;
      const x = nodemailer.createTransport({ host: '127.0.0.1', port, localAddress: '127.0.9.9', secure: implicit, requireTLS: !implicit, tls: { rejectUnauthorized: false }, auth: ALICE, connectionTimeout: 5000, greetingTimeout: 5000, socketTimeout: 10_000 } as never);
      try {
        const info = (await x.sendMail({ from: ALICE.user, to: 'bob@dest.example', subject: 'through', text: 'x' })) as { response: string };
        return { response: info.response, refusals };
      } catch (err) {
        refusals.push((err as Error).message);
        if (Date.now() > deadline) throw new Error(`not accepted within ${withinMs} ms: ${refusals.at(-1)}`);
      } finally {
        x.close();
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const stressLines = (listener: string) => lines.filter((l) => l.listener === listener && /stress/.test(l.msg)).map((l) => l.msg.split(':')[0]);

  for (const implicit of [false, true]) {
    const name = implicit ? 'submissions' : 'submission';
    t.test(`${name}: idle squatters filling the listener are shed under stress, and a sender that talks gets through`, async (t) => {
      const port = implicit ? listeners.submissions.port : listeners.submission.port;
      // Ten addresses, one session each (the per-address figures play no part): seven before stress, three in it.
      const squatters: Squatter[] = [];
      for (let i = 1; i <= 10; i++) squatters.push(await squat(port, `127.0.${implicit ? 3 : 2}.${i}`));
      t.teardown(() => squatters.forEach((s) => s.socket.destroy()));
      if (!implicit) await until('every squatter greeted', () => (squatters.every((s) => s.said().startsWith('220 ')) ? true : undefined), 10_000);
      const sent = await sendRetrying(implicit, 20_000);
      t.match(sent.response, /^250 2\.0\.0 Ok: queued as /, 'accepted once squatters were shed');
      t.ok(sent.refusals.length > 0, 'refused while the squatters held the listener');
      await within(Promise.all(squatters.map((s) => s.closed)), 20_000, 'every squatter shed');
      t.pass('every squatter was shed, those that came before stress too');
      if (!implicit) t.ok(squatters.every((s) => /^421 .*Timeout/m.test(s.said())), 'with 421 (idle timeout)');
      await until('stress over', () => (stressLines(name).length === 2 ? true : undefined), 10_000);
      t.same(stressLines(name), ['entering stress', 'leaving stress'], 'entering and leaving logged once each');
      t.match(lines.find((l) => l.listener === name && l.msg.startsWith('entering stress')), { level: 40, open: 8, capacity: 10, idleTimeoutMs: 1000 });
    });
  }

  t.test('under stress: a second error closes the session (421 4.7.0), and an address holding a session gets no other', async (t) => {
    const slow = await start({ maxConnections: 10, stressSocketTimeoutMs: 60_000 });
    t.teardown(() => slow.close());
    const port = slow.submission.port;
    const squatters: Squatter[] = [];
    for (let i = 1; i <= 8; i++) squatters.push(await squat(port, `127.0.4.${i}`));
    t.teardown(() => squatters.forEach((s) => s.socket.destroy()));
    await until('stress', () => (lines.some((l) => l.msg.startsWith('entering stress') && l.idleTimeoutMs === 60_000) ? true : undefined), 10_000);
    const again = await squat(port, '127.0.4.1');
    t.teardown(() => again.socket.destroy());
    await within(again.closed, 10_000, 'the refused session closed');
    t.match(again.said(), /^421 4\.7\.0 Too many connections from your address/, 'a second session from a squatting address');
    const s = new SmtpDataSession(net.connect({ port, host: '127.0.0.1', localAddress: '127.0.4.100' }));
    t.teardown(() => s.destroy());
    await s.reply(/^220 /);
    await s.command('EHLO client.test', /^250/);
    await s.command('MAIL FROM:<a@acme.example>', /^530 /); // error 1: tolerated
    t.match(await s.command('RCPT TO:<b@dest.example>', /^530 /), /^530 /, 'the second error is answered');
    t.match(await s.reply(), /^421 4\.7\.0 Too many errors/, 'then the session is closed');
  });

  t.test('SIZE: advertised in EHLO; a larger SIZE at MAIL FROM, or more data, is 552 5.3.4 (RFC 1870 §6.1)', async (t) => {
    const auth = Buffer.from(`\0${ALICE.user}\0${ALICE.pass}`).toString('base64');
    // The production figure, on the appliance's own listener (smtp-server used to answer this one itself, without 5.3.4).
    const p = new SmtpDataSession(tls.connect({ port: f.app.appliance.ports.submissions.port, host: '127.0.0.1', rejectUnauthorized: false }));
    t.teardown(() => p.destroy());
    await p.reply(/^220/);
    await p.command('EHLO client.test', /^250/);
    t.match(p.lastReply, new RegExp(`^250[ -]SIZE ${SUBMISSION_MAX_BYTES}\r$`, 'm'), 'EHLO advertises 36 MB');
    await p.command(`AUTH PLAIN ${auth}`, /^235/);
    t.match(await p.command(`MAIL FROM:<${ALICE.user}> SIZE=${SUBMISSION_MAX_BYTES + 1}`, /^552/), SIZE_EXCEEDED, 'declared at MAIL FROM, over 36 MB');
    // A small figure of the test's own, for the data.
    const s = new SmtpDataSession(tls.connect({ port: listeners.submissions.port, host: '127.0.0.1', rejectUnauthorized: false }));
    t.teardown(() => s.destroy());
    await s.reply(/^220/);
    await s.command('EHLO client.test', /^250/);
    t.match(s.lastReply, /^250[ -]SIZE 65536\r$/m, 'EHLO advertises the figure');
    await s.command(`AUTH PLAIN ${auth}`, /^235/);
    t.match(await s.command(`MAIL FROM:<${ALICE.user}> SIZE=${64 * KB + 1}`, /^552/), SIZE_EXCEEDED, 'declared at MAIL FROM');
    await s.command(`MAIL FROM:<${ALICE.user}> SIZE=${64 * KB}`, /^250/);
    await s.command('RCPT TO:<bob@dest.example>', /^250/);
    await s.command('DATA', /^354/);
    s.write(`From: ${ALICE.user}\r\nTo: bob@dest.example\r\nSubject: big\r\n\r\n`);
    await s.send(70 * KB);
    t.match(await s.finish(), SIZE_EXCEEDED, 'sent in DATA');
  });

  t.test('a failed TLS handshake is one short warn line (client, reason), no stack trace', async (t) => {
    const from = lines.length;
    const handshakeFailures = () => lines.slice(from).filter((l) => l.msg === 'TLS handshake failed');
    // Implicit TLS: plaintext instead of a ClientHello.
    const plain = net.connect({ port: listeners.submissions.port, host: '127.0.0.1', localAddress: '127.0.5.1' });
    plain.on('error', () => {});
    plain.write('EHLO client.test\r\n');
    // Implicit TLS: an HTTP request.
    const http = net.connect({ port: listeners.submissions.port, host: '127.0.0.1', localAddress: '127.0.5.2' });
    http.on('error', () => {});
    http.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // STARTTLS, then garbage instead of a ClientHello.
    const starttls = new SmtpDataSession(net.connect({ port: listeners.submission.port, host: '127.0.0.1', localAddress: '127.0.5.3' }));
    t.teardown(() => [plain, http].forEach((s) => s.destroy()));
    t.teardown(() => starttls.destroy());
    await starttls.reply(/^220/);
    await starttls.command('EHLO client.test', /^250/);
    await starttls.command('STARTTLS', /^220/);
    starttls.write('\x16\x03\x01\x00\x05garbage and more garbage\r\n');
    await until('three handshake failures logged', () => (handshakeFailures().length >= 3 ? true : undefined), 10_000);
    await new Promise((r) => setTimeout(r, 200));
    const got = handshakeFailures();
    t.equal(got.length, 3, 'one line per failed handshake');
    t.same(got.map((l) => l.client).sort(), ['127.0.5.1', '127.0.5.2', '127.0.5.3'], 'naming the client');
    for (const l of got) {
      t.match(l, { level: 40, listener: /^submissions?$/, reason: /\S/ });
      t.ok(l.reason && (l.reason as string).length <= 200 && !(l.reason as string).includes('\n'), `a short reason: ${String(l.reason)}`);
    }
    t.notOk(lines.slice(from).some((l) => JSON.stringify(l).includes('    at ')), 'no stack trace anywhere');
  });
});
