// Issue 35 §2: OBJECTID (RFC 8474) and SAVEDATE (RFC 8514) over a raw socket, with the RFCs' command forms.
import t from 'tap';
import { message, session, setupImap } from './setup.js';

t.test('OBJECTID and SAVEDATE', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('oid');
  const clock = f.app.clock;
  // Delivered on 1 Mar 2026 (the test clock), with a Date header and an APPEND date long before.
  await f.store.deliver(message({ subject: 'one' }), [{ mailboxId: user.id }]);
  await f.store.deliver(message({ subject: 'two' }), [{ mailboxId: user.id }]);
  const c = await session(f, user.address);

  await t.test('MAILBOXID in SELECT and STATUS, kept across RENAME (RFC 8474 §4)', async (t) => {
    t.match(await c.command('o0', 'CAPABILITY'), /^\* CAPABILITY [^\r]* OBJECTID [^\r]*SAVEDATE/m);
    await c.command('o1', 'CREATE Projects');
    const st = await c.command('o2', 'STATUS Projects (MESSAGES MAILBOXID)');
    const id = /MAILBOXID \((F[0-9a-f]{24})\)/.exec(st)?.[1];
    t.ok(id, 'STATUS MAILBOXID');
    t.match(st, /^\* STATUS "Projects" \(MESSAGES 0 MAILBOXID \(F[0-9a-f]{24}\)\)\r$/m);
    t.match(await c.command('o3', 'RENAME Projects Work'), /^o3 OK/m);
    t.match(await c.command('o4', 'EXAMINE Work'), new RegExp(`^\\* OK \\[MAILBOXID \\(${id}\\)\\]`, 'm'), 'the same after RENAME');
    const inbox = /MAILBOXID \((F[0-9a-f]+)\)/.exec(await c.command('o5', 'STATUS INBOX (MAILBOXID)'))?.[1];
    t.not(inbox, id, 'each mailbox its own');
    await c.command('o6', 'DELETE Work');
    await c.command('o7', 'CREATE Work');
    t.notMatch(await c.command('o8', 'STATUS Work (MAILBOXID)'), new RegExp(id!), 'a mailbox created again gets a new one');
  });

  await t.test('EMAILID the same through COPY and MOVE; THREADID (threadid.test.ts); SEARCH EMAILID (RFC 8474 §5)', async (t) => {
    await c.command('e0', 'SELECT INBOX');
    const r = await c.command('e1', 'FETCH 1:2 (EMAILID THREADID)');
    const ids = [...r.matchAll(/EMAILID \((M[0-9a-f]{24})\) THREADID \(T[0-9a-f]{24}\)/g)].map((m) => m[1]!);
    t.equal(ids.length, 2);
    t.not(ids[0], ids[1]);
    t.match(await c.command('e2', 'UID COPY 1 Work'), /COPYUID/);
    t.match(await c.command('e3', 'UID MOVE 2 Work'), /COPYUID/);
    await c.command('e4', 'SELECT Work');
    const moved = await c.command('e5', 'UID FETCH 1:* (EMAILID)');
    t.match(moved, new RegExp(`UID 1 EMAILID \\(${ids[0]}\\)`), 'the copy keeps it');
    t.match(moved, new RegExp(`UID 2 EMAILID \\(${ids[1]}\\)`), 'the moved message keeps it');
    t.match(await c.command('e6', `UID SEARCH EMAILID ${ids[1]}`), /^\* SEARCH 2\r$/m);
    t.match(await c.command('e7', 'SEARCH THREADID T123'), /^\* SEARCH\r$/m, 'no such thread: nothing');
    t.match(await c.command('e8', 'SEARCH EMAILID bad!id'), /^e8 BAD/m);
  });

  await t.test('SAVEDATE: when saved into this mailbox; SAVEDBEFORE/ON/SINCE, SAVEDATESUPPORTED (RFC 8514)', async (t) => {
    // The copies in Work were saved at the clock's time; one more a day later.
    clock.advance(24 * 3600_000);
    await c.command('d0', 'SELECT INBOX');
    t.match(await c.command('d1', 'APPEND Work (\\Seen) "01-Jan-2020 08:00:00 +0000" {5+}\r\nHi!\r\n'), /^d1 OK \[APPENDUID \d+ 3\]/m);
    await c.command('d2', 'SELECT Work');
    const r = await c.command('d3', 'UID FETCH 1:* (SAVEDATE INTERNALDATE)');
    t.match(r, /UID 1 SAVEDATE "01-Mar-2026 10:00:00 \+0000"/, 'the COPY time');
    t.match(r, /UID 3 SAVEDATE "02-Mar-2026 10:00:00 \+0000" INTERNALDATE "01-Jan-2020 08:00:00 \+0000"/, 'APPEND: now, not the internal date');
    t.match(await c.command('d4', 'UID SEARCH SAVEDON 2-Mar-2026'), /^\* SEARCH 3\r$/m);
    t.match(await c.command('d5', 'UID SEARCH SAVEDBEFORE 2-Mar-2026'), /^\* SEARCH 1 2\r$/m);
    t.match(await c.command('d6', 'UID SEARCH SAVEDSINCE 1-Mar-2026 NOT SAVEDSINCE 2-Mar-2026'), /^\* SEARCH 1 2\r$/m);
    t.match(await c.command('d7', 'UID SEARCH SAVEDATESUPPORTED'), /^\* SEARCH 1 2 3\r$/m);
    t.match(await c.command('d8', 'UID SEARCH BEFORE 1-Mar-2026'), /^\* SEARCH 3\r$/m, 'the internal date stays the APPEND date');
  });
  c.destroy();
});
