// Raw-socket tests for what libraries never send: literals of both kinds, odd sequence sets, partial
// fetches, every FETCH item, malformed lines, wrong states, STARTTLS injection, AUTHENTICATE continuation,
// CONDSTORE, shared mailboxes, INBOX rename, APPEND corner cases.
import t from 'tap';
import { message, PASSWORD, session, setupImap } from './setup.js';

t.test('raw protocol', async (t) => {
  const f = await setupImap(t, { config: { trustedNetworks: [] } }); // an untrusted client (loopback is trusted by default)
  const bob = await f.account('bob');
  const alice = await f.account('alice');
  const body = 'Hello raw world\r\nsecond line\r\n';
  for (let i = 1; i <= 4; i++) await f.store.deliver(message({ subject: `Raw ${i}`, body }), [{ mailboxId: bob.id }], { internalDate: new Date('2026-03-01T10:00:00Z') });

  await t.test('greeting and pre-TLS rules', async (t) => {
    const c = await f.raw();
    const caps = await c.command('a1', 'CAPABILITY');
    t.match(caps, /\* CAPABILITY IMAP4rev1 .*STARTTLS LOGINDISABLED/);
    t.notMatch(caps, /AUTH=PLAIN/, 'no mechanism offered in plaintext');
    t.match(await c.command('a2', `LOGIN ${bob.address} "${PASSWORD}"`), /^a2 NO \[PRIVACYREQUIRED\]/m);
    t.match(await c.command('a3', 'AUTHENTICATE PLAIN'), /^a3 NO \[PRIVACYREQUIRED\]/m);
    t.match(await c.command('a4', 'SELECT INBOX'), /^a4 BAD /m, 'a command of another state is BAD');
    t.match(await c.command('a5', 'NOOP'), /^a5 OK/m);
    c.destroy();
    // STARTTLS with a command pipelined behind it: the plaintext command is dropped (RFC 3501 §6.2.1).
    const d = await f.raw();
    d.send('s1 STARTTLS\r\nx1 LOGOUT\r\n');
    await d.waitFor(/^s1 OK[^\n]*\n/m);
    // finish the handshake by hand
    const tls = await import('node:tls');
    const sock = (d as unknown as { socket: import('node:net').Socket }).socket;
    sock.removeAllListeners('data');
    const upgraded = tls.connect({ socket: sock, rejectUnauthorized: false });
    await new Promise((r) => upgraded.once('secureConnect', r));
    let seen = '';
    upgraded.on('data', (b: Buffer) => (seen += b.toString()));
    upgraded.write('x2 CAPABILITY\r\n');
    await new Promise<void>((resolve) => {
      const check = () => {
        if (/^x2 OK/m.test(seen)) resolve();
      };
      upgraded.on('data', check);
      check();
    });
    t.notMatch(seen, /x1|BYE/, 'the injected LOGOUT was never run');
    t.match(seen, /AUTH=PLAIN/);
    t.notMatch(seen, /STARTTLS/, 'STARTTLS is not offered twice');
    upgraded.destroy();
  });

  await t.test('AUTHENTICATE PLAIN: continuation, SASL-IR, cancel, bad base64', async (t) => {
    const c = await f.raw();
    await c.starttls();
    const b64 = Buffer.from(`\0${bob.address}\0${PASSWORD}`).toString('base64');
    c.send('p1 AUTHENTICATE PLAIN\r\n');
    await c.waitFor(/^\+ ?\r\n/m);
    c.send('*\r\n');
    t.match(await c.waitFor(/^p1 [^\n]*\n/m), /p1 BAD/, 'cancelled with *');
    t.match(await c.command('p2', 'AUTHENTICATE PLAIN !!notbase64'), /^p2 BAD/m);
    t.match(await c.command('p3', 'AUTHENTICATE CRAM-MD5'), /^p3 NO/m);
    c.send('p4 AUTHENTICATE PLAIN\r\n');
    await c.waitFor(/^\+ ?\r\n/m);
    c.send(`${b64}\r\n`);
    t.match(await c.waitFor(/^p4 [^\n]*\n/m), /^p4 OK \[CAPABILITY IMAP4rev1 /m);
    t.match(await c.command('p5', 'LOGIN a b'), /^p5 BAD/m, 'LOGIN is not valid once authenticated');
    const d = await f.raw();
    await d.starttls();
    t.match(await d.command('p6', `AUTHENTICATE PLAIN ${b64}`), /^p6 OK/m, 'SASL-IR initial response');
  });

  await t.test('literals: synchronizing and non-synchronizing (LITERAL+)', async (t) => {
    const c = await f.raw();
    await c.starttls();
    c.send(`l1 LOGIN {${bob.address.length}}\r\n`);
    await c.waitFor(/^\+ [^\n]*\n/m);
    c.send(`${bob.address} {${PASSWORD.length}+}\r\n${PASSWORD}\r\n`);
    t.match(await c.waitFor(/^l1 [^\n]*\n/m), /^l1 OK/m);
    const msg = message({ subject: 'Appended with literal+' });
    const r = await (async () => {
      c.send(`l2 APPEND Drafts (\\Seen) {${msg.length}+}\r\n`);
      c.send(msg);
      c.send('\r\n');
      return c.waitFor(/^l2 [^\n]*\n/m);
    })();
    t.match(r, /^l2 OK \[APPENDUID \d+ 1\]/m);
    t.match(await c.command('l3', 'SELECT {6+}\r\nDrafts'), /^l3 OK \[READ-WRITE\]/m, 'a literal as mailbox name');
    t.match(await c.command('l4', 'SEARCH CHARSET UTF-8 SUBJECT {8+}\r\nliteral+'), /\* SEARCH 1\r\n/);
    t.match(await c.command('l5', 'SEARCH CHARSET KOI8-R ALL'), /^l5 NO \[BADCHARSET/m);
  });

  await t.test('SELECT responses, sequence sets and every FETCH item', async (t) => {
    const c = await session(f, bob.address);
    const sel = await c.command('f1', 'SELECT INBOX');
    t.match(sel, /\* FLAGS \(\\Seen \\Answered \\Flagged \\Deleted \\Draft\)/);
    t.match(sel, /\* 4 EXISTS/);
    t.match(sel, /\* OK \[UIDVALIDITY \d+\]/);
    t.match(sel, /\* OK \[UIDNEXT 5\]/);
    t.match(sel, /\* OK \[UNSEEN 1\]/);
    t.match(sel, /\* OK \[PERMANENTFLAGS \(.*\\\*\)\]/);
    t.match(sel, /\* OK \[HIGHESTMODSEQ \d+\]/);
    t.match(sel, /^f1 OK \[READ-WRITE\]/m);

    t.match(await c.command('f2', 'FETCH 3:1 (UID)'), /\* 1 FETCH \(UID 1\)\r\n\* 2 FETCH \(UID 2\)\r\n\* 3 FETCH \(UID 3\)\r\n/, 'a range in reverse order');
    t.match(await c.command('f3', 'FETCH *:3 UID'), /\* 3 FETCH \(UID 3\)\r\n\* 4 FETCH \(UID 4\)\r\n/);
    t.match(await c.command('f4', 'FETCH 2,4,2 UID'), /\* 2 FETCH \(UID 2\)\r\n\* 4 FETCH \(UID 4\)\r\nf4 OK/, 'duplicates answered once');
    t.match(await c.command('f5', 'FETCH 5 UID'), /^f5 BAD/m, 'a message number past EXISTS is BAD');
    t.match(await c.command('f6', 'UID FETCH 90:* UID'), /\* 4 FETCH \(UID 4\)\r\nf6 OK/, 'n:* reaches the highest UID');
    t.match(await c.command('f7', 'UID FETCH 50 UID'), /^f7 OK/m, 'absent UIDs are no error');

    const one = await c.command('f8', 'FETCH 1 (FLAGS INTERNALDATE RFC822.SIZE ENVELOPE BODY BODYSTRUCTURE UID MODSEQ)');
    t.match(one, /FLAGS \(\\Recent\) INTERNALDATE "01-Mar-2026 10:00:00 \+0000" RFC822.SIZE \d+ ENVELOPE \("Fri, 01 May 2026 10:00:00 \+0000" "Raw 1" \(\("Alice Example" NIL "alice" "remote.test"\)\)/);
    t.match(one, /BODY \("TEXT" "PLAIN" \("CHARSET" "utf-8"\) NIL NIL "7BIT" 32 3\) BODYSTRUCTURE \("TEXT" "PLAIN" \("CHARSET" "utf-8"\) NIL NIL "7BIT" 32 3 NIL NIL NIL NIL\) UID 1 MODSEQ \(\d+\)\)/);

    const partial = await c.command('f9', 'FETCH 1 (BODY.PEEK[TEXT]<6.3> BODY.PEEK[]<0.5> BODY.PEEK[TEXT]<900.5>)');
    t.match(partial, /BODY\[TEXT\]<6> \{3\}\r\nraw BODY\[\]<0> \{5\}\r\nFrom: BODY\[TEXT\]<900> \{0\}\r\n\)/);
    t.match(await c.command('f10', 'FETCH 1 (BODY.PEEK[HEADER.FIELDS (Subject X-None)])'), /BODY\[HEADER.FIELDS \(SUBJECT X-NONE\)\] \{18\}\r\nSubject: Raw 1\r\n\r\n\)/);
    t.match(await c.command('f11', 'FETCH 1 FLAGS'), /\* 1 FETCH \(FLAGS \(\\Recent\)\)/, 'PEEK left \\Seen alone');

    const text = await c.command('f12', 'FETCH 1 BODY[TEXT]');
    t.match(text, /\* 1 FETCH \(BODY\[TEXT\] \{32\}\r\nHello raw world\r\nsecond line\r\n\r\n FLAGS \(\\Seen \\Recent\)\)/, 'BODY[] sets \\Seen and reports it');
    const rfc = await c.command('f13', 'FETCH 2 (RFC822.HEADER RFC822.SIZE)');
    t.match(rfc, /RFC822.HEADER \{\d+\}\r\nFrom: [^]*\r\n\r\n RFC822.SIZE/);
    t.match(await c.command('f14', 'FETCH 2 FLAGS'), /FLAGS \(\\Recent\)/, 'RFC822.HEADER does not set \\Seen');
    t.match(await c.command('f15', 'FETCH 2 RFC822'), /RFC822 \{\d+\}\r\nFrom: [^]*FLAGS \(\\Seen \\Recent\)\)/);
    t.match(await c.command('f16', 'FETCH 3 RFC822.TEXT'), /RFC822.TEXT \{32\}\r\nHello raw world/);
    t.match(await c.command('f17', 'FETCH 1:2 FAST'), /\* 1 FETCH \(FLAGS \(\\Seen \\Recent\) INTERNALDATE "[^"]+" RFC822.SIZE \d+\)/);
    t.match(await c.command('f18', 'FETCH 1 FULL'), /ENVELOPE \(.*BODY \("TEXT"/);
    t.match(await c.command('f19', 'FETCH 1 BODY[5]'), /BODY\[5\] \{0\}\r\n/, 'a missing part is empty');
    t.match(await c.command('f20', 'FETCH 1 BINARY.SIZE[1]'), /\* 1 FETCH \(BINARY\.SIZE\[1\] 32\)/, 'BINARY (RFC 3516) is offered: the decoded size of part 1');
  });

  await t.test('STORE, SEARCH, EXPUNGE, CLOSE and UNSELECT', async (t) => {
    const c = await session(f, bob.address);
    await c.command('s0', 'SELECT INBOX');
    const s1 = await c.command('s1', 'STORE 1 +FLAGS (\\Flagged $Work)');
    t.match(s1, /\* FLAGS \(\\Seen \\Answered \\Flagged \\Deleted \\Draft \$Work\)\r\n\* OK \[PERMANENTFLAGS [^\n]*\n\* 1 FETCH \(FLAGS \(\\Seen \\Flagged \$Work\)\)/, 'a new keyword is announced with FLAGS first');
    t.match(await c.command('s2', 'STORE 1 -FLAGS.SILENT ($Work)'), /^s2 OK/m);
    t.match(await c.command('s3', 'UID STORE 2 FLAGS (\\Deleted)'), /\* 2 FETCH \(FLAGS \(\\Deleted\) UID 2\)/);
    t.match(await c.command('s4', 'STORE 1 +FLAGS (\\Recent)'), /^s4 BAD/m, '\\Recent cannot be stored');
    t.match(await c.command('s5', 'SEARCH FLAGGED'), /\* SEARCH 1\r\n/);
    t.match(await c.command('s6', 'SEARCH OR DELETED (FLAGGED NOT SEEN)'), /\* SEARCH 2\r\n/);
    t.match(await c.command('s7', 'SEARCH NOT (OR 1 2) SINCE 1-Mar-2026 BEFORE 2-Mar-2026'), /\* SEARCH 3 4\r\n/);
    t.match(await c.command('s8', 'UID SEARCH 2:* UNDELETED'), /\* SEARCH 3 4\r\n/);
    t.match(await c.command('s9', 'SEARCH TEXT "raw WORLD" KEYWORD $Work'), /\* SEARCH\r\n/);
    t.match(await c.command('s10', 'SEARCH BODY "second line" SUBJECT "Raw 4"'), /\* SEARCH 4\r\n/);
    t.match(await c.command('s11', 'SEARCH ON 1-Mar-2026 LARGER 10 SMALLER 100000 HEADER Message-ID remote.test'), /\* SEARCH 1 2 3 4\r\n/);
    t.match(await c.command('s12', 'SEARCH SENTSINCE 1-May-2026 SENTON 1-May-2026 NEW'), /\* SEARCH\r\n/);
    t.match(await c.command('s13', 'SEARCH (OLD) (UNANSWERED) UNDRAFT UNKEYWORD $x ALL'), /\* SEARCH 1 2 3 4\r\n/);
    // UID EXPUNGE removes only the \Deleted messages it names.
    await c.command('s14', 'STORE 3 +FLAGS.SILENT (\\Deleted)');
    t.match(await c.command('s15', 'UID EXPUNGE 3'), /\* 3 EXPUNGE\r\ns15 OK/);
    t.match(await c.command('s16', 'EXPUNGE'), /\* 2 EXPUNGE\r\ns16 OK/);
    t.match(await c.command('s17', 'FETCH 1:* UID'), /\* 1 FETCH \(UID 1\)\r\n\* 2 FETCH \(UID 4\)\r\n/);
    await c.command('s18', 'STORE 2 +FLAGS (\\Deleted)');
    t.match(await c.command('s19', 'UNSELECT'), /^s19 OK/m);
    t.match(await c.command('s20', 'EXAMINE INBOX'), /\* 2 EXISTS[^]*s20 OK \[READ-ONLY\]/, 'UNSELECT did not expunge');
    t.match(await c.command('s21', 'STORE 1 +FLAGS (\\Seen)'), /^s21 NO/m, 'EXAMINE is read-only');
    t.match(await c.command('s22', 'EXPUNGE'), /^s22 NO/m);
    t.match(await c.command('s23', 'CLOSE'), /^s23 OK/m);
    t.match(await c.command('s24', 'SELECT INBOX'), /\* 2 EXISTS/, 'CLOSE after EXAMINE does not expunge');
    t.match(await c.command('s25', 'CLOSE'), /^s25 OK/m);
    t.notMatch(await c.command('s26', 'SELECT INBOX'), /EXPUNGE/, 'CLOSE expunges silently');
    t.match(await c.command('s27', 'STATUS INBOX (MESSAGES)'), /MESSAGES 1\)/);
    t.match(await c.command('s28', 'FETCH 1 UID'), /^s28 OK/m);
    t.match(await c.command('s29', 'CHECK'), /^s29 OK/m);
  });

  await t.test('CONDSTORE: SELECT (CONDSTORE), UNCHANGEDSINCE → MODIFIED, CHANGEDSINCE, SEARCH MODSEQ', async (t) => {
    const id = await f.account('cond');
    for (let i = 0; i < 3; i++) await f.store.deliver(message(), [{ mailboxId: id.id }]);
    const c = await session(f, id.address);
    const sel = await c.command('c1', 'SELECT INBOX (CONDSTORE)');
    const highest = Number(/HIGHESTMODSEQ (\d+)/.exec(sel)![1]);
    const st = await c.command('c2', `STORE 1:2 (UNCHANGEDSINCE ${highest}) +FLAGS (\\Seen)`);
    t.match(st, /\* 1 FETCH \(FLAGS \(\\Seen \\Recent\) MODSEQ \(\d+\)\)/);
    const after = Number(/\* 2 FETCH \(FLAGS \(\\Seen \\Recent\) MODSEQ \((\d+)\)\)/.exec(st)![1]);
    t.ok(after > highest);
    t.match(await c.command('c3', `STORE 1:3 (UNCHANGEDSINCE ${highest}) +FLAGS (\\Flagged)`), /^c3 OK \[MODIFIED 1:2\]/m, 'changed since: refused');
    t.match(await c.command('c4', `FETCH 1:* (FLAGS) (CHANGEDSINCE ${highest})`), /\* 1 FETCH \(FLAGS \(\\Seen \\Recent\) MODSEQ \(\d+\)\)\r\n\* 2 FETCH [^\n]*\n\* 3 FETCH \(FLAGS \(\\Flagged \\Recent\) MODSEQ/);
    t.match(await c.command('c5', `UID SEARCH MODSEQ ${after}`), /\* SEARCH 1 2 3 \(MODSEQ \d+\)/);
    t.match(await c.command('c6', 'STATUS INBOX (HIGHESTMODSEQ)'), /HIGHESTMODSEQ \d+/);
  });

  await t.test('mailboxes: LIST forms, INBOX rename, CREATE/DELETE rules, NAMESPACE, quotas, ID, ENABLE', async (t) => {
    const c = await session(f, alice.address);
    t.match(await c.command('m1', 'LIST "" ""'), /\* LIST \(\\Noselect\) "\/" ""/);
    const top = await c.command('m2', 'LIST "" %');
    t.match(top, /\* LIST \(\\HasNoChildren\) "\/" "INBOX"/);
    t.match(top, /\* LIST \(\\HasNoChildren \\Sent\) "\/" "Sent"/);
    t.match(await c.command('m3', 'CREATE "a/b/"'), /^m3 OK/m);
    t.match(await c.command('m4', 'LIST a/ %'), /\* LIST \(\\HasNoChildren\) "\/" "a\/b"/);
    t.match(await c.command('m5', 'LIST (SPECIAL-USE) "" *'), /Sent[^]*Trash/);
    t.notMatch(await c.command('m6', 'LIST (SPECIAL-USE) "" *'), /INBOX/);
    t.match(await c.command('m7', 'CREATE a/b'), /^m7 NO \[ALREADYEXISTS\]/m);
    t.match(await c.command('m8', 'DELETE INBOX'), /^m8 NO/m);
    t.match(await c.command('m9', 'DELETE nothing'), /^m9 NO \[NONEXISTENT\]/m);
    t.match(await c.command('m10', 'CREATE Shared/x'), /^m10 NO \[NOPERM\]/m);
    t.match(await c.command('m11', 'UNSUBSCRIBE Sent'), /^m11 OK/m);
    t.notMatch(await c.command('m12', 'LSUB "" *'), /"Sent"/);
    t.match(await c.command('m13', 'LIST "" * RETURN (SUBSCRIBED)'), /\* LIST \(\\HasNoChildren \\Drafts \\Subscribed\) "\/" "Drafts"/);
    // INBOX rename (RFC 3501 §6.3.5): messages move, INBOX stays and is empty.
    await f.store.deliver(message({ subject: 'to be moved' }), [{ mailboxId: alice.id }]);
    t.match(await c.command('m14', 'RENAME INBOX "Old Inbox"'), /^m14 OK/m);
    t.match(await c.command('m15', 'STATUS INBOX (MESSAGES)'), /MESSAGES 0/);
    t.match(await c.command('m16', 'STATUS "Old Inbox" (MESSAGES UIDNEXT)'), /MESSAGES 1 UIDNEXT 2/);
    t.match(await c.command('m17', 'RENAME nothing x'), /^m17 NO \[NONEXISTENT\]/m);
    t.match(await c.command('m18', 'NAMESPACE'), /\* NAMESPACE \(\("" "\/"\)\) NIL \(\("Shared\/" "\/"\)\)/);
    t.match(await c.command('m19', 'GETQUOTAROOT INBOX'), /\* QUOTAROOT "INBOX"\r\n/, 'unlimited: no quota root');
    t.match(await c.command('m20', 'SETQUOTA "" (STORAGE 1)'), /^m20 NO/m);
    t.match(await c.command('m21', 'ID ("name" "raw")'), /\* ID \("name" "mail-appliance" "version" "[^"]+"\)/);
    t.match(await c.command('m22', 'ENABLE CONDSTORE X-UNKNOWN'), /\* ENABLED CONDSTORE\r\n/);
    t.match(await c.command('m23', 'APPEND nowhere {1+}\r\nx'), /^m23 NO \[TRYCREATE\]/m);
    t.match(await c.command('m24', 'SELECT nowhere'), /^m24 NO/m);
    t.match(await c.command('m25', 'FETCH 1 UID'), /^m25 BAD/m, 'a failed SELECT leaves no mailbox selected');
    t.match(await c.command('m26', 'COPY 1 x'), /^m26 BAD/m);
  });

  await t.test('shared mailboxes appear under the shared namespace with their access', async (t) => {
    const carol = await f.account('carol');
    const dave = await f.account('dave');
    await f.store.deliver(message({ subject: 'for the team' }), [{ mailboxId: carol.id }]);
    await f.store.setShare(carol.id, dave.id, 'read');
    const c = await session(f, dave.address);
    const list = await c.command('h1', 'LIST "" *');
    t.match(list, /\* LIST \(\\Noselect \\HasChildren\) "\/" "Shared"/);
    t.match(list, /\* LIST \(\\HasNoChildren\) "\/" "Shared\/carol@example.com\/INBOX"/);
    t.match(await c.command('h2', 'SELECT "Shared/carol@example.com/INBOX"'), /\* 1 EXISTS[^]*h2 OK \[READ-ONLY\]/);
    t.match(await c.command('h3', 'FETCH 1 BODY.PEEK[HEADER.FIELDS (SUBJECT)]'), /Subject: for the team/);
    t.match(await c.command('h4', 'STORE 1 +FLAGS (\\Seen)'), /^h4 NO/m);
    t.match(await c.command('h5', 'APPEND "Shared/carol@example.com/INBOX" {1+}\r\nx'), /^h5 NO \[NOPERM\]/m);
    t.match(await c.command('h6', 'COPY 1 INBOX'), /^h6 OK \[COPYUID/m, 'copy out of a shared mailbox');
    t.match(await c.command('h7', 'DELETE "Shared/carol@example.com/INBOX"'), /^h7 NO \[NOPERM\]/m);
    t.match(await c.command('h8', 'SELECT "Shared/nobody@example.com/INBOX"'), /^h8 NO/m);
    await f.store.setShare(carol.id, dave.id, 'read-write');
    t.match(await c.command('h9', 'SELECT "Shared/carol@example.com/INBOX"'), /h9 OK \[READ-WRITE\]/);
    t.match(await c.command('h10', 'STORE 1 +FLAGS (\\Flagged)'), /FLAGS \(\\Flagged \\Recent\)/);
  });

  await t.test('APPEND: flags, date, quota', async (t) => {
    const q = await f.account('quota', { quotaBytes: 2000 });
    const c = await session(f, q.address);
    const small = message({ subject: 'small' });
    t.match(await c.command('q1', `APPEND INBOX (\\Flagged) "05-Jan-2026 08:00:00 +0100" {${small.length}+}\r\n${small}`), /^q1 OK \[APPENDUID \d+ 1\]/m);
    await c.command('q2', 'SELECT INBOX');
    t.match(await c.command('q3', 'FETCH 1 (FLAGS INTERNALDATE)'), /FLAGS \(\\Flagged \\Recent\) INTERNALDATE "05-Jan-2026 08:00:00 \+0100"/, 'the date-time as given, zone kept');
    const big = message({ body: 'x'.repeat(3000) });
    t.match(await c.command('q4', `APPEND INBOX {${big.length}+}\r\n${big}`), /^q4 NO \[OVERQUOTA\]/m);
    t.match(await c.command('q5', 'GETQUOTAROOT INBOX'), /\* QUOTAROOT "INBOX" ""\r\n\* QUOTA "" \(STORAGE 1 1\)/);
    t.match(await c.command('q6', 'GETQUOTA ""'), /\* QUOTA "" \(STORAGE/);
    await c.command('q6b', 'STORE 1 +FLAGS.SILENT (\\Deleted)');
    t.match(await c.command('q6c', 'STATUS INBOX (DELETED DELETED-STORAGE MESSAGES)'), /\(DELETED 1 DELETED-STORAGE 1 MESSAGES 1\)/, 'RFC 9208 STATUS items');
    t.match(await c.command('q7', 'APPEND INBOX "31-Feb-2026" {1+}\r\nx'), /^q7 BAD/m);
  });
});
