// THREADID (RFC 8474 §5, §6): one id for the messages of a thread, from the root of each message's own
// References chain (src/imap/thread-id.ts); stable through COPY/MOVE; SEARCH THREADID. Over a raw socket, with
// imapflow (fetch { threadId }, search { threadId }) and Python's imaplib.
import { execFile } from 'node:child_process';
import t from 'tap';
import { PASSWORD, session, setupImap } from './setup.js';

function mail(id: string, subject: string, extra: string[] = []): Buffer {
  return Buffer.from([`From: a@remote.test`, `To: tid@example.com`, `Subject: ${subject}`, `Message-ID: <${id}@remote.test>`, ...extra, '', 'body', ''].join('\r\n'));
}

t.test('THREADID', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('tid');
  const to = [{ mailboxId: user.id }];
  await f.store.deliver(mail('root', 'Plan'), to); // 1
  await f.store.deliver(mail('r1', 'Re: Plan', ['In-Reply-To: <root@remote.test>', 'References: <root@remote.test>']), to); // 2
  await f.store.deliver(mail('other', 'Lunch'), to); // 3
  await f.store.deliver(mail('r2', 'Re: Plan', ['References: <root@remote.test> <r1@remote.test>']), to); // 4
  await f.store.deliver(Buffer.from('From: a@remote.test\r\nSubject: no id\r\n\r\nx\r\n'), to); // 5
  await f.store.deliver(mail('orphan', 'Re: Plan', ['In-Reply-To: <r1@remote.test>']), to); // 6
  const c = await session(f, user.address);
  await c.command('s', 'SELECT INBOX');

  const ids = new Map<number, string>();
  await t.test('FETCH THREADID: the thread root decides; each message its own id otherwise', async (t) => {
    const r = await c.command('a1', 'FETCH 1:* (THREADID)');
    for (const [, seq, id] of r.matchAll(/^\* (\d+) FETCH \(THREADID \((T[0-9a-f]{24})\)\)\r$/gm)) ids.set(Number(seq), id!);
    t.equal(ids.size, 6, 'an objectid for every message (RFC 8474 §5.1)');
    t.equal(ids.get(2), ids.get(1), 'a reply shares its root\'s id');
    t.equal(ids.get(4), ids.get(1), 'and a reply to the reply');
    t.not(ids.get(3), ids.get(1), 'another thread');
    t.not(ids.get(5), ids.get(3), 'no Message-ID: a thread of its own');
    t.not(ids.get(6), ids.get(1), 'In-Reply-To only, to a reply: its parent is its root (threads are not joined afterwards)');
    t.match(await c.command('a2', 'UID FETCH 2 (THREADID EMAILID)'), /^\* 2 FETCH \(UID 2 THREADID \(T[0-9a-f]{24}\) EMAILID \(M[0-9a-f]{24}\)\)\r$/m);
  });

  await t.test('the same in every mailbox: COPY and MOVE keep it (RFC 8474 §5.1)', async (t) => {
    t.match(await c.command('b1', 'CREATE Kept'), /^b1 OK/m);
    t.match(await c.command('b2', 'COPY 4 Kept'), /^b2 OK/m);
    const r = await c.command('b3', 'STATUS Kept (MESSAGES)');
    t.match(r, /MESSAGES 1/);
    await c.command('b4', 'EXAMINE Kept');
    t.match(await c.command('b5', 'FETCH 1 (THREADID)'), new RegExp(`THREADID \\(${ids.get(1)}\\)`));
    await c.command('b6', 'SELECT INBOX');
  });

  await t.test('SEARCH THREADID finds the thread (RFC 8474 §6)', async (t) => {
    t.match(await c.command('c1', `SEARCH THREADID ${ids.get(1)}`), /^\* SEARCH 1 2 4\r$/m);
    t.match(await c.command('c2', `UID SEARCH NOT THREADID ${ids.get(1)} SUBJECT plan`), /^\* SEARCH 6\r$/m, 'with other keys');
    t.match(await c.command('c3', 'SEARCH THREADID T0123'), /^\* SEARCH\r$/m);
  });

  await t.test('imapflow asks for it (fetch { threadId }, search { threadId })', async (t) => {
    const client = await f.client(user.address);
    await client.mailboxOpen('INBOX');
    const got = new Map<number, string | undefined>();
    for await (const m of client.fetch('1:*', { uid: true, threadId: true })) got.set(m.seq, m.threadId);
    t.equal(got.get(2), ids.get(1));
    t.equal(got.get(3), ids.get(3));
    t.same(await client.search({ threadId: ids.get(1)! }), [1, 2, 4]);
    await client.logout();
  });

  await t.test("Python's imaplib fetches it", async (t) => {
    const script = `
import imaplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
c = imaplib.IMAP4('127.0.0.1', int(sys.argv[1])); c.starttls(ssl_context=ctx); c.login(sys.argv[2], sys.argv[3])
c.select('INBOX')
typ, data = c.fetch('1:2', '(THREADID)')
print(typ); [print(d.decode()) for d in data]
c.logout()`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile('python3', ['-c', script, String(f.imapPort), user.address, PASSWORD], { timeout: 60_000 }, (err, o, e) => (err ? reject(new Error(`${err.message}\n${e}`)) : resolve(o))),
    );
    t.equal(out, `OK\n1 (THREADID (${ids.get(1)}))\n2 (THREADID (${ids.get(1)}))\n`);
  });
  c.destroy();
});
