// Issue 35 §2: extensions webmail and phones use, each with its RFC's examples over a real socket.
import t from 'tap';
import { message, session, setupImap } from './setup.js';

t.test('IMAP extensions', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('ext');
  const sizes: number[] = [];
  for (const subject of ['one', 'two', 'three']) {
    const raw = message({ subject });
    sizes.push(raw.length);
    await f.store.deliver(raw, [{ mailboxId: user.id }]);
  }
  const total = sizes.reduce((a, b) => a + b, 0);
  const c = await session(f, user.address);

  await t.test('STATUS=SIZE (RFC 8438)', async (t) => {
    t.match(await c.command('s0', 'CAPABILITY'), /STATUS=SIZE/);
    t.match(await c.command('s1', 'STATUS INBOX (MESSAGES SIZE)'), new RegExp(`^\\* STATUS "INBOX" \\(MESSAGES 3 SIZE ${total}\\)\\r$`, 'm'), 'the octets of all its messages');
    t.match(await c.command('s2', 'STATUS Trash (SIZE)'), /^\* STATUS "Trash" \(SIZE 0\)\r$/m);
  });

  await t.test('LIST-STATUS (RFC 5819)', async (t) => {
    t.match(await c.command('l0', 'CAPABILITY'), /LIST-STATUS/);
    await c.command('l1', 'CREATE Lists/dev');
    const list = await c.command('l2', 'LIST "" "*" RETURN (STATUS (MESSAGES UNSEEN UIDNEXT))');
    t.match(list, /^\* LIST \([^)]*\) "\/" "INBOX"\r\n\* STATUS "INBOX" \(MESSAGES 3 UNSEEN 3 UIDNEXT 4\)\r$/m, 'a STATUS right after each LIST');
    t.match(list, /^\* LIST \([^)]*\) "\/" "Lists\/dev"\r\n\* STATUS "Lists\/dev" \(MESSAGES 0 UNSEEN 0 UIDNEXT 1\)\r$/m);
    t.match(await c.command('l3', 'LIST "" "%" RETURN (SUBSCRIBED STATUS (MESSAGES))'), /\\Subscribed[^\r]*"INBOX"\r\n\* STATUS "INBOX" \(MESSAGES 3\)/, 'beside other return options');
    t.match(await c.command('l4', 'LIST "" "*" RETURN (STATUS (BOGUS))'), /^l4 BAD/m, 'an unknown status item is BAD');
    t.match(await c.command('l5', 'LIST "" "*" RETURN (STATUS)'), /^l5 BAD/m, 'STATUS needs its list');
  });
  c.destroy();
});
