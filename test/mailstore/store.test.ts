// The mail store over a real SQLite file: delivery and dedupe, UIDs, MODSEQ and the change feed, flags,
// copy/move/expunge, quota.
import t from 'tap';
import { message, setupStore } from './setup.js';
import charset from 'libmime/lib/charset.js';
import { decodeHeaderBytes, parseHeaders } from '../../src/mailstore/headers.js';
import { DEFAULT_FOLDERS, MailStoreError, type Change } from '../../src/mailstore/types.js';

t.test('a new account has the default folders with distinct UIDVALIDITYs', async (t) => {
  const { store, account, clock } = await setupStore(t);
  const id = await account('bob');
  const folders = await store.listFolders(id);
  t.same(
    folders.map((f) => [f.path, f.specialUse]),
    DEFAULT_FOLDERS.map((f) => [f.path, f.specialUse]).sort((a, b) => (a[0] === 'INBOX' ? -1 : b[0] === 'INBOX' ? 1 : a[0]! < b[0]! ? -1 : 1)),
  );
  const validities = folders.map((f) => f.uidValidity);
  t.equal(new Set(validities).size, validities.length, 'unique per mailbox');
  t.ok(validities.every((v) => v >= Math.floor(clock.now().getTime() / 1000)), 'seconds since the epoch at creation');
  t.ok(folders.every((f) => f.uidNext === 1 && f.highestModseq === 1 && f.messages === 0));
});

t.test('a message to 50 local recipients is stored once', async (t) => {
  const { store, account, ctx } = await setupStore(t);
  const ids: number[] = [];
  for (let i = 0; i < 50; i++) ids.push(await account(`user${i}`));
  const raw = message({ subject: 'To everyone' });
  const copies = await store.deliver(
    raw,
    ids.map((mailboxId) => ({ mailboxId })),
  );
  t.equal(copies.length, 50);
  const blobs = (await ctx.db('mail_blobs').select('sha256', 'refcount', 'size')) as Array<{ sha256: string; refcount: number; size: number }>;
  t.equal(blobs.length, 1, 'one blob');
  t.equal(blobs[0]!.refcount, 50);
  t.equal(blobs[0]!.size, raw.length);
  const inbox = await store.getFolder(ids[7]!, 'INBOX');
  t.equal(inbox!.messages, 1);
  t.same(await store.readMessage(copies[7]!.folderId, copies[7]!.uid), raw, 'the raw source reads back byte for byte');
  const account7 = await store.getAccount(ids[7]!);
  t.equal(account7!.usedBytes, raw.length);

  // The same bytes delivered again reuse the blob.
  await store.deliver(raw, [{ mailboxId: ids[0]! }]);
  const again = (await ctx.db('mail_blobs').select('refcount')) as Array<{ refcount: number }>;
  t.same(again, [{ refcount: 51 }]);
});

t.test('concurrent deliveries get strictly ascending UIDs; UIDNEXT follows', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const b = await account('b');
  const results = await Promise.all(Array.from({ length: 300 }, (_, i) => store.deliver(message({ body: `n${i}` }), [{ mailboxId: i % 2 ? a : b }])));
  const uidsA = results.filter((_, i) => i % 2).map((r) => r[0]!.uid);
  t.same(uidsA, Array.from({ length: 150 }, (_, i) => i + 1), 'in call order, no gaps');
  const inbox = await store.getFolder(a, 'INBOX');
  t.equal(inbox!.uidNext, 151);
  t.equal(inbox!.messages, 150);
  const list = await store.listMessages(inbox!.id);
  t.same(
    list.map((m) => m.uid),
    uidsA,
  );
  const modseqs = list.map((m) => m.modseq);
  t.ok(modseqs.every((m, i) => i === 0 || m > modseqs[i - 1]!), 'MODSEQ ascends with the UIDs');
  t.equal(inbox!.highestModseq, modseqs.at(-1));
});

t.test('expunged UIDs are never reused', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const [c1] = await store.deliver(message(), [{ mailboxId: a }]);
  await store.deliver(message(), [{ mailboxId: a }]);
  t.same(await store.expunge(c1!.folderId, [1, 2]), [1, 2]);
  const [c3] = await store.deliver(message(), [{ mailboxId: a }]);
  t.equal(c3!.uid, 3);
});

t.test('flags: add, remove, set, keywords, UNCHANGEDSINCE', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  for (let i = 0; i < 3; i++) await store.deliver(message(), [{ mailboxId: a, flags: i === 0 ? ['\\seen'] : [] }]);
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  t.equal(inbox.unseen, 2, 'system flags are case-insensitive (\\seen is \\Seen)');
  let list = await store.listMessages(inbox.id);
  t.same(list[0]!.flags, ['\\Seen']);

  const add = await store.setFlags(inbox.id, [1, 2, 3], 'add', ['\\Flagged', '$Label1']);
  t.equal(add.updated.length, 3);
  t.same(add.updated[0]!.flags, ['\\Seen', '\\Flagged', '$Label1']);
  const modseq = add.updated[0]!.modseq;
  t.ok(add.updated.every((m) => m.modseq === modseq));

  const noop = await store.setFlags(inbox.id, [1], 'add', ['\\Flagged']);
  t.same(noop, { updated: [], modified: [] }, 'no change, no new MODSEQ');

  const removed = await store.setFlags(inbox.id, [2], 'remove', ['$label1']);
  t.same(removed.updated[0]!.flags, ['\\Flagged'], 'keywords compare without case');

  const set = await store.setFlags(inbox.id, [3], 'set', ['\\Answered']);
  t.same(set.updated[0]!.flags, ['\\Answered']);

  // UNCHANGEDSINCE: message 2 and 3 changed after `modseq`, message 1 did not.
  const cond = await store.setFlags(inbox.id, [1, 2, 3], 'add', ['\\Deleted'], { unchangedSince: modseq });
  t.same(cond.modified, [2, 3]);
  t.same(
    cond.updated.map((m) => m.uid),
    [1],
  );
  list = await store.listMessages(inbox.id, { changedSince: set.updated[0]!.modseq });
  t.same(
    list.map((m) => m.uid),
    [1],
    'changedSince lists what changed after',
  );

  await t.rejects(store.setFlags(inbox.id, [1], 'add', ['bad flag']), MailStoreError);
  t.same(await store.expunge(inbox.id), [1], 'expunge without UIDs removes \\Deleted messages');
  t.equal((await store.getFolder(a, 'INBOX'))!.messages, 2);
});

t.test('change feed: changesSince and onChange after commit', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const b = await account('b');
  const seen: Change[] = [];
  const seenB: Change[] = [];
  const off = store.onChange(a, (c) => seen.push(c));
  store.onChange(b, (c) => seenB.push(c));
  const start = (await store.getFolder(a, 'INBOX'))!.highestModseq;
  const [copy] = await store.deliver(message(), [{ mailboxId: a }]);
  await store.setFlags(copy!.folderId, [copy!.uid], 'add', ['\\Seen']);
  const trash = (await store.getFolder(a, 'Trash'))!;
  await store.move(copy!.folderId, [copy!.uid], trash.id);
  const feed = await store.changesSince(a, start);
  t.same(
    feed.map((c) => c.kind),
    ['append', 'flags', 'append', 'expunge'],
  );
  t.same(seen, feed, 'listeners saw the same changes, in order');
  t.same(seenB, [], 'another mailbox hears nothing');
  t.ok(feed.every((c, i) => i === 0 || c.modseq >= feed[i - 1]!.modseq));
  t.same(await store.changesSince(a, feed.at(-1)!.modseq), [], 'the cursor is the MODSEQ');
  off();
  await store.deliver(message(), [{ mailboxId: a }]);
  t.equal(seen.length, 4, 'unsubscribed');
});

t.test('copy and move keep flags and blobs; COPYUID pairs', async (t) => {
  const { store, account, ctx } = await setupStore(t);
  const a = await account('a');
  for (let i = 0; i < 3; i++) await store.deliver(message(), [{ mailboxId: a, flags: ['$Tag'] }]);
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  const archive = (await store.getFolder(a, 'Archive'))!;
  const copied = await store.copy(inbox.id, [3, 1], archive.id);
  t.same(copied, { uidValidity: archive.uidValidity, pairs: [[1, 1], [3, 2]] });
  const arch = await store.listMessages(archive.id);
  t.same(
    arch.map((m) => m.flags),
    [['$Tag'], ['$Tag']],
  );
  t.equal((await store.getAccount(a))!.usedBytes, arch.reduce((n, m) => n + m.size, 0) + (await store.listMessages(inbox.id)).reduce((n, m) => n + m.size, 0), 'copies count twice');

  const moved = await store.move(inbox.id, [2, 3], archive.id);
  t.same(moved.pairs, [[2, 3], [3, 4]]);
  t.same(
    (await store.listMessages(inbox.id)).map((m) => m.uid),
    [1],
  );
  t.equal((await store.getFolder(a, 'Archive'))!.messages, 4);

  // Expunge everything: blobs go away with their last reference.
  await store.expunge(inbox.id, [1]);
  await store.expunge(archive.id, [1, 2, 3, 4]);
  t.same(await ctx.db('mail_blobs').select('sha256'), [], 'no orphan blobs');
  t.equal((await store.getAccount(a))!.usedBytes, 0);
});

t.test('quota: an append over it is refused; deliver can skip the full mailbox', async (t) => {
  const { store, account } = await setupStore(t);
  const raw = message();
  const small = await account('small', { quotaBytes: raw.length * 2 });
  const big = await account('big');
  await store.append(small, 'INBOX', raw);
  await store.append(small, 'INBOX', message());
  const err = await store.append(small, 'INBOX', message()).catch((e: unknown) => e);
  t.ok(err instanceof MailStoreError && err.code === 'quota_exceeded', 'quota_exceeded');
  const failed = await store.deliver(message(), [{ mailboxId: big }, { mailboxId: small }]).catch((e: unknown) => e);
  t.ok(failed instanceof MailStoreError && failed.code === 'quota_exceeded', 'the whole delivery fails by default');
  t.equal((await store.getFolder(big, 'INBOX'))!.messages, 0, 'nothing stored for anyone');
  const copies = await store.deliver(message(), [{ mailboxId: big }, { mailboxId: small }], { onQuota: 'skip' });
  t.same(
    copies.map((c) => c.mailboxId),
    [big],
  );
  const c2 = await store.copy((await store.getFolder(big, 'INBOX'))!.id, [1], (await store.getFolder(small, 'Archive'))!.id).catch((e: unknown) => e);
  t.ok(c2 instanceof MailStoreError && c2.code === 'quota_exceeded', 'copy into a full mailbox is refused');
});

t.test('fitsQuota: the rule append applies, read before a message is received', async (t) => {
  const { store, account } = await setupStore(t);
  const raw = message();
  const small = await account('small', { quotaBytes: raw.length * 2 });
  const unlimited = await account('unlimited');
  t.ok(await store.fitsQuota(small, raw.length * 2), 'up to the quota exactly');
  t.notOk(await store.fitsQuota(small, raw.length * 2 + 1));
  await store.append(small, 'INBOX', raw);
  t.ok(await store.fitsQuota(small, raw.length));
  t.notOk(await store.fitsQuota(small, raw.length + 1), 'what is stored counts');
  t.ok(await store.fitsQuota(unlimited, 2 ** 40), 'quota 0: unlimited');
  t.ok(await store.fitsQuota(999_999, 1), 'an unknown mailbox: the store answers when it stores');
});

t.test('append keeps the zone of a ZonedDate (IMAP APPEND date-time); a Date is UTC', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const at = new Date('2026-07-14T09:44:25.000Z');
  await store.append(a, 'INBOX', message(), [], { at, zone: -420 });
  await store.append(a, 'INBOX', message(), [], { at, zone: 330 });
  await store.append(a, 'INBOX', message(), [], at);
  const metas = await store.listMessages((await store.getFolder(a, 'INBOX'))!.id);
  t.same(
    metas.map((m) => [m.internalDate.toISOString(), m.internalDateZone]),
    [
      [at.toISOString(), -420],
      [at.toISOString(), 330],
      [at.toISOString(), undefined],
    ],
  );
});

t.test('append: TRYCREATE-style not_found for a missing folder; deliver creates it', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const err = await store.append(a, 'Nope', message()).catch((e: unknown) => e);
  t.ok(err instanceof MailStoreError && err.code === 'not_found');
  const when = new Date('2020-02-02T02:02:02.000Z');
  const copy = await store.append(a, 'Drafts', message(), ['\\Draft'], when);
  const [meta] = await store.listMessages(copy.folderId);
  t.same(meta!.internalDate, when);
  t.same(meta!.flags, ['\\Draft']);
  const [d] = await store.deliver(message(), [{ mailboxId: a, folder: 'Lists/dev' }]);
  t.ok(await store.getFolder(a, 'Lists'), 'parent created');
  t.equal((await store.getFolder(a, 'Lists/dev'))!.id, d!.folderId);
});

t.test('listMessages withSummary gives the ENVELOPE fields without reading sources', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const raw = message({ subject: '=?UTF-8?B?SGVsbG8gV8O2cmxk?=', from: '"Doe, Jane" <jane@remote.test>', to: 'a@example.com, Grp: x@y.test, z@y.test;' });
  const [c] = await store.deliver(raw, [{ mailboxId: a }]);
  const [m] = await store.listMessages(c!.folderId, { withSummary: true });
  t.equal(m!.summary!.subject, '=?UTF-8?B?SGVsbG8gV8O2cmxk?=');
  t.same(m!.summary!.from, [{ name: 'Doe, Jane', address: 'jane@remote.test' }]);
  t.same(
    m!.summary!.to.map((x) => x.address),
    ['a@example.com', 'x@y.test', 'z@y.test'],
  );
  t.equal(m!.summary!.date, 'Fri, 01 May 2026 10:00:00 +0000');
  t.match(m!.summary!.messageId, /^<m\d+\./);
  t.equal(raw.subarray(m!.summary!.headerSize - 4, m!.summary!.headerSize).toString(), '\r\n\r\n');
  const [plain] = await store.listMessages(c!.folderId);
  t.equal(plain!.summary, undefined, 'only when asked');
});

t.test('a header field that is not UTF-8 is summarized as Windows-1252, field by field', async (t) => {
  // Old and misconfigured mailers write raw Latin-1 (Windows-1252) header bytes without encoded words.
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const raw = Buffer.from('From: Ren\xe9 Dupont <rene@remote.test>\r\nTo: J\xc3\xb6rg <a@example.com>\r\nSubject: caf\xe9 \x80 \x85\r\n\r\nbody\r\n', 'latin1');
  const [c] = await store.deliver(raw, [{ mailboxId: a }]);
  const [m] = await store.listMessages(c!.folderId, { withSummary: true });
  t.equal(m!.summary!.subject, 'café € …');
  t.same(m!.summary!.from, [{ name: 'René Dupont', address: 'rene@remote.test' }]);
  t.same(m!.summary!.to, [{ name: 'Jörg', address: 'a@example.com' }], 'a UTF-8 field beside it stays UTF-8');
  t.equal(parseHeaders(raw).get('subject')?.[0], 'café € …', 'parseHeaders (filters, inbound) reads it the same way');
});

t.test('decodeHeaderBytes: UTF-8 when valid, else the WHATWG windows-1252 table', async (t) => {
  t.equal(decodeHeaderBytes(Buffer.from('Grüße 😀')), 'Grüße 😀');
  t.equal(decodeHeaderBytes(Buffer.from([0x63, 0x61, 0x66, 0xc3])), 'caf\xc3', 'a truncated UTF-8 sequence is not UTF-8');
  // iconv-lite (through libmime) knows 27 of 0x80–0x9F; WHATWG maps the other five to the C1 controls.
  for (let b = 0x80; b <= 0xff; b++) {
    const expected = [0x81, 0x8d, 0x8f, 0x90, 0x9d].includes(b) ? String.fromCharCode(b) : charset.decode(Buffer.from([b]), 'windows-1252');
    t.equal(decodeHeaderBytes(Buffer.from([0x78, b])), 'x' + expected, `0x${b.toString(16)}`);
  }
});

t.test('the same mailbox and folder named twice gets one copy with the flags merged', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const copies = await store.deliver(message(), [
    { mailboxId: a },
    { mailboxId: a, folder: 'inbox', flags: ['\\Flagged'] },
    { mailboxId: a, folder: 'Archive' },
  ]);
  t.equal(copies.length, 2);
  const [inboxCopy] = await store.listMessages(copies[0]!.folderId);
  t.same(inboxCopy!.flags, ['\\Flagged']);
  t.equal((await store.getFolder(a, 'INBOX'))!.messages, 1);
  t.equal((await store.getFolder(a, 'Archive'))!.messages, 1);
});

t.test('bad input is refused with MailStoreError, never stored', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof MailStoreError ? e.code : String(e)));
  t.equal(await codeOf(store.deliver(Buffer.alloc(0), [{ mailboxId: a }])), 'invalid', 'empty message');
  t.equal(await codeOf(store.deliver(message(), [{ mailboxId: a, folder: 'a//b' }])), 'invalid', 'bad folder');
  t.equal(await codeOf(store.deliver(message(), [{ mailboxId: 9999 }])), 'not_found', 'unknown mailbox');
  t.equal(await codeOf(store.setFlags(9999, [1], 'add', ['\\Seen'])), 'not_found', 'unknown folder');
  t.same(await store.deliver(message(), []), [], 'no targets, nothing stored');
  // A message without any header block still stores, with an empty summary.
  const [c] = await store.deliver(Buffer.from('\r\njust a body'), [{ mailboxId: a }]);
  const [m] = await store.listMessages(c!.folderId, { withSummary: true });
  t.match(m!.summary, { subject: null, from: [], headerSize: 2 });
  // Concurrent good and bad deliveries: the bad one fails alone.
  const results = await Promise.allSettled([store.deliver(message(), [{ mailboxId: a }]), store.deliver(message(), [{ mailboxId: 9999 }]), store.deliver(message(), [{ mailboxId: a }])]);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
});
