// Issue 35 §1: RFC 3501 points an independent compliance tester found, each shown over a real socket.
import t from 'tap';
import { message, session, setupImap } from './setup.js';

t.test('RFC 3501 corners', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('rfc');
  const c = await session(f, user.address);

  await t.test('"[" is an ATOM-CHAR (§9): a mailbox named with every atom special', async (t) => {
    // The tester's atom holds every ATOM-CHAR special: a syntax error was BAD; no such mailbox is NO.
    t.match(await c.command('a1', "SELECT !#$&'+,-.0123456789:;<=>?@^_`|[}"), /^a1 NO \[NONEXISTENT\]/m, 'SELECT: parsed, no such mailbox');
    t.match(await c.command('a2', 'CREATE a[b]c'), /^a2 OK/m, 'CREATE with "[" and "]" in an atom');
    t.match(await c.command('a3', 'SELECT a[b]c'), /^a3 OK \[READ-WRITE\]/m, 'and SELECT of it');
    t.match(await c.command('a3b', 'LIST "" a[*'), /^\* LIST \([^)]*\) "\/" "a\[b\]c"\r$/m, 'LIST with an atom pattern finds it');
    t.match(await c.command('a4', 'LIST "" "a[b"'), /^a4 OK/m, 'a quoted pattern with "[" is no syntax error');
    t.match(await c.command('a5', 'LIST "" a[b'), /^a5 OK/m, 'nor an atom pattern');
    t.match(await c.command('a6', 'FETCH 1 BODY[HEADER'), /^a6 BAD/m, 'an unterminated section is still BAD');
    await c.command('a7', 'UNSELECT');
  });

  await t.test('ENVELOPE keeps group syntax (§7.4.2)', async (t) => {
    const folder = await f.store.getFolder(user.id, 'INBOX');
    t.ok(folder);
    await f.store.deliver(
      message({
        subject: 'groups',
        to: 'undisclosed-recipients:;',
        headers: ['Cc: Team: ann@example.com, "Bo B" <bo@example.com>;, carl@example.com', 'Bcc: empty:;'],
      }),
      [{ mailboxId: user.id }],
    );
    await c.command('b1', 'SELECT INBOX');
    const env = await c.command('b2', 'FETCH 1 ENVELOPE');
    t.match(env, /\(\(NIL NIL "undisclosed-recipients" NIL\)\(NIL NIL NIL NIL\)\)/, 'To: an empty group, start and end');
    t.match(
      env,
      /\(\(NIL NIL "Team" NIL\)\(NIL NIL "ann" "example\.com"\)\("Bo B" NIL "bo" "example\.com"\)\(NIL NIL NIL NIL\)\(NIL NIL "carl" "example\.com"\)\)/,
      'Cc: a named group with members, then a mailbox after it',
    );
    t.match(env, /\(\(NIL NIL "empty" NIL\)\(NIL NIL NIL NIL\)\) NIL "<m/, 'Bcc: an empty group is not NIL');
    // A second FETCH (the cached path) answers the same.
    t.equal((await c.command('b3', 'FETCH 1 ENVELOPE')).replace(/b3/g, 'b2'), env);
    t.notMatch(env, /[^)]\) \(/, 'addresses side by side, no space between them ("(" 1*address ")", §9)');
  });

  await t.test('SEARCH FROM/TO match addresses as written, comments included', async (t) => {
    await f.store.deliver(message({ subject: 'commented', from: '<user-from (comment)@ (comment) domain.org>', to: 'Some One <some.one@example.net>' }), [
      { mailboxId: user.id },
    ]);
    await c.command('c0', 'NOOP');
    t.match(await c.command('c1', 'SEARCH FROM user-from@domain.org'), /^\* SEARCH 2\r$/m, 'the address with comments removed');
    t.match(await c.command('c2', 'SEARCH FROM "(comment)"'), /^\* SEARCH 2\r$/m, "the header's text as written");
    t.match(await c.command('c3', 'SEARCH TO "some one"'), /^\* SEARCH 2\r$/m, 'a display name');
    t.match(await c.command('c4', 'SEARCH TO ann@example.com'), /^\* SEARCH\r$/m, 'ann is in Cc, not To');
    t.match(await c.command('c5', 'SEARCH CC ann@example.com'), /^\* SEARCH 1\r$/m, 'a group member is found in its field');
  });

  await t.test('CREATE subscribes nothing (§6.3.3, §6.3.6); the account\'s special-use folders are subscribed', async (t) => {
    t.match(await c.command('d1', 'CREATE Projects/2026'), /^d1 OK/m);
    const lsub = await c.command('d2', 'LSUB "" "*"');
    t.notMatch(lsub, /Projects/, 'neither the folder nor the parent CREATE made');
    for (const name of ['INBOX', 'Sent', 'Drafts', 'Trash', 'Junk', 'Archive']) t.match(lsub, new RegExp(`^\\* LSUB \\(\\) "/" "${name}"\\r$`, 'm'), `${name} subscribed`);
    t.match(await c.command('d3', 'SUBSCRIBE Projects/2026'), /^d3 OK/m);
    t.match(await c.command('d4', 'LSUB "" "%"'), /^\* LSUB \(\\Noselect\) "\/" "Projects"\r$/m, 'the unsubscribed parent of a subscribed child: \\Noselect');
  });
  c.destroy();

  await t.test('\\Recent (§2.3.2): the first session to see a message gets it, EXAMINE does not clear it', async (t) => {
    const owner = await f.account('recent');
    for (const subject of ['one', 'two']) await f.store.deliver(message({ subject }), [{ mailboxId: owner.id }]);
    const [a, b, x] = [await session(f, owner.address), await session(f, owner.address), await session(f, owner.address)];
    t.match(await x.command('r1', 'STATUS INBOX (MESSAGES RECENT)'), /\* STATUS "INBOX" \(MESSAGES 2 RECENT 2\)/, 'STATUS counts them');
    t.match(await x.command('r2', 'EXAMINE INBOX'), /\* 2 RECENT\r\n/, 'EXAMINE sees them');
    t.match(await x.command('r3', 'FETCH 1 FLAGS'), /\* 1 FETCH \(FLAGS \(\\Recent\)\)/);
    await x.command('r4', 'UNSELECT');
    t.match(await a.command('r5', 'SELECT INBOX'), /\* 2 RECENT\r\n/, 'EXAMINE left them recent: the first SELECT gets them');
    t.match(await a.command('r6', 'SEARCH RECENT'), /^\* SEARCH 1 2\r$/m);
    t.match(await a.command('r7', 'STORE 1 +FLAGS (\\Seen)'), /FLAGS \(\\Seen \\Recent\)/, '\\Recent stays through a flag change');
    t.match(await a.command('r8', 'SEARCH NEW'), /^\* SEARCH 2\r$/m, 'NEW: recent and unseen');
    t.match(await a.command('r9', 'SEARCH OLD'), /^\* SEARCH\r$/m);
    t.match(await b.command('r10', 'SELECT INBOX'), /\* 0 RECENT\r\n/, 'a second session does not see them as recent');
    t.match(await b.command('r11', 'SEARCH OLD'), /^\* SEARCH 1 2\r$/m);
    t.match(await b.command('r12', 'FETCH 2 FLAGS'), /\* 2 FETCH \(FLAGS \(\)\)/);
    t.match(await x.command('r13', 'STATUS INBOX (RECENT)'), /RECENT 0\)/, 'claimed: STATUS says 0');

    // A new message while both have the folder selected: exactly one of them gets it.
    await f.store.deliver(message({ subject: 'three' }), [{ mailboxId: owner.id }]);
    t.match(await x.command('r14', 'STATUS INBOX (RECENT)'), /RECENT 1\)/, 'unseen by any session yet');
    const [na, nb] = await Promise.all([a.command('r15', 'NOOP'), b.command('r16', 'NOOP')]);
    const counts = [na, nb].map((r) => Number(/\* (\d+) RECENT/.exec(r)?.[1] ?? -1));
    t.match(na + nb, /\* 3 EXISTS[\s\S]*\* 3 EXISTS/, 'both hear of it');
    t.ok((counts[0] === 3 && counts[1] === 0) || (counts[0] === 2 && counts[1] === 1), `RECENT ${counts.join(' / ')}: one session took it`);
    const recentIn = [await a.command('r17', 'SEARCH RECENT'), await b.command('r18', 'SEARCH RECENT')].map((r) => / 3\b/.test(r.split('\r\n')[0]!));
    t.same(recentIn.filter(Boolean).length, 1, 'message 3 is recent in exactly one session');
    for (const c of [a, b, x]) c.destroy();
  });
});
