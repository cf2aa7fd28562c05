// The unsubscribe token on its own: 56 base32 characters; every single-bit change refused; bound to the
// contact's and topic's public ids (a row key reused by a new contact does not inherit an old token); a key
// of its own derived from the master key (another box, another key); expiry after a year.
import t from 'tap';
import { base32Decode, base32Encode } from '../../src/core/base32.js';
import { DAY } from '../../src/core/clock.js';
import { readUnsubscribeToken, signUnsubscribeToken } from '../../src/services/audience/unsubscribe-tokens.js';
import { startTestApp } from '../helpers/app.js';

t.test('tokens: shape, tampering, binding, key, expiry', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  const made = await app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email: 'ann@tok.test' } });
  const topic = await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name: 'News', default_subscription: 'opt_in' } });
  const contactRow = await ctx.db('contacts').where('id', made.body.contact.id).first<{ pk: number; id: string }>();
  const topicRow = await ctx.db('topics').where('id', topic.body.topic.id).first<{ pk: number; id: string }>();
  const token = signUnsubscribeToken(ctx, { contact: contactRow!, topic: topicRow!, emailKey: 123456 }, ctx.clock.now());
  t.match(token, /^[a-z2-7]{56}$/);

  const good = await readUnsubscribeToken(ctx, ctx.db, token);
  t.ok(good.ok);
  if (good.ok) t.same([good.target.contact.id, good.target.topic?.id, good.target.emailKey], [made.body.contact.id, topic.body.topic.id, 123456]);
  t.ok((await readUnsubscribeToken(ctx, ctx.db, token.toUpperCase())).ok, 'any case');

  const bytes = base32Decode(token)!;
  let refused = 0;
  for (let bit = 0; bit < bytes.length * 8; bit++) {
    const changed = Buffer.from(bytes);
    changed[bit >> 3]! ^= 1 << (bit & 7);
    const check = await readUnsubscribeToken(ctx, ctx.db, base32Encode(changed));
    if (!check.ok && check.reason === 'invalid') refused++;
  }
  t.equal(refused, bytes.length * 8, 'every one of the 280 single-bit changes is refused');

  // The same row keys under other public ids (a contact deleted and its key reused) do not verify.
  const forged = signUnsubscribeToken(ctx, { contact: { pk: contactRow!.pk, id: 'ct_someoneelse' }, topic: topicRow!, emailKey: 123456 }, ctx.clock.now());
  t.same(await readUnsubscribeToken(ctx, ctx.db, forged), { ok: false, reason: 'invalid' });

  // Another box (another master key) cannot make tokens for this one.
  const other = await startTestApp(t);
  const foreign = signUnsubscribeToken(other.appliance.ctx, { contact: contactRow!, topic: topicRow!, emailKey: 123456 }, ctx.clock.now());
  t.same(await readUnsubscribeToken(ctx, ctx.db, foreign), { ok: false, reason: 'invalid' });

  app.clock.advance(365 * DAY);
  t.ok((await readUnsubscribeToken(ctx, ctx.db, token)).ok, 'good for a year');
  app.clock.advance(DAY);
  t.same(await readUnsubscribeToken(ctx, ctx.db, token), { ok: false, reason: 'expired' });
});
