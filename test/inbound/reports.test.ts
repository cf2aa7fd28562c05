// Mail that comes back: the report parsers on hand-written fixtures (table-driven), then end to end over
// the MX: an email sent by the box bounces (DSN, Exim and qmail texts), soft-bounces, draws a complaint
// (ARF), and DMARC aggregate reports (XML, gzip, zip) are listed with the spec's odd paging.
import t from 'tap';
import { Buffer } from 'node:buffer';
import { isFeedbackReport, parseComplaint } from '../../src/smtp/reports/arf.js';
import { parseAggregateReport, ReportError } from '../../src/smtp/reports/dmarc-aggregate.js';
import { parseBounce } from '../../src/smtp/reports/dsn.js';
import { parseMime } from '../../src/smtp/reports/mime.js';
import { readZip } from '../../src/smtp/reports/zip.js';
import { readNotices } from '../../src/smtp/mx.js';
import { TEST_HOSTNAME } from '../helpers/app.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { aggregateXml, arf, dsn, eximBounce, gz, qmailBounce, reportMail, zipOne } from './fixtures.js';
import { smtpSend, startInbound } from './support.js';

const original = { messageId: `<em_abcdefgh1234@${TEST_HOSTNAME}>`, from: 'shop@acme.example', to: 'carol@dest.example' };
const ours = (a: string) => /^bounces\+/i.test(a);

t.test('parsers', async (t) => {
  const cases = [
    { name: 'RFC 3464 DSN, failed', raw: dsn({ to: 'bounces+em_abcdefgh1234@acme.example', recipient: 'carol@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <carol@dest.example>: Recipient address rejected: User unknown', original }), want: { format: 'dsn', action: 'failed', status: '5.1.1', address: 'carol@dest.example', diagnostic: /^550 5\.1\.1 <carol@dest\.example>: Recipient address rejected/ } },
    { name: 'RFC 3464 DSN, delayed', raw: dsn({ to: 'bounces+em_abcdefgh1234@acme.example', recipient: 'carol@dest.example', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full', original }), want: { format: 'dsn', action: 'delayed', status: '4.2.2', address: 'carol@dest.example', diagnostic: /Mailbox full/ } },
    { name: 'Exim text', raw: eximBounce({ to: 'bounces+em_abcdefgh1234@acme.example', recipient: 'carol@dest.example', reply: '550 5.1.1 No such user', original }), want: { format: 'text', action: 'failed', status: '5.1.1', address: 'carol@dest.example', diagnostic: /550 5\.1\.1 No such user/ } },
    { name: 'qmail text', raw: qmailBounce({ to: 'bounces+em_abcdefgh1234@acme.example', recipient: 'carol@dest.example', reply: '550 mailbox unavailable', original }), want: { format: 'text', action: 'failed', status: '5.0.0', address: 'carol@dest.example', diagnostic: /mailbox unavailable/ } },
  ];
  for (const c of cases) {
    const notice = parseBounce(parseMime(Buffer.from(c.raw)), ours);
    t.ok(notice, `${c.name}: parsed`);
    t.equal(notice!.format, c.want.format, `${c.name}: format`);
    t.equal(notice!.recipients.length, 1, `${c.name}: one recipient`);
    const r = notice!.recipients[0]!;
    t.same([r.action, r.status, r.address], [c.want.action, c.want.status, c.want.address], `${c.name}: action, status, address`);
    t.match(r.diagnostic, c.want.diagnostic, `${c.name}: diagnostic`);
    t.equal(notice!.originalMessageId, original.messageId, `${c.name}: the original's Message-ID`);
  }
  t.equal(parseBounce(parseMime(Buffer.from('From: a@b.example\r\nSubject: Out of office\r\n\r\nI am away until Monday.\r\n')), ours), null, 'an auto-reply is no bounce');

  const complaint = parseMime(Buffer.from(arf({ to: 'bounces+em_abcdefgh1234@acme.example', recipient: 'carol@dest.example', original })));
  t.ok(isFeedbackReport(complaint), 'ARF recognised');
  t.same(parseComplaint(complaint), {
    feedbackType: 'abuse',
    userAgent: 'SomeGenerator/1.0',
    originalMailFrom: 'bounces+em_abcdefgh1234@acme.example',
    originalRcptTo: ['carol@dest.example'],
    arrivalDate: 'Sun, 1 Mar 2026 10:00:00 +0000',
    sourceIp: '127.0.0.1',
    originalMessageId: original.messageId,
    originalTo: ['carol@dest.example'],
    receivedFor: [],
  });

  const xml = aggregateXml({ domain: 'acme.example', reportId: 'r-1' });
  for (const [kind, body] of [
    ['plain XML', reportMail({ to: 'dmarc-reports@acme.example', filename: 'r.xml', contentType: 'text/xml', content: Buffer.from(xml) })],
    ['gzip', reportMail({ to: 'dmarc-reports@acme.example', filename: 'r.xml.gz', contentType: 'application/gzip', content: gz(xml) })],
    ['zip', reportMail({ to: 'dmarc-reports@acme.example', filename: 'r.zip', contentType: 'application/zip', content: zipOne('receiver.example!acme.example!1772323200!1772409599.xml', Buffer.from(xml)) })],
  ] as const) {
    const report = parseAggregateReport(parseMime(Buffer.from(body)));
    t.equal(report.reportId, 'r-1', `${kind}: report id`);
    t.same(report.policy, { domain: 'acme.example', adkim: 'r', aspf: 'r', p: 'none', sp: 'none', pct: 100 }, `${kind}: policy`);
    t.same(report.records.map((r) => [r.source_ip, r.count, r.dkim, r.spf]), [['192.0.2.10', 12, 'pass', 'pass'], ['198.51.100.7', 3, 'fail', 'fail']], `${kind}: rows`);
    t.same([report.dateBegin, report.dateEnd], ['2026-03-01T00:00:00.000Z', '2026-03-01T23:59:59.000Z'], `${kind}: date range`);
  }
  t.throws(() => parseAggregateReport(parseMime(Buffer.from('Subject: x\r\n\r\nnothing here\r\n'))), ReportError, 'no report');
  t.throws(() => parseAggregateReport(parseMime(Buffer.from(reportMail({ to: 'x@y.example', filename: 'r.xml', contentType: 'text/xml', content: Buffer.from('<feedback><report_metadata></feedback') })))), ReportError, 'broken XML');
  t.throws(() => readZip(Buffer.from('PK\x03\x04 not really a zip'), 1024), /ZIP/, 'a damaged zip');

  // Fuzz: garbage never throws out of the MIME walker or the bounce parser.
  for (let i = 0; i < 200; i++) {
    const junk = Buffer.from(Array.from({ length: 50 + ((i * 37) % 400) }, (_, j) => ((i * 131 + j * 17) % 7 === 0 ? 10 : (i * 31 + j * 7) % 256)));
    const withBoundary = Buffer.concat([Buffer.from('Content-Type: multipart/report; boundary=x\r\n\r\n--x\r\n'), junk]);
    t.doesNotThrow(() => parseBounce(parseMime(junk), ours));
    t.doesNotThrow(() => parseBounce(parseMime(withBoundary), ours));
  }
});

interface Detail {
  status: string;
  recipients: Array<{ email: string; status: string; code: string | null; message: string | null; bounce_category: string | null }>;
}

// Anyone can send a report to the box (the feedback-loop address, any return path): its parsing runs on the
// event loop. Address patterns that let `@` into the local part, unbounded runs, and a split of the text per
// X-Failed-Recipients address made these take from seconds to hours (found by review: 10 KB took 24 s); each
// must be parsed within the test's time limit.
t.test('hostile reports are parsed in linear time', { timeout: 30_000 }, async (t) => {
  const routes = [
    { kind: 'webhook', address: 'fbl@mx.test', domain: { id: null, teamId: 't', name: 'mx.test' }, feedbackLoop: true },
    { kind: 'feedback', address: 'bounces+em_abcdefgh1234@acme.example', domain: { id: 'd', teamId: 't', name: 'acme.example' }, emailPublicId: 'em_abcdefgh1234' },
  ] as unknown as Parameters<typeof readNotices>[1];
  const size = 64 * 1024;
  for (const unit of ['a.aa@', 'a@', '..', '=?x?', 'for <a@', 'a@a.aa ', '  a@a\n    ']) {
    const blob = unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
    const line = blob.replace(/\n/g, ' ');
    const messages = [
      ['From: MAILER-DAEMON@x.test', 'Subject: Undelivered Mail', `X-Failed-Recipients: ${line}`, '', blob],
      ['From: a@b.test', `To: ${line}`, 'Content-Type: multipart/report; report-type=feedback-report; boundary=b', '', '--b', 'Content-Type: message/feedback-report', '', 'Feedback-Type: abuse', `Original-Rcpt-To: ${line}`, '', '--b', 'Content-Type: message/rfc822', '', `Received: from x by y for ${line};`, '', 'b', '--b--'],
    ];
    for (const m of messages) readNotices(Buffer.from(m.join('\r\n')), routes);
    t.pass(`${JSON.stringify(unit)} × 64 KB: parsed`);
  }
});

t.test('end to end over the MX', async (t) => {
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const { app, dns, mxPort } = await startInbound(t, { outboundPort: sink.port });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const acme = await addVerifiedDomain(app, dns, 'acme.example');

  async function sendOne(to: string): Promise<string> {
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'shop@acme.example', to: [to], subject: 'Your order', text: 'Thanks.' } });
    if (res.status !== 202) throw new Error(res.text);
    await app.appliance.ctx.jobs.drain();
    return res.body.id;
  }
  const detail = async (id: string) => (await app.request<Detail>('GET', `/emails/${id}`)).body;
  const timeline = async (id: string) => (await app.request<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/emails/${id}/events`)).body.events;
  const events = async (type: string) => (await app.request<{ data: Array<{ data: Record<string, unknown> }> }>('GET', `/events?type=${type}`)).body.data;
  const suppression = (address: string) => app.appliance.ctx.db('suppressions').where({ email: address }).first();
  const bounceTo = (id: string) => `bounces+${id}@acme.example`;
  const originalOf = (id: string, to: string) => ({ messageId: `<${id}@${TEST_HOSTNAME}>`, from: 'shop@acme.example', to });

  t.test('a DSN to the return path bounces the recipient: status, timeline, email.bounced, suppression', async (t) => {
    const id = await sendOne('carol@dest.example');
    t.equal((await detail(id)).status, 'delivered', 'first the remote MX accepted it');
    t.equal(sink.accepted.at(-1)!.from, bounceTo(id), 'the return path names the email');
    const res = await smtpSend(mxPort, { from: '', to: [bounceTo(id)] }, dsn({ to: bounceTo(id), recipient: 'carol@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <carol@dest.example>: Recipient address rejected: User unknown', original: originalOf(id, 'carol@dest.example') }));
    t.ok(res.ok, res.response);
    const d = await detail(id);
    t.equal(d.status, 'bounced');
    t.match(d.recipients[0], { email: 'carol@dest.example', status: 'bounced', code: '5.1.1', bounce_category: 'invalid_mailbox' });
    const last = (await timeline(id)).at(-1)!;
    t.equal(last.type, 'bounced');
    t.match(last.data, { recipient: 'carol@dest.example', bounce_code: '5.1.1', bounce_category: 'invalid_mailbox', source: 'dsn', reporting_mta: 'mx.dest.example' });
    const ev = (await events('email.bounced')).find((e) => e.data.email_id === id);
    t.match(ev?.data, { email_id: id, recipient: 'carol@dest.example', bounce_code: '5.1.1', bounce_category: 'invalid_mailbox', bounce_message: /User unknown/ });
    t.match(await suppression('carol@dest.example'), { reason: 'bounce' }, 'suppressed');

    const again = await smtpSend(mxPort, { from: '', to: [bounceTo(id)] }, dsn({ to: bounceTo(id), recipient: 'carol@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown', original: originalOf(id, 'carol@dest.example') }));
    t.ok(again.ok, 'a repeated DSN is accepted');
    t.equal((await events('email.bounced')).filter((e) => e.data.email_id === id).length, 1, 'and changes nothing');
  });

  t.test('a delayed DSN: email.soft_bounced, the status stays', async (t) => {
    const id = await sendOne('dave@dest.example');
    const res = await smtpSend(mxPort, { from: '', to: [bounceTo(id)] }, dsn({ to: bounceTo(id), recipient: 'dave@dest.example', action: 'delayed', status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full', original: originalOf(id, 'dave@dest.example') }));
    t.ok(res.ok, res.response);
    const d = await detail(id);
    t.equal(d.status, 'delivered', 'still delivered: the remote keeps trying');
    t.match(d.recipients[0], { status: 'delivered', code: '4.2.2', bounce_category: 'mailbox_full' });
    const ev = (await events('email.soft_bounced')).find((e) => e.data.email_id === id);
    t.match(ev?.data, { recipient: 'dave@dest.example', bounce_code: '4.2.2', bounce_category: 'mailbox_full' });
    t.notOk(await suppression('dave@dest.example'), 'no suppression');
  });

  t.test('non-standard bounces: Exim to the return path, qmail matched by the Message-ID alone', async (t) => {
    const exim = await sendOne('erin@dest.example');
    t.ok((await smtpSend(mxPort, { from: '', to: [bounceTo(exim)] }, eximBounce({ to: bounceTo(exim), recipient: 'erin@dest.example', reply: '550 5.1.1 No such user', original: originalOf(exim, 'erin@dest.example') }))).ok);
    t.match((await detail(exim)).recipients[0], { status: 'bounced', code: '5.1.1', bounce_category: 'invalid_mailbox' });

    const qmail = await sendOne('frank@dest.example');
    // Addressed to another (syntactically ours) return path: the returned Message-ID names the email.
    const to = 'bounces+em_unknownunknown@acme.example';
    t.ok((await smtpSend(mxPort, { from: '', to: [to] }, qmailBounce({ to, recipient: 'frank@dest.example', reply: '550 5.7.1 Blocked using Spamhaus', original: originalOf(qmail, 'frank@dest.example') }))).ok);
    t.match((await detail(qmail)).recipients[0], { status: 'delivered' }, 'the VERP id wins: an unknown email, nothing applied');
    const mid = await sendOne('gina@dest.example');
    const plain = 'bounces+x@acme.example';
    t.equal((await smtpSend(mxPort, { from: '', to: [plain] }, qmailBounce({ to: plain, recipient: 'gina@dest.example', reply: '550 5.7.1 Blocked using Spamhaus', original: originalOf(mid, 'gina@dest.example') }))).code, 550, 'bounces+<not an id> is no return path of ours');
  });

  t.test('a report about a test-mode email (it never left the box) changes nothing, suppresses nothing', async (t) => {
    const key = (await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'ci', permission: 'full_access', mode: 'test' } })).body.token;
    const res = await app.request<{ id: string }>('POST', '/emails', { key, body: { from: 'shop@acme.example', to: ['ivy@dest.example'], subject: 'Test', text: 'x' } });
    t.equal(res.status, 202);
    await app.appliance.ctx.jobs.drain();
    const id = res.body.id;
    t.equal((await detail(id)).status, 'delivered', 'simulated');
    t.ok((await smtpSend(mxPort, { from: '', to: [bounceTo(id)] }, dsn({ to: bounceTo(id), recipient: 'ivy@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown', original: originalOf(id, 'ivy@dest.example') }))).ok);
    t.equal((await detail(id)).status, 'delivered', 'not bounced');
    t.notOk(await suppression('ivy@dest.example'), 'not suppressed');
  });

  t.test("a bounce naming another domain's email changes nothing", async (t) => {
    const id = await sendOne('hank@dest.example');
    const other = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'other-team.example' } });
    t.equal(other.status, 201);
    const to = `bounces+${id}@other-team.example`;
    t.ok((await smtpSend(mxPort, { from: '', to: [to] }, dsn({ to, recipient: 'hank@dest.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 unknown', original: originalOf(id, 'hank@dest.example') }))).ok);
    t.equal((await detail(id)).status, 'delivered');
  });

  t.test('an ARF complaint: complained, email.complained, suppression reason complaint', async (t) => {
    const id = await sendOne('ivy@dest.example');
    t.ok((await smtpSend(mxPort, { from: 'abusedesk@feedback.dest.example', to: [bounceTo(id)] }, arf({ to: bounceTo(id), recipient: 'ivy@dest.example', original: originalOf(id, 'ivy@dest.example') }))).ok);
    const d = await detail(id);
    t.equal(d.status, 'complained');
    t.equal(d.recipients[0]!.status, 'complained');
    t.equal((await timeline(id)).at(-1)!.type, 'complained');
    const ev = (await events('email.complained')).find((e) => e.data.email_id === id);
    t.match(ev?.data, { recipient: 'ivy@dest.example', feedback_type: 'abuse', user_agent: 'SomeGenerator/1.0' });
    t.match(await suppression('ivy@dest.example'), { reason: 'complaint' });
    const res = await app.request<{ status: number }>('POST', '/emails', { body: { from: 'shop@acme.example', to: ['ivy@dest.example'], subject: 'Again', text: 'x' } });
    t.equal(res.status, 202);
  });

  t.test('the feedback-loop address fbl@<MAIL_HOSTNAME>: a provider\'s ARF report there applies by Message-ID; all mail there is kept for the operator', async (t) => {
    const fbl = `fbl@${TEST_HOSTNAME}`;
    const id = await sendOne('jack@dest.example');
    // As Yahoo's CFL sends it: to the registered address, with the enclosed copy (our Message-ID) and no VERP.
    const res = await smtpSend(mxPort, { from: 'feedback@arf.dest.example', to: [fbl] }, arf({ to: fbl, recipient: 'jack@dest.example', original: originalOf(id, 'jack@dest.example') }));
    t.ok(res.ok, res.response);
    t.equal((await detail(id)).status, 'complained');
    t.match(await suppression('jack@dest.example'), { reason: 'complaint' });
    // The providers' sign-up confirmations go to the same address: kept, readable, nothing applied.
    const confirm = 'From: noreply@fbl.dest.example\r\nTo: fbl@mx.appliance.test\r\nSubject: Confirm your feedback loop\r\n\r\nClick https://fbl.dest.example/confirm?t=1\r\n';
    t.ok((await smtpSend(mxPort, { from: 'noreply@fbl.dest.example', to: [fbl] }, confirm)).ok);
    const inbound = (await app.request<{ data: Array<{ subject: string; domain: string }> }>('GET', `/inbound?domain=${TEST_HOSTNAME}`)).body.data.map((d) => d.subject);
    t.ok(inbound.includes('Confirm your feedback loop'), 'the confirmation is an inbound email of the operator');
    // A report naming an email of this box by a Message-ID of another host changes nothing.
    const other = await sendOne('kate@dest.example');
    t.ok((await smtpSend(mxPort, { from: 'feedback@arf.dest.example', to: [fbl] }, arf({ to: fbl, recipient: 'kate@dest.example', original: { ...originalOf(other, 'kate@dest.example'), messageId: `<${other}@elsewhere.example>` } }))).ok);
    t.equal((await detail(other)).status, 'delivered');
  });

  t.test('DMARC aggregate reports: plain, gzip, zip; listed with page/perPage, clamped, per_page ignored', async (t) => {
    const rua = 'dmarc-reports@acme.example';
    t.ok(acme.dns_records.some((r) => r.record === 'DMARC' && r.value.includes(`rua=mailto:${rua}`)), 'the published DMARC record names the address');
    const mails = [
      reportMail({ to: rua, filename: 'a.xml', contentType: 'text/xml', content: Buffer.from(aggregateXml({ domain: 'acme.example', reportId: 'plain-1' })) }),
      reportMail({ to: rua, filename: 'b.xml.gz', contentType: 'application/gzip', content: gz(aggregateXml({ domain: 'acme.example', reportId: 'gzip-1' })) }),
      reportMail({ to: rua, filename: 'c.zip', contentType: 'application/zip', content: zipOne('c.xml', Buffer.from(aggregateXml({ domain: 'acme.example', reportId: 'zip-1' }))) }),
      // the same report again, and one about a domain that is not this one: neither is stored
      reportMail({ to: rua, filename: 'a.xml', contentType: 'text/xml', content: Buffer.from(aggregateXml({ domain: 'acme.example', reportId: 'plain-1' })) }),
      reportMail({ to: rua, filename: 'x.xml', contentType: 'text/xml', content: Buffer.from(aggregateXml({ domain: 'elsewhere.example', reportId: 'x-1' })) }),
      reportMail({ to: rua, filename: 'junk.xml', contentType: 'text/xml', content: Buffer.from('not xml at all') }),
    ];
    for (const m of mails) t.ok((await smtpSend(mxPort, { from: 'noreply-dmarc@receiver.example', to: [rua] }, m)).ok, 'accepted');

    type List = { reports: Array<{ report_id: string; org_name: string; message_count: number; pass_count: number; fail_count: number; policy_published: { p: string } }>; pagination: Record<string, number> };
    const all = await app.request<List>('GET', `/domains/${acme.id}/dmarc/reports`);
    t.equal(all.status, 200);
    t.same(all.body.reports.map((r) => r.report_id), ['zip-1', 'gzip-1', 'plain-1'], 'newest first, each once');
    t.match(all.body.reports[0], { org_name: 'receiver.example', message_count: 15, pass_count: 12, fail_count: 3, policy_published: { p: 'none' } });
    t.same(all.body.pagination, { page: 1, perPage: 20, total: 3, totalPages: 1 });
    const page2 = await app.request<List>('GET', `/domains/${acme.id}/dmarc/reports?page=2&perPage=2&per_page=1`);
    t.same(page2.body.reports.map((r) => r.report_id), ['plain-1']);
    t.same(page2.body.pagination, { page: 2, perPage: 2, total: 3, totalPages: 2 }, 'perPage used, per_page ignored');
    t.same((await app.request<List>('GET', `/domains/${acme.id}/dmarc/reports?perPage=500`)).body.pagination.perPage, 100, 'clamped to 100');
    t.same((await app.request<List>('GET', `/domains/${acme.id}/dmarc/reports?perPage=0&page=-3`)).body.pagination, { page: 1, perPage: 1, total: 3, totalPages: 3 }, 'clamped up');
    t.equal((await app.request('GET', '/domains/nope/dmarc/reports')).status, 404);
    // A domain only added, not verified: its rua address is nobody's yet (a team may add any name).
    t.equal((await app.request('POST', '/domains', { body: { name: 'claimed.example' } })).status, 201);
    const claimed = await smtpSend(mxPort, { from: 'noreply-dmarc@receiver.example', to: ['dmarc-reports@claimed.example'] }, reportMail({ to: 'dmarc-reports@claimed.example', filename: 'a.xml', contentType: 'text/xml', content: Buffer.from(aggregateXml({ domain: 'claimed.example', reportId: 'c-1' })) }));
    t.equal(claimed.code, 550, `refused as any unknown user: ${claimed.response}`);
  });
});
