// The change feed's window: pruneChanges drops changes older than the cut-off (oldest first, in batches),
// records per mailbox the highest MODSEQ dropped, and syncChanges then tells a reader with an older cursor
// to resynchronise (null) while newer cursors read on. folderIndex answers what SELECT needs.
import t from 'tap';
import { DAY } from '../../src/core/clock.js';
import { message, setupStore } from './setup.js';

t.test('pruneChanges keeps the window; syncChanges answers null below what was pruned', async (t) => {
  const { store, account, clock } = await setupStore(t);
  const a = await account('a');
  const b = await account('b');
  for (let i = 0; i < 3; i++) await store.deliver(message({ body: `old ${i}` }), [{ mailboxId: a }, { mailboxId: b }]);
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  const start = (await store.changesSince(a, 0)).at(-1)!.modseq;
  t.ok(await store.hasChangesBefore(new Date(clock.now().getTime() + 1)), 'old changes exist');
  clock.advance(8 * DAY);
  await store.setFlags(inbox.id, [1], 'add', ['\\Seen']);
  await store.expunge(inbox.id, [2]);
  const recent = await store.changesSince(a, start);
  t.same(recent.map((c) => c.kind), ['flags', 'expunge']);

  const cutoff = new Date(clock.now().getTime() - 7 * DAY);
  t.ok(await store.hasChangesBefore(cutoff));
  // Batches: two changes at a time until none is older than the cut-off.
  let pruned = 0;
  for (let n; (n = await store.pruneChanges(cutoff, 2)) > 0; ) pruned += n;
  t.ok(pruned >= 6, 'the appends (and folder creations) of both mailboxes went');
  t.notOk(await store.hasChangesBefore(cutoff), 'nothing older than the window left');
  t.same(await store.changesSince(a, 0), recent, 'changes inside the window are kept');
  t.equal(await store.syncChanges(a, 0), null, 'a cursor older than what was pruned must resync');
  t.equal(await store.syncChanges(a, start - 1), null);
  t.same(await store.syncChanges(a, start), recent, 'a cursor at the pruned MODSEQ reads on');
  t.same(await store.syncChanges(b, (await store.getAccount(b)) ? 1e9 : 0), [], 'other mailbox: nothing newer');
  t.equal(await store.pruneChanges(cutoff), 0, 'idempotent');

  const index = await store.folderIndex(inbox.id);
  t.same([...index.uids], [1, 3]);
  t.equal(index.firstUnseenUid, 3);
  t.equal(index.cursor, recent.at(-1)!.modseq, 'the cursor is the mailbox MODSEQ');
  t.same(await store.listStates(inbox.id, { uidRange: [1, 3] }), (await store.listMessages(inbox.id)).map((m) => ({ uid: m.uid, modseq: m.modseq, flags: m.flags, size: m.size, blobId: m.blobId })));
  t.same(await store.listSummaries(inbox.id, { uids: [3] }), [{ uid: 3, summaryJson: JSON.stringify((await store.listMessages(inbox.id, { uids: [3], withSummary: true }))[0]!.summary) }]);
});
