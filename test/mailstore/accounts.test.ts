// Accounts, logins, address resolution (mailbox > alias > catch-all), shares and filters in the store.
import t from 'tap';
import { setupStore } from './setup.js';
import { MailStoreError, type FilterRule } from '../../src/mailstore/types.js';

t.test('authenticate: right and wrong password, unknown and deleted accounts', async (t) => {
  const { store, account } = await setupStore(t);
  const id = await account('Bob', { password: 's3cret-pass' });
  const acc = await store.getAccount(id);
  t.equal(acc!.address, 'bob@example.com', 'addresses are lower-cased');
  t.equal((await store.authenticate('BOB@Example.com', 's3cret-pass'))?.id, id, 'login ignores case');
  t.equal(await store.authenticate('bob@example.com', 's3cret-pasS'), null, 'wrong password');
  t.equal(await store.authenticate('nobody@example.com', 's3cret-pass'), null, 'unknown login');
  await store.setPassword(id, 'another-pass');
  t.equal(await store.authenticate('bob@example.com', 's3cret-pass'), null, 'old password gone');
  t.equal((await store.authenticate('bob@example.com', 'another-pass'))?.id, id);
  await store.deleteAccount(id);
  t.equal(await store.authenticate('bob@example.com', 'another-pass'), null, 'deleted accounts never log in');
  t.equal(await store.getAccount(id), null);
  t.equal(await store.findAccountByAddress('bob@example.com'), null);
  const again = await account('bob');
  t.not(again, id, 'the address can be taken again after a delete');
});

t.test('the password is stored as a salted scrypt hash', async (t) => {
  const { store, account, ctx } = await setupStore(t);
  const a = await account('a', { password: 'same-password' });
  const b = await account('b', { password: 'same-password' });
  const rows = (await ctx.db('mailboxes').whereIn('id', [a, b]).select('password_hash')) as Array<{ password_hash: string }>;
  t.ok(rows.every((r) => r.password_hash.startsWith('scrypt$') && !r.password_hash.includes('same-password')));
  t.not(rows[0]!.password_hash, rows[1]!.password_hash, 'per-account salt');
  void store;
});

t.test('duplicate live address is refused', async (t) => {
  const { store, account, teamId, domainId } = await setupStore(t);
  await account('dup');
  const err = await store.createAccount({ teamId, domainId, address: 'DUP@example.com', password: 'whatever1' }).catch((e: unknown) => e);
  t.ok(err instanceof MailStoreError && err.code === 'exists');
});

t.test('resolveAddress: mailbox, then alias, then catch-all', async (t) => {
  const { store, account, teamId, domainId } = await setupStore(t);
  const a = await account('alice');
  const b = await account('bob');
  const c = await account('carol');
  t.same(await store.resolveAddress('Alice@EXAMPLE.com'), { kind: 'mailboxes', mailboxIds: [a], via: 'mailbox' });
  t.same(await store.resolveAddress('sales@example.com'), { kind: 'none' });
  const alias = await store.createAlias({ teamId, domainId, address: 'Sales@example.com', mailboxIds: [c, b] });
  t.same(alias.mailboxIds, [b, c]);
  t.same(await store.resolveAddress('sales@example.com'), { kind: 'mailboxes', mailboxIds: [b, c], via: 'alias' });
  await store.createAlias({ teamId, domainId, address: '*@example.com', mailboxIds: [a] });
  t.same(await store.resolveAddress('random@example.com'), { kind: 'mailboxes', mailboxIds: [a], via: 'catch-all' });
  t.same(await store.resolveAddress('bob@example.com'), { kind: 'mailboxes', mailboxIds: [b], via: 'mailbox' }, 'a mailbox wins over the catch-all');
  t.same(await store.resolveAddress('x@other.test'), { kind: 'none' });
  const clash = await store.createAlias({ teamId, domainId, address: 'alice@example.com', mailboxIds: [b] }).catch((e: unknown) => e);
  t.ok(clash instanceof MailStoreError && clash.code === 'exists', 'an alias cannot shadow a mailbox');
  await store.deleteAccount(b);
  await store.deleteAccount(c);
  t.same(await store.resolveAddress('sales@example.com'), { kind: 'mailboxes', mailboxIds: [a], via: 'catch-all' }, 'an alias of deleted mailboxes falls through');
  t.same(await store.resolveAddress('bob@example.com'), { kind: 'mailboxes', mailboxIds: [a], via: 'catch-all' }, 'a deleted mailbox stops receiving');
  const page = await store.listAliases({ teamId, offset: 0, limit: 10 });
  t.equal(page.total, 2);
  t.same(
    page.aliases.map((x) => x.address),
    ['*@example.com', 'sales@example.com'],
    'newest first',
  );
  await store.deleteAlias(alias.id);
  t.equal(await store.getAlias(alias.id), null);
});

t.test('shares: granted, listed both ways, changed, removed', async (t) => {
  const { store, account } = await setupStore(t);
  const owner = await account('owner');
  const reader = await account('reader');
  const s = await store.setShare(owner, reader, 'read');
  t.match(s, { ownerId: owner, targetId: reader, targetAddress: 'reader@example.com', access: 'read' });
  await store.setShare(owner, reader, 'read-write');
  t.same(
    (await store.listShares(owner)).map((x) => x.access),
    ['read-write'],
  );
  const seen = await store.sharedWith(reader);
  t.same(
    seen.map((x) => [x.owner.id, x.access]),
    [[owner, 'read-write']],
  );
  t.same(await store.sharedWith(owner), []);
  const self = await store.setShare(owner, owner, 'read').catch((e: unknown) => e);
  t.ok(self instanceof MailStoreError && self.code === 'invalid');
  t.equal(await store.removeShare(owner, reader), true);
  t.equal(await store.removeShare(owner, reader), false);
  t.same(await store.sharedWith(reader), []);
});

t.test('filters: replaced as a whole, read in position order', async (t) => {
  const { store, account } = await setupStore(t);
  const a = await account('a');
  const rules: FilterRule[] = [
    { conditions: [{ field: 'from', op: 'contains', value: 'boss' }], actions: [{ type: 'flag' }], stop: true },
    { conditions: [], actions: [{ type: 'move', folder: 'Archive' }] },
  ];
  await store.setFilters(a, rules);
  t.same(await store.getFilters(a), rules);
  await store.setFilters(a, [rules[1]!]);
  t.same(await store.getFilters(a), [rules[1]]);
  await store.setFilters(a, []);
  t.same(await store.getFilters(a), []);
});

t.test('listAccounts: newest first, per domain, deleted omitted; update', async (t) => {
  const { store, account, teamId, clock } = await setupStore(t);
  const ids: number[] = [];
  for (const n of ['one', 'two', 'three']) {
    ids.push(await account(n));
    clock.advance(1000);
  }
  await store.deleteAccount(ids[1]!);
  const page = await store.listAccounts({ teamId, offset: 0, limit: 10 });
  t.same(
    page.accounts.map((a) => a.address),
    ['three@example.com', 'one@example.com'],
  );
  t.equal(page.total, 2);
  t.equal((await store.listAccounts({ teamId, domainId: 'other', offset: 0, limit: 10 })).total, 0);
  t.equal(await store.countAccounts(teamId), 2);
  const updated = await store.updateAccount(ids[0]!, { displayName: 'One', quotaBytes: 1000 });
  t.match(updated, { displayName: 'One', quotaBytes: 1000 });
  const gone = await store.updateAccount(ids[1]!, { displayName: 'x' }).catch((e: unknown) => e);
  t.ok(gone instanceof MailStoreError && gone.code === 'not_found');
});
