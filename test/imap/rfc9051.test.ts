// Issue 35 §2: ESEARCH (RFC 4731), SEARCHRES (RFC 5182) and the IMAP4rev2 session mode (RFC 9051), with the RFCs'
// examples over a real socket (raw bytes), then Python's imaplib. One appliance for the file.
import t from 'tap';
import { execFile } from 'node:child_process';
import { message, PASSWORD, session, setupImap } from './setup.js';

/** How UTF-8 text reads in the raw client's latin1 view of the bytes. */
const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
const esc = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** The untagged lines of a response, without CRLF. */
const lines = (r: string, prefix: string) => r.split('\r\n').filter((l) => l.startsWith(prefix));

t.test('ESEARCH, SEARCHRES and IMAP4rev2', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('rev2');
  // Twelve messages; 2, 10 and 11 \Flagged (the RFC 4731 examples' answer "2,10:11").
  for (let i = 1; i <= 12; i++) await f.store.deliver(message({ subject: `m${i}` }), [{ mailboxId: user.id }]);
  const c = await session(f, user.address);
  t.match(await c.command('c0', 'CAPABILITY'), /^\* CAPABILITY IMAP4rev1 IMAP4rev2 .*ESEARCH SEARCHRES/m, 'IMAP4rev2 beside IMAP4rev1, ESEARCH and SEARCHRES');
  await c.command('c1', 'SELECT INBOX');
  t.match(await c.command('c2', 'STORE 2,10:11 +FLAGS.SILENT (\\Flagged)'), /^c2 OK/m);

  await t.test('ESEARCH (RFC 4731 §3.1 examples)', async (t) => {
    const crit = 'FLAGGED SINCE 1-Feb-1994 NOT FROM "Smith"';
    t.match(await c.command('A282', `SEARCH RETURN (MIN COUNT) ${crit}`), /^\* ESEARCH \(TAG "A282"\) MIN 2 COUNT 3\r\nA282 OK/m);
    t.match(await c.command('A283', `SEARCH RETURN () ${crit}`), /^\* ESEARCH \(TAG "A283"\) ALL 2,10:11\r\nA283 OK/m, 'RETURN () is RETURN (ALL); ALL is a compressed set');
    t.match(await c.command('A284', `SEARCH RETURN (MIN MAX) ${crit}`), /^\* ESEARCH \(TAG "A284"\) MIN 2 MAX 11\r\n/m);
    t.match(await c.command('A285', 'UID SEARCH RETURN (MIN MAX) 1:5000'), /^\* ESEARCH \(TAG "A285"\) UID MIN 1 MAX 12\r\n/m, 'UID SEARCH answers UIDs and says UID');
    t.match(await c.command('A286', 'SEARCH RETURN (COUNT ALL MIN MAX) CHARSET UTF-8 FLAGGED'), /^\* ESEARCH \(TAG "A286"\) MIN 2 MAX 11 ALL 2,10:11 COUNT 3\r\n/m, 'RETURN before CHARSET (RFC 4466)');
    const none = await c.command('A287', 'SEARCH RETURN (MIN MAX ALL COUNT) DELETED');
    t.match(none, /^\* ESEARCH \(TAG "A287"\) COUNT 0\r\nA287 OK/m, 'no match: no MIN, MAX or ALL; COUNT 0');
    t.match(await c.command('A288', 'UID SEARCH RETURN (ALL) DELETED'), /^\* ESEARCH \(TAG "A288"\) UID\r\nA288 OK/m, 'no match, nothing asked that can be said: the ESEARCH still comes');
    t.notMatch(await c.command('A289', 'SEARCH RETURN (ALL) FLAGGED'), /^\* SEARCH/m, 'no SEARCH response beside it');
    t.match(await c.command('A290', 'SEARCH FLAGGED'), /^\* SEARCH 2 10 11\r\n/m, 'without RETURN an IMAP4rev1 session still gets SEARCH');
    t.match(await c.command('A291', 'SEARCH RETURN (BOGUS) ALL'), /^A291 BAD/m, 'an unknown return option is BAD');
    t.match(await c.command('A292', 'SEARCH RETURN ALL'), /^A292 BAD/m, 'RETURN needs its list');
  });

  await t.test('ESEARCH with CONDSTORE MODSEQ (RFC 4731 §3.2, RFC 7162 §3.1.5)', async (t) => {
    await c.command('d0', 'STORE 3 +FLAGS.SILENT (\\Seen)');
    await c.command('d1', 'STORE 5 +FLAGS.SILENT (\\Seen)');
    const modseqs = new Map<number, number>();
    for (const l of lines(await c.command('d2', 'FETCH 1:* (MODSEQ)'), '* ')) {
      const m = /^\* (\d+) FETCH \(MODSEQ \((\d+)\)\)/.exec(l);
      if (m) modseqs.set(Number(m[1]), Number(m[2]));
    }
    const base = Math.min(...modseqs.values());
    // Messages changed since `base`: 2, 10, 11 (flagged) and 3, 5 (seen), 5 the latest.
    const since = Math.min(modseqs.get(2)!, modseqs.get(10)!, modseqs.get(11)!);
    t.ok(since > base);
    const m = (n: number) => modseqs.get(n)!;
    const hi = Math.max(m(2), m(3), m(5), m(10), m(11));
    t.match(await c.command('d3', `SEARCH RETURN (ALL) MODSEQ ${since}`), new RegExp(`^\\* ESEARCH \\(TAG "d3"\\) ALL 2:3,5,10:11 MODSEQ ${hi}\\r\\n`, 'm'), 'ALL: the highest MODSEQ of all matches');
    t.match(await c.command('d4', `SEARCH RETURN (MIN) MODSEQ ${since}`), new RegExp(`^\\* ESEARCH \\(TAG "d4"\\) MIN 2 MODSEQ ${m(2)}\\r\\n`, 'm'), 'MIN alone: the MIN message\'s MODSEQ');
    t.match(await c.command('d5', `SEARCH RETURN (MAX) MODSEQ ${since}`), new RegExp(`^\\* ESEARCH \\(TAG "d5"\\) MAX 11 MODSEQ ${m(11)}\\r\\n`, 'm'), 'MAX alone: the MAX message\'s');
    t.match(await c.command('d6', `SEARCH RETURN (MIN MAX) MODSEQ ${since}`), new RegExp(`^\\* ESEARCH \\(TAG "d6"\\) MIN 2 MAX 11 MODSEQ ${Math.max(m(2), m(11))}\\r\\n`, 'm'), 'MIN and MAX: the higher of the two');
    t.match(await c.command('d7', `UID SEARCH RETURN (COUNT) MODSEQ ${since}`), new RegExp(`^\\* ESEARCH \\(TAG "d7"\\) UID COUNT 5 MODSEQ ${hi}\\r\\n`, 'm'), 'COUNT: the highest');
    t.match(await c.command('d8', `SEARCH RETURN (COUNT) MODSEQ ${hi + 100}`), /^\* ESEARCH \(TAG "d8"\) COUNT 0\r\nd8 OK/m, 'no match: no MODSEQ');
  });

  await t.test('SEARCHRES (RFC 5182 §3 examples)', async (t) => {
    const uids = (r: string) => lines(r, '* ').map((l) => /^\* (\d+) FETCH \(UID (\d+)/.exec(l)).filter(Boolean).map((m) => `${m![1]}:${m![2]}`);
    await c.command('e0', 'SELECT INBOX');
    t.same(uids(await c.command('e1', 'FETCH $ (UID)')), [], '$ before any SAVE is an empty set: OK, nothing fetched (Example 5)');
    t.match(await c.command('e1b', 'UID FETCH $ (UID)'), /^e1b OK/m);
    const saved = await c.command('A282', 'SEARCH RETURN (SAVE) FLAGGED SINCE 1-Feb-1994 NOT FROM "Smith"');
    t.notMatch(saved, /ESEARCH|\* SEARCH/, 'SAVE alone: no ESEARCH response (§2.2)');
    t.same(uids(await c.command('A283', 'FETCH $ (UID FLAGS)')), ['2:2', '10:10', '11:11'], 'Example 1: FETCH $');
    // Example 2: pipelined SEARCH (SAVE), UID STORE $ and UID FETCH $, in one write, run in order (§2.1).
    c.send('A301 UID SEARCH RETURN (SAVE) UID 3:4\r\nA302 UID STORE $ +FLAGS (\\Answered)\r\nA303 UID FETCH $ (FLAGS)\r\n');
    const piped = await c.waitFor(/^A303 (OK|NO|BAD)[^\r]*\r\n/m);
    t.match(piped, /A301 OK[^]*\* 3 FETCH \(FLAGS \(\\Seen \\Answered\) UID 3[^)]*\)\)\r\n\* 4 FETCH \(FLAGS \(\\Answered\) UID 4[^)]*\)\)\r\nA302 OK/, 'the STORE saw the result the SEARCH before it saved');
    t.equal(lines(piped, '* ').filter((l) => / FETCH /.test(l)).length, 4, 'two STORE echoes, two FETCHes: only 3 and 4');
    t.match(await c.command('A304', 'SEARCH RETURN (SAVE MIN) FLAGGED'), /^\* ESEARCH \(TAG "A304"\) MIN 2\r\n/m, 'SAVE with MIN answers MIN');
    t.same(uids(await c.command('A305', 'FETCH $ (UID)')), ['2:2'], 'SAVE with MIN alone keeps the MIN message only');
    await c.command('A306', 'SEARCH RETURN (SAVE MIN MAX) FLAGGED');
    t.same(uids(await c.command('A307', 'FETCH $ (UID)')), ['2:2', '11:11'], 'MIN and MAX: both');
    t.match(await c.command('A308', 'SEARCH RETURN (SAVE MIN COUNT) FLAGGED'), /^\* ESEARCH \(TAG "A308"\) MIN 2 COUNT 3\r\n/m);
    t.same(uids(await c.command('A309', 'FETCH $ (UID)')), ['2:2', '10:10', '11:11'], 'with COUNT (or ALL) every match');
    t.match(await c.command('A310', 'SEARCH $ NOT 10'), /^\* SEARCH 2 11\r\n/m, '$ as a search key');
    t.match(await c.command('A311', 'UID SEARCH RETURN (ALL) UID $'), /^\* ESEARCH \(TAG "A311"\) UID ALL 2,10:11\r\n/m, 'UID $');
    await c.command('A312', 'SEARCH RETURN (SAVE) $ NOT 10');
    t.same(uids(await c.command('A313', 'FETCH $ (UID)')), ['2:2', '11:11'], 'a SAVE over $ narrows the previous result');
    t.match(await c.command('A314', 'SEARCH RETURN (SAVE) BOGUS'), /^A314 BAD/m);
    t.same(uids(await c.command('A315', 'FETCH $ (UID)')), ['2:2', '11:11'], 'a BAD SEARCH (SAVE) leaves $ as it was');
    t.match(await c.command('A316', 'SEARCH RETURN (SAVE) CHARSET KOI8-R ALL'), /^A316 NO \[BADCHARSET/m);
    t.same(uids(await c.command('A317', 'FETCH $ (UID)')), [], 'a SEARCH (SAVE) answered NO empties $');
    t.match(await c.command('A318', 'FETCH 1,$ (UID)'), /^A318 BAD/m, '$ stands alone');
    // COPY $, MOVE $, UID EXPUNGE $.
    await c.command('A320', 'SEARCH RETURN (SAVE) 1:2');
    t.match(await c.command('A321', 'COPY $ Trash'), /^A321 OK \[COPYUID \d+ 1:2 1:2\]/m, 'COPY $');
    await c.command('A322', 'UID SEARCH RETURN (SAVE) UID 12');
    t.match(await c.command('A323', 'MOVE $ Trash'), /\* OK \[COPYUID \d+ 12 3\][^]*\* 12 EXPUNGE\r\nA323 OK/, 'MOVE $');
    t.same(uids(await c.command('A324', 'FETCH $ (UID)')), [], 'the moved message left $');
    // An expunged message leaves $, the others keep their identity under their new numbers (§2.1).
    await c.command('A330', 'SEARCH RETURN (SAVE) FLAGGED');
    await c.command('A331', 'STORE 10 +FLAGS.SILENT (\\Deleted)');
    t.match(await c.command('A332', 'EXPUNGE'), /^\* 10 EXPUNGE\r\n/m);
    t.same(uids(await c.command('A333', 'FETCH $ (UID)')), ['2:2', '10:11'], 'UID 11 is now message 10; UID 10 is gone');
    // Expunged by another session: gone from $ once its EXPUNGE is sent here.
    const other = await session(f, user.address);
    await other.command('o1', 'SELECT INBOX');
    await other.command('o2', 'UID STORE 2 +FLAGS.SILENT (\\Deleted)');
    await other.command('o3', 'UID EXPUNGE 2');
    other.destroy();
    t.match(await c.command('A334', 'NOOP'), /^\* 2 EXPUNGE\r\n/m);
    t.same(uids(await c.command('A335', 'FETCH $ (UID)')), ['9:11'], 'only UID 11, now message 9');
    t.match(await c.command('A336', 'UID EXPUNGE $'), /^A336 OK/m, 'UID EXPUNGE $ (no \\Deleted among them: nothing removed)');
    await c.command('A337', 'SEARCH RETURN (SAVE) ALL');
    await c.command('A338', 'EXAMINE INBOX');
    t.same(uids(await c.command('A339', 'FETCH $ (UID)')), [], 'SELECT/EXAMINE resets $');
  });

  await t.test('IMAP4rev2 session (RFC 9051 Appendix E)', async (t) => {
    // A new message, then the rev2 session: it claims no \Recent, so an IMAP4rev1 session still sees it recent.
    await f.store.deliver(message({ subject: 'fresh' }), [{ mailboxId: user.id }]);
    const r = await session(f, user.address);
    t.match(await r.command('r0', 'ENABLE IMAP4rev2'), /^\* ENABLED IMAP4rev2\r\nr0 OK/m);
    await r.command('r1', 'CREATE Parent/child');
    await r.command('r2', 'DELETE Parent');
    t.match(await r.command('r3', 'CREATE "Bücher/Café"'), /^r3 OK/m, 'a UTF-8 name as sent (RFC 9051 §5.1)');
    t.match(await r.command('r4', 'CREATE "R&D"'), /^r4 OK/m, '& is an ampersand, not a modified UTF-7 shift');
    const list = await r.command('r5', 'LIST "" "*"');
    t.match(list, new RegExp(`^\\* LIST \\(\\\\HasChildren\\) "/" "${esc(wire('Bücher'))}"\r$`, 'm'), 'UTF-8 names in LIST, quoted');
    t.match(list, new RegExp(`^\\* LIST \\(\\\\HasNoChildren\\) "/" "${esc(wire('Bücher/Café'))}"\r$`, 'm'));
    t.match(list, /^\* LIST \(\\HasNoChildren\) "\/" "R&D"\r$/m);
    // RFC 5258 §3 (LIST-EXTENDED, which RFC 9051 takes in): \NonExistent implies \Noselect and stands alone.
    t.match(list, /^\* LIST \(\\NonExistent \\HasChildren\) "\/" "Parent"\r$/m, '\\NonExistent for a name that is no mailbox');
    t.match(await r.command('r6', 'LIST "" "B%"'), `"${wire('Bücher')}"`, 'UTF-8 patterns');
    // The same names for an IMAP4rev1 session: modified UTF-7.
    const rev1list = await c.command('r7', 'LIST "" "*"');
    t.match(rev1list, /"B&APw-cher\/Caf&AOk-"/);
    t.match(rev1list, /"R&-D"/);
    t.notMatch(rev1list, /NonExistent/);
    const sel = await r.command('r8', 'SELECT INBOX');
    t.match(sel, /^\* LIST \(\\HasNoChildren\) "\/" "INBOX"\r$/m, 'SELECT says the mailbox\'s LIST (§6.3.2)');
    t.notMatch(sel, /RECENT|UNSEEN|\\Recent/, 'no RECENT response, no UNSEEN code');
    t.match(sel, /^\* 10 EXISTS\r$/m);
    const rev1 = await session(f, user.address);
    t.match(await rev1.command('r8b', 'SELECT INBOX'), /^\* 1 RECENT\r$/m, 'the rev2 session claimed no \\Recent: an IMAP4rev1 session gets it');
    rev1.destroy();
    t.match(await r.command('r9', 'SELECT "Bücher/Café"'), /^\* OK \[CLOSED\][^\r]*\r\n\* FLAGS/m, 'OK [CLOSED] parts the old mailbox from the new (§7.1)');
    t.match(await r.command('r10', 'EXAMINE "Bücher/Café"'), /^r10 OK \[READ-ONLY\]/m);
    await r.command('r11', 'SELECT INBOX');
    t.match(await r.command('r12', 'FETCH 10 (FLAGS)'), /^\* 10 FETCH \(FLAGS \(\)\)\r$/m, 'no \\Recent in FLAGS');
    t.match(await r.command('r13', 'SEARCH FLAGGED'), /^\* ESEARCH \(TAG "r13"\) ALL 9\r\nr13 OK/m, 'SEARCH answers ESEARCH ALL (§7.3.4)');
    t.match(await r.command('r14', 'UID SEARCH ALL'), /^\* ESEARCH \(TAG "r14"\) UID ALL 1,3:9,11,13\r\n/m);
    t.match(await r.command('r15', 'SEARCH DELETED'), /^\* ESEARCH \(TAG "r15"\)\r\nr15 OK/m);
    t.match(await r.command('r16', 'SEARCH NEW'), /^r16 BAD/m, 'RECENT, NEW and OLD are not IMAP4rev2 keys');
    t.match(await r.command('r17', 'SEARCH OR OLD ALL'), /^r17 BAD/m);
    t.match(await r.command('r18', 'STATUS INBOX (MESSAGES DELETED SIZE UNSEEN)'), /^\* STATUS "INBOX" \(MESSAGES 10 DELETED 0 SIZE \d+ UNSEEN \d+\)\r$/m, 'STATUS DELETED and SIZE');
    t.match(await r.command('r19', 'STATUS INBOX (RECENT)'), /^r19 BAD/m);
    t.match(await r.command('r20', 'STATUS "Bücher/Café" (MESSAGES)'), `* STATUS "${wire('Bücher/Café')}" (MESSAGES 0)\r\n`);
    // A change made elsewhere: the unsolicited FETCH carries the UID (Appendix E); new mail brings no RECENT.
    await c.command('r21', 'SELECT INBOX');
    await c.command('r22', 'UID STORE 1 +FLAGS.SILENT (\\Flagged)');
    await f.store.deliver(message({ subject: 'newer' }), [{ mailboxId: user.id }]);
    const poll = await r.command('r23', 'NOOP');
    t.match(poll, /^\* 1 FETCH \(FLAGS \(\\Flagged\) UID 1\)\r$/m);
    t.match(poll, /^\* 11 EXISTS\r$/m);
    t.notMatch(poll, /RECENT/);
    // After ENABLE in the selected state too (the messages it had as \Recent lose it).
    const late = await session(f, user.address);
    await late.command('l1', 'SELECT INBOX');
    t.match(await late.command('l2', 'SEARCH RETURN (COUNT) RECENT'), /COUNT 1\r/, 'claimed here as IMAP4rev1');
    t.match(await late.command('l3', 'FETCH 11 (FLAGS)'), /^\* 11 FETCH \(FLAGS \(\\Recent\)\)\r$/m);
    await late.command('l4', 'ENABLE IMAP4rev2');
    t.match(await late.command('l5', 'FETCH 11 (FLAGS)'), /^\* 11 FETCH \(FLAGS \(\)\)\r$/m, 'ENABLE while selected: \\Recent gone');
    late.destroy();
    r.destroy();
  });

  await t.test('imapflow enables IMAP4rev2 when offered and reads ESEARCH', async (t) => {
    const client = await f.client(user.address);
    t.ok(client.enabled.has('IMAP4REV2'), 'ENABLE IMAP4rev2 (beside CONDSTORE)');
    const lock = await client.getMailboxLock('INBOX');
    try {
      t.same(await client.search({ flagged: true }, { uid: true }), [1, 11], 'a plain UID SEARCH answered with ESEARCH');
      t.match(await client.search({ flagged: true }, { returnOptions: ['MIN', 'MAX', 'COUNT'] }), { min: 1, max: 9, count: 2 });
    } finally {
      lock.release();
    }
    t.ok((await client.list()).some((m) => m.path === 'Bücher/Café'), 'UTF-8 names');
    await client.logout();
  });

  await t.test("Python's imaplib: ESEARCH, SEARCHRES and ENABLE IMAP4rev2", async (t) => {
    const py = [
      'import imaplib, json, ssl, sys',
      'ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE',
      'm = imaplib.IMAP4(sys.argv[1], int(sys.argv[2])); m.starttls(ssl_context=ctx); m.login(sys.argv[3], sys.argv[4])',
      "m.select('INBOX')",
      'out = {}',
      "typ, data = m._simple_command('SEARCH', 'RETURN', '(MIN MAX COUNT)', 'FLAGGED')",
      "out['esearch'] = [typ, [d.decode() for d in m._untagged_response(typ, data, 'ESEARCH')[1]]]",
      "typ, data = m._simple_command('UID', 'SEARCH', 'RETURN', '(SAVE)', 'FLAGGED')",
      "out['save'] = typ",
      "typ, data = m.fetch('$', '(UID)')",
      "out['fetch_saved'] = [d.decode() for d in data]",
      "m.close()",
      "out['enable'] = m.enable('IMAP4rev2')[0]",
      "m.select('INBOX')",
      "typ, data = m._simple_command('SEARCH', 'ALL')",
      "out['rev2_search'] = [d.decode() for d in m._untagged_response(typ, data, 'ESEARCH')[1]]",
      "m.logout(); print(json.dumps(out))",
    ].join('\n');
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('python3', ['-c', py, '127.0.0.1', String(f.imapPort), user.address, PASSWORD], { timeout: 60_000 }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out))),
    );
    const r = JSON.parse(stdout) as Record<string, unknown>;
    t.match(r.esearch, ['OK', [/^\(TAG "\w+"\) MIN 1 MAX 9 COUNT 2$/]]);
    t.equal(r.save, 'OK');
    t.match(r.fetch_saved, [/^1 \(UID 1\)$/, /^9 \(UID 11\)$/]);
    t.equal(r.enable, 'OK');
    t.match(r.rev2_search, [/^\(TAG "\w+"\) ALL 1:11$/]);
  });
  c.destroy();
});
