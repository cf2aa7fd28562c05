// Message changes of concurrent callers share write transactions (mailstore/message-writer.ts): each keeps the
// answer and the MODSEQ it would have had alone, in the order called (UNCHANGEDSINCE sees the changes before it),
// one that fails fails alone, and the tombstones QRESYNC reads are those of the expunges one by one.
import t from 'tap';
import { message, setupStore } from './setup.js';

t.test('concurrent flag changes, copies, moves and expunges share transactions and answer as if alone', async (t) => {
  const { ctx, store, account } = await setupStore(t);
  const a = await account('a');
  for (let i = 1; i <= 6; i++) await store.deliver(message({ body: `m${i}` }), [{ mailboxId: a }]);
  await store.createFolder(a, 'Keep');
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  const archive = (await store.getFolder(a, 'Keep'))!;
  const start = (await store.folderIndex(inbox.id)).cursor;
  let transactions = 0;
  const count = (q: { sql?: string }) => void (q.sql?.startsWith('BEGIN') && transactions++);
  ctx.db.on('query', count);

  // All called in one turn of the event loop: one batch.
  const [f1, f2, guarded, copied, deleted, expunged, moved, gone, recent] = await Promise.all([
    store.setFlags(inbox.id, [1, 2], 'add', ['\\Seen']),
    store.setFlags(inbox.id, [2], 'add', ['\\Flagged']),
    // UNCHANGEDSINCE the MODSEQ before the batch: message 2 was changed by the two calls before this one.
    store.setFlags(inbox.id, [2, 3], 'add', ['$Label'], { unchangedSince: start }),
    store.copy(inbox.id, [1, 2], archive.id),
    store.setFlags(inbox.id, [3, 5], 'add', ['\\Deleted']),
    store.expunge(inbox.id),
    store.move(inbox.id, [4], archive.id),
    store.setFlags(999_999, [1], 'add', ['\\Seen']).catch((err: Error) => err),
    store.claimRecent(inbox.id, 6),
  ]);
  ctx.db.off('query', count);
  t.equal(transactions, 1, 'one write transaction for the nine calls');

  t.same(f1.updated.map((m) => [m.uid, m.flags, m.modseq]), [[1, ['\\Seen'], start + 1], [2, ['\\Seen'], start + 1]]);
  t.same(f2.updated.map((m) => [m.uid, m.flags, m.modseq]), [[2, ['\\Seen', '\\Flagged'], start + 2]]);
  t.same(guarded.modified, [2], 'UNCHANGEDSINCE sees the changes made before it in the same batch');
  t.same(guarded.updated.map((m) => [m.uid, m.flags, m.modseq]), [[3, ['$Label'], start + 3]]);
  t.same(copied, { uidValidity: archive.uidValidity, pairs: [[1, 1], [2, 2]] });
  t.same(deleted.updated.map((m) => m.modseq), [start + 5, start + 5]);
  t.same(expunged, [3, 5], 'the expunge sees the \\Deleted set just before it');
  t.same(moved.pairs, [[4, 3]]);
  t.match(gone, { code: 'not_found' }, 'a call on a missing folder fails alone');
  t.equal(recent, 0, 'the \\Recent mark answered where it was');

  // The feed: one MODSEQ per call, strictly increasing, in the order called.
  const changes = await store.changesSince(a, start);
  t.same(
    changes.map((c) => [c.modseq, c.kind, c.folderId === inbox.id ? 'INBOX' : 'Archive', 'uid' in c ? c.uid : 0]),
    [
      [start + 1, 'flags', 'INBOX', 1],
      [start + 1, 'flags', 'INBOX', 2],
      [start + 2, 'flags', 'INBOX', 2],
      [start + 3, 'flags', 'INBOX', 3],
      [start + 4, 'append', 'Archive', 1],
      [start + 4, 'append', 'Archive', 2],
      [start + 5, 'flags', 'INBOX', 3],
      [start + 5, 'flags', 'INBOX', 5],
      [start + 6, 'expunge', 'INBOX', 3],
      [start + 6, 'expunge', 'INBOX', 5],
      [start + 7, 'append', 'Archive', 3],
      [start + 7, 'expunge', 'INBOX', 4],
    ],
  );
  // What is stored is what the calls answered.
  const rows = await store.listMessages(inbox.id);
  t.same(rows.map((m) => [m.uid, m.flags, m.modseq]), [[1, ['\\Seen'], start + 1], [2, ['\\Seen', '\\Flagged'], start + 2], [6, [], rows[2]!.modseq]]);
  const copies = await store.listMessages(archive.id, { withSummary: true });
  t.same(copies.map((m) => [m.uid, m.flags, m.size > 0, m.summary !== undefined]), [[1, ['\\Seen'], true, true], [2, ['\\Seen', '\\Flagged'], true, true], [3, [], true, true]], 'copies keep flags, size and summary');
  const after = (await store.getFolder(a, 'INBOX'))!;
  t.equal(after.highestModseq, start + 7);
  t.equal(after.recentUid, 7);
  t.equal(after.messages, 3);
  // Tombstones: 3 and 5 went at one MODSEQ with 4 still there between them (two runs), 4 later.
  t.same(await store.vanishedSince(inbox.id, start + 5), [[3, 5]], 'merged for the reader');
  t.same(await store.vanishedSince(inbox.id, start + 6), [[4, 4]], 'only what went after');
  const runs = (await ctx.db('mail_vanished').where({ folder_id: inbox.id }).orderBy('first_uid').select('modseq', 'first_uid', 'last_uid')) as Array<{ modseq: number; first_uid: number; last_uid: number }>;
  t.same(runs.map((r) => [r.modseq - start, r.first_uid, r.last_uid]), [[6, 3, 3], [7, 4, 4], [6, 5, 5]]);
  const account2 = (await store.getAccount(a))!;
  const blobs = (await ctx.db('mail_blobs').sum({ n: 'refcount' }))[0] as { n: number };
  t.equal(blobs.n, 6, 'reference counts follow the copies and expunges (3 in INBOX, 3 in Archive)');
  t.ok(account2.usedBytes > 0);
});

t.test('an expunge of many UIDs writes a tombstone per run of UIDs with no message left between them', async (t) => {
  const { ctx, store, account } = await setupStore(t);
  const a = await account('b');
  for (let i = 1; i <= 8; i++) await store.deliver(message({ body: `m${i}` }), [{ mailboxId: a }]);
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  await store.setFlags(inbox.id, [2, 5], 'add', ['\\Deleted']);
  await store.expunge(inbox.id, [2]);
  await store.expunge(inbox.id, [1, 3, 4, 6, 8]);
  const runs = (await ctx.db('mail_vanished').where({ folder_id: inbox.id }).orderBy('first_uid').select('first_uid', 'last_uid')) as Array<{ first_uid: number; last_uid: number }>;
  // 1, 3 and 4 have no message left between them (2 went before); 5 and 7 are left.
  t.same(runs.map((r) => [r.first_uid, r.last_uid]), [[1, 4], [2, 2], [6, 6], [8, 8]]);
  t.same((await store.listMessages(inbox.id)).map((m) => m.uid), [5, 7]);
});
