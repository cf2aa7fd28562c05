// The outbound MTA over real sockets: a dns2 server for MX/A records, smtp-server sinks as remote MXes and
// relays. Several sinks share one port on different loopback addresses (127.0.0.x) because an MTA
// instance talks to every MX on the same port (MAIL_OUTBOUND_PORT).
import { createServer, type Server, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import { createResolver } from '../../src/dns/resolver.js';
import { createMta, type MtaOptions } from '../../src/mta/deliver.js';
import { SUSPEND_MS } from '../../src/mta/transport-pool.js';
import type { DeliveryRequest, Mta, RecipientOutcome } from '../../src/mta/types.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { startSmtpSink, type SinkOptions, type SmtpSink } from '../helpers/smtp-sink.js';

const log = pino({ level: 'silent' });
const EHLO_NAME = 'out.appliance.test';

/** A message with the bytes SMTP likes to mangle: a leading dot, a lone "." line, trailing spaces, 8-bit text. */
const RAW = Buffer.from(
  [
    'From: Sender <news@sender.test>',
    'To: alice@example.test',
    'Subject: Hello',
    'Message-ID: <em_1@out.appliance.test>',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'Line one   ',
    '.leading dot',
    '.',
    '..two dots',
    'Grüße',
    '',
  ].join('\r\n'),
);

interface World {
  dns: TestDns;
  sink(opts?: SinkOptions): Promise<SmtpSink>;
  mta(opts: Partial<MtaOptions> & { outboundPort: number }): Mta;
  /** MX records for `domain`: each host name gets an A record. */
  mx(domain: string, hosts: Array<[host: string, priority: number, address: string | null]>): void;
}

async function world(t: Test): Promise<World> {
  const dns = await startDns();
  const resolver = createResolver([dns.server], 1000);
  const closers: Array<() => Promise<void>> = [];
  t.teardown(async () => {
    // MTAs first (QUIT their sessions), then the sinks, then DNS.
    for (const close of closers.reverse()) await close();
    await dns.stop();
  });
  return {
    dns,
    async sink(opts) {
      const s = await startSmtpSink(opts);
      closers.push(() => s.close());
      return s;
    },
    mta(opts) {
      const m = createMta({ dns: resolver, hostname: EHLO_NAME, relayUrl: null, routes: [], connectionsPerHost: 2, smtpTimeoutMs: 2000, log, ...opts });
      closers.push(() => m.close());
      return m;
    },
    mx(domain, hosts) {
      dns.set(
        'MX',
        domain,
        hosts.map(([exchange, priority]) => ({ exchange, priority })),
      );
      for (const [host, , address] of hosts) if (address) dns.set('A', host, [address]);
    },
  };
}

const request = (domain: string, recipients: string[], extra: Partial<DeliveryRequest> = {}): DeliveryRequest => ({
  domain,
  recipients,
  envelopeFrom: 'bounces+em_1@sender.test',
  raw: RAW,
  tlsMode: 'opportunistic',
  ...extra,
});

const byRecipient = (outcomes: RecipientOutcome[]) => Object.fromEntries(outcomes.map((o) => [o.recipient, o]));

t.test('delivers the message unchanged, in one transaction for all recipients at a domain', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port });

  const rcpts = ['alice@example.test', 'bob@example.test', 'carol@example.test'];
  const res = await mta.deliver(request('example.test', rcpts));

  t.same(res.route, { kind: 'direct', name: 'default', host: 'mx.example.test', port: sink.port, tls: false });
  t.same(
    res.outcomes.map((o) => [o.recipient, o.status, o.code, o.reply.code, o.category]),
    rcpts.map((r) => [r, 'delivered', '2.0.0', 250, undefined]),
  );
  t.match(res.outcomes[0]!.reply.message, /^250 Ok: queued/);
  t.equal(sink.transactions.length, 1, 'one SMTP transaction');
  const tx = sink.transactions[0]!;
  t.equal(tx.from, 'bounces+em_1@sender.test');
  t.same(tx.to, rcpts);
  t.equal(tx.helo, EHLO_NAME);
  t.ok(tx.raw.equals(RAW), 'the bytes arrive unchanged (dot-stuffing undone, 8-bit kept)');
});

t.test('per-recipient outcomes: 250, 550 5.1.1 and 452 4.2.2 in one transaction', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  sink.recipients.set('bob@example.test', { code: 550, text: '5.1.1 <bob@example.test>: Recipient address rejected: User unknown in virtual mailbox table' });
  sink.recipients.set('carol@example.test', { code: 452, text: '4.2.2 The email account that you tried to reach is over quota.' });
  const mta = w.mta({ outboundPort: sink.port });

  const res = await mta.deliver(request('example.test', ['alice@example.test', 'bob@example.test', 'carol@example.test']));
  const o = byRecipient(res.outcomes);
  t.match(o['alice@example.test'], { status: 'delivered', code: '2.0.0' });
  t.match(o['bob@example.test'], {
    status: 'bounced',
    code: '5.1.1',
    category: 'invalid_mailbox',
    reply: { code: 550, enhanced: '5.1.1', message: '550 5.1.1 <bob@example.test>: Recipient address rejected: User unknown in virtual mailbox table' },
  });
  t.match(o['carol@example.test'], { status: 'deferred', code: '4.2.2', category: 'mailbox_full', reply: { code: 452, enhanced: '4.2.2' } });
  t.same(sink.accepted.map((tx) => tx.to), [['alice@example.test']]);
});

// Postfix answers every recipient restriction as "<rcpt>: Recipient address rejected: <reason>"; a
// check_recipient_access REJECT is a policy refusal, not an unknown mailbox (which would be suppressed).
// The replies are those Postfix 3.7 sent in the interop run.
t.test('Postfix restriction replies are classified by their reason, not by the stage label', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  sink.recipients.set('denied@example.test', { code: 554, text: '5.7.1 <denied@example.test>: Recipient address rejected: Access denied' });
  sink.recipients.set('policy@example.test', { code: 550, text: '5.7.1 <policy@example.test>: Recipient address rejected: Rejected by local policy' });
  sink.recipients.set('nodomain@example.test', { code: 450, text: '4.1.2 <nodomain@example.test>: Recipient address rejected: Domain not found' });
  sink.recipients.set('bob@example.test', { code: 550, text: '5.1.1 <bob@example.test>: Recipient address rejected: User unknown in virtual mailbox table' });
  const mta = w.mta({ outboundPort: sink.port });

  const rcpts = ['alice@example.test', 'denied@example.test', 'policy@example.test', 'nodomain@example.test', 'bob@example.test'];
  const o = byRecipient((await mta.deliver(request('example.test', rcpts))).outcomes);
  t.match(o['alice@example.test'], { status: 'delivered' });
  t.match(o['denied@example.test'], { status: 'bounced', code: '5.7.1', category: 'policy' });
  t.match(o['policy@example.test'], { status: 'bounced', code: '5.7.1', category: 'policy' });
  t.match(o['nodomain@example.test'], { status: 'deferred', code: '4.1.2', category: 'dns_failure' });
  t.match(o['bob@example.test'], { status: 'bounced', code: '5.1.1', category: 'invalid_mailbox' });
});

interface RecordingMx {
  port: number;
  /** Recipients of each message received, in order. */
  transactions: string[][];
  /** Every RCPT TO address the server was sent, accepted or not. */
  rcptSeen: string[];
  /** Whether each MAIL FROM carried SMTPUTF8. */
  smtpUtf8: boolean[];
}

/**
 * A remote MX that records the dialogue: with `limit`, it answers RCPT past that many recipients as Postfix 3.7
 * does with `smtpd_recipient_limit = 2` (captured in the interop run): "452 4.5.3 Error: too many recipients";
 * with `hideSmtpUtf8`, its EHLO does not offer SMTPUTF8 (Postfix with `smtputf8_enable = no`).
 */
async function recordingMx(t: Test, opts: { limit?: number; reply?: { code: number; text: string }; hideSmtpUtf8?: boolean } = {}): Promise<RecordingMx> {
  const mx: RecordingMx = { port: 0, transactions: [], rcptSeen: [], smtpUtf8: [] };
  const reply = opts.reply ?? { code: 452, text: '4.5.3 Error: too many recipients' };
  const server = new SMTPServer({
    name: 'pf.remote.test',
    logger: false,
    disableReverseLookup: true,
    hideENHANCEDSTATUSCODES: true,
    hideSMTPUTF8: opts.hideSmtpUtf8 === true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    onMailFrom(_address, session, callback) {
      mx.smtpUtf8.push(Boolean((session.envelope as { smtpUtf8?: boolean }).smtpUtf8));
      callback();
    },
    onRcptTo(address, session, callback) {
      mx.rcptSeen.push(address.address);
      if (opts.limit !== undefined && session.envelope.rcptTo.length >= opts.limit) return callback(Object.assign(new Error(reply.text), { responseCode: reply.code }));
      callback();
    },
    onData(stream, session, callback) {
      stream.resume();
      stream.on('end', () => {
        mx.transactions.push(session.envelope.rcptTo.map((r) => r.address));
        callback(null, `2.0.0 Ok: queued as Q${mx.transactions.length}`);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  mx.port = (server.server.address() as { port: number }).port;
  return mx;
}

// RFC 5321 §4.5.3.1.8/§4.5.3.1.10: recipients refused only for the server's per-transaction limit go in the
// next transaction at once, not behind the job queue's backoff (a 50-recipient email at a 2-recipient
// server would otherwise need 25 attempts spread over days, and fail past 48 hours).
t.test('a server’s recipient limit (452 4.5.3 too many recipients): the rest go in further transactions at once', async (t) => {
  const w = await world(t);
  const mx = await recordingMx(t, { limit: 2 });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: mx.port });

  const rcpts = ['a@example.test', 'b@example.test', 'c@example.test', 'd@example.test', 'e@example.test'];
  const res = await mta.deliver(request('example.test', rcpts));
  t.same(mx.transactions, [['a@example.test', 'b@example.test'], ['c@example.test', 'd@example.test'], ['e@example.test']]);
  t.same(
    res.outcomes.map((o) => [o.recipient, o.status, o.reply.message]),
    [
      ['a@example.test', 'delivered', '250 2.0.0 Ok: queued as Q1'],
      ['b@example.test', 'delivered', '250 2.0.0 Ok: queued as Q1'],
      ['c@example.test', 'delivered', '250 2.0.0 Ok: queued as Q2'],
      ['d@example.test', 'delivered', '250 2.0.0 Ok: queued as Q2'],
      ['e@example.test', 'delivered', '250 2.0.0 Ok: queued as Q3'],
    ],
  );
});

t.test('a 552 for the recipient limit (RFC 821’s code) is temporary, and handled the same way', async (t) => {
  const w = await world(t);
  const mx = await recordingMx(t, { limit: 1, reply: { code: 552, text: '5.5.3 Too many recipients' } });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: mx.port });

  const res = await mta.deliver(request('example.test', ['a@example.test', 'b@example.test']));
  t.same(mx.transactions, [['a@example.test'], ['b@example.test']]);
  t.same(res.outcomes.map((o) => o.status), ['delivered', 'delivered']);
});

t.test('a limit that lets nothing through defers the rest (no loop, no bounce)', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  sink.recipients.set('b@example.test', { code: 552, text: '5.5.3 Too many recipients' });
  const mta = w.mta({ outboundPort: sink.port });

  const o = byRecipient((await mta.deliver(request('example.test', ['a@example.test', 'b@example.test']))).outcomes);
  t.match(o['a@example.test'], { status: 'delivered' });
  t.match(o['b@example.test'], { status: 'deferred', code: '4.5.3' });
  t.equal(sink.transactions.length, 1, 'b refused again in the second transaction, which then has no recipient');
});

// RFC 6531 §3.4: an internationalized address never goes to a server that does not offer SMTPUTF8. nodemailer
// sent "RCPT TO:<ütf@remote.test>" without the keyword to a Postfix with smtputf8_enable = no (interop run);
// such a recipient now bounces with 5.6.7, as Postfix's own client does, and is not suppressed.
t.test('a non-ASCII address and a server without SMTPUTF8: that recipient bounces 5.6.7, the others go', async (t) => {
  const w = await world(t);
  const mx = await recordingMx(t, { hideSmtpUtf8: true });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: mx.port });

  const res = await mta.deliver(request('example.test', ['alice@example.test', 'jörg@example.test']));
  t.same(mx.rcptSeen, ['alice@example.test'], 'the internationalized address was never sent');
  t.same(mx.transactions, [['alice@example.test']]);
  const o = byRecipient(res.outcomes);
  t.match(o['alice@example.test'], { status: 'delivered' });
  t.match(o['jörg@example.test'], { status: 'bounced', code: '5.6.7', category: 'unknown', reply: { message: /does not offer SMTPUTF8, which the address jörg@example.test needs/ } });

  const only = await mta.deliver(request('example.test', ['jörg@example.test']));
  t.match(only.outcomes, [{ recipient: 'jörg@example.test', status: 'bounced', code: '5.6.7' }]);
  t.same(mx.rcptSeen, ['alice@example.test'], 'no transaction at all for a message whose recipients all need SMTPUTF8');
  t.equal(mx.smtpUtf8.length, 1);

  const again = await mta.deliver(request('example.test', ['bob@example.test']));
  t.match(again.outcomes, [{ status: 'delivered' }], 'the pooled session is still usable');
});

t.test('a server that offers SMTPUTF8 gets the internationalized address, with the keyword', async (t) => {
  const w = await world(t);
  const mx = await recordingMx(t);
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: mx.port });
  const res = await mta.deliver(request('example.test', ['jörg@example.test']));
  t.match(res.outcomes, [{ status: 'delivered' }]);
  t.same(mx.transactions, [['jörg@example.test']]);
  t.same(mx.smtpUtf8, [true]);
});

t.test('every recipient refused at RCPT: each keeps its own reply', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  sink.recipients.set('bob@example.test', { code: 550, text: '5.1.1 No such user' });
  sink.recipients.set('carol@example.test', { code: 450, text: '4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages from being delivered.' });
  const mta = w.mta({ outboundPort: sink.port });

  const o = byRecipient((await mta.deliver(request('example.test', ['bob@example.test', 'carol@example.test']))).outcomes);
  t.match(o['bob@example.test'], { status: 'bounced', code: '5.1.1', category: 'invalid_mailbox' });
  t.match(o['carol@example.test'], { status: 'deferred', code: '4.2.1', category: 'rate_limited' });
  t.equal(sink.transactions.length, 0);
});

t.test('a reply to the whole message applies to every recipient', async (t) => {
  const cases: Array<{ name: string; at: 'data' | 'mail'; reply: { code: number; text: string }; status: string; code: string; category: string }> = [
    { name: '5xx at the end of DATA', at: 'data', reply: { code: 554, text: '5.7.1 Message rejected as spam by Content Filtering.' }, status: 'bounced', code: '5.7.1', category: 'spam_block' },
    { name: '4xx at the end of DATA', at: 'data', reply: { code: 451, text: '4.7.1 Greylisted, please try again in 300 seconds' }, status: 'deferred', code: '4.7.1', category: 'rate_limited' },
    { name: '421 at the end of DATA', at: 'data', reply: { code: 421, text: '4.7.0 Try again later, closing connection.' }, status: 'deferred', code: '4.7.0', category: 'rate_limited' },
    { name: 'MAIL FROM refused', at: 'mail', reply: { code: 553, text: '5.1.8 <bounces+em_1@sender.test>: Sender address rejected: Domain not found' }, status: 'bounced', code: '5.1.8', category: 'dns_failure' },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const w = await world(t);
      const sink = await w.sink({ starttls: false });
      w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
      if (c.at === 'data') sink.message = c.reply;
      else sink.mailFrom = c.reply;
      const mta = w.mta({ outboundPort: sink.port });
      const res = await mta.deliver(request('example.test', ['alice@example.test', 'bob@example.test']));
      for (const o of res.outcomes) {
        t.match(o, { status: c.status, code: c.code, category: c.category, reply: { code: c.reply.code, message: `${c.reply.code} ${c.reply.text}` } });
      }
      t.equal(sink.accepted.length, 0);
    });
  }
});

t.test('a connection dropped in the middle of DATA defers every recipient', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  sink.message = 'drop';
  const mta = w.mta({ outboundPort: sink.port });
  const res = await mta.deliver(request('example.test', ['alice@example.test', 'bob@example.test']));
  for (const o of res.outcomes) t.match(o, { status: 'deferred', code: '4.4.2', category: 'connection_failed', reply: { message: /lost during the SMTP transaction/ } });
  t.equal(sink.transactions.length, 0);
  t.equal(sink.connections, 1, 'no other MX asked, no resend within the attempt');

  // The next attempt goes through on a new session.
  sink.message = null;
  const again = await mta.deliver(request('example.test', ['alice@example.test']));
  t.equal(again.outcomes[0]!.status, 'delivered');
});

t.test('a message over the server’s SIZE limit bounces without being sent', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false, size: 100 });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port });
  const res = await mta.deliver(request('example.test', ['alice@example.test']));
  t.match(res.outcomes[0], { status: 'bounced', code: '5.3.4', category: 'message_too_large' });
  t.equal(sink.transactions.length, 0);
});

// ── Where the mail goes: MX order, fallbacks, DNS answers ────────────────────────────────────────────

/** Two sinks on one port, at 127.0.0.2 and 127.0.0.3. */
async function twoSinks(w: World, opts: SinkOptions = {}): Promise<[SmtpSink, SmtpSink]> {
  const first = await w.sink({ starttls: false, ...opts, host: '127.0.0.2' });
  const second = await w.sink({ starttls: false, ...opts, host: '127.0.0.3', port: first.port });
  return [first, second];
}

t.test('MX hosts are tried in preference order; the next one takes over when the first is gone', async (t) => {
  const w = await world(t);
  const [primary, backup] = await twoSinks(w);
  // Listed backup first: the order comes from the preference, not the answer.
  w.mx('example.test', [
    ['mx2.example.test', 20, '127.0.0.3'],
    ['mx1.example.test', 10, '127.0.0.2'],
  ]);
  const mta = w.mta({ outboundPort: primary.port });

  const first = await mta.deliver(request('example.test', ['alice@example.test']));
  t.match(first.route, { kind: 'direct', host: 'mx1.example.test' });
  t.equal(first.outcomes[0]!.status, 'delivered');
  t.equal(primary.accepted.length, 1);
  t.equal(backup.connections, 0);

  await primary.close();
  const second = await mta.deliver(request('example.test', ['alice@example.test']));
  t.match(second.route, { kind: 'direct', host: 'mx2.example.test' });
  t.equal(second.outcomes[0]!.status, 'delivered');
  t.equal(backup.accepted.length, 1);
});

t.test('connection refused, no greeting, or a refused greeting: the next MX host is tried', async (t) => {
  const w = await world(t);
  const backup = await w.sink({ starttls: false, host: '127.0.0.3' });
  const port = backup.port;
  // 127.0.0.2: nothing listens. 127.0.0.4: accepts TCP and never says a word. 127.0.0.5: 554 greeting.
  const silent = await listenSilently('127.0.0.4', port);
  t.teardown(() => new Promise<void>((r) => silent.close(() => r())));
  await w.sink({ starttls: false, host: '127.0.0.5', port, greeting: { code: 554, text: '5.7.1 Service unavailable; client [127.0.0.1] blocked using zen.spamhaus.org' } });
  w.mx('example.test', [
    ['refuses.example.test', 10, '127.0.0.2'],
    ['silent.example.test', 20, '127.0.0.4'],
    ['blocks.example.test', 30, '127.0.0.5'],
    ['backup.example.test', 40, '127.0.0.3'],
  ]);
  const mta = w.mta({ outboundPort: port, smtpTimeoutMs: 300 });
  const res = await mta.deliver(request('example.test', ['alice@example.test']));
  t.match(res.route, { host: 'backup.example.test' });
  t.equal(res.outcomes[0]!.status, 'delivered');
  t.equal(backup.accepted.length, 1);
});

t.test('when no MX host answers, every recipient is deferred with each host’s reason', async (t) => {
  const w = await world(t);
  const blocking = await w.sink({ starttls: false, host: '127.0.0.5', greeting: { code: 554, text: '5.7.1 Service unavailable; client [127.0.0.1] blocked using zen.spamhaus.org' } });
  w.mx('example.test', [
    ['refuses.example.test', 10, '127.0.0.2'],
    ['blocks.example.test', 20, '127.0.0.5'],
  ]);
  const mta = w.mta({ outboundPort: blocking.port });
  const res = await mta.deliver(request('example.test', ['alice@example.test', 'bob@example.test']));
  t.match(res.route, { kind: 'direct', host: 'blocks.example.test', tls: false });
  for (const o of res.outcomes) {
    t.equal(o.status, 'deferred');
    // The last host gave a reason (an RBL block): it is kept, as a deferral (class 4).
    t.equal(o.category, 'spam_block');
    t.equal(o.code, '4.7.1');
    t.match(o.reply.message, /^No mail host of example\.test accepted a session: Connection to refuses\.example\.test\[127\.0\.0\.2\]:\d+ refused; blocks\.example\.test\[127\.0\.0\.5\]:\d+ refused the session: 554 5\.7\.1 Service unavailable/);
  }

  // Only unreachable hosts: connection_failed. The host refused a moment ago, so it is not asked again yet.
  w.mx('other.test', [['refuses.example.test', 10, '127.0.0.2']]);
  const res2 = await mta.deliver(request('other.test', ['alice@other.test']));
  t.match(res2.outcomes[0], {
    status: 'deferred',
    category: 'connection_failed',
    code: '4.4.1',
    reply: { message: /^Delivery temporarily suspended: Connection to refuses\.example\.test\[127\.0\.0\.2\]:\d+ refused$/ },
  });
});

t.test('an unreachable host holds up no delivery: the ones waiting for it fail with it, and it is left alone for a while', async (t) => {
  const w = await world(t);
  const backup = await w.sink({ starttls: false, host: '127.0.0.3' });
  const port = backup.port;
  const silent = await listenSilently('127.0.0.4', port);
  t.teardown(() => new Promise<void>((r) => silent.close(() => r())));
  let connections = 0;
  silent.on('connection', () => connections++);
  w.mx('dead.test', [['silent.dead.test', 10, '127.0.0.4']]);
  w.mx('backed.test', [
    ['silent.dead.test', 10, '127.0.0.4'],
    ['backup.backed.test', 20, '127.0.0.3'],
  ]);
  let now = Date.parse('2026-03-01T10:00:00Z');
  const mta = w.mta({ outboundPort: port, smtpTimeoutMs: 1000, connectionsPerHost: 1, now: () => now });

  // Three deliveries at once, one session allowed: the first waits for a greeting that never comes, the others
  // wait for its session. When it times out they fail with it instead of each waiting out a connection.
  const first = await Promise.all([1, 2, 3].map((i) => mta.deliver(request('dead.test', [`u${i}@dead.test`]))));
  t.equal(connections, 1, 'one connection for the three');
  t.match(first[0]!.outcomes[0], { status: 'deferred', category: 'connection_failed', code: '4.4.1', reply: { message: /^(Connection to )?silent\.dead\.test\[127\.0\.0\.4\]:\d+ (sent no greeting in time|timed out)$/ } });
  for (const res of first.slice(1)) {
    t.match(res.outcomes[0], { status: 'deferred', category: 'connection_failed', code: '4.4.1', reply: { message: /^Delivery temporarily suspended: (Connection to )?silent\.dead\.test\[127\.0\.0\.4\]:\d+ (sent no greeting in time|timed out)$/ } });
  }

  // Within the window: not contacted; a domain with another MX host goes there at once.
  const again = await mta.deliver(request('dead.test', ['u4@dead.test']));
  t.match(again.outcomes[0], { status: 'deferred', reply: { message: /^Delivery temporarily suspended/ } });
  const backed = await mta.deliver(request('backed.test', ['v@backed.test']));
  t.match(backed.outcomes[0], { status: 'delivered' });
  t.equal(backup.accepted.length, 1);
  t.equal(connections, 1, 'the suspended host was not contacted');

  // After the window one delivery tries again; one that comes while it waits fails at once.
  now += SUSPEND_MS;
  const probe = mta.deliver(request('dead.test', ['u5@dead.test']));
  await new Promise((r) => setTimeout(r, 100));
  const during = await mta.deliver(request('dead.test', ['u6@dead.test']));
  t.match(during.outcomes[0], { status: 'deferred', reply: { message: /^Delivery temporarily suspended/ } });
  t.match((await probe).outcomes[0], { status: 'deferred', reply: { message: /^(Connection to )?silent\.dead\.test\[127\.0\.0\.4\]:\d+ (sent no greeting in time|timed out)$/ } });
  t.equal(connections, 2, 'one probe');

  // The host comes back: after the next window its probe delivers, and it is no longer suspended.
  await new Promise<void>((r) => silent.close(() => r()));
  const revived = await w.sink({ starttls: false, host: '127.0.0.4', port });
  now += SUSPEND_MS;
  t.match((await mta.deliver(request('dead.test', ['u7@dead.test']))).outcomes[0], { status: 'delivered' });
  const after = await Promise.all([8, 9].map((i) => mta.deliver(request('dead.test', [`u${i}@dead.test`]))));
  for (const res of after) t.match(res.outcomes[0], { status: 'delivered' });
  t.equal(revived.accepted.length, 3);
});

t.test('a host that refuses one more session while another is open is not suspended', async (t) => {
  const w = await world(t);
  // A server that allows one session per client, as many do: the second is refused at the greeting.
  const server = await w.sink({ starttls: false, maxSessions: 1 });
  const port = server.port;
  w.mx('busy.test', [['mx.busy.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: port, connectionsPerHost: 2 });
  const deliverTwo = () => Promise.all(['a', 'b'].map((u) => mta.deliver(request('busy.test', [`${u}@busy.test`]))));
  for (const round of [1, 2]) {
    const outcomes = (await deliverTwo()).map((r) => r.outcomes[0]!);
    const refused = outcomes.filter((o) => o.status !== 'delivered');
    t.equal(outcomes.length - refused.length, 1, `round ${round}: one delivered`);
    t.equal(refused.length, 1, `round ${round}: one refused`);
    t.match(refused[0], { status: 'deferred', reply: { message: /refused the session: 421 4\.7\.0 Too many connections/ } }, `round ${round}: the server's own reason, not a suspension`);
  }
});

t.test('no MX: the domain’s own address (RFC 5321 §5.1)', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.dns.set('A', 'plain.test', ['127.0.0.1']);
  const mta = w.mta({ outboundPort: sink.port });
  const res = await mta.deliver(request('plain.test', ['alice@plain.test']));
  t.match(res.route, { kind: 'direct', host: 'plain.test' });
  t.equal(res.outcomes[0]!.status, 'delivered');
  t.equal(sink.accepted.length, 1);
});

t.test('DNS answers: a null MX bounces, a domain that does not resolve and a failed look-up defer', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.dns.set('MX', 'nullmx.test', [{ exchange: '', priority: 0 }]);
  w.dns.fail('servfail.test');
  w.mx('noaddress.test', [['mx.noaddress.test', 10, null]]);
  const mta = w.mta({ outboundPort: sink.port });

  const cases = [
    { domain: 'nullmx.test', status: 'bounced', code: '5.1.10', message: 'nullmx.test does not accept mail (null MX, RFC 7505)' },
    // A domain that does not resolve is retried (and fails when the retries run out), not bounced at once.
    { domain: 'nxdomain.test', status: 'deferred', code: '4.4.4', message: 'nxdomain.test has no MX or address records' },
    { domain: 'servfail.test', status: 'deferred', code: '4.4.3', message: /DNS MX look-up for servfail\.test failed \(ESERVFAIL\)/ },
    { domain: 'noaddress.test', status: 'deferred', code: '4.4.3', message: 'mx.noaddress.test has no address records' },
  ];
  for (const c of cases) {
    const res = await mta.deliver(request(c.domain, [`alice@${c.domain}`, `bob@${c.domain}`]));
    t.equal(res.outcomes.length, 2, c.domain);
    for (const o of res.outcomes) t.match(o, { status: c.status, code: c.code, category: 'dns_failure', reply: { message: c.message } }, c.domain);
    t.match(res.route, { kind: 'direct', name: 'default', tls: false });
  }
  t.equal(sink.connections, 0, 'nothing was contacted');
});

function listenSilently(host: string, port: number): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  const close = server.close.bind(server);
  server.close = (cb?: (err?: Error) => void) => {
    for (const s of sockets) s.destroy();
    return close(cb);
  };
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

// ── TLS ──────────────────────────────────────────────────────────────────────────────────────────────

t.test('opportunistic TLS: STARTTLS when offered, plaintext when not', async (t) => {
  const w = await world(t);
  const withTls = await w.sink({ host: '127.0.0.2', starttls: true });
  const plain = await w.sink({ host: '127.0.0.3', port: withTls.port, starttls: false });
  w.mx('tls.test', [['mx.tls.test', 10, '127.0.0.2']]);
  w.mx('plain.test', [['mx.plain.test', 10, '127.0.0.3']]);
  const mta = w.mta({ outboundPort: withTls.port });

  const a = await mta.deliver(request('tls.test', ['alice@tls.test']));
  t.match(a, { route: { host: 'mx.tls.test', tls: true }, outcomes: [{ status: 'delivered' }] });
  t.equal(withTls.accepted[0]!.tls, true, 'the sink saw an encrypted session');

  const b = await mta.deliver(request('plain.test', ['alice@plain.test']));
  t.match(b, { route: { host: 'mx.plain.test', tls: false }, outcomes: [{ status: 'delivered' }] });
  t.equal(plain.accepted[0]!.tls, false);
});

t.test('opportunistic TLS: a failed handshake falls back to plaintext', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ brokenTls: true });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port });
  const res = await mta.deliver(request('example.test', ['alice@example.test']));
  t.match(res, { route: { tls: false }, outcomes: [{ status: 'delivered' }] });
  t.equal(sink.connections, 2, 'one session for the failed handshake, one in plaintext');
  t.equal(sink.accepted[0]!.tls, false);
});

t.test('enforced TLS', async (t) => {
  const w = await world(t);
  const withTls = await w.sink({ host: '127.0.0.2', starttls: true });
  const withoutTls = await w.sink({ host: '127.0.0.3', port: withTls.port, starttls: false });
  const broken = await w.sink({ host: '127.0.0.4', port: withTls.port, brokenTls: true });
  w.mx('tls.test', [['mx.tls.test', 10, '127.0.0.2']]);
  w.mx('plain.test', [['mx.plain.test', 10, '127.0.0.3']]);
  w.mx('broken.test', [['mx.broken.test', 10, '127.0.0.4']]);
  const mta = w.mta({ outboundPort: withTls.port });
  const enforced = { tlsMode: 'enforced' as const };

  await t.test('delivers over STARTTLS', async (t) => {
    const res = await mta.deliver(request('tls.test', ['alice@tls.test'], enforced));
    t.match(res, { route: { tls: true }, outcomes: [{ status: 'delivered' }] });
    t.equal(withTls.accepted[0]!.tls, true);
  });

  await t.test('a server without STARTTLS gets nothing: deferred, with the reason', async (t) => {
    const res = await mta.deliver(request('plain.test', ['alice@plain.test', 'bob@plain.test'], enforced));
    t.match(res.route, { kind: 'direct', host: 'mx.plain.test', tls: false });
    for (const o of res.outcomes) {
      t.same(o, {
        recipient: o.recipient,
        status: 'deferred',
        reply: { message: "TLS required by the domain's tls_mode but mx.plain.test does not offer STARTTLS" },
        code: '4.7.10',
        category: 'connection_failed',
      });
    }
    t.equal(withoutTls.transactions.length, 0, 'no MAIL FROM was sent');
  });

  await t.test('a failed handshake is not retried in plaintext', async (t) => {
    const res = await mta.deliver(request('broken.test', ['alice@broken.test'], enforced));
    t.match(res.outcomes[0], { status: 'deferred', code: '4.7.5', category: 'connection_failed', reply: { message: /^TLS required by the domain's tls_mode but the TLS handshake with mx\.broken\.test\[127\.0\.0\.4\]:\d+ failed/ } });
    t.equal(broken.connections, 1);
    t.equal(broken.transactions.length, 0);
  });
});

// ── Routes and relays ────────────────────────────────────────────────────────────────────────────────

const RELAY_AUTH = { user: 'relay-user', pass: 's3cret/+:@' };
const relayUrl = (sink: SmtpSink, pass = RELAY_AUTH.pass) => `smtp://${RELAY_AUTH.user}:${encodeURIComponent(pass)}@127.0.0.1:${sink.port}`;

t.test('the global relay takes everything, with AUTH, and no MX is looked up', async (t) => {
  const w = await world(t);
  const relay = await w.sink({ auth: RELAY_AUTH });
  const mta = w.mta({ outboundPort: 1, relayUrl: relayUrl(relay) });
  const res = await mta.deliver(request('anywhere.test', ['alice@anywhere.test', 'bob@anywhere.test']));
  t.same(res.route, { kind: 'relay', name: 'default', host: '127.0.0.1', port: relay.port, tls: true });
  t.same(
    res.outcomes.map((o) => o.status),
    ['delivered', 'delivered'],
  );
  t.match(relay.accepted, [{ user: 'relay-user', tls: true, to: ['alice@anywhere.test', 'bob@anywhere.test'] }]);
  t.same(w.dns.queries, []);
});

t.test('a relay that refuses our credentials defers everything (auth_failure)', async (t) => {
  const w = await world(t);
  const relay = await w.sink({ auth: RELAY_AUTH });
  const mta = w.mta({ outboundPort: 1, relayUrl: relayUrl(relay, 'wrong') });
  const res = await mta.deliver(request('anywhere.test', ['alice@anywhere.test']));
  t.match(res.outcomes[0], {
    status: 'deferred',
    code: '4.7.8',
    category: 'auth_failure',
    reply: { code: 535, message: /^relay 127\.0\.0\.1:\d+ refused our credentials: 535 5\.7\.8 Authentication credentials invalid$/ },
  });
  t.equal(relay.authFailures, 1);
  t.equal(relay.transactions.length, 0);
});

t.test('route rules: one domain through a named relay, a direct rule, the rest by default', async (t) => {
  const w = await world(t);
  const relay = await w.sink({ auth: RELAY_AUTH, host: '127.0.0.2' });
  const mx = await w.sink({ starttls: false, host: '127.0.0.3', port: relay.port });
  const globalRelay = await w.sink({ starttls: false, host: '127.0.0.4', port: relay.port });
  w.mx('gmail.test', [['mx.gmail.test', 10, '127.0.0.3']]);
  const mta = w.mta({
    outboundPort: relay.port,
    relayUrl: `smtp://127.0.0.4:${relay.port}`,
    routes: [
      { name: 'microsoft', match: ['outlook.test', '*.outlook.test'], relay: `smtp://${RELAY_AUTH.user}:${encodeURIComponent(RELAY_AUTH.pass)}@127.0.0.2:${relay.port}` },
      { name: 'gmail-direct', match: ['GMAIL.test'], relay: null },
    ],
  });

  const ms = await mta.deliver(request('eu.mail.outlook.test', ['alice@eu.mail.outlook.test']));
  t.match(ms, { route: { kind: 'relay', name: 'microsoft', host: '127.0.0.2' }, outcomes: [{ status: 'delivered' }] });
  t.match(relay.accepted, [{ user: 'relay-user', to: ['alice@eu.mail.outlook.test'] }]);

  const gm = await mta.deliver(request('gmail.test', ['bob@gmail.test']));
  t.match(gm, { route: { kind: 'direct', name: 'gmail-direct', host: 'mx.gmail.test' }, outcomes: [{ status: 'delivered' }] });
  t.equal(mx.accepted.length, 1);

  const other = await mta.deliver(request('other.test', ['carol@other.test']));
  t.match(other, { route: { kind: 'relay', name: 'default', host: '127.0.0.4' }, outcomes: [{ status: 'delivered' }] });
  t.equal(globalRelay.accepted.length, 1);
  t.notOk(w.dns.queries.some((q) => q.includes('outlook') || q.includes('other.test')), 'relayed domains are not looked up');
});

t.test('an mx: rule matches on the domain’s MX hosts', async (t) => {
  const w = await world(t);
  const relay = await w.sink({ starttls: false, host: '127.0.0.2' });
  const mx = await w.sink({ starttls: false, host: '127.0.0.3', port: relay.port });
  // contoso.test is hosted by "Microsoft": its MX is never contacted (it has no address at all here).
  w.mx('contoso.test', [['contoso-test.mail.protection.outlook.test', 0, null]]);
  w.mx('fabrikam.test', [['mx.fabrikam.test', 10, '127.0.0.3']]);
  w.dns.fail('unknown.test');
  const mta = w.mta({
    outboundPort: relay.port,
    routes: [{ name: 'm365', match: ['mx:*.protection.outlook.test'], relay: `smtp://127.0.0.2:${relay.port}` }],
  });

  const a = await mta.deliver(request('contoso.test', ['alice@contoso.test']));
  t.match(a, { route: { kind: 'relay', name: 'm365' }, outcomes: [{ status: 'delivered' }] });
  t.equal(relay.accepted.length, 1);

  const b = await mta.deliver(request('fabrikam.test', ['bob@fabrikam.test']));
  t.match(b, { route: { kind: 'direct', name: 'default', host: 'mx.fabrikam.test' }, outcomes: [{ status: 'delivered' }] });
  t.equal(mx.accepted.length, 1);

  // MX unknown for now: the route cannot be chosen, so nothing is sent anywhere yet.
  const c = await mta.deliver(request('unknown.test', ['carol@unknown.test']));
  t.match(c, { route: { kind: 'direct', name: 'm365' }, outcomes: [{ status: 'deferred', code: '4.4.3', category: 'dns_failure', reply: { message: /^Route rule 'm365' matches on MX hosts/ } }] });
});

// ── Connection reuse ─────────────────────────────────────────────────────────────────────────────────

t.test('sessions are reused across deliveries, up to connectionsPerHost at once', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: true });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  w.mx('example2.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port, connectionsPerHost: 2 });

  await mta.deliver(request('example.test', ['alice@example.test']));
  await mta.deliver(request('example2.test', ['bob@example2.test']));
  t.equal(sink.connections, 1, 'the second delivery used the first session');
  t.same(
    sink.accepted.map((tx) => [tx.connection, tx.tls]),
    [
      [1, true],
      [1, true],
    ],
  );

  const queriesBefore = w.dns.queries.length;
  const many = await Promise.all(Array.from({ length: 6 }, (_, i) => mta.deliver(request('example.test', [`user${i}@example.test`]))));
  t.ok(many.every((r) => r.outcomes[0]!.status === 'delivered'));
  t.equal(sink.connections, 2, 'never more than connectionsPerHost sessions');
  t.same(w.dns.queries.slice(queriesBefore).sort(), ['A mx.example.test', 'AAAA mx.example.test', 'MX example.test'], 'concurrent deliveries share look-ups');

  // A refused message leaves the session usable (RSET), a refused recipient too.
  sink.message = { code: 550, text: '5.7.1 Content rejected' };
  t.equal((await mta.deliver(request('example.test', ['x@example.test']))).outcomes[0]!.status, 'bounced');
  sink.message = null;
  t.equal((await mta.deliver(request('example.test', ['y@example.test']))).outcomes[0]!.status, 'delivered');
  t.equal(sink.connections, 2);
});

t.test('a pooled session the server has closed is replaced without losing the delivery', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port });
  await mta.deliver(request('example.test', ['alice@example.test']));
  sink.dropConnections();
  const res = await mta.deliver(request('example.test', ['bob@example.test']));
  t.equal(res.outcomes[0]!.status, 'delivered');
  t.equal(sink.accepted.length, 2);
  t.equal(sink.connections, 2);
});

t.test('a pooled session that breaks once the body has started is not tried again (no duplicate)', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = w.mta({ outboundPort: sink.port });
  await mta.deliver(request('example.test', ['alice@example.test']));
  sink.message = 'drop';
  const res = await mta.deliver(request('example.test', ['bob@example.test']));
  t.match(res.outcomes[0], { status: 'deferred', code: '4.4.2' });
  t.equal(sink.connections, 1, 'the body went out on the pooled session: no fresh session for it');
});

t.test('close() ends every session', async (t) => {
  const w = await world(t);
  const sink = await w.sink({ starttls: false });
  w.mx('example.test', [['mx.example.test', 10, '127.0.0.1']]);
  const mta = createMta({ dns: createResolver([w.dns.server], 1000), hostname: EHLO_NAME, outboundPort: sink.port, relayUrl: null, routes: [], connectionsPerHost: 2, smtpTimeoutMs: 2000, log });
  await Promise.all([mta.deliver(request('example.test', ['a@example.test'])), mta.deliver(request('example.test', ['b@example.test']))]);
  t.equal(sink.connections, 2);
  await mta.close();
  await sink.idle();
  t.pass('the sink saw both sessions end');
  const after = await mta.deliver(request('example.test', ['c@example.test']));
  t.match(after.outcomes[0], { status: 'deferred', category: 'connection_failed' }, 'a closed MTA sends nothing');
  t.equal(sink.connections, 2);
});
