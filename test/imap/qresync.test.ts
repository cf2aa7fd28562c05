// Issue 35 §2: QRESYNC (RFC 7162 §3.2) over raw sockets with the RFC's command forms, and with imapflow@2.1.2
// (`qresync: true`), whose `expunge` events must carry `vanished`.
import t from 'tap';
import { ImapFlow } from 'imapflow';
import { message, session, setupImap, PASSWORD } from './setup.js';

const num = (text: string, re: RegExp): number => Number(re.exec(text)?.[1] ?? NaN);

t.test('QRESYNC', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('qr');
  for (let i = 1; i <= 8; i++) await f.store.deliver(message({ subject: `m${i}` }), [{ mailboxId: user.id }]);
  const a = await session(f, user.address);
  const b = await session(f, user.address);

  let uidValidity = 0;
  let base = 0;

  await t.test('ENABLE QRESYNC; the parameter before it is BAD', async (t) => {
    t.match(await a.command('c1', 'CAPABILITY'), /^\* CAPABILITY [^\r]* QRESYNC/m);
    t.match(await b.command('b0', 'SELECT INBOX (QRESYNC (1 1))'), /^b0 BAD /m, 'QRESYNC parameter without ENABLE QRESYNC (§3.2.5)');
    t.match(await a.command('e1', 'ENABLE QRESYNC'), /^\* ENABLED QRESYNC\r\ne1 OK/m);
    t.match(await b.command('e2', 'ENABLE CONDSTORE QRESYNC'), /^\* ENABLED CONDSTORE QRESYNC\r$/m);
    const sel = await a.command('s1', 'SELECT INBOX');
    uidValidity = num(sel, /\[UIDVALIDITY (\d+)\]/);
    base = num(sel, /\[HIGHESTMODSEQ (\d+)\]/);
    t.ok(uidValidity > 0 && base > 0);
    t.match(sel, /^\* OK \[MAILBOXID \(F[0-9a-f]{24}\)\]/m, 'MAILBOXID beside (RFC 8474)');
  });

  await t.test('EXPUNGE and UID EXPUNGE answer VANISHED and the new HIGHESTMODSEQ (§3.2.7, §3.2.10)', async (t) => {
    await a.command('x1', 'UID STORE 2,4 +FLAGS.SILENT (\\Deleted)');
    const ex = await a.command('x2', 'EXPUNGE');
    t.match(ex, /^\* VANISHED 2,4\r\nx2 OK \[HIGHESTMODSEQ (\d+)\]/m, 'one VANISHED, no EXPUNGE');
    t.notMatch(ex, /EXPUNGE\r/);
    const after = num(ex, /\[HIGHESTMODSEQ (\d+)\]/);
    t.ok(after > base, 'expunge bumps HIGHESTMODSEQ');
    await a.command('x3', 'UID STORE 6 +FLAGS.SILENT (\\Deleted)');
    t.match(await a.command('x4', 'UID EXPUNGE 6'), /^\* VANISHED 6\r\nx4 OK \[HIGHESTMODSEQ \d+\]/m);
    t.match(await a.command('x5', 'UID STORE 3 +FLAGS (\\Flagged)'), /^\* 2 FETCH \(FLAGS \(\\Flagged( \\Recent)?\) UID 3 MODSEQ \(\d+\)\)/m);
  });

  await t.test('SELECT (QRESYNC (uidvalidity modseq)): VANISHED (EARLIER), then the changed flags (§3.2.5)', async (t) => {
    const sel = await b.command('q1', `SELECT INBOX (QRESYNC (${uidValidity} ${base}))`);
    t.match(sel, /^\* 5 EXISTS\r$/m);
    t.match(sel, /^\* VANISHED \(EARLIER\) 2,4,6\r\n\* 2 FETCH \(FLAGS \(\\Flagged\) UID 3 MODSEQ \(\d+\)\)\r\nq1 OK \[READ-WRITE\]/m, 'before the tagged OK, VANISHED first');
    t.equal((sel.match(/ FETCH /g) ?? []).length, 1, 'only the changed message');
    // Known UIDs restrict both (RFC 7162: "only report flag changes and expunges for the specified messages").
    const known = await b.command('q2', `EXAMINE INBOX (QRESYNC (${uidValidity} ${base} 5:8))`);
    t.match(known, /^\* OK \[CLOSED\]/m, 'CLOSED ends the previous mailbox (§3.2.11)');
    t.match(known, /^\* VANISHED \(EARLIER\) 6\r$/m);
    t.notMatch(known, / FETCH /);
    const other = await b.command('q3', `SELECT INBOX (QRESYNC (${uidValidity + 1} ${base}))`);
    t.notMatch(other, /VANISHED|FETCH/, 'another UIDVALIDITY: an ordinary SELECT');
    t.match(other, /^q3 OK/m);
    const none = await b.command('q4', `SELECT INBOX (QRESYNC (${uidValidity} 999999))`);
    t.notMatch(none, /VANISHED|FETCH/, 'nothing since a MODSEQ from the future');
    t.match(await b.command('q5', `SELECT INBOX (QRESYNC (${uidValidity} ${base} 1:8 (1:3 1,3)))`), /^q5 BAD /m, 'match data of unequal length');
  });

  await t.test('UID FETCH … (CHANGEDSINCE m VANISHED) (§3.2.6)', async (t) => {
    const r = await a.command('v1', `UID FETCH 1:* (FLAGS) (CHANGEDSINCE ${base} VANISHED)`);
    t.match(r, /^\* VANISHED \(EARLIER\) 2,4,6\r\n\* 2 FETCH \(UID 3 FLAGS \(\\Flagged \\Recent\) MODSEQ \(\d+\)\)\r\nv1 OK/m);
    t.match(await a.command('v2', `UID FETCH 5:8 (FLAGS) (CHANGEDSINCE ${base} VANISHED)`), /^\* VANISHED \(EARLIER\) 6\r$/m, 'the UID set bounds it');
    t.match(await a.command('v3', `FETCH 1:* (FLAGS) (CHANGEDSINCE ${base} VANISHED)`), /^v3 BAD /m, 'UID FETCH only');
    t.match(await a.command('v4', 'UID FETCH 1:* (FLAGS) (VANISHED)'), /^v4 BAD /m, 'needs CHANGEDSINCE');
    const plain = await session(f, user.address);
    await plain.command('p1', 'SELECT INBOX');
    t.match(await plain.command('p2', `UID FETCH 1:* (FLAGS) (CHANGEDSINCE ${base} VANISHED)`), /^p2 BAD /m, 'needs ENABLE QRESYNC');
    plain.destroy();
  });

  await t.test("another session's expunge comes as VANISHED on NOOP; MOVE answers VANISHED", async (t) => {
    const plain = await session(f, user.address);
    await plain.command('p1', 'SELECT INBOX');
    await b.command('o0', 'SELECT INBOX');
    await b.command('o1', 'UID STORE 7 +FLAGS.SILENT (\\Deleted)');
    t.match(await b.command('o2', 'UID EXPUNGE 7'), /^\* VANISHED 7\r$/m);
    const noop = await a.command('o3', 'NOOP');
    t.match(noop, /^\* VANISHED 7\r\no3 OK/m, 'QRESYNC session: VANISHED');
    t.match(await plain.command('p2', 'NOOP'), /^\* 4 EXPUNGE\r$/m, 'a session without QRESYNC still gets EXPUNGE');
    const mv = await a.command('o4', 'UID MOVE 8 Archive');
    t.match(mv, /^\* OK \[COPYUID \d+ 8 1\][^\r]*\r\n\* VANISHED 8\r\no4 OK \[HIGHESTMODSEQ \d+\]/m);
    t.match(await b.command('o5', 'NOOP'), /^\* VANISHED 8\r$/m);
    plain.destroy();
  });

  await t.test('pruned tombstones: every UID gone is named, narrowed by the sequence match data (§3.2.5.2)', async (t) => {
    // INBOX now holds UIDs 1, 3, 5. Mark the folder's tombstones as pruned up to now.
    const folder = (await f.store.getFolder(user.id, 'INBOX'))!;
    await f.app.appliance.ctx.db('mail_folders').where({ id: folder.id }).update({ vanished_modseq: folder.highestModseq });
    const old = folder.highestModseq - 1;
    t.match(await b.command('r1', `SELECT INBOX (QRESYNC (${uidValidity} ${old}))`), /^\* VANISHED \(EARLIER\) 2,4,6:8\r$/m, 'all UIDs below UIDNEXT that no message has');
    // The client knows seq 1 = UID 1 and seq 2 = UID 3: nothing up to UID 3 is reported.
    t.match(await b.command('r2', `SELECT INBOX (QRESYNC (${uidValidity} ${old} 1:8 (1:2 1,3)))`), /^\* VANISHED \(EARLIER\) 4,6:8\r$/m);
    // seq 2 = UID 2 does not match: only what the first pair proves is left out.
    t.match(await b.command('r3', `SELECT INBOX (QRESYNC (${uidValidity} ${old} 1:8 (1:2 1,2)))`), /^\* VANISHED \(EARLIER\) 2,4,6:8\r$/m);
  });
  a.destroy();
  b.destroy();

  await t.test('imapflow with qresync: true resyncs with SELECT QRESYNC and reports VANISHED expunges', async (t) => {
    const sync = new ImapFlow({
      host: '127.0.0.1',
      port: f.imapPort,
      secure: false,
      tls: { rejectUnauthorized: false },
      auth: { user: user.address, pass: PASSWORD },
      logger: false,
      disableAutoIdle: true,
      qresync: true,
    });
    sync.on('error', () => {});
    await sync.connect();
    t.teardown(() => sync.close());
    t.ok(sync.enabled.has('QRESYNC'), 'QRESYNC enabled');
    const box = await sync.mailboxOpen('Archive');
    const since = box.highestModseq!;
    const validity = box.uidValidity;
    for (const s of ['n1', 'n2', 'n3']) await f.store.append(user.id, 'Archive', message({ subject: s }));
    await sync.mailboxClose();
    const other = await f.client(user.address);
    await other.mailboxOpen('Archive');
    await other.messageFlagsAdd({ uid: '2' }, ['\\Seen'], { uid: true });
    await other.messageDelete({ uid: '3' }, { uid: true });
    const events: Array<{ uid?: number; vanished?: boolean; earlier?: boolean }> = [];
    const flags: Array<{ uid?: number; flags?: Set<string> }> = [];
    sync.on('expunge', (e) => events.push(e));
    sync.on('flags', (e) => flags.push(e));
    // imapflow 2.1.2 takes these options (commands/select.js) though its types do not name them.
    const open = sync.mailboxOpen.bind(sync) as (path: string, o: object) => Promise<{ qresync?: boolean }>;
    const reopened = await open('Archive', { changedSince: since, uidValidity: validity });
    t.ok(reopened.qresync, 'the server took the QRESYNC parameter');
    t.same(
      events.map((e) => [e.uid, e.vanished, e.earlier]),
      [[3, true, true]],
      'VANISHED (EARLIER) 3',
    );
    t.ok(flags.some((e) => e.uid === 2 && e.flags?.has('\\Seen')), 'the flag change since');
    events.length = 0;
    await other.messageDelete({ uid: '4' }, { uid: true });
    await sync.noop();
    t.same(
      events.map((e) => [e.uid, e.vanished, e.earlier]),
      [[4, true, false]],
      "another session's expunge as VANISHED",
    );
    events.length = 0;
    const seen: number[] = [];
    for await (const m of sync.fetch('1:*', { flags: true }, { uid: true, changedSince: since })) seen.push(m.uid);
    t.same(seen, [2], 'only the message changed since');
    await other.logout();
  });
});
