// Regressions found by running real third-party clients (Debian's isync/mbsync 1.4, offlineimap, mutt,
// fetchmail) against the server: each test replays, over a real socket, the exact commands the client sent.
import t from 'tap';
import { setupImap, type ImapFixture, type RawClient } from './setup.js';

async function session(f: ImapFixture, user: string): Promise<RawClient> {
  const c = await f.raw();
  await c.starttls();
  await c.login(user);
  return c;
}

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
    t.match(await c.command('24', 'UID FETCH 1:1 (UID FLAGS)'), /^\* 1 FETCH \(UID 1 FLAGS \(\\Deleted\)\)\r$/m, 'the copy kept \\Deleted');
    const again = await c.command('25', 'UID MOVE 1 "Trash"');
    t.match(again, /^25 OK Move completed/m);
    t.match(again, new RegExp(`^\\* OK \\[COPYUID ${validity} 1 2\\] `, 'm'), 'a new UID at the end of the same folder');
    t.match(again, /^\* 1 EXPUNGE\r$/m, 'the old UID is expunged');
    t.match(again, /^\* 1 EXISTS\r$/m, 'the new UID is announced');
    t.match(await c.command('26', 'UID FETCH 1:* (UID FLAGS)'), /^\* 1 FETCH \(UID 2 FLAGS \(\\Deleted\)\)\r$/m);
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
    t.match(listing, /^\* 1 FETCH \(UID 1 FLAGS \(\)\)\r\n\* 3 FETCH \(UID 3 FLAGS \(\)\)\r\n4 OK/m, 'without the expunged UID; numbers unchanged');
    t.notMatch(listing, /EXPUNGE\r/, 'no EXPUNGE during the FETCH');
    const body = await sync.command('5', 'UID FETCH 2 (BODY.PEEK[])');
    t.match(body, /^5 OK \[EXPUNGEISSUED\] /m, 'a gone UID alone: OK with no data');
    t.notMatch(body, /FETCH \(/);
    t.match(await sync.command('6', 'UID FETCH 3 (BODY.PEEK[])'), /^\* 3 FETCH \(UID 3 BODY\[\] \{\d+\}\r\n/m);
    t.match(await sync.command('7', 'FETCH 1:3 (FLAGS)'), /^7 NO \[EXPUNGEISSUED\] /m, 'sequence numbers still name it: FETCH keeps its NO (RFC 2180 §4.1.2)');
    t.match(await sync.command('8', 'NOOP'), /^\* 2 EXPUNGE\r\n8 OK/m, 'announced at the next command that may');
    t.match(await sync.command('9', 'UID FETCH 1:3 (UID FLAGS)'), /^\* 2 FETCH \(UID 3 FLAGS \(\)\)\r\n9 OK UID FETCH completed\r$/m);
    sync.destroy();
    phone.destroy();
  });
});
