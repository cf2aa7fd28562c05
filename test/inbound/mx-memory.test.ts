// The MX's memory budget of DATA (MX_LIMITS.maxBufferedBytes / maxBufferedBytesPerClient): sessions that send
// large DATA and then hold it (no final dot) used to keep all of it in memory — 40 sessions from one address held
// 1.7 GB. Now a message that would pass the budget is dropped as it arrives and answered 452 4.3.1 (the sender
// retries), other addresses keep their share, and what a session held is given back when it ends.
import t from 'tap';
import net from 'node:net';
import { startTestApp } from '../helpers/app.js';
import { startMxListener } from '../../src/smtp/mx.js';
import type { InboundMessage, InboundReceiver } from '../../src/services/inbound.js';

const KB = 1024;

/** One SMTP session by hand: envelope, then DATA in parts, the final dot when asked. */
class Session {
  private buffer = '';
  private waiting: Array<() => void> = [];
  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      this.waiting.splice(0).forEach((w) => w());
    });
    socket.on('error', () => {});
  }

  static async open(port: number, localAddress: string, rcpt = 'alice@example.com'): Promise<Session> {
    const s = new Session(net.connect({ port, host: '127.0.0.1', localAddress }));
    await s.reply();
    for (const c of ['EHLO client.test', 'MAIL FROM:<a@sender.test>', `RCPT TO:<${rcpt}>`]) s.socket.write(`${c}\r\n`), await s.reply(/^2/);
    s.socket.write('DATA\r\n');
    await s.reply(/^354/);
    s.socket.write('Subject: big\r\n\r\n');
    return s;
  }

  /** The next complete reply (its last line), checked against `expect`. */
  async reply(expect?: RegExp): Promise<string> {
    for (;;) {
      const m = /(?:^|\n)(\d{3}) [^\r\n]*\r\n/.exec(this.buffer);
      if (m) {
        this.buffer = this.buffer.slice(m.index + m[0].length);
        const line = m[0].trim();
        if (expect && !expect.test(line)) throw new Error(`unexpected reply ${line}`);
        return line;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** Sends `bytes` of message lines and waits until the kernel took them (and a moment for the server to read). */
  async send(bytes: number): Promise<void> {
    const line = 'a'.repeat(1022) + '\r\n';
    await new Promise<void>((resolve) => this.socket.write(line.repeat(Math.ceil(bytes / 1024)), () => resolve()));
    await new Promise((r) => setTimeout(r, 300));
  }

  /** Ends DATA: the server's answer to the message. */
  async finish(): Promise<string> {
    this.socket.write('.\r\n');
    const r = await this.reply();
    this.socket.end('QUIT\r\n');
    return r;
  }

  destroy(): void {
    this.socket.destroy();
  }
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
  const sessions: Session[] = [];
  t.teardown(() => sessions.forEach((s) => s.destroy()));
  const open = async (ip: string) => {
    const s = await Session.open(port, ip);
    sessions.push(s);
    return s;
  };

  const a = await open('127.0.0.1');
  await a.send(300 * KB); // held, no final dot
  const b = await open('127.0.0.1');
  await b.send(200 * KB);
  t.match(await b.finish(), /^452 4\.3\.1 /, 'the same address past its share: 452 4.3.1, try later');
  const c = await open('127.0.0.2');
  await c.send(250 * KB);
  const d = await open('127.0.0.3');
  await d.send(100 * KB);
  t.match(await d.finish(), /^452 4\.3\.1 /, 'past the budget of all sessions');
  t.match(await a.finish(), /^250 /, 'the held messages are taken');
  t.match(await c.finish(), /^250 /);
  t.ok(received.length === 2 && received.every((n) => n > 250 * KB), 'whole, as sent');
  const e = await open('127.0.0.1');
  await e.send(380 * KB);
  t.match(await e.finish(), /^250 /, 'finished sessions gave their share back');
  const big = await open('127.0.0.1');
  await big.send(1100 * KB); // past the size limit, and held open
  const f = await open('127.0.0.1');
  await f.send(390 * KB);
  t.match(await f.finish(), /^250 /, 'an over-size message holds nothing once past the limit');
  t.match(await big.finish(), /^552 5\.3\.4 /, 'and is refused with 552 as before');
});
