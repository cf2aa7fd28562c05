// MULTIAPPEND (RFC 3502) and BINARY (RFC 3516) over a raw socket, with the RFCs' examples; BINARY with imapflow
// (FETCH BINARY downloads, APPEND with a literal8).
import t from 'tap';
import { message, session, setupImap } from './setup.js';

/** A multipart message: part 1 quoted-printable text, part 2 base64 bytes with NULs, part 3 an unknown encoding. */
const BYTES = Buffer.from([0x00, 0x01, 0x02, 0xff, 0x00, 0x41, 0x42, 0x43, 0x0d, 0x0a, 0x00]);
const MULTIPART = Buffer.from(
  [
    'From: a@remote.test',
    'To: lx@example.com',
    'Subject: binary',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'Gr=C3=BC=C3=9Fe, a long line that is =',
    'continued=3D',
    '--b1',
    'Content-Type: application/octet-stream',
    'Content-Transfer-Encoding: BASE64',
    '',
    BYTES.toString('base64').slice(0, 8),
    BYTES.toString('base64').slice(8),
    '--b1',
    'Content-Type: application/octet-stream',
    'Content-Transfer-Encoding: x-uuencode',
    '',
    'begin 644 x',
    '--b1--',
    '',
  ].join('\r\n'),
);
const PART1 = Buffer.from('Grüße, a long line that is continued=', 'utf8');

t.test('MULTIAPPEND and BINARY', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('bm', { quotaBytes: 20_000 });
  const c = await session(f, user.address);

  await t.test('announced', async (t) => {
    const caps = await c.command('a0', 'CAPABILITY');
    t.match(caps, / MULTIAPPEND/);
    t.match(caps, / BINARY/);
  });

  await t.test('RFC 3502 §6.3.11 example: two messages, synchronizing literals, one APPENDUID for both', async (t) => {
    const m1 = message({ subject: 'first of two' });
    const m2 = message({ subject: 'second of two' });
    c.send(`A003 APPEND Drafts (\\Seen) {${m1.length}}\r\n`);
    await c.waitFor(/^\+ [^\r]*\r\n/m);
    c.send(Buffer.concat([m1, Buffer.from(` (\\Draft) " 1-Jul-2002 00:00:00 -0700" {${m2.length}}\r\n`)]));
    await c.waitFor(/^\+ [^\r]*\r\n/m);
    c.send(Buffer.concat([m2, Buffer.from('\r\n')]));
    const done = await c.waitFor(/^A003 [^\r]*\r\n/m);
    const m = /^A003 OK \[APPENDUID (\d+) 1:2\] /m.exec(done);
    t.ok(m, done);
    const fetch = await c.command('a1', 'EXAMINE Drafts');
    t.match(fetch, /\* 2 EXISTS/);
    const flags = await c.command('a2', 'FETCH 1:2 (FLAGS INTERNALDATE BODY.PEEK[HEADER.FIELDS (SUBJECT)])');
    t.match(flags, /\* 1 FETCH \(FLAGS \(\\Seen( \\Recent)?\) INTERNALDATE "[^"]+" BODY\[HEADER.FIELDS \(SUBJECT\)\] \{\d+\}\r\nSubject: first of two/);
    t.match(flags, /\* 2 FETCH \(FLAGS \(\\Draft( \\Recent)?\) INTERNALDATE "0?1-Jul-2002 00:00:00 -0700" BODY\[HEADER.FIELDS \(SUBJECT\)\] \{\d+\}\r\nSubject: second of two/, "each message's own flags and date");
  });

  await t.test('LITERAL+: three messages in one send', async (t) => {
    const ms = [message({ subject: 'p1' }), message({ subject: 'p2' }), message({ subject: 'p3' })];
    c.send(Buffer.concat([Buffer.from(`b1 APPEND Drafts {${ms[0]!.length}+}\r\n`), ms[0]!, Buffer.from(` {${ms[1]!.length}+}\r\n`), ms[1]!, Buffer.from(` (\\Flagged) {${ms[2]!.length}+}\r\n`), ms[2]!, Buffer.from('\r\n')]));
    const out = await c.waitFor(/^b1 [^\r]*\r\n/m);
    t.match(out, /^b1 OK \[APPENDUID \d+ 3:5\] /m);
    t.notMatch(out, /^\+/m, 'no continuation');
  });

  await t.test('all or nothing: quota and size are checked per message before its "+"', async (t) => {
    const before = await c.command('q0', 'STATUS Drafts (MESSAGES UIDNEXT)');
    const small = message({ subject: 'fits' });
    // The second does not fit with the first: refused instead of its "+", and the first is not stored.
    c.send(`q1 APPEND Drafts {${small.length}}\r\n`);
    await c.waitFor(/^\+ [^\r]*\r\n/m);
    c.send(Buffer.concat([small, Buffer.from(` {${20_000 - small.length}}\r\n`)]));
    t.match(await c.waitFor(/^q1 [^\r]*\r\n/m), /^q1 NO \[OVERQUOTA\]/m);
    // Over APPENDLIMIT: TOOBIG before the "+".
    c.send(`q2 APPEND Drafts {${small.length}}\r\n`);
    await c.waitFor(/^\+ [^\r]*\r\n/m);
    c.send(Buffer.concat([small, Buffer.from(` {${60 * 1024 * 1024}}\r\n`)]));
    t.match(await c.waitFor(/^q2 [^\r]*\r\n/m), /^q2 NO \[TOOBIG\]/m);
    // Non-synchronizing: the refused literal is read and dropped; the command is answered NO, nothing stored.
    const big = Buffer.alloc(20_000, 'x');
    c.send(Buffer.concat([Buffer.from(`q3 APPEND Drafts {${small.length}+}\r\n`), small, Buffer.from(` {${big.length}+}\r\n`), big, Buffer.from('\r\n')]));
    t.match(await c.waitFor(/^q3 [^\r]*\r\n/m), /^q3 NO \[OVERQUOTA\]/m);
    // An empty message among them: nothing stored either.
    c.send(Buffer.concat([Buffer.from(`q4 APPEND Drafts {${small.length}+}\r\n`), small, Buffer.from(` {0+}\r\n\r\n`)]));
    t.match(await c.waitFor(/^q4 [^\r]*\r\n/m), /^q4 NO /m);
    t.equal(await c.command('q5', 'STATUS Drafts (MESSAGES UIDNEXT)'), before.replace(/q0/g, 'q5'), 'no message stored, no UID used');
  });

  await t.test('the store: appendAll is one transaction (a later message over quota stores none)', async (t) => {
    const folder = (await f.store.getFolder(user.id, 'Archive'))!;
    await t.rejects(
      f.store.appendAll(user.id, 'Archive', [{ raw: message({ subject: 's1' }) }, { raw: message({ subject: 's2' }) }, { raw: Buffer.alloc(19_000, 'y') }]),
      { code: 'quota_exceeded' },
    );
    const after = (await f.store.getFolder(user.id, 'Archive'))!;
    t.equal(after.messages, 0);
    t.equal(after.uidNext, folder.uidNext);
    // Beside other appends in the same batch, which commit.
    const [lone, group] = await Promise.allSettled([
      f.store.append(user.id, 'Archive', message({ subject: 'alone' })),
      f.store.appendAll(user.id, 'Archive', [{ raw: message({ subject: 'g1' }) }, { raw: Buffer.alloc(19_000, 'z') }]),
    ]);
    t.equal(lone.status, 'fulfilled');
    t.equal(group.status, 'rejected');
    t.equal((await f.store.getFolder(user.id, 'Archive'))!.messages, 1);
    const ok = await f.store.appendAll(user.id, 'Archive', [{ raw: message({ subject: 'g1' }) }, { raw: message({ subject: 'g2' }), flags: ['\\Seen'] }]);
    t.same(ok.map((x) => x.uid), [after.uidNext + 1, after.uidNext + 2], 'ascending UIDs in the order given');
  });

  await t.test('BINARY (RFC 3516 §4.2): decoded parts, BINARY.SIZE, partial, literal8 for NULs, UNKNOWN-CTE', async (t) => {
    await f.store.deliver(MULTIPART, [{ mailboxId: user.id, folder: 'Junk' }]);
    t.match(await c.command('r0', 'SELECT Junk'), /\* 1 EXISTS/);
    const one = await c.command('r1', 'FETCH 1 (BINARY.SIZE[1] BINARY.PEEK[1])');
    const text = Buffer.from(one, 'latin1');
    t.ok(text.includes(Buffer.concat([Buffer.from(`* 1 FETCH (BINARY.SIZE[1] ${PART1.length} BINARY[1] {${PART1.length}}\r\n`), PART1, Buffer.from(')\r\n')])), one);
    const two = await c.command('r2', 'FETCH 1 (BINARY.PEEK[2] BINARY.SIZE[2])');
    t.ok(Buffer.from(two, 'latin1').includes(Buffer.concat([Buffer.from(`* 1 FETCH (BINARY[2] ~{${BYTES.length}}\r\n`), BYTES, Buffer.from(` BINARY.SIZE[2] ${BYTES.length})\r\n`)])), 'NUL octets come as a literal8');
    const part = await c.command('r3', 'FETCH 1 (BINARY.PEEK[2]<5.3>)');
    t.match(part, /\* 1 FETCH \(BINARY\[2\]<5> \{3\}\r\nABC\)/, 'partial of the decoded content; no NUL in it: a literal');
    t.match(await c.command('r4', 'FETCH 1 (BINARY.PEEK[3])'), /^r4 NO \[UNKNOWN-CTE\]/m);
    t.match(await c.command('r5', 'FETCH 1 (BINARY.PEEK[1.MIME])'), /^r5 BAD/m, 'only part numbers');
    t.match(await c.command('r6', 'FETCH 1 (BINARY.SIZE[1]<0.5>)'), /^r6 BAD/m);
    t.match(await c.command('r7', 'FETCH 1 (BINARY.PEEK[9])'), /\* 1 FETCH \(BINARY\[9\] NIL\)/);
    const whole = await c.command('r8', 'FETCH 1 (BINARY.PEEK[])');
    t.ok(Buffer.from(whole, 'latin1').includes(Buffer.concat([Buffer.from(`BINARY[] {${MULTIPART.length}}\r\n`), MULTIPART])), 'the empty section: the message as it is');
    t.match(await c.command('r9', 'FETCH 1 (BINARY[1])'), /FLAGS \(\\Seen/, 'BINARY (not .PEEK) sets \\Seen');
  });

  await t.test('BINARY APPEND with a literal8 (RFC 3516 §4.4)', async (t) => {
    const raw = Buffer.concat([Buffer.from('Subject: nul\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\n\r\n'), BYTES]);
    c.send(`s1 APPEND Trash ~{${raw.length}}\r\n`);
    await c.waitFor(/^\+ [^\r]*\r\n/m);
    c.send(Buffer.concat([raw, Buffer.from('\r\n')]));
    t.match(await c.waitFor(/^s1 [^\r]*\r\n/m), /^s1 OK \[APPENDUID \d+ 1\]/m);
    c.send(Buffer.concat([Buffer.from(`s2 APPEND Trash ~{${raw.length}+}\r\n`), raw, Buffer.from(` ~{${raw.length}+}\r\n`), raw, Buffer.from('\r\n')]));
    t.match(await c.waitFor(/^s2 [^\r]*\r\n/m), /^s2 OK \[APPENDUID \d+ 2:3\]/m, 'literal8 and LITERAL+ in a MULTIAPPEND');
    await c.command('s3', 'SELECT Trash');
    const back = await c.command('s4', 'FETCH 1 (BINARY.PEEK[1])');
    t.ok(Buffer.from(back, 'latin1').includes(Buffer.concat([Buffer.from(`BINARY[1] ~{${BYTES.length}}\r\n`), BYTES, Buffer.from(')')])), 'stored as sent, NULs included');
  });

  await t.test('imapflow: FETCH BINARY downloads and APPEND with NULs', async (t) => {
    const client = await f.client(user.address);
    await client.mailboxOpen('Junk');
    const msg = await client.fetchOne('1', { bodyParts: ['1', '2'] }, { binary: true });
    t.same([...(msg && msg.binaryParts ? msg.binaryParts : [])].sort(), ['1', '2'], 'fetched as BINARY');
    t.ok(msg && msg.bodyParts?.get('1')?.equals(PART1), 'part 1 decoded by the server');
    t.ok(msg && msg.bodyParts?.get('2')?.equals(BYTES), 'part 2 decoded by the server, NULs included');
    const raw = Buffer.concat([Buffer.from('Subject: nul2\r\n\r\n'), BYTES]);
    const res = await client.append('Trash', raw);
    t.ok(res && res.uid, 'stored');
    await client.mailboxOpen('Trash');
    const got = await client.fetchOne(String(res && res.uid), { source: true }, { uid: true });
    t.ok(got && got.source?.equals(raw), 'the same bytes back');
    await client.logout();
  });
  c.destroy();
});
