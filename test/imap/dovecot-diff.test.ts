// Defects found by differential testing against Dovecot 2.3 (the same messages APPENDed to both, the same
// commands sent): each subtest replays the exact command and holds our server to the RFC's answer. Where
// Dovecot's answer differs but is only its own choice (line counts, keyword lists, \Recent), nothing here.
import t from 'tap';
import { session, setupImap, type RawClient } from './setup.js';

const crlf = (lines: string[]) => lines.join('\r\n');

async function append(c: RawClient, tag: string, raw: string | Buffer): Promise<void> {
  const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'latin1');
  c.send(Buffer.concat([Buffer.from(`${tag} APPEND INBOX {${bytes.length}+}\r\n`), bytes, Buffer.from('\r\n')]));
  const r = await c.waitFor(new RegExp(`^${tag} (OK|NO|BAD)[^\\r\\n]*\\r\\n`, 'm'));
  if (!new RegExp(`^${tag} OK`, 'm').test(r)) throw new Error(`APPEND failed: ${r}`);
}

/** The literal of a one-message FETCH answer (`{n}\r\n` then n bytes). */
function literal(answer: string): string {
  const m = /\{(\d+)\}\r\n/.exec(answer);
  if (!m) throw new Error(`no literal in ${answer}`);
  const start = m.index + m[0].length;
  return answer.slice(start, start + Number(m[1]));
}

t.test('differences from Dovecot that were defects', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  const c = await session(f, bob.address);

  // 1: a Unix file (bare LF), 2: a header without body or blank line, 3: attachments, 4: a bounce (message/delivery-status),
  // 5: multipart without a boundary.
  await append(c, 'a1', 'From: a@remote.test\nTo: b@example.com\nSubject: bare LF message\n\nline1\nline2\n.dot\n');
  await append(c, 'a2', 'From: a@remote.test\r\nTo: b@example.com\r\nSubject: header only, no blank line\r\n');
  await append(
    c,
    'a3',
    crlf([
      'From: a@remote.test',
      'Subject: attachments',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="outer"',
      '',
      '--outer',
      'Content-Type: text/plain',
      '',
      'see the files',
      '--outer',
      'Content-Type: application/pdf; name="quarterly-report.pdf"',
      'Content-Transfer-Encoding: base64',
      "Content-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf",
      'Content-Description: A PDF file',
      '',
      'JVBERi0xLjQK',
      '--outer--',
      '',
    ]),
  );
  await append(
    c,
    'a4',
    crlf([
      'From: MAILER-DAEMON@remote.test',
      'Subject: Undelivered Mail Returned to Sender',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="r"',
      '',
      '--r',
      'Content-Type: text/plain',
      '',
      'Your message could not be delivered.',
      '--r',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.remote.test',
      '',
      'Final-Recipient: rfc822; gone@example.com',
      'Action: failed',
      '--r--',
      '',
    ]),
  );
  await append(c, 'a5', crlf(['From: a@remote.test', 'Subject: multipart without boundary', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed', '', 'no boundary here', '']));
  await append(
    c,
    'a6',
    crlf(['From: a@remote.test', 'Subject: forwarded as base64', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="f"', '', '--f', 'Content-Type: message/rfc822', 'Content-Transfer-Encoding: base64', '', 'U3ViamVjdDogaW5uZXIKCmJvZHkK', '--f--', '']),
  );
  await c.command('s1', 'SELECT INBOX');

  await t.test('a bare-LF APPEND is stored with CRLF line ends: RFC822.SIZE is the size of BODY[]', async (t) => {
    // Was: RFC822.SIZE 81 and BODY[] with bare LFs, which POP3 then listed as 81 octets and sent as 88.
    const size = await c.command('f1', 'FETCH 1 RFC822.SIZE');
    t.match(size, /^\* 1 FETCH \(RFC822\.SIZE 88\)/m);
    const body = literal(await c.command('f2', 'FETCH 1 BODY.PEEK[]'));
    t.equal(body, 'From: a@remote.test\r\nTo: b@example.com\r\nSubject: bare LF message\r\n\r\nline1\r\nline2\r\n.dot\r\n');
    t.match(await c.command('f3', 'FETCH 1 BODY'), /"7BIT" 20 3\)/, 'the body part counts the CRLFs too');
  });

  await t.test('HEADER.FIELDS(.NOT) of a message with no body and no blank line carry no blank line (RFC 3501 §6.4.5)', async (t) => {
    // "the blank line is included in all header fetches, except in the case of a message which has no body
    // and no blank line": BODY[HEADER] had it right, HEADER.FIELDS and HEADER.FIELDS.NOT added "\r\n".
    t.equal(literal(await c.command('h1', 'FETCH 2 BODY.PEEK[HEADER]')), 'From: a@remote.test\r\nTo: b@example.com\r\nSubject: header only, no blank line\r\n');
    t.equal(literal(await c.command('h2', 'FETCH 2 BODY.PEEK[HEADER.FIELDS.NOT (SUBJECT)]')), 'From: a@remote.test\r\nTo: b@example.com\r\n');
    t.equal(literal(await c.command('h3', 'FETCH 2 BODY.PEEK[HEADER.FIELDS (SUBJECT)]')), 'Subject: header only, no blank line\r\n');
    t.match(await c.command('h4', 'FETCH 2 BODY.PEEK[HEADER.FIELDS (X-NONE)]'), /BODY\[HEADER\.FIELDS \(X-NONE\)\] \{0\}\r\n\)/);
    t.equal(literal(await c.command('h5', 'FETCH 3 BODY.PEEK[HEADER.FIELDS (SUBJECT)]')), 'Subject: attachments\r\n\r\n', 'a message with a blank line keeps it');
  });

  await t.test('HEADER.FIELDS names are astrings: quoted strings and literals too (RFC 3501 §9 header-fld-name)', async (t) => {
    // Was: BAD "Unterminated [" for the literal; Dovecot answers both.
    const lit = await c.command('l1', 'FETCH 3 BODY.PEEK[HEADER.FIELDS ("Subject" {4+}\r\nFrom)]');
    t.match(lit, /^\* 3 FETCH \(BODY\[HEADER\.FIELDS \("SUBJECT" "FROM"\)\] \{45\}\r\nFrom: a@remote\.test\r\nSubject: attachments\r\n\r\n\)/m);
    t.match(lit, /^l1 OK/m);
    const quoted = await c.command('l2', 'FETCH 3 BODY.PEEK[HEADER.FIELDS.NOT ("Subject" "From" "MIME-Version")]');
    t.match(quoted, /\{51\}\r\nContent-Type: multipart\/mixed; boundary="outer"\r\n\r\n\)/);
  });

  await t.test('SEARCH TEXT looks at the MIME headers of the parts: an attachment by its file name or description', async (t) => {
    // RFC 3501 §6.4.4 TEXT: "the specified string in the header or body of the message"; a part's header is body.
    t.match(await c.command('t1', 'SEARCH TEXT quarterly-report.pdf'), /^\* SEARCH 3\r\n/m);
    t.match(await c.command('t2', 'SEARCH TEXT "A PDF file"'), /^\* SEARCH 3\r\n/m);
    t.match(await c.command('t3', 'SEARCH CHARSET UTF-8 TEXT résumé'), /^\* SEARCH 3\r\n/m, 'an RFC 2231 file name, decoded');
    t.match(await c.command('t4', 'SEARCH BODY quarterly-report'), /^\* SEARCH\r\n/m, 'BODY is the content, not the part headers');
  });

  await t.test('SEARCH BODY reads message/delivery-status parts: a bounce by its failed recipient', async (t) => {
    t.match(await c.command('b1', 'SEARCH BODY gone@example.com'), /^\* SEARCH 4\r\n/m);
    t.match(await c.command('b2', 'SEARCH TEXT "Reporting-MTA"'), /^\* SEARCH 4\r\n/m);
  });

  await t.test('a MESSAGE/RFC822 part always has envelope, body and lines, also when base64-encoded (RFC 3501 §7.4.2)', async (t) => {
    // Was ("MESSAGE" "RFC822" NIL NIL NIL "BASE64" 28 NIL NIL NIL NIL): a body-type-msg without its envelope
    // and body, which clients that parse by the type read as a broken structure.
    const empty = '(NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL) ("TEXT" "PLAIN" ("CHARSET" "us-ascii") NIL NIL "7BIT" 0 0';
    t.match(await c.command('r1', 'FETCH 6 BODYSTRUCTURE'), `(("MESSAGE" "RFC822" NIL NIL NIL "BASE64" 28 ${empty} NIL NIL NIL NIL) 1 NIL NIL NIL NIL) "MIXED" ("BOUNDARY" "f") NIL NIL NIL))`);
    t.match(await c.command('r2', 'FETCH 6 BODY'), `(("MESSAGE" "RFC822" NIL NIL NIL "BASE64" 28 ${empty}) 1) "MIXED"))`);
  });

  await t.test('DELETE of a folder with subfolders: its messages go, the subfolders stay, the name lists \\Noselect (RFC 3501 §6.3.4)', async (t) => {
    // "It is permitted to delete a name that has inferior hierarchical names and does not have the \Noselect
    // mailbox name attribute": was NO [CANNOT]; Dovecot answers OK.
    t.match(await c.command('d1', 'CREATE Projects/2026'), /^d1 OK/m);
    t.match(await c.command('d2', 'COPY 1 Projects'), /^d2 OK/m);
    t.match(await c.command('d3', 'DELETE Projects'), /^d3 OK/m);
    const list = await c.command('d4', 'LIST "" "Projects*"');
    t.match(list, /^\* LIST \(\\Noselect \\HasChildren\) "\/" "Projects"\r$/m);
    t.match(list, /^\* LIST \(\\HasNoChildren\) "\/" "Projects\/2026"\r$/m);
    t.match(await c.command('d5', 'SELECT Projects'), /^d5 NO/m);
    t.match(await c.command('d6', 'DELETE Projects'), /^d6 NO/m, 'a \\Noselect name with inferiors cannot be deleted');
    t.match(await c.command('d7', 'STATUS Projects/2026 (MESSAGES)'), /^\* STATUS "Projects\/2026" \(MESSAGES 0\)/m);
    await c.command('d8', 'SELECT INBOX');
  });

  await t.test('a multipart without a boundary is text/plain (RFC 2045 §5.2), not a "MULTIPART" leaf', async (t) => {
    t.match(await c.command('m1', 'FETCH 5 BODYSTRUCTURE'), /^\* 5 FETCH \(BODYSTRUCTURE \("TEXT" "PLAIN" \("CHARSET" "us-ascii"\) NIL NIL "7BIT" 18 1 NIL NIL NIL NIL\)\)/m);
    t.match(await c.command('m2', 'SEARCH BODY "no boundary"'), /^\* SEARCH 5\r\n/m);
  });
});
