// SMTP submission end to end: nodemailer and Python's smtplib submit on the STARTTLS port (TLS required
// before AUTH) and the implicit-TLS port, as a mailbox or with an API key; the message goes through the
// send path to a sink MX, DKIM-signed (mailauth verifies), Bcc removed, events recorded, and a mailbox's
// submission leaves a \Seen copy in its Sent folder.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { ALICE, submissionFixture } from './setup.js';
import { TEST_HOSTNAME } from '../helpers/app.js';
import { arf } from '../inbound/fixtures.js';
import { smtpSend } from '../inbound/support.js';
import { LineClient } from '../pop3/line-client.js';
import { python } from '../pop3/setup.js';

interface Detail {
  status: string;
  from: string;
  to: string[];
  subject: string;
  text: string | null;
  message_id: string;
  recipients: Array<{ email: string; type: string; status: string }>;
}

const errorOf = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as { responseCode?: number; response?: string });

t.test('SMTP submission', async (t) => {
  const f = await submissionFixture(t, { trustedNetworks: [], mxGreetPauseMs: 0 }); // an untrusted client (loopback is trusted by default)
  const { app, sink } = f;
  const { ports, ctx } = app.appliance;
  const detail = (id: string) => app.request<Detail>('GET', `/emails/${id}`).then((r) => r.body);
  const queuedId = (response: string | undefined = '') => /queued as (em_\S+)/.exec(response)?.[1] ?? '';

  t.test('mailbox login on the STARTTLS port: delivered DKIM-signed, Bcc removed, Sent copy kept', async (t) => {
    const x = f.transport(ALICE);
    const raw = [
      'From: Alice <alice@acme.example>',
      'To: Bob <bob@dest.example>',
      'Cc: carol@dest.example',
      'Bcc: secret@dest.example',
      'Subject: Quarterly numbers',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Hello Bob,',
      '.a line that starts with a dot',
      'Alice',
      '',
    ].join('\r\n');
    const info = await x.sendMail({ envelope: { from: 'alice@acme.example', to: ['bob@dest.example', 'carol@dest.example', 'secret@dest.example'] }, raw });
    t.match(info.response, /^250 2\.0\.0 Ok: queued as em_/);
    const id = queuedId(info.response);
    const before = sink.accepted.length;
    await f.drain();
    t.equal(sink.accepted.length, before + 1, 'one SMTP transaction to the destination');
    const tx = sink.accepted[sink.accepted.length - 1]!;
    t.same([...tx.to].sort(), ['bob@dest.example', 'carol@dest.example', 'secret@dest.example'], 'the envelope is RCPT TO, Bcc included');
    t.equal(tx.from, `bounces+${id}@acme.example`, 'the return path names the email');
    const parsed = await simpleParser(tx.raw);
    t.notOk(parsed.headers.has('bcc'), 'no Bcc header goes out');
    t.equal(parsed.subject, 'Quarterly numbers');
    t.match(parsed.text, /^Hello Bob,\n\.a line that starts with a dot\nAlice/, 'the body as submitted (dot-unstuffed)');
    t.match(parsed.messageId, /^<[0-9a-f]+@mx\.appliance\.test>$/, 'a Message-ID was added');
    t.ok(parsed.date, 'a Date was added');
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }], 'mailauth verifies the DKIM signature');

    const d = await detail(id);
    t.equal(d.status, 'delivered');
    t.equal(d.from, '"Alice" <alice@acme.example>');
    t.equal(d.subject, 'Quarterly numbers');
    t.equal(d.message_id, parsed.messageId);
    t.match(d.text, /Hello Bob/);
    t.same(
      d.recipients.map((r) => [r.email, r.type, r.status]),
      [
        ['bob@dest.example', 'to', 'delivered'],
        ['carol@dest.example', 'cc', 'delivered'],
        ['secret@dest.example', 'bcc', 'delivered'],
      ],
    );
    const timeline = (await app.request<{ events: Array<{ type: string }> }>('GET', `/emails/${id}/events`)).body.events.map((e) => e.type);
    t.same(timeline, ['queued', 'sending', 'sent', 'delivered']);
    const events = (await app.request<{ data: Array<{ type: string; data: { email_id: string } }> }>('GET', '/events?per_page=100')).body.data;
    t.same(events.filter((e) => e.data.email_id === id).map((e) => e.type).sort(), ['email.delivered', 'email.sent']);

    const store = ctx.mailstore;
    const sent = await store.getFolder(f.alice, 'Sent');
    const copies = await store.listMessages(sent!.id);
    t.equal(copies.length, 1, 'a copy in Sent');
    t.ok(copies[0]!.flags.includes('\\Seen'), 'flagged \\Seen');
    const copy = (await store.readMessage(sent!.id, copies[0]!.uid))!.toString();
    t.match(copy, /^Bcc: secret@dest\.example$/m, 'the sender\'s own copy keeps its Bcc');
    t.match(copy, /^Message-ID: <[0-9a-f]+@mx\.appliance\.test>$/m, 'with the Message-ID that went out');
  });

  t.test('API key (username apikey) on the implicit-TLS port: any verified domain of the team, no Sent copy', async (t) => {
    const x = f.transport({ user: 'apikey', pass: app.apiKey }, { implicit: true });
    const info = await x.sendMail({ from: 'Billing <billing@acme.example>', to: 'dave@dest.example', subject: 'Invoice', text: 'Pay up.', html: '<p>Pay up.</p>', messageId: '<given@acme.example>' });
    t.match(info.response, /^250 /);
    const id = queuedId(info.response);
    await f.drain();
    const tx = sink.accepted[sink.accepted.length - 1]!;
    t.same(tx.to, ['dave@dest.example']);
    const parsed = await simpleParser(tx.raw);
    t.equal(parsed.messageId, '<given@acme.example>', 'the client\'s Message-ID is kept');
    t.match(parsed.html, /<p>Pay up\.<\/p>/);
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }]);
    const d = await detail(id);
    t.equal(d.status, 'delivered');
    t.equal(d.message_id, '<given@acme.example>');
    const sent = await ctx.mailstore.getFolder(f.alice, 'Sent');
    t.equal((await ctx.mailstore.listMessages(sent!.id)).length, 1, 'an API-key send stores no Sent copy');
  });

  t.test('Python smtplib: STARTTLS, AUTH LOGIN/PLAIN, sendmail', async (t) => {
    const script = `
import json, smtplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = smtplib.SMTP('127.0.0.1', int(sys.argv[1]), timeout=20)
s.ehlo('client.example')
out = {'starttls': s.has_extn('starttls')}
try:
    s.login(sys.argv[2], sys.argv[3])
    out['login_before_tls'] = 'accepted'
except smtplib.SMTPException as e:
    out['login_before_tls'] = [e.smtp_code, e.smtp_error.decode()] if hasattr(e, 'smtp_code') else str(e)
s.starttls(context=ctx)
s.ehlo('client.example')
out['auth_after_tls'] = s.esmtp_features.get('auth', '')
out['login'] = list(s.login(sys.argv[2], sys.argv[3]))
out['login'][1] = out['login'][1].decode()
msg = 'From: alice@acme.example\\r\\nTo: erin@dest.example\\r\\nSubject: From Python\\r\\n\\r\\nHi from smtplib.\\r\\n'
out['refused'] = s.sendmail('alice@acme.example', ['erin@dest.example'], msg)
s.quit()
print(json.dumps(out))
`;
    const out = await python<{ login_before_tls: string; starttls: boolean; auth_after_tls: string; login: [number, string]; refused: Record<string, unknown> }>(script, [ports.submission.port, ALICE.user, ALICE.pass]);
    // AUTH is not offered before STARTTLS (RFC 4954 §4): smtplib refuses to log in, the password never leaves it.
    t.equal(out.login_before_tls, 'SMTP AUTH extension not supported by server.', 'no login before STARTTLS');
    t.equal(out.starttls, true);
    t.match(out.auth_after_tls, /PLAIN/);
    t.match(out.auth_after_tls, /LOGIN/);
    t.equal(out.login[0], 235);
    t.same(out.refused, {});
    await f.drain();
    const tx = sink.accepted[sink.accepted.length - 1]!;
    t.same(tx.to, ['erin@dest.example']);
    t.equal((await simpleParser(tx.raw)).subject, 'From Python');
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }]);
  });

  t.test('STARTTLS port: AUTH (538) and MAIL (530) refused on a plain session', async (t) => {
    const c = await LineClient.connect(ports.submission.port);
    t.teardown(() => c.close());
    t.match(await c.line(), /^220 /);
    c.write('EHLO client.example\r\n');
    const ehlo: string[] = [];
    for (let line = await c.line(); ; line = await c.line()) {
      ehlo.push(line);
      if (line.startsWith('250 ')) break;
    }
    t.ok(ehlo.some((l) => /STARTTLS/.test(l)), 'STARTTLS offered');
    t.notOk(ehlo.some((l) => /AUTH/.test(l)), 'AUTH not offered before TLS');
    t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0${ALICE.user}\0${ALICE.pass}`).toString('base64')}`), /^538 .*STARTTLS/);
    t.match(await c.cmd('MAIL FROM:<alice@acme.example>'), /^530 /, 'no mail without AUTH');
    t.match(await c.cmd('STARTTLS'), /^220 /);
    await c.startTls();
    c.write('EHLO client.example\r\n');
    const secure: string[] = [];
    for (let line = await c.line(); ; line = await c.line()) {
      secure.push(line);
      if (line.startsWith('250 ')) break;
    }
    t.ok(secure.some((l) => /AUTH PLAIN LOGIN/.test(l)), 'AUTH offered inside TLS');
    t.match(await c.cmd('MAIL FROM:<alice@acme.example>'), /^530 /, 'still no mail without AUTH');
    t.match(await c.cmd(`AUTH PLAIN ${Buffer.from(`\0${ALICE.user}\0${ALICE.pass}`).toString('base64')}`), /^235 /);
    t.match(await c.cmd('MAIL FROM:<alice@acme.example>'), /^250 /);
    t.match(await c.cmd('RCPT TO:<not an address>'), /^5\d\d /);
    t.match(await c.cmd('QUIT'), /^221 /);
  });

  t.test('refusals: a mailbox sends only as itself; keys only from verified domains of their team', async (t) => {
    const x = f.transport(ALICE);
    const other = await errorOf(x.sendMail({ from: 'boss@acme.example', to: 'bob@dest.example', subject: 'x', text: 'x' }));
    t.equal(other?.responseCode, 550);
    t.match(other?.response, /^550 5\.7\.1 A mailbox sends only as its own address: From must be alice@acme\.example/);

    const key = f.transport({ user: 'apikey', pass: app.apiKey }, { implicit: true });
    const unknown = await errorOf(key.sendMail({ from: 'x@unknown.example', to: 'bob@dest.example', subject: 'x', text: 'x' }));
    t.match(unknown?.response, /^550 5\.7\.1 Domain 'unknown\.example' not found for this team/);
    await app.request('POST', '/domains', { body: { name: 'pending.example' } });
    const pending = await errorOf(key.sendMail({ from: 'x@pending.example', to: 'bob@dest.example', subject: 'x', text: 'x' }));
    t.match(pending?.response, /^550 5\.7\.1 Domain 'pending\.example' is not verified/);
    const noFrom = await errorOf(key.sendMail({ envelope: { from: 'x@acme.example', to: ['bob@dest.example'] }, raw: 'Subject: no from\r\n\r\nbody\r\n' }));
    t.match(noFrom?.response, /^554 5\.6\.0 The message must have one From header/);

    const bad = await errorOf(f.transport({ user: 'apikey', pass: 'sk_live_notAKeyAtAll000000000000000' }).sendMail({ from: 'x@acme.example', to: 'b@dest.example', text: 'x' }));
    t.equal(bad?.responseCode, 535);
    const wrong = await errorOf(f.transport({ user: ALICE.user, pass: 'wrong' }).sendMail({ from: ALICE.user, to: 'b@dest.example', text: 'x' }));
    t.match(wrong?.response, /^535 5\.7\.8/);
  });

  t.test('at most 50 recipients per message', async (t) => {
    const x = f.transport({ user: 'apikey', pass: app.apiKey });
    const to = Array.from({ length: 51 }, (_, i) => `r${i}@dest.example`);
    const before = sink.accepted.length;
    const info = await x.sendMail({ from: 'a@acme.example', to, subject: 'many', text: 'x' });
    t.same(info.rejected, ['r50@dest.example'], 'the 51st RCPT is refused; the client sends to the 50 accepted');
    t.match((info as { rejectedErrors?: Array<{ response: string }> }).rejectedErrors?.[0]?.response, /^452 4\.5\.3 Too many recipients: at most 50/);
    await f.drain();
    t.equal(sink.accepted.length, before + 1);
    t.equal(sink.accepted[sink.accepted.length - 1]!.to.length, 50);
  });

  t.test('the raw send path: bare LF line ends become CRLF, 8-bit bodies and folded headers survive signing', async (t) => {
    const { sendRawEmail } = await import('../../src/services/sending/raw-emails.js');
    const raw = Buffer.from(
      'From: =?utf-8?q?J=C3=BCrgen?= <juergen@acme.example>\nTo: frank@dest.example\nBcc: hidden@dest.example,\n  also-hidden@dest.example\nSubject: Gr\u00fc\u00dfe\n  folded\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\nGr\u00fc\u00dfe aus K\u00f6ln\n.dot\n',
      'utf8',
    );
    const result = await sendRawEmail(ctx, { teamId: app.teamId, apiKeyId: null, mode: 'live' }, { recipients: ['frank@dest.example', 'hidden@dest.example', 'Frank@dest.example'], raw });
    await f.drain();
    const tx = sink.accepted[sink.accepted.length - 1]!;
    t.same([...tx.to].sort(), ['frank@dest.example', 'hidden@dest.example'], 'envelope recipients once each');
    const text = tx.raw.toString('utf8');
    t.notMatch(text, /(?<!\r)\n/, 'CRLF only');
    t.notMatch(text, /hidden@dest\.example/, 'the folded Bcc header is gone entirely');
    const parsed = await simpleParser(tx.raw);
    t.equal(parsed.text, 'Grüße aus Köln\n.dot\n');
    const sentBody = tx.raw.subarray(tx.raw.indexOf('\r\n\r\n'));
    t.notOk(sentBody.some((c) => c > 0x7f), 'the 8-bit body went out as quoted-printable (RFC 6152: not every server takes 8-bit)');
    t.equal(parsed.headers.get('content-transfer-encoding'), 'quoted-printable');
    t.equal(parsed.from?.value[0]?.name, 'Jürgen');
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }]);
    const d = await detail(result.id);
    t.equal(d.from, '"Jürgen" <juergen@acme.example>');
    t.same(d.recipients.map((r) => [r.email, r.type]), [['frank@dest.example', 'to'], ['hidden@dest.example', 'bcc']]);
  });

  t.test('a line over 998 characters goes out folded as quoted-printable, the text unchanged, DKIM-signed', async (t) => {
    const long = 'word'.repeat(625);
    const info = await f.transport(ALICE).sendMail({ envelope: { from: 'alice@acme.example', to: ['lena@dest.example'] }, raw: ['From: alice@acme.example', 'To: lena@dest.example', 'Subject: long', '', long, 'next', ''].join('\r\n') });
    t.match(info.response, /queued as em_/);
    await f.drain();
    const tx = sink.accepted[sink.accepted.length - 1]!;
    t.ok(Math.max(...tx.raw.toString('latin1').split('\r\n').map((l) => l.length)) <= 998, 'RFC 5321: lines of at most 998 characters');
    t.equal((await simpleParser(tx.raw)).text?.trimEnd(), `${long}\nnext`);
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }]);
  });

  t.test('attachments of a submitted message are listed as for an API send, and go out inside the message', async (t) => {
    const pdf = Buffer.alloc(3000, 7);
    const csv = 'a,b\r\n1,2\r\n';
    const x = f.transport({ user: 'apikey', pass: app.apiKey });
    const before = sink.accepted.length;
    const info = await x.sendMail({
      from: 'reports@acme.example',
      to: 'gina@dest.example',
      subject: 'With attachments',
      text: 'See attached.',
      html: '<p>See attached.</p>',
      attachments: [
        { filename: 'report.pdf', content: pdf, contentType: 'application/pdf' },
        { filename: 'data.csv', content: csv, contentType: 'text/csv' },
      ],
    });
    const id = queuedId(info.response);
    // The same email sent through the API: the two records list the same attachments.
    const api = await app.request<{ id: string }>('POST', '/emails', {
      body: {
        from: 'reports@acme.example',
        to: ['gina@dest.example'],
        subject: 'With attachments',
        text: 'See attached.',
        html: '<p>See attached.</p>',
        attachments: [
          { filename: 'report.pdf', content: pdf.toString('base64'), content_type: 'application/pdf' },
          { filename: 'data.csv', content: Buffer.from(csv).toString('base64'), content_type: 'text/csv' },
        ],
      },
    });
    t.equal(api.status, 202);
    const byApi = (await app.request<{ attachments: unknown[] }>('GET', `/emails/${api.body.id}`)).body;
    const bySmtp = (await app.request<{ attachments: unknown[]; html: string | null; text: string | null }>('GET', `/emails/${id}`)).body;
    t.same(bySmtp.attachments, [
      { filename: 'report.pdf', content_type: 'application/pdf', size: 3000 },
      { filename: 'data.csv', content_type: 'text/csv', size: Buffer.byteLength(csv) },
    ]);
    t.same(bySmtp.attachments, byApi.attachments, 'the same list as the API send');
    t.match(bySmtp.html, /<p>See attached\.<\/p>/);
    t.match(bySmtp.text, /See attached\./);

    await f.drain();
    t.equal(sink.accepted.length, before + 2, 'both went out');
    const tx = sink.accepted.slice(before).find((m) => m.raw.includes(`Message-ID: ${info.messageId}`))!;
    t.ok(tx, 'the submitted message reached the MX');
    const submitted = await simpleParser(tx.raw);
    t.same(
      submitted.attachments.map((a) => [a.filename, a.contentType, a.content.length]),
      [['report.pdf', 'application/pdf', 3000], ['data.csv', 'text/csv', Buffer.byteLength(csv)]],
      'the submitted message went out with its attachments',
    );
    t.ok(submitted.attachments[0]!.content.equals(pdf), 'byte for byte');
    t.same(await f.dkim(tx.raw), [{ result: 'pass', domain: 'acme.example' }]);
    t.equal((await app.request<{ status: string }>('GET', `/emails/${id}`)).body.status, 'delivered');
  });

  t.test("a provider's complaint about a submitted message is matched by its Message-ID, the client's or the box's", async (t) => {
    // A submitted message keeps its client's Message-ID (or gets one of the box's without an em_ id in it):
    // the feedback-loop report, which names the original only by it, found no email (audit against Postfix).
    const fbl = `fbl@${TEST_HOSTNAME}`;
    const x = f.transport(ALICE);
    const cases: Array<[string, string | null]> = [
      ['hugo@dest.example', '<client-1234.5678@thunderbird.example>'],
      ['iris@dest.example', null],
    ];
    for (const [to, clientId] of cases) {
      const raw = [...(clientId ? [`Message-ID: ${clientId}`] : []), 'From: alice@acme.example', `To: ${to}`, 'Subject: Offer', '', 'Hello', ''].join('\r\n');
      const info = await x.sendMail({ envelope: { from: 'alice@acme.example', to: [to] }, raw });
      const id = queuedId(info.response);
      await f.drain();
      const messageId = (await detail(id)).message_id;
      if (clientId) t.equal(messageId, clientId, "the client's Message-ID is kept");
      const res = await smtpSend(ports.mx.port, { from: 'feedback@arf.dest.example', to: [fbl] }, arf({ to: fbl, recipient: to, original: { messageId, from: 'alice@acme.example', to } }));
      t.ok(res.ok, res.response);
      t.match(await detail(id), { status: 'complained', recipients: [{ email: to, status: 'complained' }] }, messageId);
    }
    // A Message-ID that no email of the box carries changes nothing.
    const res = await smtpSend(ports.mx.port, { from: 'feedback@arf.dest.example', to: [fbl] }, arf({ to: fbl, recipient: 'hugo@dest.example', original: { messageId: '<nobody@thunderbird.example>', from: 'alice@acme.example', to: 'hugo@dest.example' } }));
    t.ok(res.ok);
  });

  t.test('a test-mode key sends nothing out', async (t) => {
    const created = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'smtp test', permission: 'sending_access', mode: 'test' } });
    const x = f.transport({ user: 'APIKEY', pass: created.body.token });
    const before = sink.accepted.length;
    const info = await x.sendMail({ from: 'a@acme.example', to: 'bounced@dest.example', subject: 'test mode', text: 'x' });
    await f.drain();
    t.equal(sink.accepted.length, before, 'nothing reached the MX');
    const d = await detail(queuedId(info.response));
    t.equal(d.status, 'bounced', 'the simulator decided');
  });
});
