// Submission limits (spec: Limits, SMTP): 60 messages per hour per mailbox login (451 4.7.0), 10 failed
// logins per IP or username in 15 minutes block further attempts (454 4.7.0, shared with POP3 through the
// appliance's one guard), and a send refused by a quota or cap answers 451 4.7.1. Time is the fake clock.
import t from 'tap';
import { HOUR, MINUTE } from '../../src/core/clock.js';
import { setNewSenderPause } from '../../src/services/sending/quotas.js';
import { createOtherTeam } from '../helpers/app.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { ALICE, submissionFixture } from './setup.js';

const errorOf = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as { responseCode?: number; response?: string });
const mail = (n: number) => ({ from: ALICE.user, to: 'bob@dest.example', subject: `n${n}`, text: 'x' });

t.test('submission limits', async (t) => {
  const f = await submissionFixture(t);
  const { app } = f;
  const guards = app.appliance.loginGuards;

  t.test('60 messages per hour per mailbox login, then 451 4.7.0 until the window ends', async (t) => {
    const x = f.transport(ALICE);
    // 58 submissions counted the way the listener counts them, then the 59th and 60th over SMTP.
    for (let i = 0; i < 58; i++) t.ok(guards.mailboxSubmission(String(f.alice)).allowed);
    t.match((await x.sendMail(mail(59))).response, /^250 /);
    t.match((await x.sendMail(mail(60))).response, /^250 /);
    const refused = await errorOf(x.sendMail(mail(61)));
    t.equal(refused?.responseCode, 451);
    t.match(refused?.response, /^451 4\.7\.0 Rate limit: at most 60 messages per hour per mailbox; try again in \d+ s/);
    const key = f.transport({ user: 'apikey', pass: app.apiKey });
    t.match((await key.sendMail({ ...mail(62), from: 'other@acme.example' })).response, /^250 /, 'API-key submission has no per-message limit');
    app.clock.advance(HOUR);
    t.match((await x.sendMail(mail(63))).response, /^250 /, 'a new window');
    await f.drain();
  });

  t.test('10 failed logins for one username block it (454 4.7.0), the right password included, for 15 minutes', async (t) => {
    for (let i = 0; i < 10; i++) {
      const err = await errorOf(f.transport({ user: ALICE.user, pass: `wrong-${i}` }).sendMail(mail(i)));
      t.equal(err?.responseCode, 535, `attempt ${i + 1}: 535`);
    }
    const blocked = await errorOf(f.transport(ALICE).sendMail(mail(100)));
    t.equal(blocked?.responseCode, 454);
    t.match(blocked?.response, /^454 4\.7\.0 Too many failed logins; try again later/);
    t.ok(guards.loginBlocked('203.0.113.9', ALICE.user), 'the username is blocked from anywhere');
    app.clock.advance(15 * MINUTE);
    t.notOk(guards.loginBlocked('127.0.0.1', ALICE.user));
    t.match((await f.transport(ALICE).sendMail(mail(101))).response, /^250 /, 'the window is over');
    await f.drain();
  });

  t.test('10 failed logins from one IP block every username from it', async (t) => {
    for (let i = 0; i < 10; i++) {
      const err = await errorOf(f.transport({ user: `nobody${i}@acme.example`, pass: 'x' }, { implicit: true }).sendMail(mail(i)));
      t.equal(err?.responseCode, 535);
    }
    const err = await errorOf(f.transport({ user: 'apikey', pass: app.apiKey }, { implicit: true }).sendMail({ ...mail(1), from: 'a@acme.example' }));
    t.equal(err?.responseCode, 454, 'even a valid API key, from this IP');
    app.clock.advance(15 * MINUTE);
  });

  t.test('a quota or cap refusal answers 451 4.7.1', async (t) => {
    // A young team while the operator pauses new senders: the send path refuses with send_limit_exceeded.
    const other = await createOtherTeam(app);
    await addVerifiedDomain(app, f.dns, 'young.example', other.apiKey);
    await setNewSenderPause(app.appliance.ctx, true);
    t.teardown(() => setNewSenderPause(app.appliance.ctx, false));
    const x = f.transport({ user: 'apikey', pass: other.apiKey });
    const err = await errorOf(x.sendMail({ from: 'hello@young.example', to: 'bob@dest.example', subject: 'x', text: 'x' }));
    t.equal(err?.responseCode, 451);
    t.match(err?.response, /^451 4\.7\.1 /);
    const emails = await app.request<{ meta: { total: number } }>('GET', '/emails', { key: other.apiKey });
    t.equal(emails.body.meta.total, 0, 'nothing was stored');
    await setNewSenderPause(app.appliance.ctx, false);
    t.match((await x.sendMail({ from: 'hello@young.example', to: 'bob@dest.example', subject: 'x', text: 'x' })).response, /^250 /);
  });
});
