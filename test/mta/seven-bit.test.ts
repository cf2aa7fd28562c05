// A submitted message goes out 7-bit in lines of at most 998 characters (RFC 6152 §3, RFC 5321 §4.5.3.1.6):
// a server without 8BITMIME got raw 8-bit bodies, and a 2,500-character line went through as it was
// (found against Postfix 3.7 with smtpd_discard_ehlo_keywords=8bitmime).
import t from 'tap';
import { simpleParser } from 'mailparser';
import { needsSevenBit, toSevenBit } from '../../src/mta/seven-bit.js';

const crlf = (lines: string[]) => Buffer.from(lines.join('\r\n'), 'utf8');
const bodyOf = (raw: Buffer) => raw.subarray(raw.indexOf('\r\n\r\n') + 4);
const widest = (raw: Buffer) => Math.max(...raw.toString('latin1').split('\r\n').map((l) => l.length));
const eightBit = (b: Buffer) => b.some((c) => c > 0x7f);

t.test('a 7-bit message in short lines is returned as it is', async (t) => {
  const raw = crlf(['From: a@b.test', 'To: c@d.test', 'Subject: hi', '', 'plain ascii', '']);
  t.notOk(needsSevenBit(raw));
  t.equal(await toSevenBit(raw), raw, 'the same buffer');
});

t.test('8-bit and over-long bodies become quoted-printable, read back the same', async (t) => {
  const long = 'word'.repeat(625);
  const cases: Record<string, Buffer> = {
    '8bit text/plain': crlf(['From: a@b.test', 'To: c@d.test', 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', 'Grüße aus Köln', '.a dot', '']),
    'a line of 2,500 characters': crlf(['From: a@b.test', 'To: c@d.test', 'Subject: long', '', long, 'next', '']),
    'no MIME-Version at all': crlf(['From: a@b.test', 'To: c@d.test', 'Subject: hi', '', 'naïve', '']),
    'multipart with an inline forwarded message': crlf([
      'From: a@b.test', 'To: c@d.test', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="XX"', '',
      '--XX', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', 'héllo',
      '--XX', 'Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename="a.bin"', 'Content-Transfer-Encoding: base64', '', 'AAECAwQ=',
      '--XX', 'Content-Type: message/rfc822', '', 'From: e@f.test', 'Subject: inner', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', 'ïnner',
      '--XX--', '',
    ]),
  };
  for (const [name, raw] of Object.entries(cases)) {
    t.ok(needsSevenBit(raw), `${name}: needs it`);
    const out = await toSevenBit(raw);
    t.notOk(eightBit(bodyOf(out)), `${name}: no 8-bit byte in the body`);
    t.ok(widest(out) <= 998, `${name}: lines of at most 998 (widest ${widest(out)})`);
    const [before, after] = [await simpleParser(raw), await simpleParser(out)];
    t.equal(after.text?.trimEnd(), before.text?.trimEnd(), `${name}: the same text`);
    t.notMatch(out.toString('latin1'), /(?<!\r)\n/, `${name}: CRLF only`);
    // Files byte for byte; a forwarded message converted inside, so read back.
    const files = (m: typeof before) => m.attachments.filter((a) => a.contentType !== 'message/rfc822').map((a) => a.content.toString('hex'));
    const inner = (m: typeof before) => Promise.all(m.attachments.filter((a) => a.contentType === 'message/rfc822').map(async (a) => (await simpleParser(a.content)).text?.trimEnd()));
    t.same(files(after), files(before), `${name}: the same files`);
    t.same(await inner(after), await inner(before), `${name}: the same forwarded message`);
    t.equal(after.subject, before.subject);
  }
  const plain = await toSevenBit(cases['no MIME-Version at all']!);
  t.match(plain.toString('latin1'), /^MIME-Version: 1\.0\r$/m, 'a MIME-Version is added, or the encoding would not be read');
  t.match(plain.toString('latin1'), /^Content-Transfer-Encoding: quoted-printable\r$/m);
});

t.test('a message attached as a file is one body that may not be re-encoded, and goes as it is', async (t) => {
  const raw = crlf([
    'From: a@b.test', 'To: c@d.test', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="XX"', '',
    '--XX', 'Content-Type: text/plain', '', 'see attached',
    '--XX', 'Content-Type: message/rfc822', 'Content-Disposition: attachment; filename="fwd.eml"', '', 'From: e@f.test', 'Subject: inner', '', 'ïnner',
    '--XX--', '',
  ]);
  const out = await toSevenBit(raw);
  t.match(out.toString('utf8'), /\r\n\r\nïnner\r\n--XX--/, 'the attached message keeps its bytes (RFC 2046 §5.2.1)');
  t.match(out.toString('latin1'), /Content-Type: message\/rfc822\r\nContent-Disposition: attachment; filename="fwd.eml"\r\n\r\n/, 'and its headers');
});

t.test('a structure the splitter refuses (over 1,000 parts) goes as it came, no error', async (t) => {
  const parts = Array.from({ length: 1100 }, (_, i) => `--XX\r\nContent-Type: text/plain\r\n\r\npart ${i} é`).join('\r\n');
  const raw = Buffer.from(`From: a@b.test\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="XX"\r\n\r\n${parts}\r\n--XX--\r\n`, 'utf8');
  t.equal(await toSevenBit(raw), raw);
});
