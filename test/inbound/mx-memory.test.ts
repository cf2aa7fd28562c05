// The MX's memory budget of DATA (MX_LIMITS.maxBufferedBytes / maxBufferedBytesPerClient): sessions that send
// large DATA and then hold it (no final dot) used to keep all of it in memory — 40 sessions from one address held
// 1.7 GB. Now a message that would pass the budget is dropped as it arrives and answered 452 4.3.1 (the sender
// retries), other addresses keep their share, and what a session held is given back when it ends.
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.js';
import { startMxListener } from '../../src/smtp/mx.js';
import type { InboundMessage, InboundReceiver } from '../../src/services/inbound/receiver.js';
import { SmtpDataSession } from '../helpers/smtp-data-session.js';

const KB = 1024;

/** Lines of exactly 1 KB, so that the figures below are the bytes held. */
const LINE = 'a'.repeat(1022) + '\r\n';

/** A session from `localAddress`, walked to DATA with the message header sent. */
async function openSession(port: number, localAddress: string, rcpt = 'alice@example.com'): Promise<SmtpDataSession> {
  const s = new SmtpDataSession(net.connect({ port, host: '127.0.0.1', localAddress }));
  await s.reply();
  for (const c of ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<${rcpt}>`]) await s.command(c, /^2/);
  await s.command('DATA', /^354/);
  s.write('Subject: big\r\n\r\n');
  return s;
}

t.test('DATA held in memory is budgeted per client address and in all', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  const now = new Date().toISOString();
  await ctx.db('domains').insert({ id: 'dom_mem', team_id: app.teamId, name: 'example.com', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  await ctx.mailstore.createAccount({ teamId: app.teamId, domainId: 'dom_mem', address: 'alice@example.com', password: 'irrelevant password' });
  const received: number[] = [];
  const receiver: InboundReceiver = {
    receive: async (m: InboundMessage) => {
      received.push(m.raw.length);
      return { status: 'accepted', queueId: `q${received.length}`, junk: false };
    },
  };
  const mx = await startMxListener(ctx, {
    tls: app.appliance.tls,
    receiver,
    store: ctx.mailstore,
    limits: { maxMessageBytes: 1024 * KB, maxBufferedBytes: 600 * KB, maxBufferedBytesPerClient: 400 * KB },
  });
  t.teardown(() => mx.close());
  const port = mx.address.port;
  const sessions: SmtpDataSession[] = [];
  t.teardown(() => sessions.forEach((s) => s.destroy()));
  const open = async (ip: string) => {
    const s = await openSession(port, ip);
    sessions.push(s);
    return s;
  };

  const a = await open('127.0.0.1');
  await a.send(300 * KB, LINE); // held, no final dot
  const b = await open('127.0.0.1');
  await b.send(200 * KB, LINE);
  t.match(await b.finish(), /^452 4\.3\.1 /, 'the same address past its share: 452 4.3.1, try later');
  const c = await open('127.0.0.2');
  await c.send(250 * KB, LINE);
  const d = await open('127.0.0.3');
  await d.send(100 * KB, LINE);
  t.match(await d.finish(), /^452 4\.3\.1 /, 'past the budget of all sessions');
  t.match(await a.finish(), /^250 /, 'the held messages are taken');
  t.match(await c.finish(), /^250 /);
  t.ok(received.length === 2 && received.every((n) => n > 250 * KB), 'whole, as sent');
  const e = await open('127.0.0.1');
  await e.send(380 * KB, LINE);
  t.match(await e.finish(), /^250 /, 'finished sessions gave their share back');
  const big = await open('127.0.0.1');
  await big.send(1100 * KB, LINE); // past the size limit, and held open
  const f = await open('127.0.0.1');
  await f.send(390 * KB, LINE);
  t.match(await f.finish(), /^250 /, 'an over-size message holds nothing once past the limit');
  t.match(await big.finish(), /^552 5\.3\.4 /, 'and is refused with 552 as before');
});
