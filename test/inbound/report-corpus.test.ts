// Mail that comes back, as real mail servers write it: trimmed copies of sisimai's public bounce corpus
// (qmail, GMX, Hotmail JMRP), DSNs and delay warnings that Exim 4.96 wrote for the box's own email, and
// the replies that are no bounce (out-of-office, a person answering the return path). Each first through
// the parsers, then over the MX against an email the box really sent: status, events, code, category,
// suppression, and which recipient.
import t, { type Test } from 'tap';
import { Buffer } from 'node:buffer';
import { isFeedbackReport, parseComplaint } from '../../src/smtp/reports/arf.js';
import { parseBounce } from '../../src/smtp/reports/dsn.js';
import { parseMime } from '../../src/smtp/reports/mime.js';
import { TEST_HOSTNAME } from '../helpers/app.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { smtpSend, startInbound } from './support.js';

interface Ref {
  /** The return path the report is addressed to. */
  to: string;
  /** The recipient it is about. */
  rcpt: string;
  /** The Message-ID of the returned original. */
  messageId: string;
}

const lines = (...l: string[]) => l.join('\r\n');

/** qmail-send's failure notice (sisimai qmail-06): a 4xx reply, but qmail has given up for good (the
 *  returned original below it may say "retry" as it likes). */
const qmailGaveUp = (r: Ref) =>
  lines(
    'From: MAILER-DAEMON@mx.dest.example',
    `To: ${r.to}`,
    'Subject: failure notice',
    'Date: 1 Mar 2026 14:59:45 -0000',
    '',
    'Hi. This is the qmail-send program at mx.dest.example.',
    "I'm afraid I wasn't able to deliver your message to the following addresses.",
    "This is a permanent error; I've given up. Sorry it didn't work out.",
    '',
    `<${r.rcpt}>:`,
    '192.0.2.135 does not like recipient.',
    `Remote host said: 450 4.2.2 <${r.rcpt}>... Mailbox Full`,
    'Giving up on 192.0.2.135.',
    "I'm not going to try again; this message has been in the queue too long.",
    '',
    '--- Below this line is a copy of the message.',
    '',
    `Message-ID: ${r.messageId}`,
    'From: shop@acme.example',
    `To: ${r.rcpt}`,
    'Subject: Your order',
    '',
    'If your card is declined we will retry the payment tomorrow.',
    '',
  );

/** GMX / WEB.DE (sisimai de-gmx-02): '"address":' and an enhanced code without a basic one. */
const gmxUnknown = (r: Ref) =>
  lines(
    'From: MAILER-DAEMON@mail.gmx.com',
    `To: ${r.to}`,
    'Subject: Mail delivery failed: returning message to sender',
    'Date: Sun, 1 Mar 2026 18:00:14 +0100',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'This message was created automatically by mail delivery software.',
    '',
    'A message that you sent could not be delivered to one or more of',
    'its recipients. This is a permanent error. The following address',
    'failed:',
    '',
    `"${r.rcpt}":`,
    'SMTP error from remote server after RCPT command:',
    'host: mx.dest.example',
    `5.1.1 <${r.rcpt}>... User Unknown`,
    '',
    '',
    '--- The header of the original message is following. ---',
    '',
    `Message-ID: ${r.messageId}`,
    'From: Shop <shop@acme.example>',
    `To: ${r.rcpt}`,
    'Subject: Your order',
    '',
  );

/** Exim 4.96's multipart/report (written by a real Exim for the box's email): Status is always X.0.0. */
const eximReport = (r: Ref, o: { subject: string; text: string[]; action: 'failed' | 'delayed'; status: string; diagnostic?: string }) => {
  const b = '1795712015-eximdsn-256159845';
  return lines(
    'Auto-Submitted: auto-replied',
    'From: Mail Delivery System <Mailer-Daemon@mx.dest.example>',
    `To: ${r.to}`,
    `References: ${r.messageId}`,
    `Content-Type: multipart/report; report-type=delivery-status; boundary=${b}`,
    'MIME-Version: 1.0',
    `Subject: ${o.subject}`,
    'Date: Sun, 01 Mar 2026 16:52:27 +0000',
    '',
    `--${b}`,
    'Content-type: text/plain; charset=us-ascii',
    '',
    'This message was created automatically by mail delivery software.',
    '',
    ...o.text,
    '',
    `--${b}`,
    'Content-type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.dest.example',
    '',
    `Action: ${o.action}`,
    `Final-Recipient: rfc822;${r.rcpt}`,
    `Status: ${o.status}`,
    ...(o.diagnostic ? ['Remote-MTA: dns; 192.0.2.4', `Diagnostic-Code: smtp; ${o.diagnostic}`] : []),
    '',
    `--${b}`,
    'Content-type: text/rfc822-headers',
    '',
    `Return-path: <${r.to}>`,
    'From: Shop <shop@acme.example>',
    `To: ${r.rcpt}`,
    'Subject: Your order',
    `Message-ID: ${r.messageId}`,
    '',
    `--${b}--`,
    '',
  );
};

const eximDelayMailboxFull = (r: Ref) =>
  eximReport(r, {
    subject: 'Warning: message 1xWchu-0001uh-1O delayed 1 minutes',
    text: [
      'A message that you sent has not yet been delivered to one or more of its',
      'recipients after more than 1 minutes on the queue on mx.dest.example.',
      '',
      'The address to which the message has not yet been delivered is:',
      '',
      `  ${r.rcpt}`,
      '    host 192.0.2.4 [192.0.2.4]',
      `    Delay reason: SMTP error from remote mail server after RCPT TO:<${r.rcpt}>:`,
      `    452 4.2.2 <${r.rcpt}>: Mailbox full, try again later`,
      '',
      'No action is required on your part. Delivery attempts will continue for',
      'some time, and this warning may be repeated at intervals if the message',
      'remains undelivered.',
    ],
    action: 'delayed',
    status: '4.0.0',
    diagnostic: `452 4.2.2 <${r.rcpt}>: Mailbox full, try again later`,
  });

const eximGaveUpMailboxFull = (r: Ref) =>
  eximReport(r, {
    subject: 'Mail delivery failed: returning message to sender',
    text: [
      'A message that you sent could not be delivered to one or more of its',
      'recipients. This is a permanent error. The following address(es) failed:',
      '',
      `  ${r.rcpt}`,
      '    host 192.0.2.4 [192.0.2.4]',
      `    SMTP error from remote mail server after RCPT TO:<${r.rcpt}>:`,
      `    452 4.2.2 <${r.rcpt}>: Mailbox full, try again later: retry timeout exceeded`,
    ],
    action: 'failed',
    status: '5.0.0',
    diagnostic: `452 4.2.2 <${r.rcpt}>: Mailbox full, try again later: retry timeout exceeded`,
  });

const eximUserUnknown = (r: Ref) =>
  eximReport(r, {
    subject: 'Mail delivery failed: returning message to sender',
    text: [
      'A message that you sent could not be delivered to one or more of its',
      'recipients. This is a permanent error. The following address(es) failed:',
      '',
      `  ${r.rcpt}`,
      '    host 192.0.2.4 [192.0.2.4]',
      `    SMTP error from remote mail server after RCPT TO:<${r.rcpt}>:`,
      `    550 5.1.1 <${r.rcpt}>: Recipient address rejected: User unknown in virtual mailbox table`,
    ],
    action: 'failed',
    status: '5.0.0',
    diagnostic: `550 5.1.1 <${r.rcpt}>: Recipient address rejected: User unknown in virtual mailbox table`,
  });

/** Exim's own local delivery failing: no Diagnostic-Code, the reason only in the text. */
const eximLocalQuota = (r: Ref) =>
  eximReport(r, {
    subject: 'Mail delivery failed: returning message to sender',
    text: [
      'A message that you sent could not be delivered to one or more of its',
      'recipients. This is a permanent error. The following address(es) failed:',
      '',
      `  ${r.rcpt}`,
      '    mailbox is full: retry timeout exceeded',
    ],
    action: 'failed',
    status: '5.0.0',
  });

/** Microsoft JMRP (sisimai arf-13): multipart/mixed, the complained-of message, X-HmXmrOriginalRecipient. */
const jmrp = (r: Ref, reporter = r.rcpt) =>
  lines(
    'From: staff@hotmail.com',
    'Subject:  complaint about message from 192.0.2.10',
    `To: ${r.to}`,
    'Date: Tue, 3 Mar 2026 09:22:13 -0700',
    'MIME-Version:  1.0 ',
    'Content-Type: multipart/mixed; boundary="B2E4395D-05AB-4EAF-8557-699F69427353"',
    'Message-ID: <BAY0-XMR-027Y1mfKb000f565d4@BAY0-XMR-027.phx.gbl>',
    '',
    '--B2E4395D-05AB-4EAF-8557-699F69427353',
    'Content-Type: message/rfc822',
    'Content-Disposition: inline',
    '',
    `X-HmXmrOriginalRecipient: ${reporter}`,
    'X-Reporter-IP: 192.0.2.124',
    'X-SID-PRA: shop@acme.example',
    'Date: Tue, 3 Mar 2026 15:40:10 +0200',
    `To: ${r.rcpt}`,
    'From: Shop <shop@acme.example>',
    'Subject: Your order',
    `Message-ID: ${r.messageId}`,
    '',
    'Thanks.',
    '',
    '--B2E4395D-05AB-4EAF-8557-699F69427353--',
    '',
  );

/** An RFC 5965 report without Original-Rcpt-To: the enclosed copy shows To, the provider's Received the mailbox. */
const arfNoRcptTo = (r: Ref, o: { shownTo: string; deliveredTo?: string }) =>
  lines(
    'From: fbl@feedback.dest.example',
    `To: ${r.to}`,
    'Subject: Abuse report',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="arf"',
    '',
    '--arf',
    'Content-Type: text/plain',
    '',
    'A user marked your message as spam.',
    '',
    '--arf',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: SomeProvider/1.0',
    'Version: 1',
    '',
    '--arf',
    'Content-Type: text/rfc822-headers',
    '',
    ...(o.deliveredTo ? [`Received: from mx.appliance.test (mx.appliance.test [192.0.2.10])`, `\tby mx.dest.example with ESMTPS id 4AbC1`, `\tfor <${o.deliveredTo}>; Mon, 2 Mar 2026 08:59:58 +0000`] : []),
    'From: Shop <shop@acme.example>',
    `To: ${o.shownTo}`,
    'Subject: Your order',
    `Message-ID: ${r.messageId}`,
    '',
    '--arf--',
    '',
  );

/** A DSN whose Final-Recipient is where an address was forwarded to (no Original-Recipient). */
const forwardedDsn = (r: Ref, o: { shownTo: string }) =>
  lines(
    'From: MAILER-DAEMON@mx.elsewhere.example (Mail Delivery System)',
    `To: ${r.to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="fw"',
    '',
    '--fw',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.elsewhere.example',
    '',
    `Final-Recipient: rfc822; ${r.rcpt}`,
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 User unknown',
    '',
    '--fw',
    'Content-Type: text/rfc822-headers',
    '',
    'From: Shop <shop@acme.example>',
    `To: ${o.shownTo}`,
    `Message-ID: ${r.messageId}`,
    '',
    '--fw--',
    '',
  );

/** Out-of-office replies to the return path: an address and three-digit numbers, but no report. */
const outOfOffice = (r: Ref, o: { mention: string }) =>
  lines(
    `From: Carol <${r.rcpt}>`,
    `To: ${r.to}`,
    'Subject: Automatic reply: Your order',
    'Auto-Submitted: auto-replied',
    `In-Reply-To: ${r.messageId}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    'I am out of the office until 9 March.',
    `Note: ${o.mention} does not exist after 31 March (ticket 550), please use carol@new.example.`,
    '',
  );
const abwesenheit = (r: Ref) =>
  lines(
    `From: Carol <${r.rcpt}>`,
    `To: ${r.to}`,
    'Subject: Abwesenheitsnotiz: Your order',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Vielen Dank für Ihre Nachricht. Ich bin bis 9. März nicht im Büro.',
    'In dringenden Fällen wenden Sie sich bitte an <dave@dest.example>, Tel. 0301 555 450.',
    '',
  );
const personReplies = (r: Ref) =>
  lines(
    `From: Carol <${r.rcpt}>`,
    `To: ${r.to}`,
    'Subject: Re: Your order',
    `In-Reply-To: ${r.messageId}`,
    '',
    `Hi, order for ${r.rcpt}: 450 of the items never arrived, please check.`,
    '',
  );

const ref: Ref = { to: 'bounces+em_abcdefgh1234@acme.example', rcpt: 'carol@dest.example', messageId: `<em_abcdefgh1234@${TEST_HOSTNAME}>` };
const ours = (a: string) => /^bounces\+/i.test(a);
const parse = (raw: string) => parseBounce(parseMime(Buffer.from(raw)), ours);

t.test('parsers', async (t) => {
  const cases = [
    { name: 'qmail: a 4xx reply in a failure notice is a failure', raw: qmailGaveUp(ref), want: { action: 'failed', status: '4.2.2', address: ref.rcpt } },
    { name: 'GMX: "address": and a bare enhanced code', raw: gmxUnknown(ref), want: { action: 'failed', status: '5.1.1', address: ref.rcpt } },
    { name: 'Exim delay warning: the remote code, not Status 4.0.0', raw: eximDelayMailboxFull(ref), want: { action: 'delayed', status: '4.2.2', address: ref.rcpt } },
    { name: 'Exim failure: Status 5.0.0 over a 550 5.1.1', raw: eximUserUnknown(ref), want: { action: 'failed', status: '5.1.1', address: ref.rcpt } },
    { name: 'Exim failure: Status 5.0.0 over a 4xx stays 5.0.0', raw: eximGaveUpMailboxFull(ref), want: { action: 'failed', status: '5.0.0', address: ref.rcpt } },
  ];
  for (const c of cases) {
    const notice = parse(c.raw);
    t.ok(notice, `${c.name}: parsed`);
    const r = notice?.recipients[0];
    t.same(r && [r.action, r.status, r.address], [c.want.action, c.want.status, c.want.address], c.name);
  }
  t.equal(parse(qmailGaveUp(ref))!.originalMessageId, ref.messageId, 'qmail: the inline original');
  t.match(parse(eximLocalQuota(ref))!.recipients[0], { address: ref.rcpt, status: '5.0.0', diagnostic: 'mailbox is full: retry timeout exceeded' }, 'no Diagnostic-Code: the explanation under the address in the text');

  t.equal(parse(outOfOffice(ref, { mention: ref.rcpt })), null, 'an out-of-office naming the recipient and "550" is no bounce');
  t.equal(parse(abwesenheit(ref)), null, 'nor one naming another address and "450"');
  t.equal(parse(personReplies(ref)), null, 'nor a person answering the return path');

  const report = parseMime(Buffer.from(jmrp(ref)));
  t.ok(isFeedbackReport(report), 'JMRP recognised as a complaint');
  t.match(parseComplaint(report), { feedbackType: 'abuse', userAgent: 'Microsoft JMRP', originalRcptTo: [ref.rcpt], originalMessageId: ref.messageId });
  t.same(parseComplaint(parseMime(Buffer.from(arfNoRcptTo(ref, { shownTo: 'a@dest.example', deliveredTo: 'c@dest.example' }))))?.receivedFor, ['c@dest.example'], 'the mailbox the provider delivered to');
});

interface Detail {
  status: string;
  recipients: Array<{ email: string; status: string; code: string | null; bounce_category: string | null }>;
}

t.test('over the MX, against an email the box sent', async (t) => {
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const { app, dns, mxPort } = await startInbound(t, { outboundPort: sink.port });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  await addVerifiedDomain(app, dns, 'acme.example');

  async function send(to: string[], bcc: string[] = []): Promise<{ id: string; ref: (rcpt: string) => Ref }> {
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'shop@acme.example', to, ...(bcc.length ? { bcc } : {}), subject: 'Your order', text: 'Thanks.' } });
    if (res.status !== 202) throw new Error(res.text);
    await app.appliance.ctx.jobs.drain();
    const id = res.body.id;
    return { id, ref: (rcpt: string) => ({ to: `bounces+${id}@acme.example`, rcpt, messageId: `<${id}@${TEST_HOSTNAME}>` }) };
  }
  const deliver = async (t: Test, r: Ref, raw: string) => {
    const res = await smtpSend(mxPort, { from: '', to: [r.to] }, raw);
    t.ok(res.ok, `accepted: ${res.response}`);
  };
  const detail = async (id: string) => (await app.request<Detail>('GET', `/emails/${id}`)).body;
  const recipient = async (id: string, address: string) => (await detail(id)).recipients.find((r) => r.email === address);
  const events = async (type: string, id: string) => (await app.request<{ data: Array<{ data: Record<string, unknown> }> }>('GET', `/events?type=${type}`)).body.data.filter((e) => e.data.email_id === id);
  const suppressed = async (address: string) => Boolean(await app.appliance.ctx.db('suppressions').where({ email: address }).first());

  t.test('qmail gave up after a 450 4.2.2: bounced, mailbox_full, not suppressed', async (t) => {
    const { id, ref } = await send(['qm@dest.example']);
    await deliver(t, ref('qm@dest.example'), qmailGaveUp(ref('qm@dest.example')));
    t.match(await recipient(id, 'qm@dest.example'), { status: 'bounced', code: '4.2.2', bounce_category: 'mailbox_full' });
    t.equal((await detail(id)).status, 'bounced');
    t.equal((await events('email.bounced', id)).length, 1, 'email.bounced');
    t.notOk(await suppressed('qm@dest.example'), 'a full mailbox is no reason to suppress');
  });

  t.test('GMX user unknown: bounced, invalid_mailbox, suppressed', async (t) => {
    const { id, ref } = await send(['gmx@dest.example']);
    await deliver(t, ref('gmx@dest.example'), gmxUnknown(ref('gmx@dest.example')));
    t.match(await recipient(id, 'gmx@dest.example'), { status: 'bounced', code: '5.1.1', bounce_category: 'invalid_mailbox' });
    t.ok(await suppressed('gmx@dest.example'));
  });

  t.test('Exim: the delay warning soft-bounces as mailbox_full, the failure after it bounces as mailbox_full', async (t) => {
    const { id, ref } = await send(['exfull@dest.example']);
    await deliver(t, ref('exfull@dest.example'), eximDelayMailboxFull(ref('exfull@dest.example')));
    t.match(await recipient(id, 'exfull@dest.example'), { status: 'delivered', code: '4.2.2', bounce_category: 'mailbox_full' }, 'delayed: still delivered');
    t.match((await events('email.soft_bounced', id))[0]?.data, { bounce_code: '4.2.2', bounce_category: 'mailbox_full' });
    await deliver(t, ref('exfull@dest.example'), eximGaveUpMailboxFull(ref('exfull@dest.example')));
    t.match(await recipient(id, 'exfull@dest.example'), { status: 'bounced', code: '5.0.0', bounce_category: 'mailbox_full' }, 'not rate_limited: the 452 says 4.2.2');
    t.notOk(await suppressed('exfull@dest.example'));
  });

  t.test('Exim: user unknown reported as 5.1.1; its local quota failure as mailbox_full', async (t) => {
    const a = await send(['exunknown@dest.example']);
    await deliver(t, a.ref('exunknown@dest.example'), eximUserUnknown(a.ref('exunknown@dest.example')));
    t.match(await recipient(a.id, 'exunknown@dest.example'), { status: 'bounced', code: '5.1.1', bounce_category: 'invalid_mailbox' });
    t.match((await events('email.bounced', a.id))[0]?.data, { bounce_code: '5.1.1' });
    const b = await send(['exquota@dest.example']);
    await deliver(t, b.ref('exquota@dest.example'), eximLocalQuota(b.ref('exquota@dest.example')));
    t.match(await recipient(b.id, 'exquota@dest.example'), { status: 'bounced', bounce_category: 'mailbox_full' });
  });

  t.test('out-of-office and personal replies to the return path change nothing', async (t) => {
    for (const [name, make] of [
      ['out-of-office naming the recipient', (r: Ref) => outOfOffice(r, { mention: r.rcpt })],
      ['German out-of-office naming a colleague', abwesenheit],
      ['a person answering', personReplies],
    ] as const) {
      const { id, ref } = await send(['ooo@dest.example']);
      await deliver(t, ref('ooo@dest.example'), make(ref('ooo@dest.example')));
      t.match(await recipient(id, 'ooo@dest.example'), { status: 'delivered', code: '2.0.0' }, name);
      t.equal((await events('email.bounced', id)).length + (await events('email.soft_bounced', id)).length, 0, `${name}: no event`);
    }
    t.notOk(await suppressed('ooo@dest.example'), 'not suppressed');
  });

  t.test('Microsoft JMRP: complained, email.complained, suppressed', async (t) => {
    const { id, ref } = await send(['hm@dest.example', 'other@dest.example']);
    await deliver(t, ref('hm@dest.example'), jmrp(ref('hm@dest.example')));
    t.match(await recipient(id, 'hm@dest.example'), { status: 'complained' });
    t.match(await recipient(id, 'other@dest.example'), { status: 'delivered' }, 'only the complaining mailbox');
    t.match((await events('email.complained', id))[0]?.data, { recipient: 'hm@dest.example', feedback_type: 'abuse' });
    t.ok(await suppressed('hm@dest.example'));
    t.notOk(await suppressed('other@dest.example'));
  });

  t.test('several recipients: the returned copy\'s To decides nothing', async (t) => {
    // The complainer was Bcc'd: the copy shows only the To recipient; the provider's Received says whose it was.
    const a = await send(['shown@dest.example'], ['hidden@dest.example']);
    await deliver(t, a.ref('shown@dest.example'), arfNoRcptTo(a.ref('shown@dest.example'), { shownTo: 'shown@dest.example', deliveredTo: 'hidden@dest.example' }));
    t.match(await recipient(a.id, 'hidden@dest.example'), { status: 'complained' }, 'the mailbox it was delivered to');
    t.match(await recipient(a.id, 'shown@dest.example'), { status: 'delivered' }, 'not the one the copy shows');
    t.notOk(await suppressed('shown@dest.example'));

    const b = await send(['one@dest.example', 'two@dest.example']);
    await deliver(t, b.ref('one@dest.example'), arfNoRcptTo(b.ref('one@dest.example'), { shownTo: 'one@dest.example, two@dest.example' }));
    t.same((await detail(b.id)).recipients.map((r) => r.status), ['delivered', 'delivered'], 'no recipient named: nobody complained');
    t.notOk(await suppressed('one@dest.example'));

    const c = await send(['fw1@dest.example', 'fw2@dest.example']);
    await deliver(t, c.ref('fw1@dest.example'), forwardedDsn({ ...c.ref('fw1@dest.example'), rcpt: 'fw2.new@elsewhere.example' }, { shownTo: 'fw1@dest.example, fw2@dest.example' }));
    t.same((await detail(c.id)).recipients.map((r) => r.status), ['delivered', 'delivered'], 'a DSN for a forwarded address bounces nobody');
    t.notOk(await suppressed('fw1@dest.example'), 'and suppresses nobody');
  });
});
