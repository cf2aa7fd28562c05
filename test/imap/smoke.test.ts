import t from 'tap';
import { setupImap, message } from './setup.js';

t.test('smoke', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  await f.store.deliver(message({ subject: 'First' }), [{ mailboxId: bob.id }]);
  const c = await f.client(bob.address);
  const lock = await c.getMailboxLock('INBOX');
  const msgs = [];
  for await (const m of c.fetch('1:*', { envelope: true, flags: true, bodyStructure: true, source: true })) msgs.push(m);
  lock.release();
  t.equal(msgs.length, 1);
  t.equal(msgs[0]!.envelope?.subject, 'First');
  await c.logout();
});
