// What src/smtp/listener-guard.ts adds to the MX, on a listener of the test's own with small figures: stress
// (idle squatters that fill the listener are shed, those already open included, while a sender that talks gets
// through; fewer errors and sessions per address tolerated meanwhile), SIZE advertised with its figure and a larger
// one answered 552 5.3.4 with RFC 1870's text, and one short log line per failed STARTTLS handshake.
import t from 'tap';
import net from 'node:net';
import nodemailer from 'nodemailer';
import { startTestApp } from '../helpers/app.js';
import { startMxListener, type MxLimits } from '../../src/smtp/mx.js';
import type { InboundReceiver } from '../../src/services/inbound/receiver.js';
import { SmtpDataSession } from '../helpers/smtp-data-session.js';
import { until } from '../helpers/process.js';
import { capturedLog, squat, within, type Squatter } from '../helpers/squatters.js';

const KB = 1024;
const SIZE_EXCEEDED = /^552 5\.3\.4 Message size exceeds fixed maximum message size$/;

t.test('MX listener: stress, SIZE, failed TLS handshakes', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  const now = new Date().toISOString();
  await ctx.db('domains').insert({ id: 'dom_guard', team_id: app.teamId, name: 'example.com', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  await ctx.mailstore.createAccount({ teamId: app.teamId, domainId: 'dom_guard', address: 'alice@example.com', password: 'irrelevant password' });
  let received = 0;
  const receiver: InboundReceiver = { receive: async () => ({ status: 'accepted', queueId: `q${++received}`, junk: false }) };
  const { log, lines } = capturedLog();
  const start = async (limits: Partial<MxLimits>) => {
    const mx = await startMxListener({ ...ctx, log }, { tls: app.appliance.tls, receiver, store: ctx.mailstore, limits });
    t.teardown(() => mx.close());
    return mx.address.port;
  };
  // Ten sessions (stress from 8, until below 6), 1 s of idleness under stress, 5 minutes otherwise.
  const port = await start({ maxConnections: 10, stressIdleTimeoutMs: 1000, maxMessageBytes: 64 * KB });
  const stressLines = () => lines.filter((l) => l.listener === 'mx' && /stress/.test(l.msg));

  t.test('idle squatters filling the listener are shed under stress, and a sender that talks gets through', async (t) => {
    // Ten addresses, one session each (the per-address figures play no part): seven before stress, three in it.
    const squatters: Squatter[] = [];
    for (let i = 1; i <= 10; i++) squatters.push(await squat(port, `127.0.2.${i}`));
    t.teardown(() => squatters.forEach((s) => s.socket.destroy()));
    await until('every squatter greeted', () => (squatters.every((s) => s.said().startsWith('220 ')) ? true : undefined), 10_000);
    const refusals: string[] = [];
    const deadline = Date.now() + 20_000;
    let response = '';
    while (!response) {
      const x = nodemailer.createTransport({ host: '127.0.0.1', port, localAddress: '127.0.9.9', ignoreTLS: true, connectionTimeout: 5000, greetingTimeout: 5000, socketTimeout: 10_000 } as never);
      try {
        response = ((await x.sendMail({ from: 'a@sender.test', to: 'alice@example.com', subject: 'through', text: 'x' })) as { response: string }).response;
      } catch (err) {
        refusals.push((err as Error).message);
        if (Date.now() > deadline) throw new Error(`not accepted within 20 s: ${refusals.at(-1)}`);
        await new Promise((r) => setTimeout(r, 200));
      } finally {
        x.close();
      }
    }
    t.match(response, /^250 2\.0\.0 Ok: queued as q/, 'accepted once squatters were shed');
    t.match(refusals[0], /421 .*Too many connected clients/, 'refused while the squatters held the listener');
    await within(Promise.all(squatters.map((s) => s.closed)), 20_000, 'every squatter shed');
    t.ok(squatters.every((s) => /^421 .*Timeout/m.test(s.said())), 'every squatter was shed with 421, those that came before stress too');
    await until('stress over', () => (stressLines().length === 2 ? true : undefined), 10_000);
    t.same(stressLines().map((l) => l.msg.split(':')[0]), ['entering stress', 'leaving stress'], 'entering and leaving logged once each');
    t.match(stressLines()[0], { level: 40, open: 8, capacity: 10, idleTimeoutMs: 1000 });
  });

  t.test('under stress: a second error closes the session (421 4.7.0), and an address holding a session gets no other', async (t) => {
    const slow = await start({ maxConnections: 10, stressIdleTimeoutMs: 60_000 });
    const squatters: Squatter[] = [];
    for (let i = 1; i <= 8; i++) squatters.push(await squat(slow, `127.0.4.${i}`));
    t.teardown(() => squatters.forEach((s) => s.socket.destroy()));
    await until('stress', () => (lines.some((l) => l.msg.startsWith('entering stress') && l.idleTimeoutMs === 60_000) ? true : undefined), 10_000);
    const again = await squat(slow, '127.0.4.1');
    t.teardown(() => again.socket.destroy());
    await within(again.closed, 10_000, 'the refused session closed');
    t.match(again.said(), /^421 4\.7\.0 Too many connections from your address/, 'a second session from a squatting address');
    const s = new SmtpDataSession(net.connect({ port: slow, host: '127.0.0.1', localAddress: '127.0.4.100' }));
    t.teardown(() => s.destroy());
    await s.reply(/^220 /);
    await s.command('EHLO client.test', /^250/);
    await s.command('MAIL FROM:<a@sender.test>', /^250/);
    await s.command('RCPT TO:<nobody@elsewhere.test>', /^550 /); // error 1: tolerated
    t.match(await s.command('RCPT TO:<alice@example.com>', /^250/), /^250/, 'the session goes on after one error');
    t.match(await s.command('RCPT TO:<x@elsewhere.test>', /^550 /), /^550 /, 'the second error is answered');
    t.match(await s.reply(), /^421 4\.7\.0 Too many errors/, 'then the session is closed');
  });

  // RFC 5321 §4.5.3.1.10: past the recipient limit the client goes on to DATA for the accepted ones; under stress
  // the 452s counted as errors and the session was closed, losing the message (and every retry while stress lasted).
  t.test('under stress, 452 4.5.3 (too many recipients) is no error: the sender goes on to DATA', async (t) => {
    const slow = await start({ maxConnections: 10, maxRecipients: 1, stressIdleTimeoutMs: 60_000 });
    const logged = lines.length;
    const squatters: Squatter[] = [];
    for (let i = 1; i <= 8; i++) squatters.push(await squat(slow, `127.0.7.${i}`));
    t.teardown(() => squatters.forEach((s) => s.socket.destroy()));
    await until('stress', () => (lines.slice(logged).some((l) => l.msg.startsWith('entering stress')) ? true : undefined), 10_000);
    const s = new SmtpDataSession(net.connect({ port: slow, host: '127.0.0.1', localAddress: '127.0.7.100' }));
    t.teardown(() => s.destroy());
    await s.reply(/^220 /);
    await s.command('EHLO client.test', /^250/);
    await s.command('MAIL FROM:<a@sender.test>', /^250/);
    await s.command('RCPT TO:<alice@example.com>', /^250/);
    t.match(await s.command('RCPT TO:<alice@example.com>', /^452/), /^452 4\.5\.3/, 'the second recipient is one too many');
    t.match(await s.command('RCPT TO:<alice@example.com>', /^452/), /^452 4\.5\.3/, 'the third too');
    await s.command('DATA', /^354/);
    t.match(await s.command('Subject: x\r\n\r\nbody\r\n.', /^250/), /^250/, 'the message is accepted for the first');
  });

  t.test('SIZE: advertised in EHLO; a larger SIZE at MAIL FROM, or more data, is 552 5.3.4 (RFC 1870 §6.1)', async (t) => {
    const s = new SmtpDataSession(net.connect({ port, host: '127.0.0.1', localAddress: '127.0.5.1' }));
    t.teardown(() => s.destroy());
    await s.reply(/^220/);
    await s.command('EHLO client.test', /^250/);
    t.match(s.lastReply, /^250[ -]SIZE 65536\r$/m, 'EHLO advertises the figure');
    t.match(await s.command(`MAIL FROM:<a@sender.test> SIZE=${64 * KB + 1}`, /^552/), SIZE_EXCEEDED, 'declared at MAIL FROM');
    await s.command(`MAIL FROM:<a@sender.test> SIZE=${64 * KB}`, /^250/);
    await s.command('RCPT TO:<alice@example.com>', /^250/);
    await s.command('DATA', /^354/);
    s.write('Subject: big\r\n\r\n');
    await s.send(70 * KB);
    t.match(await s.finish(), SIZE_EXCEEDED, 'sent in DATA');
  });

  t.test('STARTTLS sessions give their place back: more of them than the listener holds, one after another', async (t) => {
    // smtp-server strips the plain socket's listeners when it upgrades it to TLS: every encrypted session used
    // to keep its place for good (a Postfix relaying to the MX was refused with 421 after 50 deliveries).
    const from = stressLines().length;
    for (let i = 0; i < 15; i++) {
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, requireTLS: true, localAddress: '127.0.7.1', tls: { rejectUnauthorized: false } });
      const info = await transport.sendMail({ envelope: { from: 'someone@sender.test', to: ['alice@example.com'] }, raw: `From: someone@sender.test\r\nTo: alice@example.com\r\nSubject: ${i}\r\n\r\nhi\r\n` });
      transport.close();
      t.match(info.response, /^250/, `encrypted session ${i + 1} of 15 (the listener holds 10)`);
    }
    t.same(stressLines().slice(from), [], 'and the listener never thought itself full');
  });

  t.test('a failed STARTTLS handshake is one short warn line (client, reason), no stack trace', async (t) => {
    const from = lines.length;
    const s = new SmtpDataSession(net.connect({ port, host: '127.0.0.1', localAddress: '127.0.6.1' }));
    t.teardown(() => s.destroy());
    await s.reply(/^220/);
    await s.command('EHLO client.test', /^250/);
    await s.command('STARTTLS', /^220/);
    s.write('\x16\x03\x01\x00\x05garbage and more garbage\r\n');
    await until('the failure logged', () => (lines.slice(from).some((l) => l.level >= 40) ? true : undefined), 10_000);
    await new Promise((r) => setTimeout(r, 200));
    const got = lines.slice(from).filter((l) => l.level >= 40);
    t.equal(got.length, 1, 'one line');
    t.match(got[0], { level: 40, msg: 'TLS handshake failed', listener: 'mx', client: '127.0.6.1', reason: /\S/ });
    t.ok(typeof got[0]!.reason === 'string' && got[0]!.reason.length <= 200 && !got[0]!.reason.includes('\n'), `a short reason: ${String(got[0]!.reason)}`);
    t.notOk(lines.slice(from).some((l) => JSON.stringify(l).includes('    at ')), 'no stack trace');
  });
});
