// ENVELOPE, BODY, BODYSTRUCTURE and BODY[section] from raw messages (RFC 3501 §6.4.5, §7.4.2): multipart,
// message/rfc822, encodings, dispositions (RFC 2231 parameters), languages, groups, malformed input.
import t from 'tap';
import { parseMessage } from '../../src/imap/mime/parse.js';
import { sectionBytes } from '../../src/imap/mime/section.js';
import { envelopeFromSummary, summarize } from '../../src/imap/mime/structure.js';
import { summarize as storeSummary } from '../../src/mailstore/headers.js';
import { bodyText } from '../../src/imap/mime/text.js';
import { parseSection } from '../../src/imap/protocol/fetch-items.js';
import { sentDay } from '../../src/imap/commands/search.js';

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'));

t.test('single part: envelope with quoted names and groups, body with parameters and line count', async (t) => {
  const raw = crlf(['From: "Q, Bob" <bob@x.test>', 'To: team: a@x.test, b@x.test;, c@x.test', 'Subject: hi', 'Content-Type: text/plain; charset="ISO-8859-1"; format=flowed', 'Content-Transfer-Encoding: 8bit', '', 'line1', 'line2', '']);
  const s = summarize(raw);
  t.equal(
    s.envelope,
    '(NIL "hi" (("Q, Bob" NIL "bob" "x.test")) (("Q, Bob" NIL "bob" "x.test")) (("Q, Bob" NIL "bob" "x.test")) ((NIL NIL "team" NIL)(NIL NIL "a" "x.test")(NIL NIL "b" "x.test")(NIL NIL NIL NIL)(NIL NIL "c" "x.test")) NIL NIL NIL NIL)',
    'sender and reply-to default to from; a group is start and end markers',
  );
  t.equal(s.body, '("TEXT" "PLAIN" ("CHARSET" "ISO-8859-1" "FORMAT" "flowed") NIL NIL "8BIT" 14 2)');
  t.equal(s.bodystructure, '("TEXT" "PLAIN" ("CHARSET" "ISO-8859-1" "FORMAT" "flowed") NIL NIL "8BIT" 14 2 NIL NIL NIL NIL)');
  const tree = parseMessage(raw);
  t.equal(sectionBytes(raw, tree, parseSection('1'))?.toString(), 'line1\r\nline2\r\n', 'part 1 of a single-part message is its body');
  t.equal(sectionBytes(raw, tree, parseSection('HEADER.FIELDS.NOT (FROM TO CONTENT-TYPE CONTENT-TRANSFER-ENCODING)'))?.toString(), 'Subject: hi\r\n\r\n');
  t.equal(sectionBytes(raw, tree, parseSection('2')), null, 'no such part');
});

const nested = crlf([
  'Content-Type: multipart/mixed; boundary=b1',
  'Subject: m',
  '',
  '--b1',
  'Content-Type: text/plain; charset=us-ascii',
  'Content-ID: <c1>',
  'Content-Description: first',
  'Content-Disposition: inline',
  '',
  'one',
  '--b1',
  'Content-Type: message/rfc822',
  "Content-Disposition: attachment; filename*=UTF-8''%C3%BC.eml",
  'Content-Language: de',
  'Content-Location: http://x.test/m',
  '',
  'Subject: inner',
  'Content-Type: multipart/alternative; boundary=b2',
  '',
  '--b2',
  '',
  'plain',
  '--b2',
  'Content-Type: text/html',
  '',
  '<b>x</b>',
  '--b2--',
  '--b1--',
  '',
]);

t.test('multipart with message/rfc822: BODYSTRUCTURE and every section form', async (t) => {
  const s = summarize(nested);
  t.equal(
    s.body,
    '(("TEXT" "PLAIN" ("CHARSET" "us-ascii") "<c1>" "first" "7BIT" 3 1) ("MESSAGE" "RFC822" NIL NIL NIL "7BIT" 132 (NIL "inner" NIL NIL NIL NIL NIL NIL NIL NIL) (("TEXT" "PLAIN" ("CHARSET" "us-ascii") NIL NIL "7BIT" 5 1) ("TEXT" "HTML" NIL NIL NIL "7BIT" 8 1) "ALTERNATIVE") 11) "MIXED")',
  );
  t.equal(
    s.bodystructure,
    '(("TEXT" "PLAIN" ("CHARSET" "us-ascii") "<c1>" "first" "7BIT" 3 1 NIL ("INLINE" NIL) NIL NIL) ("MESSAGE" "RFC822" NIL NIL NIL "7BIT" 132 (NIL "inner" NIL NIL NIL NIL NIL NIL NIL NIL) (("TEXT" "PLAIN" ("CHARSET" "us-ascii") NIL NIL "7BIT" 5 1 NIL NIL NIL NIL) ("TEXT" "HTML" NIL NIL NIL "7BIT" 8 1 NIL NIL NIL NIL) "ALTERNATIVE" ("BOUNDARY" "b2") NIL NIL NIL) 11 NIL ("ATTACHMENT" ("FILENAME" {6}\r\nü.eml)) "de" "http://x.test/m") "MIXED" ("BOUNDARY" "b1") NIL NIL NIL)',
    'RFC 2231 parameters decoded (sent as a literal), language and location as extension data',
  );
  const tree = parseMessage(nested);
  const sec = (spec: string) => sectionBytes(nested, tree, parseSection(spec))?.toString();
  t.equal(sec('1'), 'one');
  t.equal(sec('1.MIME'), 'Content-Type: text/plain; charset=us-ascii\r\nContent-ID: <c1>\r\nContent-Description: first\r\nContent-Disposition: inline\r\n\r\n');
  t.equal(sec('2.HEADER'), 'Subject: inner\r\nContent-Type: multipart/alternative; boundary=b2\r\n\r\n', 'HEADER of a message/rfc822 part is the embedded header');
  t.equal(sec('2.TEXT'), '--b2\r\n\r\nplain\r\n--b2\r\nContent-Type: text/html\r\n\r\n<b>x</b>\r\n--b2--');
  t.equal(sec('2.1'), 'plain', 'parts of the embedded message');
  t.equal(sec('2.2'), '<b>x</b>');
  t.equal(sec('2.2.MIME'), 'Content-Type: text/html\r\n\r\n');
  t.equal(sec('2.HEADER.FIELDS (subject)'), 'Subject: inner\r\n\r\n');
  t.equal(sec('HEADER.FIELDS (SUBJECT)'), 'Subject: m\r\n\r\n');
  t.equal(sec('1.HEADER'), undefined, 'HEADER of a non-message part does not exist');
  t.equal(sec('3'), undefined);
  t.ok(sec('TEXT')!.startsWith('--b1\r\n') && sec('TEXT')!.endsWith('--b1--\r\n'));
});

t.test('malformed input never throws', async (t) => {
  const cases = [
    Buffer.alloc(0),
    Buffer.from('no header separator at all'),
    Buffer.from('\r\nbody without headers'),
    crlf(['Content-Type: multipart/mixed; boundary=zz', '', '--zz', 'Content-Type: text/plain', '', 'never closed']),
    crlf(['Content-Type: multipart/mixed', '', 'no boundary parameter']),
    crlf(['Content-Type: ;;;', 'From: <<<@@@>>>', 'To: ,,,', '', 'x']),
    Buffer.from([0xff, 0xfe, 0x0d, 0x0a, 0x0d, 0x0a, 0x00]),
    Buffer.from('Content-Type: multipart/mixed; boundary=a\r\n\r\n' + '--a\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n'.repeat(100)),
  ];
  for (const raw of cases) {
    const s = summarize(raw);
    t.match(s.bodystructure, /^\(/);
    t.match(s.envelope, /^\(/);
  }
  const unterminated = summarize(cases[3]!);
  t.match(unterminated.body, /^\(\("TEXT" "PLAIN" .* "MIXED"\)$/, 'an unterminated multipart keeps its last part');
});

t.test('ENVELOPE from the store summary matches the parsed one', async (t) => {
  const raw = crlf(['Date: Fri, 01 May 2026 10:00:00 +0000', 'From: Alice <alice@remote.test>', 'To: bob@example.com', 'Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=', 'Message-ID: <x@y>', '', 'b']);
  const fromStore = envelopeFromSummary({
    date: 'Fri, 01 May 2026 10:00:00 +0000',
    subject: '=?UTF-8?Q?Gr=C3=BC=C3=9Fe?=',
    from: [{ name: 'Alice', address: 'alice@remote.test' }],
    sender: [],
    replyTo: [],
    to: [{ name: null, address: 'bob@example.com' }],
    cc: [],
    bcc: [],
    inReplyTo: null,
    messageId: '<x@y>',
  });
  t.equal(fromStore, summarize(raw).envelope);
});

t.test('a header field that is not UTF-8 reads as Windows-1252: ENVELOPE, BODYSTRUCTURE parameters, the store summary alike', async (t) => {
  // Raw 8-bit bytes in a header (no encoded word) from old mailers: not UTF-8, so Windows-1252, field by field.
  const raw = Buffer.from(
    [
      'From: Ren\xe9 <rene@remote.test>',
      'To: J\xc3\xb6rg <j@example.com>',
      'Subject: caf\xe9',
      '\tcr\xe8me \x93br\xfbl\xe9e\x94',
      'Content-Type: application/pdf; name="men\xfc.pdf"',
      'Content-Disposition: attachment; filename="men\xfc.pdf"',
      '',
      'x',
    ].join('\r\n'),
    'latin1',
  );
  const s = summarize(raw);
  const lit = (v: string) => `{${Buffer.byteLength(v)}}\r\n${v}`;
  t.equal(
    s.envelope,
    `(NIL ${lit('café crème “brûlée”')} ((${lit('René')} NIL "rene" "remote.test")) ((${lit('René')} NIL "rene" "remote.test")) ((${lit('René')} NIL "rene" "remote.test")) ((${lit('Jörg')} NIL "j" "example.com")) NIL NIL NIL NIL)`,
    'a folded field decoded as one; the UTF-8 field beside it unchanged',
  );
  t.match(s.bodystructure, `("APPLICATION" "PDF" ("NAME" ${lit('menü.pdf')}) NIL NIL "7BIT" 1 NIL ("ATTACHMENT" ("FILENAME" ${lit('menü.pdf')})) NIL NIL)`);
  t.equal(envelopeFromSummary(storeSummary(raw)), s.envelope, 'the store summary reads the fields the same way');
  const tree = parseMessage(raw);
  t.equal(sectionBytes(raw, tree, parseSection('HEADER.FIELDS (SUBJECT)'))?.toString('latin1'), 'Subject: caf\xe9\r\n\tcr\xe8me \x93br\xfbl\xe9e\x94\r\n\r\n', 'HEADER.FIELDS: the bytes');
});

t.test('text for SEARCH: transfer encodings and charsets decoded', async (t) => {
  const raw = crlf([
    'Content-Type: multipart/mixed; boundary=q',
    '',
    '--q',
    'Content-Type: text/plain; charset=iso-8859-1',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'K=E4se und soft=',
    'break',
    '--q',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('Grüße aus Köln').toString('base64'),
    '--q',
    'Content-Type: application/octet-stream',
    '',
    'binaryneedle',
    '--q--',
  ]);
  const text = bodyText(raw, parseMessage(raw));
  t.match(text, /Käse und softbreak/);
  t.match(text, /Grüße aus Köln/);
  t.notMatch(text, /binaryneedle/, 'non-text parts are not searched');
  t.equal(sentDay('Sat, 02 May 2026 23:30:00 -0700'), Date.UTC(2026, 4, 2) / 86400000, 'the date as written, in its own zone');
  t.equal(sentDay(null), null);
});
