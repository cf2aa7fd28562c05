// The sort rows kept between SORT/THREAD commands (src/imap/sort-cache.ts): bounded by bytes, least recently
// used folders dropped first, expunged UIDs pruned; and over a socket, a SORT after new mail and an EXPUNGE
// answers from the kept rows and the new ones together.
import t from 'tap';
import { rowBytes, SortRowCache } from '../../src/imap/sort-cache.js';
import type { SortRow } from '../../src/mailstore/types.js';
import { message, session, setupImap } from './setup.js';

const row = (uid: number, subject = 'S'): SortRow => ({ uid, arrival: uid, size: 10, keys: { d: uid, s: subject, r: 0, f: 'a', t: 'b', c: '', df: 'A', dt: 'B', m: `m${uid}`, x: [] } });

t.test('SortRowCache: bounded by bytes, by folder, least recently used first', async (t) => {
  const per = rowBytes(row(1));
  const cache = new SortRowCache(per * 10);
  cache.add(1, [row(1), row(2), row(3), row(4)]);
  cache.add(2, [row(1), row(2), row(3), row(4)]);
  t.equal(cache.heldBytes, per * 8);
  t.equal(cache.rows(1).size, 4, 'folder 1 used: now the most recent');
  cache.add(3, [row(1), row(2), row(3), row(4)]);
  t.equal(cache.rows(2).size, 0, 'folder 2, the least recently used, dropped');
  t.equal(cache.rows(1).size, 4);
  t.equal(cache.heldBytes, per * 8);
  cache.add(1, [row(1, 'same uid again')]);
  t.equal(cache.rows(1).size, 4, 'a row read again replaces its old one');
  t.ok(cache.heldBytes <= per * 10);
  cache.add(4, Array.from({ length: 12 }, (_, i) => row(i + 1)));
  t.ok(cache.heldBytes <= per * 10, 'never past the capacity, even for one large folder');
  cache.add(5, [row(1), row(2), row(3), row(4), row(5)]);
  cache.prune(5, 3, (uid) => uid <= 3);
  t.equal(cache.rows(5).size, 5, 'stale rows kept while they are not more than twice the live ones');
  cache.prune(5, 1, (uid) => uid === 1);
  t.same([...cache.rows(5).keys()], [1], 'then dropped');
});

t.test('SORT and THREAD with kept rows', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('sc');
  const to = [{ mailboxId: user.id }];
  for (const [subject, date] of [['b', 'Fri, 01 May 2026 10:00:00 +0000'], ['a', 'Fri, 01 May 2026 09:00:00 +0000'], ['c', 'Fri, 01 May 2026 11:00:00 +0000']] as const) {
    await f.store.deliver(message({ subject, date }), to);
  }
  const c = await session(f, user.address);
  await c.command('s', 'SELECT INBOX');
  t.match(await c.command('a1', 'SORT (SUBJECT) UTF-8 ALL'), /^\* SORT 2 1 3\r$/m);
  await f.store.deliver(message({ subject: 'a0', date: 'Fri, 01 May 2026 08:00:00 +0000' }), to);
  await c.command('n', 'NOOP');
  t.match(await c.command('a2', 'SORT (SUBJECT) UTF-8 ALL'), /^\* SORT 2 4 1 3\r$/m, 'the new message read, the rest kept');
  t.match(await c.command('a3', 'SORT (DATE) UTF-8 ALL'), /^\* SORT 4 2 1 3\r$/m);
  t.match(await c.command('a4', 'STORE 2 +FLAGS (\\Deleted)'), /^a4 OK/m);
  t.match(await c.command('a5', 'EXPUNGE'), /^\* 2 EXPUNGE\r$/m);
  t.match(await c.command('a6', 'SORT (SUBJECT) UTF-8 ALL'), /^\* SORT 3 1 2\r$/m, 'the expunged message gone, the numbers moved');
  t.match(await c.command('a7', 'UID SORT (REVERSE DATE) UTF-8 ALL'), /^\* SORT 3 1 4\r$/m);
  t.match(await c.command('a8', 'THREAD ORDEREDSUBJECT UTF-8 ALL'), /^\* THREAD \(3\)\(1\)\(2\)\r$/m);
  c.destroy();
});
