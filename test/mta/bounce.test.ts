// Bounce classification, table-driven, with replies as providers really send them (multi-line where they
// are multi-line). Each row goes through parseReply, as the MTA does, then classifyBounce and bounceCode.
import t from 'tap';
import { bounceCode, classifyBounce, enhancedCodeOf, type BounceCategory } from '../../src/mta/bounce.js';
import { parseReply, refusedOutcome, transientCode } from '../../src/mta/outcomes.js';

interface Row {
  who: string;
  response: string;
  category: BounceCategory;
  code: string;
}

const ROWS: Row[] = [
  // Gmail
  {
    who: 'Gmail no such user',
    response:
      "550-5.1.1 The email account that you tried to reach does not exist. Please try\n550-5.1.1 double-checking the recipient's email address for typos or\n550-5.1.1 unnecessary spaces. For more information, go to\n550 5.1.1  https://support.google.com/mail/?p=NoSuchUser d2e1a72fcca58-7b0b0b0b0b0si1234567b.123 - gsmtp",
    category: 'invalid_mailbox',
    code: '5.1.1',
  },
  { who: 'Gmail account disabled', response: '550-5.2.1 The email account that you tried to reach is disabled. Learn more at\n550 5.2.1  https://support.google.com/mail/?p=DisabledUser', category: 'invalid_mailbox', code: '5.2.1' },
  {
    who: 'Gmail over quota (temporary)',
    response: "452-4.2.2 The recipient's inbox is out of storage space. Please direct the\n452-4.2.2 recipient to\n452 4.2.2  https://support.google.com/mail/?p=OverQuotaTemp - gsmtp",
    category: 'mailbox_full',
    code: '4.2.2',
  },
  { who: 'Gmail over quota', response: '552-5.2.2 The email account that you tried to reach is over quota. Please direct\n552 5.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaPerm', category: 'mailbox_full', code: '5.2.2' },
  {
    who: 'Gmail receiving too fast',
    response: '450-4.2.1 The user you are trying to contact is receiving mail at a rate that\n450 4.2.1 prevents additional messages from being delivered. https://support.google.com/mail/?p=ReceivingRatePerm',
    category: 'rate_limited',
    code: '4.2.1',
  },
  {
    who: 'Gmail unauthenticated sender',
    response:
      '550-5.7.26 This mail has been blocked because the sender is unauthenticated.\n550-5.7.26 Gmail requires all senders to authenticate with either SPF or DKIM.\n550-5.7.26\n550-5.7.26  Authentication results:\n550-5.7.26  DKIM = did not pass\n550-5.7.26  SPF [example.com] with ip: [192.0.2.1] = did not pass\n550 5.7.26  https://support.google.com/mail/answer/81126#authentication - gsmtp',
    category: 'auth_failure',
    code: '5.7.26',
  },
  {
    who: 'Gmail DMARC reject',
    response: "550-5.7.26 Unauthenticated email from example.com is not accepted due to domain's\n550-5.7.26 DMARC policy. Please contact the administrator of example.com domain\n550 5.7.26 if this was a legitimate mail. https://support.google.com/mail/answer/2451690",
    category: 'auth_failure',
    code: '5.7.26',
  },
  {
    who: 'Gmail unusual rate (SPF domain)',
    response: '421-4.7.28 Gmail has detected an unusual rate of unsolicited mail originating\n421-4.7.28 from your SPF domain [example.com 1]. To protect our users from spam,\n421 4.7.28 mail sent from your domain has been temporarily rate limited.',
    category: 'rate_limited',
    code: '4.7.28',
  },
  {
    who: 'Gmail likely unsolicited',
    response: '550-5.7.1 Our system has detected that this message is likely unsolicited mail. To\n550-5.7.1 reduce the amount of spam sent to Gmail, this message has been blocked.\n550 5.7.1 https://support.google.com/mail/?p=UnsolicitedMessageError',
    category: 'spam_block',
    code: '5.7.1',
  },
  { who: 'Gmail try again later', response: '421 4.7.0 Try again later, closing connection. (EHLO) d9443c01a7336-21c1a2b3c4d5si12345678ad.123 - gsmtp', category: 'rate_limited', code: '4.7.0' },
  { who: 'Gmail size limit', response: "552-5.2.3 Your message exceeded Google's message size limits. Please visit\n552 5.2.3  https://support.google.com/mail/?p=MaxSizeError", category: 'message_too_large', code: '5.2.3' },

  // Microsoft (Outlook.com / Exchange Online)
  {
    who: 'Outlook block list',
    response:
      "550 5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150). You can also refer your provider to http://mail.live.com/mail/troubleshooting.aspx#errors.",
    category: 'spam_block',
    code: '5.7.1',
  },
  {
    who: 'Exchange Online Spamhaus',
    response: '550 5.7.1 Service unavailable, Client host [192.0.2.1] blocked using Spamhaus. To request removal from this list see https://www.spamhaus.org/query/ip/192.0.2.1 AS(1450)',
    category: 'spam_block',
    code: '5.7.1',
  },
  { who: 'Exchange Online banned IP', response: '550 5.7.606 Access denied, banned sending IP [192.0.2.1]. To request removal from this list please visit https://sender.office.com/', category: 'spam_block', code: '5.7.606' },
  { who: 'Exchange Online IP reputation', response: '550 5.7.708 Service unavailable. Access denied, traffic not accepted from this IP.', category: 'spam_block', code: '5.7.708' },
  { who: 'Exchange Online directory-based edge blocking', response: '550 5.4.1 Recipient address rejected: Access denied. For more information see https://aka.ms/EXOSmtpErrors [AM0PR01MB1234.eurprd01.prod.exchangelabs.com]', category: 'invalid_mailbox', code: '5.4.1' },
  { who: 'Exchange recipient not found', response: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup', category: 'invalid_mailbox', code: '5.1.10' },
  { who: 'Exchange mailbox full', response: '554 5.2.2 mailbox full; STOREDRV.Deliver.Exception:QuotaExceededException.MapiExceptionShutoffQuotaExceeded', category: 'mailbox_full', code: '5.2.2' },
  { who: 'Exchange Online busy', response: '451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (S77719)', category: 'rate_limited', code: '4.7.500' },

  // Yahoo / AOL
  { who: 'Yahoo policy', response: '554 5.7.9 Message not accepted for policy reasons.  See https://postmaster.yahooinc.com/error-codes', category: 'policy', code: '5.7.9' },
  { who: 'AOL DMARC', response: '554 5.7.1 Email rejected per DMARC policy for example.com', category: 'auth_failure', code: '5.7.1' },
  { who: 'Yahoo Spamhaus', response: "553 5.7.1 [BL21] Connections will not be accepted from 192.0.2.1, because the ip is in Spamhaus's list; see http://postmaster.yahoo.com/550-bl23.html", category: 'spam_block', code: '5.7.1' },
  {
    who: 'Yahoo deferred for volume',
    response: '421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1; see https://postmaster.yahooinc.com/error-codes',
    category: 'rate_limited',
    code: '4.7.0',
  },
  { who: 'Yahoo no account', response: "554 delivery error: dd This user doesn't have a yahoo.com account (someone@yahoo.com) [0] - mta1234.mail.bf1.yahoo.com", category: 'invalid_mailbox', code: '5.0.0' },
  { who: 'Yahoo mailbox not found', response: '552 1 Requested mail action aborted, mailbox not found', category: 'invalid_mailbox', code: '5.0.0' },

  // Postfix, Exim, appliances and RBLs
  { who: 'Postfix unknown user', response: '550 5.1.1 <user@example.com>: Recipient address rejected: User unknown in virtual mailbox table', category: 'invalid_mailbox', code: '5.1.1' },
  { who: 'Postfix RBL', response: '554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.1', category: 'spam_block', code: '5.7.1' },
  { who: 'SpamCop listing', response: '550 Rejected: 192.0.2.1 listed at bl.spamcop.net', category: 'spam_block', code: '5.0.0' },
  { who: 'Barracuda', response: '554 Service unavailable; Client host [192.0.2.1] blocked using Barracuda Reputation, http://www.barracudanetworks.com/reputation/?pr=1&ip=192.0.2.1', category: 'spam_block', code: '5.0.0' },
  { who: 'Mimecast poor reputation', response: "554 Your access to this mail system has been rejected due to the sending MTA's poor reputation.", category: 'spam_block', code: '5.0.0' },
  { who: 'Postfix client rejected', response: '554 5.7.1 <unknown[192.0.2.1]>: Client host rejected: Access denied', category: 'policy', code: '5.7.1' },
  { who: 'Postfix relay denied', response: '554 5.7.1 <user@elsewhere.test>: Relay access denied', category: 'policy', code: '5.7.1' },
  { who: 'Postfix size limit', response: '552 5.3.4 Message size exceeds fixed limit', category: 'message_too_large', code: '5.3.4' },
  { who: 'Exim message too big', response: '552 Message size exceeds maximum permitted', category: 'message_too_large', code: '5.0.0' },
  { who: 'Insufficient storage', response: '452 4.3.1 Insufficient system storage', category: 'mailbox_full', code: '4.3.1' },
  { who: 'SPF violation', response: '550 5.7.23 The message was rejected because of Sender Policy Framework violation', category: 'auth_failure', code: '5.7.23' },
  { who: 'Virus', response: '554 5.6.0 Message contains a virus (Eicar-Test-Signature)', category: 'content_rejected', code: '5.6.0' },
  { who: 'Content filter', response: '550 5.7.0 Message rejected due to content restrictions', category: 'content_rejected', code: '5.7.0' },
  { who: 'Temporary lookup failure', response: '451 4.4.3 Temporary lookup failure', category: 'dns_failure', code: '4.4.3' },
  { who: 'Sender domain not found', response: '450 4.1.8 <bounces@example.com>: Sender address rejected: Domain not found', category: 'dns_failure', code: '4.1.8' },
  // Our sender refused at RCPT (Postfix delays sender restrictions there): never the recipient's mailbox,
  // which would be suppressed. reject_unverified_sender quotes its probe's "User unknown" (captured, audit).
  { who: 'Postfix reject_unverified_sender', response: '550 5.1.7 <bounces+em_x@send.test>: Sender address rejected: undeliverable address: host mail.box.test[127.0.0.1] said: 550 5.1.1 <probe@send.test>: Recipient address rejected: User unknown in local recipient table', category: 'policy', code: '5.1.7' },
  { who: 'Postfix reject_unlisted_sender', response: '550 5.1.0 <bounces@send.test>: Sender address rejected: User unknown in virtual mailbox table', category: 'policy', code: '5.1.0' },
  { who: 'Bad sender mailbox, no label', response: '553 5.1.7 The sender address is unknown: no such user', category: 'policy', code: '5.1.7' },
  { who: 'Greylisting', response: '450 4.7.1 <user@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/', category: 'rate_limited', code: '4.7.1' },
  // Postfix's restriction replies, as Postfix 3.7 sends them (captured): the stage label
  // "<rcpt>: Recipient address rejected:" precedes the reason, which decides the category.
  { who: 'Postfix check_recipient_access REJECT', response: '554 5.7.1 <denied@example.com>: Recipient address rejected: Access denied', category: 'policy', code: '5.7.1' },
  { who: 'Postfix access map with its own text', response: '550 5.7.1 <policy@example.com>: Recipient address rejected: Rejected by local policy', category: 'policy', code: '5.7.1' },
  { who: 'Postfix unknown recipient domain', response: '450 4.1.2 <user@nowhere.example>: Recipient address rejected: Domain not found', category: 'dns_failure', code: '4.1.2' },
  { who: 'Postfix temporary access map', response: '451 4.2.0 <temp@example.com>: Recipient address rejected: Mailbox temporarily unavailable, try later', category: 'unknown', code: '4.2.0' },
  { who: 'Exchange Online unknown recipient (no address before the label)', response: '550 5.4.1 Recipient address rejected: Access denied', category: 'invalid_mailbox', code: '5.4.1' },
  { who: 'Relay credentials', response: '535 5.7.8 Authentication credentials invalid', category: 'auth_failure', code: '5.7.8' },
  { who: 'No enhanced code at all', response: '554 Transaction failed', category: 'unknown', code: '5.0.0' },
  // Found by replaying real bounces (sisimai's corpus, Exim and Postfix DSNs) through the MX.
  { who: 'Mailbox full, no enhanced code, "try again later"', response: '452 Mailbox full, try again later', category: 'mailbox_full', code: '4.0.0' },
  { who: 'Over quota, no enhanced code', response: '450 mailbox over quota, try again later', category: 'mailbox_full', code: '4.0.0' },
  { who: 'Sendmail bad destination system', response: '550 5.1.2 Bad destination system address', category: 'dns_failure', code: '5.1.2' },
  { who: 'OpenSMTPD domain does not exist', response: '550 Domain does not exist', category: 'dns_failure', code: '5.0.0' },
  { who: 'Gmail no such user, "does not exist"', response: '550 The email account that you tried to reach does not exist', category: 'invalid_mailbox', code: '5.0.0' },
  { who: 'Unknown user in a domain', response: '550 unknown user in domain, user does not exist', category: 'invalid_mailbox', code: '5.0.0' },
  { who: 'A sending quota is no mailbox', response: '451 Sending quota exceeded, try again later', category: 'rate_limited', code: '4.0.0' },
];

t.test('provider replies are classified', async (t) => {
  for (const row of ROWS) {
    const reply = parseReply(row.response);
    t.equal(classifyBounce(reply), row.category, `${row.who}: category`);
    const permanent = reply.code !== undefined && reply.code >= 500;
    t.equal(bounceCode(reply, permanent), row.code, `${row.who}: code`);
  }
});

t.test('our own descriptions of failures (no reply code)', async (t) => {
  const rows: Array<[string, BounceCategory]> = [
    ['Connection to mx.example.com[192.0.2.1]:25 refused', 'connection_failed'],
    ['Connection to mx.example.com[192.0.2.1]:25 timed out', 'connection_failed'],
    ['The TLS handshake with mx.example.com[192.0.2.1]:25 failed: sslv3 alert handshake failure', 'connection_failed'],
    ['example.com has no MX or address records', 'dns_failure'],
    ['example.com does not accept mail (null MX, RFC 7505)', 'dns_failure'],
    ['DNS MX look-up for example.com failed (ESERVFAIL)', 'dns_failure'],
  ];
  for (const [message, category] of rows) t.equal(classifyBounce({ message }), category, message);
  // The same words from a server are its policy, not a network failure.
  t.equal(classifyBounce({ code: 550, message: '550 Connection refused by policy' }), 'policy');
});

t.test('enhancedCodeOf reads RFC 3463 codes and nothing else', async (t) => {
  const rows: Array<[string, string | undefined]> = [
    ['550 5.1.1 <x@y>: user unknown', '5.1.1'],
    ['550-5.7.26 Unauthenticated', '5.7.26'],
    ['5.2.2 mailbox full', '5.2.2'],
    ['Recipient command failed: 550 5.1.1 No such user', '5.1.1'],
    ['421 4.7.0 [TSS04] deferred - 4.16.55.1', '4.7.0'],
    ['554 rejected: client 192.5.1.1 is not allowed', undefined],
    ['550 Rejected: 10.2.0.5 listed', undefined],
    ['250 OK id=1tXyZ-0001', undefined],
    ['250 2.0.0 Ok: queued as 4Xr', '2.0.0'],
  ];
  for (const [text, code] of rows) t.equal(enhancedCodeOf(text), code, text);
});

t.test('bounceCode: the server’s code, else one from the basic code’s class', async (t) => {
  t.equal(bounceCode({ code: 250, message: '250 Ok' }, false), '2.0.0');
  t.equal(bounceCode({ code: 421, message: '421 Service not available' }, false), '4.0.0');
  t.equal(bounceCode({ code: 554, message: '554 No' }, true), '5.0.0');
  t.equal(bounceCode({ message: 'Connection refused' }, false), '4.0.0');
  t.equal(bounceCode({ message: 'no records' }, true), '5.0.0');
  t.equal(bounceCode({ code: 550, enhanced: '5.7.1', message: 'x' }, true), '5.7.1');
});

t.test('parseReply joins multi-line replies into one line', async (t) => {
  t.same(parseReply('550-5.1.1 The email account that you tried to reach does not exist. Please try\n550-5.1.1 double-checking.\n550 5.1.1  https://support.google.com/mail/?p=NoSuchUser - gsmtp'), {
    code: 550,
    enhanced: '5.1.1',
    message: '550 5.1.1 The email account that you tried to reach does not exist. Please try double-checking. https://support.google.com/mail/?p=NoSuchUser - gsmtp',
  });
  t.same(parseReply('250 Ok: queued as ABC'), { code: 250, enhanced: undefined, message: '250 Ok: queued as ABC' });
  t.same(parseReply('554 Transaction failed'), { code: 554, enhanced: undefined, message: '554 Transaction failed' });
});

t.test('a refusal: 5xx bounces, 4xx and 503 defer with a class-4 code', async (t) => {
  t.match(refusedOutcome('a@x', parseReply('550 5.1.1 No such user')), { status: 'bounced', code: '5.1.1', category: 'invalid_mailbox' });
  t.match(refusedOutcome('a@x', parseReply('452 4.2.2 Mailbox full')), { status: 'deferred', code: '4.2.2', category: 'mailbox_full' });
  t.match(refusedOutcome('a@x', parseReply('503 5.5.1 Error: need MAIL command')), { status: 'deferred', code: '4.5.1' });
  // A refused sender never marks the recipient's mailbox invalid (that would suppress the recipient).
  t.match(refusedOutcome('a@x', parseReply('553 5.1.1 Sender address does not exist'), true), { status: 'bounced', category: 'policy' });
  t.equal(transientCode('5.7.1'), '4.7.1');
  t.equal(transientCode('4.4.1'), '4.4.1');
});
