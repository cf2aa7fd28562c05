// The MX listener over real sockets: recipients accepted or refused, STARTTLS, the size limit, mailauth's
// verdicts on signed and forged mail (loopback DNS), DMARC reject refused or filed as junk, and mail for a
// webhook-routed domain becoming an inbound email with its email.inbound webhook.
import t from 'tap';
import net from 'node:net';
import { addInboundDomain, buildMessage, publishSender, smtpSend, startInbound, until } from './support.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { createOtherTeam } from '../helpers/app.js';

interface InboundView {
  id: number;
  domain: string;
  from: string;
  to: string[];
  subject: string;
  text: string | null;
  headers: Array<{ name: string; value: string }>;
  envelope: { mail_from: string; rcpt_to: string[] };
  authentication: { spf: string; dkim: string; dmarc: string; arc: string };
  junk: boolean;
  attachments: Array<{ filename: string | null; content_type: string; size: number; content_id: string | null }>;
}

/** Talks SMTP by hand, for what a library would not send; answers each command's reply. */
async function rawSession(port: number, commands: string[]): Promise<string[]> {
  const socket = net.connect(port, '127.0.0.1');
  let buffer = '';
  const replies: string[] = [];
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = /(^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(buffer);
        if (!m) return false;
        const end = m.index + m[0].length;
        const reply = buffer.slice(0, end);
        buffer = buffer.slice(end);
        resolve(reply.trim());
        return true;
      };
      if (check()) return;
      const onData = (d: Buffer) => {
        buffer += d.toString('latin1');
        if (check()) socket.off('data', onData);
      };
      socket.on('data', onData);
      socket.once('error', reject);
    });
  replies.push(await next());
  for (const c of commands) {
    socket.write(c + '\r\n');
    replies.push(await next());
  }
  socket.destroy();
  return replies;
}

t.test('MX listener', async (t) => {
  const { app, dns, mxPort } = await startInbound(t);
  const hooks = await startWebhookReceiver();
  t.teardown(() => hooks.close());
  const hook = await app.request('POST', '/webhooks', { body: { url: hooks.url, events: ['email.inbound'] } });
  t.equal(hook.status, 201, 'webhook endpoint for email.inbound');
  const domain = await addInboundDomain(app, dns, 'hooks.example', 'webhook');
  await addInboundDomain(app, dns, 'closed.example', 'none');
  const sender = publishSender(dns, 'sender.example', 'reject');

  t.test('recipients: a domain the box does not serve is no relay; unknown users of a closed domain are refused', async (t) => {
    const replies = await rawSession(mxPort, ['EHLO client.test', 'MAIL FROM:<a@sender.example>', 'RCPT TO:<x@elsewhere.example>', 'RCPT TO:<nobody@closed.example>', 'RCPT TO:<anyone@hooks.example>', 'QUIT']);
    t.match(replies[0], /^220 mx\.appliance\.test ESMTP/, 'banner');
    t.match(replies[1], /STARTTLS/, 'STARTTLS offered');
    t.notMatch(replies[1], /AUTH/, 'no AUTH on the MX');
    t.match(replies[3], /^550 5\.7\.1 Relaying denied/, 'not ours: 550 5.7.1');
    t.match(replies[4], /^550 5\.1\.1 /, 'unknown user: 550 5.1.1');
    t.match(replies[5], /^250/, 'a webhook-routed domain accepts any address');
  });

  t.test('an IDN domain receives, its name given in ASCII or (SMTPUTF8) in Unicode: smtp-server decodes xn-- names', async (t) => {
    await addInboundDomain(app, dns, 'bücher.example', 'webhook');
    const replies = await rawSession(mxPort, ['EHLO client.test', 'MAIL FROM:<a@sender.example> SMTPUTF8', 'RCPT TO:<info@xn--bcher-kva.example>', 'RCPT TO:<sales@Bücher.example>', 'QUIT']);
    t.match(replies[3], /^250/, 'the ASCII form');
    t.match(replies[4], /^250/, 'the Unicode form');
    const res = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['info@xn--bcher-kva.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'info@xn--bcher-kva.example', subject: 'Für Bücher' }), { plain: true });
    t.equal(res.code, 250, res.response);
    const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=bücher.example');
    t.same(list.body.data.map((d) => d.subject), ['Für Bücher'], 'an inbound email of the domain');
    const got = await app.request<InboundView>('GET', `/inbound/${list.body.data[0]!.id}`);
    t.same(got.body.envelope.rcpt_to, ['info@xn--bcher-kva.example'], 'the recipient as the box keeps names');
  });

  t.test('postmaster (RFC 5321 4.5.1) with no domain covering the host name: the box\'s own, kept for the first team', async (t) => {
    const other = await createOtherTeam(app, 'pro');
    const claim = await app.request('POST', '/domains', { key: other.apiKey, body: { name: 'mx.appliance.test' } });
    t.equal(claim.status, 201, 'another team adds the host name (unverified): it does not take the postmaster away');
    const replies = await rawSession(mxPort, ['EHLO client.test', 'MAIL FROM:<a@sender.example>', 'RCPT TO:<Postmaster>', 'RCPT TO:<postmaster@MX.appliance.test>', 'RCPT TO:<root@mx.appliance.test>', 'QUIT']);
    t.match(replies[3], /^250/, 'the bare postmaster');
    t.match(replies[4], /^250/, 'postmaster at the host name');
    t.match(replies[5], /^550 5\.1\.1/, 'no other address at the host name (the other team\'s unverified domain has no mailboxes)');
    const res = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['postmaster'] }, buildMessage({ from: 'a@nodmarc.example', to: 'postmaster', subject: 'To the box' }), { plain: true });
    t.equal(res.code, 250, res.response);
    const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=mx.appliance.test');
    t.same(list.body.data.map((d) => d.subject), ['To the box'], 'an inbound email under the host name');
    const got = await app.request<InboundView>('GET', `/inbound/${list.body.data[0]!.id}`);
    t.same(got.body.envelope.rcpt_to, ['postmaster@mx.appliance.test'], 'the bare postmaster qualified with the host name');
  });

  t.test('postmaster (RFC 5321 4.5.1): accepted for every verified domain, bare or qualified, kept as an inbound email', async (t) => {
    await addVerifiedDomain(app, dns, 'appliance.test'); // the parent of the box's host name, mx.appliance.test
    const replies = await rawSession(mxPort, ['EHLO client.test', 'MAIL FROM:<a@sender.example>', 'RCPT TO:<postmaster@closed.example>', 'RCPT TO:<postmaster>', 'RCPT TO:<PostMaster@elsewhere.example>', 'QUIT']);
    t.match(replies[3], /^250/, 'postmaster of a domain without a mailbox for it');
    t.match(replies[4], /^250/, 'the bare postmaster: the host name parent domain');
    t.match(replies[5], /^550 5\.7\.1/, 'still no relay for other domains');
    const res = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['postmaster@closed.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'postmaster@closed.example', subject: 'To the postmaster' }), { plain: true });
    t.equal(res.code, 250, res.response);
    const list = await app.request<{ data: Array<{ subject: string }> }>('GET', '/inbound?domain=closed.example');
    t.same(list.body.data.map((d) => d.subject), ['To the postmaster'], 'listed under its domain');
  });

  t.test('an html-only message html-to-text cannot convert (too deep, too large) is accepted with a text', async (t) => {
    const nested = `${'<div>'.repeat(20_000)}deep inside`;
    const large = `<p>${'plain words and <b>bold</b> ones '.repeat(4_000)}</p>`; // ~140 KB: past the html-to-text limit
    for (const [subject, html] of [['nested', nested], ['large', large]] as const) {
      const raw = `From: a@nodmarc.example\r\nTo: anyone@hooks.example\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@nodmarc.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n${html}\r\n`;
      const res = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['anyone@hooks.example'] }, raw, { plain: true });
      t.equal(res.code, 250, `${subject}: ${res.response}`);
      const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=hooks.example');
      const item = list.body.data.find((d) => d.subject === subject);
      const got = await app.request<{ text: string | null; html: string | null }>('GET', `/inbound/${item!.id}`);
      t.ok(got.body.html && got.body.html.length >= html.length, `${subject}: the html is kept`);
      t.match(got.body.text, subject === 'nested' ? /^deep inside$/ : /^plain words and bold ones plain words/, `${subject}: a text derived`);
    }
  });

  t.test('a message past the MIME parser limits (over 1,000 parts) is accepted, its header read alone', async (t) => {
    // It was 451 4.3.0 at every retry (mailsplit: "Max allowed child nodes exceeded"), for days, and the
    // mailbox copy of mailbox_and_webhook went with it (black-box audit with Postfix).
    const parts = Array.from({ length: 1100 }, (_, i) => `--XX\r\nContent-Type: text/plain\r\n\r\npart ${i}`).join('\r\n');
    const raw = `From: a@nodmarc.example\r\nTo: anyone@hooks.example\r\nSubject: many parts\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="XX"\r\n\r\n${parts}\r\n--XX--\r\n`;
    const res = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['anyone@hooks.example'] }, raw, { plain: true });
    t.equal(res.code, 250, res.response);
    const list = await app.request<{ data: Array<{ id: number; subject: string; from: string }> }>('GET', '/inbound?domain=hooks.example');
    t.match(list.body.data.find((d) => d.subject === 'many parts'), { from: 'a@nodmarc.example' }, 'stored, its header read');
  });

  t.test("the inbound email's date is its Date header's, null when it has none or it is no date", async (t) => {
    // mailparser puts the time of parsing in place of a Date it cannot read: it read as the sender's.
    for (const [subject, date, expected] of [['dated', 'Sun, 1 Mar 2026 10:00:00 +0100 (CET)', '2026-03-01T09:00:00.000Z'], ['misdated', 'not a date', null], ['undated', null, null]] as const) {
      const raw = `From: a@nodmarc.example\r\nTo: anyone@hooks.example\r\nSubject: ${subject}\r\n${date ? `Date: ${date}\r\n` : ''}\r\nhi\r\n`;
      t.equal((await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['anyone@hooks.example'] }, raw, { plain: true })).code, 250);
      const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=hooks.example');
      const got = await app.request<{ date: string | null }>('GET', `/inbound/${list.body.data.find((d) => d.subject === subject)!.id}`);
      t.equal(got.body.date, expected, subject);
    }
  });

  t.test('more than 100 recipients: 452 4.5.3 from the 101st', async (t) => {
    const rcpts = Array.from({ length: 101 }, (_, i) => `RCPT TO:<u${i}@hooks.example>`);
    const replies = await rawSession(mxPort, ['EHLO client.test', 'MAIL FROM:<a@sender.example>', ...rcpts, 'QUIT']);
    t.match(replies[102], /^250/, 'the 100th is accepted');
    t.match(replies[103], /^452 4\.5\.3/, 'the 101st is refused');
  });

  t.test('more than 50 sessions from one address: 421 4.7.0 for the 51st', async (t) => {
    const greet = (s: net.Socket) => new Promise<string>((resolve) => s.once('data', (d: Buffer) => resolve(d.toString())));
    const open: net.Socket[] = [];
    t.teardown(() => open.forEach((s) => s.destroy()));
    const greetings: string[] = [];
    for (let i = 0; i < 50; i++) {
      const s = net.connect(mxPort, '127.0.0.1');
      open.push(s);
      greetings.push(await greet(s));
    }
    t.ok(greetings.every((g) => g.startsWith('220 ')), '50 sessions are greeted');
    const extra = net.connect(mxPort, '127.0.0.1');
    open.push(extra);
    t.match(await greet(extra), /^421 4\.7\.0 Too many connections/, 'the 51st is turned away');
    open.splice(0).forEach((s) => s.destroy());
    const after = await until('a free slot again', async () => {
      const r = await smtpSend(mxPort, { from: 'a@sender.example', to: ['ok@hooks.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'ok@hooks.example' }));
      return r.ok ? r : undefined;
    });
    t.ok(after.ok, 'sessions are counted down when they close');
  });

  t.test('garbage never crashes the listener', async (t) => {
    const replies = await rawSession(mxPort, ['EHLO x', 'MAIL FROM:<<<>>>', 'RCPT TO:<@@@>', 'DATA', 'NOOP']);
    t.match(replies[2], /^5\d\d/, 'bad MAIL FROM refused');
    t.match(replies[4], /^503/, 'DATA without a recipient refused');
    t.match(replies[5], /^250/, 'the session is still alive');
    const again = await smtpSend(mxPort, { from: 'a@sender.example', to: ['ok@hooks.example'] }, buildMessage({ from: 'a@sender.example', to: 'ok@hooks.example' }));
    t.ok(again.ok, 'and the listener still takes mail');
  });

  t.test('size: 36 MB advertised; a declared SIZE over it and a message over it both answer 552 5.3.4 (RFC 1870 §6.1)', async (t) => {
    const declared = await rawSession(mxPort, ['EHLO client.test', `MAIL FROM:<a@sender.example> SIZE=${37 * 1024 * 1024}`, 'QUIT']);
    t.match(declared[1], new RegExp(`^250[ -]SIZE ${36 * 1024 * 1024}$`, 'm'), 'EHLO advertises the figure');
    t.match(declared[2], /^552 5\.3\.4 Message size exceeds fixed maximum message size$/, 'MAIL FROM with SIZE');
    const big = buildMessage({ from: 'a@sender.example', to: 'big@hooks.example', text: 'x'.repeat(76) + '\r\n' }).replace(/x+\r\n/, ('x'.repeat(998) + '\r\n').repeat(37 * 1024));
    const res = await smtpSend(mxPort, { from: 'a@sender.example', to: ['big@hooks.example'] }, big, { plain: true });
    t.equal(res.code, 552, 'refused at the end of DATA');
    t.match(res.response, /552 5\.3\.4 Message size exceeds fixed maximum message size/);
  });

  t.test('STARTTLS, a DKIM-signed message, webhook routing and email.inbound', async (t) => {
    const raw = await sender.sign(buildMessage({ from: 'Alice <alice@sender.example>', to: 'support@hooks.example', subject: 'Signed and sealed', text: 'Body of a signed message.', messageId: '<signed-1@sender.example>' }));
    const res = await smtpSend(mxPort, { from: 'alice@sender.example', to: ['support@hooks.example'] }, raw, { requireTLS: true });
    t.ok(res.ok, `accepted: ${res.response}`);
    t.match(res.response, /^250 2\.0\.0 Ok: queued as \w+/);

    const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=hooks.example');
    const item = list.body.data.find((d) => d.subject === 'Signed and sealed');
    t.ok(item, 'listed', { list: list.body.data.map((d) => d.subject) });
    const got = await app.request<InboundView>('GET', `/inbound/${item!.id}`);
    t.equal(got.status, 200);
    const e = got.body;
    t.equal(e.domain, 'hooks.example');
    t.equal(e.from, 'Alice <alice@sender.example>');
    t.same(e.to, ['support@hooks.example']);
    t.equal(e.text?.trim(), 'Body of a signed message.');
    t.same(e.envelope, { mail_from: 'alice@sender.example', rcpt_to: ['support@hooks.example'] });
    t.same(e.authentication, { spf: 'pass', dkim: 'pass', dmarc: 'pass', arc: 'none' }, 'mailauth: SPF, DKIM and DMARC pass');
    const ar = e.headers.find((h) => h.name === 'Authentication-Results');
    t.match(ar?.value, /^mx\.appliance\.test;.*dkim=pass.*spf=pass.*dmarc=pass/s, 'Authentication-Results prepended');
    const received = e.headers.find((h) => h.name === 'Received');
    t.match(received?.value, /with ESMTPS id \w+/, 'Received says the session was encrypted');
    t.equal(e.headers[0]!.name, 'Return-Path', 'our trace headers come first');

    const delivered = await until('the email.inbound webhook', () => hooks.delivered.find((r) => r.json.type === 'email.inbound' && (r.json.data as { id: number }).id === item!.id));
    t.same(delivered.json.data, JSON.parse(got.text), 'the webhook carries the inbound email as the API returns it');
  });

  // RFC 6531 §3.7.3: a transaction that used SMTPUTF8 is traced "with UTF8SMTP" (UTF8SMTPS over TLS), as
  // Postfix 3.7 writes it; the MX wrote ESMTP(S) for the SMTPUTF8 transactions Postfix relayed to it.
  t.test('SMTPUTF8: the Received header says UTF8SMTP / UTF8SMTPS', async (t) => {
    const cases = [
      { subject: 'Ünïcode over TLS', opts: { requireTLS: true }, want: /with UTF8SMTPS id \w+/ },
      { subject: 'Ünïcode in clear', opts: { plain: true }, want: /with UTF8SMTP id \w+/ },
      { subject: 'ASCII in clear', opts: { plain: true }, want: /with ESMTP id \w+/, from: 'rene@sender.example' },
    ];
    for (const c of cases) {
      const from = c.from ?? 'rené@sender.example';
      const raw = buildMessage({ from: `René <${from}>`, to: 'support@hooks.example', subject: c.subject, text: 'Grüße' });
      // nodemailer declares SMTPUTF8 for a non-ASCII envelope address when the server offers it.
      const res = await smtpSend(mxPort, { from, to: ['support@hooks.example'] }, raw, c.opts);
      t.ok(res.ok, `${c.subject}: accepted: ${res.response}`);
      const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=hooks.example');
      const item = list.body.data.find((d) => d.subject === c.subject);
      t.ok(item, `${c.subject}: listed`);
      const got = await app.request<InboundView>('GET', `/inbound/${item!.id}`);
      t.same(got.body.envelope.mail_from, from);
      t.match(got.body.headers.find((h) => h.name === 'Received')?.value, c.want, c.subject);
    }
  });

  t.test('a forged From of a p=reject domain is refused with 550 5.7.1; nothing is stored', async (t) => {
    const before = (await app.request<{ meta: { total: number } }>('GET', '/inbound')).body.meta.total;
    dns.set('TXT', 'evil.example', ['v=spf1 -all']);
    const raw = buildMessage({ from: 'CEO <ceo@sender.example>', to: 'finance@hooks.example', subject: 'Wire the money' });
    const res = await smtpSend(mxPort, { from: 'x@evil.example', to: ['finance@hooks.example'] }, raw);
    t.equal(res.code, 550);
    t.match(res.response, /550 5\.7\.1 .*DMARC/);
    t.equal((await app.request<{ meta: { total: number } }>('GET', '/inbound')).body.meta.total, before, 'nothing stored');
  });

  // RFC 7208 §5.2: an include: the DNS does not answer makes SPF a temperror. mailauth skipped such an include
  // (SERVFAIL), so `-all` decided: SPF fail, DMARC fail, and a p=reject sender's real mail refused for good.
  t.test('a p=reject failure that rests on an unanswered DNS look-up is 451 4.7.0; answered, the retry is accepted', async (t) => {
    const total = async () => (await app.request<{ meta: { total: number } }>('GET', '/inbound')).body.meta.total;
    const before = await total();
    dns.set('TXT', '_dmarc.flaky.example', ['v=DMARC1; p=reject']);
    dns.set('TXT', 'flaky.example', ['v=spf1 include:_spf.provider.example -all']);
    dns.fail('_spf.provider.example');
    const raw = buildMessage({ from: 'Billing <billing@flaky.example>', to: 'finance@hooks.example', subject: 'Invoice, DNS having a bad minute' });
    const res = await smtpSend(mxPort, { from: 'billing@flaky.example', to: ['finance@hooks.example'] }, raw);
    t.equal(res.code, 451, res.response);
    t.match(res.response, /^451 4\.7\.0 DMARC could not be checked for flaky\.example .*try again later/);
    t.equal(await total(), before, 'nothing stored');

    dns.set('TXT', '_spf.provider.example', ['v=spf1 ip4:127.0.0.1 -all']);
    const retry = await smtpSend(mxPort, { from: 'billing@flaky.example', to: ['finance@hooks.example'] }, raw);
    t.ok(retry.ok, retry.response);
    t.equal(await total(), before + 1, 'stored once the look-up is answered');
  });

  // Unanswered look-ups of identifiers that cannot align (the forger's own signature and return path) cannot
  // make DMARC pass: the forgery is refused for good, not deferred (451 made it retry for days).
  t.test('a p=reject failure whose unanswered look-ups are of unaligned identifiers is still 550', async (t) => {
    const spoofer = publishSender(dns, 'spoofer.example', 'none');
    dns.fail(`${spoofer.selector}._domainkey.spoofer.example`);
    dns.set('TXT', 'bulk.example', ['v=spf1 include:_spf.bulkhost.example -all']);
    dns.fail('_spf.bulkhost.example');
    const raw = await spoofer.sign(buildMessage({ from: 'CEO <ceo@sender.example>', to: 'finance@hooks.example', subject: 'Wire the money, signed elsewhere' }));
    const res = await smtpSend(mxPort, { from: 'x@bulk.example', to: ['finance@hooks.example'] }, raw);
    t.equal(res.code, 550, res.response);
    t.match(res.response, /550 5\.7\.1 .*DMARC/);
  });

  t.test('a forged Authentication-Results naming this box is removed', async (t) => {
    const raw = buildMessage({ from: 'bob@nodmarc.example', to: 'x@hooks.example', subject: 'Trust me', headers: { 'Authentication-Results': 'mx.appliance.test; dkim=pass header.d=bank.example' } });
    const res = await smtpSend(mxPort, { from: 'bob@nodmarc.example', to: ['x@hooks.example'] }, raw);
    t.ok(res.ok, res.response);
    const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound');
    const id = list.body.data.find((d) => d.subject === 'Trust me')!.id;
    const e = (await app.request<InboundView>('GET', `/inbound/${id}`)).body;
    const ars = e.headers.filter((h) => h.name.toLowerCase() === 'authentication-results');
    t.equal(ars.length, 1, 'one Authentication-Results');
    t.notMatch(ars[0]!.value, /bank\.example/, 'ours, not the forged one');
    t.equal(e.authentication.dkim, 'none');
  });

  t.test('GET /inbound: paging newest first, domain filter, unknown domain, attachments', async (t) => {
    const other = await addInboundDomain(app, dns, 'other.example', 'webhook');
    t.ok(other.id);
    for (let i = 1; i <= 3; i++) {
      const r = await smtpSend(mxPort, { from: 'a@nodmarc.example', to: [`p@other.example`] }, buildMessage({ from: 'a@nodmarc.example', to: 'p@other.example', subject: `page ${i}` }));
      t.ok(r.ok);
    }
    const page1 = await app.request<{ data: Array<{ subject: string; domain: string }>; meta: { total: number; totalPages: number } }>('GET', '/inbound?domain=other.example&per_page=2');
    t.same(page1.body.data.map((d) => d.subject), ['page 3', 'page 2'], 'newest first');
    t.same(page1.body.meta, { page: 1, perPage: 2, total: 3, totalPages: 2 });
    const page2 = await app.request<{ data: Array<{ subject: string }> }>('GET', '/inbound?domain=other.example&per_page=2&page=2');
    t.same(page2.body.data.map((d) => d.subject), ['page 1']);
    const unknown = await app.request<{ data: unknown[]; meta: { total: number } }>('GET', '/inbound?domain=nope.example');
    t.same([unknown.status, unknown.body.data, unknown.body.meta.total], [200, [], 0], 'unknown domain: empty page');
    t.equal((await app.request('GET', '/inbound?per_page=500')).status, 400, 'Form A rules');
    t.equal((await app.request('GET', '/inbound/999999')).status, 404);
    t.equal((await app.request('GET', '/inbound/abc')).status, 404);

    const boundary = 'b0undary';
    const mime = [
      'From: a@nodmarc.example',
      'To: files@hooks.example',
      'Subject: With files',
      'Message-ID: <files@nodmarc.example>',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain',
      '',
      'See attached.',
      `--${boundary}`,
      'Content-Type: application/pdf; name="report.pdf"',
      'Content-Disposition: attachment; filename="report.pdf"',
      'Content-Transfer-Encoding: base64',
      'Content-ID: <pdf1@nodmarc.example>',
      '',
      Buffer.from('%PDF-1.4 fake').toString('base64'),
      `--${boundary}--`,
      '',
    ].join('\r\n');
    t.ok((await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['files@hooks.example'] }, mime)).ok);
    const list = await app.request<{ data: Array<{ id: number; subject: string; attachmentCount: number }> }>('GET', '/inbound?domain=hooks.example');
    const item = list.body.data.find((d) => d.subject === 'With files')!;
    t.equal(item.attachmentCount, 1);
    const e = (await app.request<InboundView>('GET', `/inbound/${item.id}`)).body;
    t.same(e.attachments, [{ filename: 'report.pdf', content_type: 'application/pdf', size: 13, content_id: '<pdf1@nodmarc.example>', disposition: 'attachment' }]);
    const files = await app.request<{ attachments: Array<{ filename: string; contentType: string; size: number; contentId: string; content: string }> }>('GET', `/inbound/${item.id}/attachments`);
    t.same(files.body.attachments, [{ filename: 'report.pdf', contentType: 'application/pdf', size: 13, contentId: '<pdf1@nodmarc.example>', content: Buffer.from('%PDF-1.4 fake').toString('base64') }]);
  });

  t.test("another team's inbound emails are not found", async (t) => {
    const { createOtherTeam } = await import('../helpers/app.js');
    const other = await createOtherTeam(app);
    const list = await app.request<{ data: unknown[] }>('GET', '/inbound', { key: other.apiKey });
    t.same(list.body.data, []);
    const mine = await app.request<{ data: Array<{ id: number }> }>('GET', '/inbound');
    t.equal((await app.request('GET', `/inbound/${mine.body.data[0]!.id}`, { key: other.apiKey })).status, 404);
  });

  t.ok(domain.id);
});

t.test('MAIL_INBOUND_DMARC_REJECT=junk: the forged message is kept and marked junk', async (t) => {
  const { app, dns, mxPort } = await startInbound(t, { inboundDmarcReject: 'junk' });
  await addInboundDomain(app, dns, 'hooks.example', 'webhook');
  publishSender(dns, 'sender.example', 'reject');
  dns.set('TXT', 'evil.example', ['v=spf1 -all']);
  const res = await smtpSend(mxPort, { from: 'x@evil.example', to: ['finance@hooks.example'] }, buildMessage({ from: 'ceo@sender.example', to: 'finance@hooks.example', subject: 'Forged' }));
  t.ok(res.ok, res.response);
  const list = await app.request<{ data: Array<{ id: number; junk: boolean }> }>('GET', '/inbound');
  t.equal(list.body.data.length, 1);
  t.equal(list.body.data[0]!.junk, true, 'marked junk');
  const e = (await app.request<InboundView>('GET', `/inbound/${list.body.data[0]!.id}`)).body;
  t.equal(e.authentication.dmarc, 'fail');
});
