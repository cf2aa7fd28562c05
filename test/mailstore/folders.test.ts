// Folders: create with parents, delete, rename (and RFC 3501 INBOX rename), subscribe.
import t from 'tap';
import { message, setupStore } from './setup.js';
import { MailStoreError, type Change } from '../../src/mailstore/types.js';

const code = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof MailStoreError ? e.code : String(e)));

t.test('create: parents are created; duplicates refused; INBOX in any case', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const f = await store.createFolder(a, 'Projects/2026/Q1');
  t.equal(f.path, 'Projects/2026/Q1');
  const paths = (await store.listFolders(a)).map((x) => x.path);
  t.ok(paths.includes('Projects') && paths.includes('Projects/2026'));
  t.equal(await code(store.createFolder(a, 'Projects')), 'exists');
  t.equal(await code(store.createFolder(a, 'inbox')), 'exists', 'INBOX is case-insensitive');
  t.equal((await store.getFolder(a, 'iNbOx'))!.path, 'INBOX');
  t.equal(await code(store.createFolder(a, 'a//b')), 'invalid');
  const uvs = (await store.listFolders(a)).map((x) => x.uidValidity);
  t.equal(new Set(uvs).size, uvs.length, 'UIDVALIDITY unique per mailbox');
});

t.test('delete: messages go, INBOX stays, a re-created folder gets a new UIDVALIDITY', async (t) => {
  const { store, account, ctx } = await setupStore(t);
  const a = await account('a');
  await store.deliver(message(), [{ mailboxId: a, folder: 'Old' }]);
  const old = (await store.getFolder(a, 'Old'))!;
  t.equal(old.messages, 1);
  t.equal(await code(store.deleteFolder(a, 'INBOX')), 'invalid');
  await store.createFolder(a, 'Old/Child');
  await store.deleteFolder(a, 'Old');
  t.equal(await store.getFolder(a, 'Old'), null);
  t.ok(await store.getFolder(a, 'Old/Child'), 'a subfolder stays (RFC 3501 §6.3.4)');
  await store.deleteFolder(a, 'Old/Child');
  t.equal((await store.getAccount(a))!.usedBytes, 0, 'quota released');
  t.same(await ctx.db('mail_blobs').select('sha256'), [], 'source deleted with its last reference');
  const again = await store.createFolder(a, 'Old');
  t.ok(again.uidValidity > old.uidValidity);
  t.equal(await code(store.deleteFolder(a, 'Nope')), 'not_found');
  const feed = await store.changesSince(a, 0);
  t.ok(feed.some((c) => c.kind === 'folder' && c.change === 'deleted' && c.folderId === old.id));
});

t.test('rename: the folder and its children move; UIDVALIDITY kept', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  await store.deliver(message(), [{ mailboxId: a, folder: 'Work/Reports' }]);
  const before = (await store.getFolder(a, 'Work/Reports'))!;
  await store.renameFolder(a, 'Work', 'Jobs/Old');
  t.equal(await store.getFolder(a, 'Work'), null);
  t.equal(await store.getFolder(a, 'Work/Reports'), null);
  const after = (await store.getFolder(a, 'Jobs/Old/Reports'))!;
  t.equal(after.id, before.id);
  t.equal(after.uidValidity, before.uidValidity);
  t.equal(after.messages, 1);
  t.ok(await store.getFolder(a, 'Jobs'), 'the new parent exists');
  t.equal(await code(store.renameFolder(a, 'Jobs', 'Jobs/Inside')), 'invalid');
  t.equal(await code(store.renameFolder(a, 'Jobs', 'Sent')), 'exists');
  t.equal(await code(store.renameFolder(a, 'Missing', 'X')), 'not_found');
  t.equal(await code(store.renameFolder(a, 'Jobs', 'INBOX')), 'exists');
});

t.test('rename INBOX: messages move to the new folder; INBOX stays, empty, and keeps counting UIDs', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  for (let i = 0; i < 3; i++) await store.deliver(message(), [{ mailboxId: a, flags: i === 1 ? ['\\Seen'] : [] }]);
  await store.createFolder(a, 'INBOX/Sub');
  const inbox = (await store.getFolder(a, 'INBOX'))!;
  const changes: Change[] = [];
  store.onChange(a, (c) => changes.push(c));
  await store.renameFolder(a, 'INBOX', 'Old Inbox');
  const inboxAfter = (await store.getFolder(a, 'INBOX'))!;
  t.equal(inboxAfter.id, inbox.id);
  t.equal(inboxAfter.messages, 0);
  t.equal(inboxAfter.uidValidity, inbox.uidValidity);
  const moved = (await store.getFolder(a, 'Old Inbox'))!;
  t.equal(moved.messages, 3);
  t.equal(moved.unseen, 2);
  t.not(moved.uidValidity, inbox.uidValidity);
  t.ok(await store.getFolder(a, 'INBOX/Sub'), "INBOX's children are not renamed");
  t.same(
    changes.filter((c) => c.kind === 'expunge').map((c) => c.kind === 'expunge' && c.uid),
    [1, 2, 3],
    'sessions on INBOX learn the messages left',
  );
  const [next] = await store.deliver(message(), [{ mailboxId: a }]);
  t.equal(next!.uid, 4, 'INBOX never reuses a UID under the same UIDVALIDITY');
  t.equal((await store.readMessage(moved.id, 2))!.length > 0, true);
});

t.test('subscriptions are names, apart from the folders (RFC 3501 §6.3.6)', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  t.same(await store.listSubscriptions(a), ['Archive', 'Drafts', 'INBOX', 'Junk', 'Sent', 'Trash'], "the account's folders are subscribed");
  await store.setSubscribed(a, 'Junk', false);
  t.notOk((await store.listSubscriptions(a)).includes('Junk'));
  await store.setSubscribed(a, 'Junk', true);
  await store.setSubscribed(a, 'Junk', true);
  t.equal((await store.listSubscriptions(a)).filter((p) => p === 'Junk').length, 1, 'once, however often');
  await store.setSubscribed(a, 'Nope/Later', true);
  t.ok((await store.listSubscriptions(a)).includes('Nope/Later'), 'a name that is no folder');
  await store.setSubscribed(a, 'inbox', false);
  t.notOk((await store.listSubscriptions(a)).includes('INBOX'), 'INBOX in any case');
  await store.createFolder(a, 'Kept', { subscribed: false });
  t.notOk((await store.listSubscriptions(a)).includes('Kept'), 'created unsubscribed');
  await store.createFolder(a, 'Filed/Deep');
  t.ok((await store.listSubscriptions(a)).includes('Filed/Deep'), 'created subscribed (a filter on delivery)');
  await store.deleteFolder(a, 'Junk');
  t.ok((await store.listSubscriptions(a)).includes('Junk'), 'DELETE keeps the subscription');
  await store.renameFolder(a, 'Filed', 'Moved');
  const subs = await store.listSubscriptions(a);
  t.ok(subs.includes('Filed/Deep') && !subs.includes('Moved/Deep'), 'RENAME moves no subscription (as Dovecot)');
  t.equal(await code(store.setSubscribed(a, 'bad//name', true)), 'invalid');
});

t.test("deleting a domain (cascade) releases the mailboxes' sources", async (t) => {
  const { store, account, ctx, domainId } = await setupStore(t);
  const a = await account('a');
  const b = await account('b');
  const shared = message();
  await store.deliver(shared, [{ mailboxId: a }, { mailboxId: b }]);
  await store.deliver(message(), [{ mailboxId: a }]);
  t.equal(((await ctx.db('mail_blobs').select('sha256')) as unknown[]).length, 2);
  await ctx.db('domains').where({ id: domainId }).delete();
  t.same(await ctx.db('mail_blobs').select('sha256'), [], 'no orphan sources');
  t.same(await ctx.db('mail_messages').select('uid'), []);
  t.same(await store.resolveAddress('a@example.com'), { kind: 'none' });
});
