// Report fixtures written by hand after the RFCs' own examples: RFC 3464 Appendix (DSN), RFC 5965
// Appendix B (ARF), RFC 7489 Appendix C (aggregate report), plus the two common non-standard bounce texts
// (Exim and qmail) as those MTAs write them.
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

export interface Original {
  messageId: string;
  from: string;
  to: string;
  subject?: string;
}

const originalMessage = (o: Original) =>
  [`Message-ID: ${o.messageId}`, `From: ${o.from}`, `To: ${o.to}`, `Subject: ${o.subject ?? 'Your order'}`, 'Date: Sun, 1 Mar 2026 10:00:00 +0000', '', 'Thanks for your order.', ''].join('\r\n');

/** RFC 3464 §A.3-style DSN: multipart/report with message/delivery-status and the returned headers. */
export function dsn(opts: { to: string; recipient: string; action: 'failed' | 'delayed'; status: string; diagnostic: string; original: Original; originalRecipient?: boolean }): string {
  const b = 'RAA14128.773615765/CS.UTK.EDU';
  return [
    'From: Mail Delivery Subsystem <MAILER-DAEMON@mx.dest.example>',
    `To: ${opts.to}`,
    `Subject: ${opts.action === 'failed' ? 'Returned mail: User unknown' : 'Warning: message still undelivered after 4 hours'}`,
    'Date: Sun, 1 Mar 2026 10:05:00 +0000',
    'Message-ID: <dsn-1@mx.dest.example>',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary="${b}"`,
    '',
    `--${b}`,
    '',
    `   ----- The following addresses had ${opts.action === 'failed' ? 'permanent fatal errors' : 'transient non-fatal errors'} -----`,
    `<${opts.recipient}>`,
    '',
    `--${b}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.dest.example',
    'Arrival-Date: Sun, 1 Mar 2026 10:00:02 +0000',
    '',
    ...(opts.originalRecipient === false ? [] : [`Original-Recipient: rfc822;${opts.recipient}`]),
    `Final-Recipient: RFC822; ${opts.recipient}`,
    `Action: ${opts.action}`,
    `Status: ${opts.status}`,
    'Remote-MTA: DNS; store.dest.example',
    `Diagnostic-Code: SMTP;\r\n    ${opts.diagnostic}`,
    'Last-Attempt-Date: Sun, 1 Mar 2026 10:05:00 +0000',
    '',
    `--${b}`,
    'Content-Type: text/rfc822-headers',
    '',
    originalMessage(opts.original).split('\r\n\r\n')[0],
    '',
    `--${b}--`,
    '',
  ].join('\r\n');
}

/** Exim's bounce text (no DSN part), with the original attached as message/rfc822. */
export function eximBounce(opts: { to: string; recipient: string; reply: string; original: Original }): string {
  return [
    'From: Mail Delivery System <Mailer-Daemon@mail.dest.example>',
    `To: ${opts.to}`,
    'Subject: Mail delivery failed: returning message to sender',
    `X-Failed-Recipients: ${opts.recipient}`,
    'Date: Sun, 1 Mar 2026 10:05:00 +0000',
    '',
    'This message was created automatically by mail delivery software.',
    '',
    'A message that you sent could not be delivered to one or more of its',
    'recipients. This is a permanent error. The following address(es) failed:',
    '',
    `  ${opts.recipient}`,
    '    host store.dest.example [192.0.2.7]',
    `    SMTP error from remote mail server after RCPT TO:<${opts.recipient}>:`,
    `    ${opts.reply}`,
    '',
    '------ This is a copy of the message, including all the headers. ------',
    '',
    originalMessage(opts.original),
  ].join('\r\n');
}

/** qmail-send's bounce text. */
export function qmailBounce(opts: { to: string; recipient: string; reply: string; original: Original }): string {
  return [
    'From: MAILER-DAEMON@mail.dest.example',
    `To: ${opts.to}`,
    'Subject: failure notice',
    '',
    'Hi. This is the qmail-send program at mail.dest.example.',
    "I'm afraid I wasn't able to deliver your message to the following addresses.",
    'This is a permanent error; I\'ve given up. Sorry it didn\'t work out.',
    '',
    `<${opts.recipient}>:`,
    '192.0.2.7 does not like recipient.',
    `Remote host said: ${opts.reply}`,
    'Giving up on 192.0.2.7.',
    '',
    '--- Below this line is a copy of the message.',
    '',
    originalMessage(opts.original),
  ].join('\r\n');
}

/** RFC 5965 Appendix B.1, with our addresses. */
export function arf(opts: { to: string; recipient: string; original: Original; feedbackType?: string }): string {
  const b = 'part1_13d.2e68ed54_boundary';
  return [
    'From: <abusedesk@feedback.dest.example>',
    'Date: Sun, 1 Mar 2026 17:40:36 +0000',
    'Subject: FW: Your order',
    `To: ${opts.to}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report;\r\n     boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    'Content-Transfer-Encoding: 7bit',
    '',
    'This is an email abuse report for an email message received from IP',
    '127.0.0.1 on Sun, 1 Mar 2026 10:00:00 +0000.',
    '',
    `--${b}`,
    'Content-Type: message/feedback-report',
    '',
    `Feedback-Type: ${opts.feedbackType ?? 'abuse'}`,
    'User-Agent: SomeGenerator/1.0',
    'Version: 1',
    `Original-Mail-From: <${opts.to}>`,
    `Original-Rcpt-To: <${opts.recipient}>`,
    'Arrival-Date: Sun, 1 Mar 2026 10:00:00 +0000',
    'Reporting-MTA: dns; mail.dest.example',
    'Source-IP: 127.0.0.1',
    'Authentication-Results: mail.dest.example;',
    '               spf=pass smtp.mail=acme.example',
    'Reported-Domain: acme.example',
    '',
    `--${b}`,
    'Content-Type: message/rfc822',
    'Content-Disposition: inline',
    '',
    originalMessage(opts.original),
    `--${b}--`,
    '',
  ].join('\r\n');
}

export interface AggregateOpts {
  domain: string;
  reportId: string;
  org?: string;
  records?: Array<{ ip: string; count: number; dkim: 'pass' | 'fail'; spf: 'pass' | 'fail'; disposition?: string }>;
}

/** RFC 7489 Appendix C aggregate report. */
export function aggregateXml(o: AggregateOpts): string {
  const records = o.records ?? [
    { ip: '192.0.2.10', count: 12, dkim: 'pass', spf: 'pass' },
    { ip: '198.51.100.7', count: 3, dkim: 'fail', spf: 'fail', disposition: 'none' },
  ];
  return `<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <version>1.0</version>
  <report_metadata>
    <org_name>${o.org ?? 'receiver.example'}</org_name>
    <email>noreply-dmarc@receiver.example</email>
    <extra_contact_info>http://receiver.example/dmarc?a=1&amp;b=2</extra_contact_info>
    <report_id>${o.reportId}</report_id>
    <date_range>
      <begin>1772323200</begin>
      <end>1772409599</end>
    </date_range>
  </report_metadata>
  <policy_published>
    <domain>${o.domain}</domain>
    <adkim>r</adkim>
    <aspf>r</aspf>
    <p>none</p>
    <sp>none</sp>
    <pct>100</pct>
  </policy_published>
${records
  .map(
    (r) => `  <record>
    <row>
      <source_ip>${r.ip}</source_ip>
      <count>${r.count}</count>
      <policy_evaluated>
        <disposition>${r.disposition ?? 'none'}</disposition>
        <dkim>${r.dkim}</dkim>
        <spf>${r.spf}</spf>
      </policy_evaluated>
    </row>
    <identifiers>
      <header_from>${o.domain}</header_from>
    </identifiers>
    <auth_results>
      <dkim>
        <domain>${o.domain}</domain>
        <selector>s1</selector>
        <result>${r.dkim}</result>
      </dkim>
      <spf>
        <domain>${o.domain}</domain>
        <scope>mfrom</scope>
        <result>${r.spf}</result>
      </spf>
    </auth_results>
  </record>`,
  )
  .join('\n')}
</feedback>
`;
}

/** A one-file ZIP archive (deflated), as reporters send it. */
export function zipOne(name: string, data: Buffer): Buffer {
  const deflated = deflateRawSync(data);
  const crc = crc32(data);
  const nameBuf = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0, 6);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(deflated.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(nameBuf.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(deflated.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(nameBuf.length, 28);
  central.writeUInt32LE(0, 42);
  const cdOffset = local.length + nameBuf.length + deflated.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBuf.length, 12);
  end.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, nameBuf, deflated, central, nameBuf, end]);
}

/** A report mail as Google or Microsoft send it: a short text and the report as an attachment. */
export function reportMail(opts: { to: string; filename: string; contentType: string; content: Buffer }): string {
  const b = 'report-boundary-42';
  return [
    'From: noreply-dmarc@receiver.example',
    `To: ${opts.to}`,
    `Subject: Report domain: acme.example Submitter: receiver.example Report-ID: ${opts.filename}`,
    'Date: Sun, 1 Mar 2026 12:00:00 +0000',
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain',
    '',
    'This is an aggregate report.',
    `--${b}`,
    `Content-Type: ${opts.contentType}; name="${opts.filename}"`,
    `Content-Disposition: attachment; filename="${opts.filename}"`,
    'Content-Transfer-Encoding: base64',
    '',
    opts.content.toString('base64').replace(/.{76}/g, '$&\r\n'),
    `--${b}--`,
    '',
  ].join('\r\n');
}

export const gz = (s: string) => gzipSync(Buffer.from(s));
