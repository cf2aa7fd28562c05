// The cache of verified logins (src/mailstore/password.ts VerifiedLogins): one scrypt per password and TTL, a
// wrong or changed password never served from it.
import t from 'tap';
import { hashPassword, VerifiedLogins } from '../../src/mailstore/password.js';

t.test('a verified login is remembered for its TTL; a wrong or changed password is checked in full', async (t) => {
  let now = 0;
  const logins = new VerifiedLogins(() => now, 1000, 2);
  const stored = await hashPassword('right one');
  const timed = async (password: string, hash = stored) => {
    const t0 = performance.now();
    const ok = await logins.verify(password, hash);
    return { ok, ms: performance.now() - t0 };
  };
  const first = await timed('right one');
  t.ok(first.ok, 'the right password');
  const again = await timed('right one');
  t.ok(again.ok, 'again');
  t.ok(again.ms < first.ms / 4, `remembered: ${again.ms.toFixed(2)} ms against ${first.ms.toFixed(1)} ms for scrypt`);
  t.notOk((await timed('wrong one')).ok, 'a wrong password fails');
  t.notOk((await timed('Right one')).ok, 'the password compared exactly');
  const changed = await hashPassword('new one');
  t.notOk((await timed('right one', changed)).ok, 'the old password against the new hash fails');
  t.ok((await timed('new one', changed)).ok, 'the new one passes');
  now = 1001;
  const expired = await timed('right one');
  t.ok(expired.ok, 'after the TTL: checked again, and passes');
  t.ok(expired.ms > again.ms * 4, 'with scrypt');
  // At most `max` entries: a third pair pushes out the oldest.
  await logins.verify('new one', changed);
  const third = await hashPassword('third');
  await logins.verify('third', third);
  t.ok((await timed('third', third)).ms < first.ms / 4, 'the newest is remembered');
});
