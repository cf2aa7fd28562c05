// Regressions found by running real third-party clients (Debian's isync/mbsync 1.4, offlineimap, mutt,
// fetchmail, neomutt, alpine, getmail6, GNU mailutils) against the server: each test replays, over a real
// socket, the exact commands the client sent.
import t from 'tap';
import { session, setupImap } from './setup.js';

t.test('interop regressions of real clients', async (t) => {
  const f = await setupImap(t);
  const alice = await f.account('alice');

  await t.test('mbsync 1.4: CREATE with a raw UTF-8 name is refused, the modified UTF-7 spelling works', async (t) => {
    // mbsync 1.4 sends local folder names as they are (UTF-8), without UTF8=ACCEPT. The server used to
    // create the folder and then LIST it as "&ANw-n&AO8-code": on the next run mbsync saw its far folder
    // gone ("far side box Ünïcode cannot be opened and near side box Ünïcode is not empty") and pulled the
    // same folder down a second time under the UTF-7 name.
    const c = await session(f, alice.address);
    t.match(await c.command('26', 'CREATE "Ünïcode"'), /^26 BAD .*modified UTF-7/m, 'raw 8-bit name: refused');
    t.match(await c.command('27', 'CREATE "Draft\u0001s"'), /^27 BAD /m, 'control character: refused');
    t.match(await c.command('28', 'CREATE "&AGE-"'), /^28 BAD /m, 'printable ASCII in a shift: refused (it would list as "a")');
    t.match(await c.command('29', 'CREATE "a&b"'), /^29 BAD /m, 'unterminated shift: refused');
    const none = await c.command('30', 'LIST "" "*"');
    t.notMatch(none, /code/, 'nothing was created');

    t.match(await c.command('31', 'CREATE "&ANw-n&AO8-code"'), /^31 OK/m);
    t.match(await c.command('32', 'CREATE "T&AOs-st/&ZeVnLIqe-/&2D3eAA- x"'), /^32 OK/m, 'BMP, CJK and a surrogate pair');
    const list = await c.command('33', 'LIST "" "*"');
    t.match(list, /^\* LIST \([^)]*\) "\/" "&ANw-n&AO8-code"\r$/m, 'listed exactly as it was created');
    t.match(list, /^\* LIST \([^)]*\) "\/" "T&AOs-st\/&ZeVnLIqe-\/&2D3eAA- x"\r$/m);
    t.match(await c.command('34', 'SELECT "&ANw-n&AO8-code"'), /^34 OK/m);

    t.match(await c.command('35', 'RENAME "&ANw-n&AO8-code" "Übersicht"'), /^35 BAD .*modified UTF-7/m, 'RENAME to a raw 8-bit name: refused');
    t.match(await c.command('36', 'RENAME "&ANw-n&AO8-code" "&ANw-bersicht"'), /^36 OK/m);
    t.match(await c.command('37', 'LIST "" "&ANw-*"'), /^\* LIST \([^)]*\) "\/" "&ANw-bersicht"\r$/m);
    c.destroy();
  });

  await t.test('mbsync 1.4 with "Trash Trash": UID MOVE of a \\Deleted message of the Trash into the Trash', async (t) => {
    // mbsync flags a message \Deleted, then trashes it with UID MOVE: the copy in Trash keeps \Deleted (flags
    // are preserved), so when it syncs the Trash it trashes that message again, into the folder it is in.
    // The server used to answer "NO [CANNOT] Cannot move messages into their own folder" and mbsync failed
    // the whole run, on every run.
    const carol = await f.account('carol');
    await f.store.deliver(Buffer.from('From: a@remote.test\r\nSubject: doomed\r\n\r\nbody\r\n'), [{ mailboxId: carol.id }]);
    const c = await session(f, carol.address);
    t.match(await c.command('6', 'SELECT "INBOX"'), /^6 OK \[READ-WRITE\]/m);
    t.match(await c.command('8', 'UID STORE 1 +FLAGS.SILENT (\\Deleted)'), /^8 OK/m);
    t.match(await c.command('9', 'CHECK'), /^9 OK/m);
    const moved = await c.command('10', 'UID MOVE 1 "Trash"');
    t.match(moved, /^\* OK \[COPYUID (\d+) 1 1\] /m);
    t.match(moved, /^\* 1 EXPUNGE\r$/m);
    t.match(await c.command('11', 'UID EXPUNGE 1'), /^11 OK/m);

    const trash = await c.command('23', 'SELECT "Trash"');
    const validity = /UIDVALIDITY (\d+)/.exec(trash)![1];
    t.match(trash, /^\* 1 EXISTS\r$/m);
    t.match(await c.command('24', 'UID FETCH 1:1 (UID FLAGS)'), /^\* 1 FETCH \(UID 1 FLAGS \(\\Deleted \\Recent\)\)\r$/m, 'the copy kept \\Deleted');
    const again = await c.command('25', 'UID MOVE 1 "Trash"');
    t.match(again, /^25 OK Move completed/m);
    t.match(again, new RegExp(`^\\* OK \\[COPYUID ${validity} 1 2\\] `, 'm'), 'a new UID at the end of the same folder');
    t.match(again, /^\* 1 EXPUNGE\r$/m, 'the old UID is expunged');
    t.match(again, /^\* 1 EXISTS\r$/m, 'the new UID is announced');
    t.match(await c.command('26', 'UID FETCH 1:* (UID FLAGS)'), /^\* 1 FETCH \(UID 2 FLAGS \(\\Deleted \\Recent\)\)\r$/m);
    t.match(await c.command('27', 'CLOSE'), /^27 OK/m);
    const status = await c.command('28', 'STATUS "Trash" (MESSAGES UIDNEXT)');
    t.match(status, /^\* STATUS "Trash" \(MESSAGES 0 UIDNEXT 3\)\r$/m, 'CLOSE expunged it; UIDs are not reused');
    c.destroy();
  });

  await t.test('mbsync 1.4: another client expunges between SELECT and UID FETCH 1:N (UID FLAGS)', async (t) => {
    // mbsync lists a folder with UID FETCH 1:<UIDNEXT-1> (UID FLAGS) right after SELECT. When a phone expunged
    // a message in between, the server answered the listing with "NO [EXPUNGEISSUED]" and mbsync gave up the
    // folder ("IMAP command 'UID FETCH 1:33 (UID FLAGS)' returned an error"). UIDs that are gone are now
    // left out (RFC 3501 §6.4.8) and the EXPUNGE still waits for a command that may carry it (§7.4.1).
    const dan = await f.account('dan');
    for (let i = 1; i <= 3; i++) await f.store.deliver(Buffer.from(`From: a@remote.test\r\nSubject: m${i}\r\n\r\nbody ${i}\r\n`), [{ mailboxId: dan.id }]);
    const sync = await session(f, dan.address);
    const phone = await session(f, dan.address);
    t.match(await sync.command('3', 'SELECT "INBOX"'), /^\* 3 EXISTS\r$/m);
    await phone.command('p1', 'SELECT INBOX');
    await phone.command('p2', 'UID STORE 2 +FLAGS.SILENT (\\Deleted)');
    t.match(await phone.command('p3', 'UID EXPUNGE 2'), /^\* 2 EXPUNGE\r$/m);

    const listing = await sync.command('4', 'UID FETCH 1:3 (UID FLAGS)');
    t.match(listing, /^4 OK \[EXPUNGEISSUED\] /m, 'the listing succeeds');
    t.match(listing, /^\* 1 FETCH \(UID 1 FLAGS \(\\Recent\)\)\r\n\* 3 FETCH \(UID 3 FLAGS \(\\Recent\)\)\r\n4 OK/m, 'without the expunged UID; numbers unchanged');
    t.notMatch(listing, /EXPUNGE\r/, 'no EXPUNGE during the FETCH');
    const body = await sync.command('5', 'UID FETCH 2 (BODY.PEEK[])');
    t.match(body, /^5 OK \[EXPUNGEISSUED\] /m, 'a gone UID alone: OK with no data');
    t.notMatch(body, /FETCH \(/);
    t.match(await sync.command('6', 'UID FETCH 3 (BODY.PEEK[])'), /^\* 3 FETCH \(UID 3 BODY\[\] \{\d+\}\r\n/m);
    t.match(await sync.command('7', 'FETCH 1:3 (FLAGS)'), /^7 NO \[EXPUNGEISSUED\] /m, 'sequence numbers still name it: FETCH keeps its NO (RFC 2180 §4.1.2)');
    t.match(await sync.command('8', 'NOOP'), /^\* 2 EXPUNGE\r\n8 OK/m, 'announced at the next command that may');
    t.match(await sync.command('9', 'UID FETCH 1:3 (UID FLAGS)'), /^\* 2 FETCH \(UID 3 FLAGS \(\\Recent\)\)\r\n9 OK UID FETCH completed\r$/m);
    sync.destroy();
    phone.destroy();
  });
  await t.test('neomutt 20220429 browser with $imap_list_subscribed: LSUB "" "%" reaches a subscribed subfolder', async (t) => {
    // neomutt's folder browser in "Subscribed" mode lists one level at a time with LSUB "" "%" (then
    // LSUB "" "Lists/%" when the user enters a folder). With Lists/dev subscribed and Lists not, the server
    // answered only the top-level subscriptions, so Lists/dev could not be reached from the browser.
    // RFC 3501 §6.3.9: the "%" must return "Lists" with \Noselect (not subscribed).
    const erin = await f.account('erin');
    const owner = await f.account('frank');
    await f.store.setShare(owner.id, erin.id, 'read');
    const c = await session(f, erin.address);
    t.match(await c.command('a0010', 'CREATE "Lists/dev"'), /^a0010 OK/m);
    t.match(await c.command('a0011', 'SUBSCRIBE "Lists/dev"'), /^a0011 OK/m, 'CREATE subscribes nothing: the client does (RFC 3501 §6.3.6)');
    const star = await c.command('a0006', 'LSUB "" "*"');
    t.match(star, /^\* LSUB \(\) "\/" "Lists\/dev"\r$/m);
    t.notMatch(star, /"Lists"\r/, '"*" reaches Lists/dev itself: Lists is not returned');

    const top = await c.command('a0027', 'LSUB "" "%"');
    t.match(top, /^\* LSUB \(\\Noselect\) "\/" "Lists"\r$/m, 'the unsubscribed parent of a subscribed folder, as \\Noselect');
    t.match(top, /^\* LSUB \(\) "\/" "INBOX"\r$/m);
    t.notMatch(top, /Lists\/dev/, '"%" does not reach Lists/dev');
    t.match(top, /^\* LSUB \(\\Noselect\) "\/" "Shared"\r$/m, 'shared mailboxes (always subscribed) are reached the same way');
    t.match(await c.command('a0028', 'LSUB "" "Lists/%"'), /^\* LSUB \(\) "\/" "Lists\/dev"\r\na0028 OK/m);
    t.match(await c.command('a0029', `LSUB "" "Shared/%"`), new RegExp(`^\\* LSUB \\(\\\\Noselect\\) "/" "Shared/${owner.address.replace(/\./g, '\\.')}"\\r$`, 'm'));

    t.match(await c.command('a0030', 'SUBSCRIBE "Lists"'), /^a0030 OK/m);
    t.match(await c.command('a0031', 'LSUB "" "%"'), /^\* LSUB \(\) "\/" "Lists"\r$/m, 'subscribed itself: listed without \\Noselect');
    t.match(await c.command('a0032', 'UNSUBSCRIBE "Lists/dev"'), /^a0032 OK/m);
    t.match(await c.command('a0033', 'UNSUBSCRIBE "Lists"'), /^a0033 OK/m);
    t.notMatch(await c.command('a0034', 'LSUB "" "%"'), /"Lists"/, 'no subscribed descendant: not listed');
    c.destroy();
  });
  await t.test('neomutt, alpine, Thunderbird: BODY.PEEK[HEADER.FIELDS (…)] answers 8-bit header bytes unchanged', async (t) => {
    // Every index view fetches its headers with HEADER.FIELDS. The server decoded the header as UTF-8 and
    // encoded the chosen lines back, so a Latin-1 byte (old mailers, much spam) arrived as U+FFFD: neomutt
    // showed "Latin1 caf�" and its $assumed_charset could no longer read it, while BODY[HEADER] and
    // BODY[] still had the original byte and the literal sizes disagreed with them.
    const gil = await f.account('gil');
    const latin = Buffer.concat([
      Buffer.from('From: latin@remote.test\r\nTo: gil@interop.test\r\nSubject: Latin1 caf'),
      Buffer.from([0xe9]),
      Buffer.from('\r\nX-Folded: first\r\n\tsecond \xe0 line\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <latin1@remote.test>\r\n\r\nbody\r\n', 'latin1'),
    ]);
    await f.store.deliver(latin, [{ mailboxId: gil.id }]);
    const c = await session(f, gil.address);
    t.match(await c.command('a0007', 'SELECT "INBOX"'), /^\* 1 EXISTS\r$/m);
    const fields = '(DATE FROM SENDER SUBJECT TO CC MESSAGE-ID REFERENCES CONTENT-TYPE CONTENT-DESCRIPTION IN-REPLY-TO REPLY-TO LINES LIST-POST LIST-SUBSCRIBE LIST-UNSUBSCRIBE X-LABEL X-ORIGINAL-TO)';
    const neomutt = await c.command('a0008', `FETCH 1:1 (UID FLAGS INTERNALDATE RFC822.SIZE BODY.PEEK[HEADER.FIELDS ${fields}])`);
    const expected = Buffer.from(
      'From: latin@remote.test\r\nTo: gil@interop.test\r\nSubject: Latin1 caf\xe9\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <latin1@remote.test>\r\n\r\n',
      'latin1',
    );
    // The raw client reads one character per byte (latin1), so these compare bytes.
    t.ok(neomutt.includes(`{${expected.length}}\r\n${expected.toString('latin1')})`), 'the fields as they are in the source, with the Latin-1 byte and a matching literal size');
    t.notOk(neomutt.includes(Buffer.from('\ufffd').toString('latin1')), 'no replacement character');

    const tb = await c.command('8', 'UID fetch 1 (UID RFC822.SIZE FLAGS BODY.PEEK[HEADER.FIELDS (From To Cc Bcc Subject Date Message-ID Priority X-Priority References Newsgroups In-Reply-To Content-Type Reply-To)])');
    t.ok(tb.includes('Subject: Latin1 caf\xe9\r\n'), "Thunderbird's header fetch too");
    const not = await c.command('9', 'UID FETCH 1 (BODY.PEEK[HEADER.FIELDS.NOT (FROM TO SUBJECT DATE MESSAGE-ID)])');
    const folded = 'X-Folded: first\r\n\tsecond \xe0 line\r\n\r\n';
    t.ok(not.includes(`{${folded.length}}\r\n${folded}`), 'HEADER.FIELDS.NOT: a folded field with an 8-bit byte, unchanged');
    c.destroy();
  });

  await t.test('Alpine, GNU mailutils: ENVELOPE and SEARCH read 8-bit header text that is not UTF-8 as Windows-1252', async (t) => {
    // Alpine's index line and mailutils' `headers` showed "Latin1 caf\uFFFD" for a Subject (and a From display
    // name) written in raw Latin-1 by an old mailer, and SEARCH CHARSET UTF-8 SUBJECT "café" did not find it:
    // the header was decoded as UTF-8 once at delivery (the store's summary, read for ENVELOPE) and at every
    // parse of the source (SEARCH, and ENVELOPE fetched with a section or BODYSTRUCTURE). A field whose bytes
    // are not UTF-8 is now read as Windows-1252 (WHATWG: what browsers and mail clients assume for unlabeled
    // 8-bit text), field by field; ENVELOPE carries it as UTF-8 in a literal, as any non-ASCII header text.
    const ivy = await f.account('ivy');
    const latin = (id: string) =>
      Buffer.from(
        // \xe9 é, \x96 en dash, \x80 euro sign (Windows-1252, not ISO-8859-1); the To name is UTF-8 already.
        `From: Ren\xe9 Dupont <rene@remote.test>\r\nTo: J\xc3\xb6rg <ivy@example.com>\r\nSubject: Latin1 caf\xe9 \x96 5 \x80\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <${id}@remote.test>\r\n\r\nbody\r\n`,
        'latin1',
      );
    await f.store.deliver(latin('latin1-a'), [{ mailboxId: ivy.id }]);
    await f.store.deliver(latin('latin1-b'), [{ mailboxId: ivy.id }]);
    await f.store.deliver(Buffer.from('From: René Dupont <rene@remote.test>\r\nTo: ivy@example.com\r\nSubject: UTF-8 café\r\nMessage-ID: <utf8@remote.test>\r\n\r\nbody\r\n'), [{ mailboxId: ivy.id }]);
    await f.store.deliver(Buffer.from('From: rene@remote.test\r\nSubject: =?ISO-8859-1?Q?Encoded_caf=E9?=\r\nMessage-ID: <ew@remote.test>\r\n\r\nbody\r\n'), [{ mailboxId: ivy.id }]);
    // The raw client reads one character per byte: a UTF-8 literal as the server sends it.
    const lit = (s: string) => `{${Buffer.byteLength(s)}}\r\n${Buffer.from(s).toString('latin1')}`;
    const fffd = Buffer.from('\ufffd').toString('latin1');
    const envelope = `ENVELOPE ("Tue, 24 Nov 2026 10:00:00 +0000" ${lit('Latin1 café – 5 €')} ((${lit('René Dupont')} NIL "rene" "remote.test")) ((${lit('René Dupont')} NIL "rene" "remote.test")) ((${lit('René Dupont')} NIL "rene" "remote.test")) ((${lit('Jörg')} NIL "ivy" "example.com")) NIL NIL NIL "<`;
    const c = await session(f, ivy.address);
    t.match(await c.command('a1', 'SELECT INBOX'), /^\* 4 EXISTS\r$/m);

    // A header listing of ENVELOPE with state items only (mailutils' shape) is answered from the store's summary.
    const mailutils = await c.command('a2', 'FETCH 1 (UID FLAGS RFC822.SIZE INTERNALDATE ENVELOPE)');
    t.ok(mailutils.includes(envelope + 'latin1-a@remote.test>")'), 'the stored summary: Subject and From name as Windows-1252, To (UTF-8) unchanged');
    t.notOk(mailutils.includes(fffd), 'no replacement character');

    // ENVELOPE with a header section (c-client's index fetch, Alpine's library) is answered from a parse of the source.
    const alpine = await c.command('a3', 'UID FETCH 2 (UID ENVELOPE BODY.PEEK[HEADER.FIELDS (Newsgroups Content-MD5 Content-Disposition Content-Language Content-Location Followup-To References List-Post)] INTERNALDATE RFC822.SIZE FLAGS)');
    t.ok(alpine.includes(envelope + 'latin1-b@remote.test>")'), 'the same ENVELOPE from the source');
    t.notOk(alpine.includes(fffd), 'no replacement character');
    const subject = await c.command('a4', 'UID FETCH 2 (BODY.PEEK[HEADER.FIELDS (SUBJECT)])');
    const original = 'Subject: Latin1 caf\xe9 \x96 5 \x80\r\n\r\n';
    t.ok(subject.includes(`{${original.length}}\r\n${original})`), 'HEADER.FIELDS still answers the original bytes');

    t.match(await c.command('a5', 'SEARCH CHARSET UTF-8 SUBJECT "café"'), /^\* SEARCH 1 2 3 4\r$/m, 'Windows-1252, UTF-8 and an encoded word alike');
    t.match(await c.command('a6', 'SEARCH CHARSET UTF-8 SUBJECT {5+}\r\ncafé'), /^\* SEARCH 1 2 3 4\r$/m, 'as a literal');
    t.match(await c.command('a7', 'SEARCH CHARSET UTF-8 SUBJECT "– 5 €"'), /^\* SEARCH 1 2\r$/m, 'bytes 0x80–0x9F as Windows-1252 maps them');
    t.match(await c.command('a8', 'SEARCH CHARSET UTF-8 FROM "René"'), /^\* SEARCH 1 2 3\r$/m);

    const utf8 = await c.command('a9', 'FETCH 3:4 (ENVELOPE)');
    t.ok(utf8.includes(`ENVELOPE (NIL ${lit('UTF-8 café')} ((${lit('René Dupont')} NIL "rene" "remote.test"))`), 'a valid UTF-8 header is unchanged');
    t.ok(utf8.includes('ENVELOPE (NIL "=?ISO-8859-1?Q?Encoded_caf=E9?=" ((NIL NIL "rene" "remote.test"))'), 'an encoded word stays as it is in ENVELOPE');

    // A message stored before: its summary holds U+FFFD where the byte was; ENVELOPE is then built from the source.
    await f.store.deliver(latin('latin1-old'), [{ mailboxId: ivy.id }]);
    const db = f.app.appliance.ctx.db;
    const row = (await db('mail_messages').where('summary', 'like', '%latin1-old%').first('folder_id', 'uid', 'summary')) as { folder_id: number; uid: number; summary: string };
    await db('mail_messages').where({ folder_id: row.folder_id, uid: row.uid }).update({ summary: row.summary.replace(/é/g, '\ufffd') });
    t.match(await c.command('b1', 'NOOP'), /^\* 5 EXISTS\r$/m);
    const old = await c.command('b2', 'FETCH 5 (UID FLAGS ENVELOPE)');
    t.ok(old.includes(envelope + 'latin1-old@remote.test>")'), 'a lossy stored summary is not used');
    c.destroy();
  });
});
