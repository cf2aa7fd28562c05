// The SMTP figures for the submission listener: 60 messages per mailbox per hour, and 10 failed logins
// per IP or per username within 15 minutes block further attempts until that window ends.
import t from 'tap';
import { FakeClock, MINUTE, SECOND } from '../../src/core/clock.js';
import { SmtpGuards } from '../../src/limits/smtp-guards.js';
import { isSendQuotaRefusal, QUOTA_SMTP_REPLY } from '../../src/services/sending/quotas.js';
import { AppError } from '../../src/core/errors.js';

t.test('mailbox submissions: 60 per hour per mailbox, fixed window', async (t) => {
  const clock = new FakeClock();
  const g = new SmtpGuards(clock);
  for (let i = 1; i <= 60; i++) if (!g.mailboxSubmission('mb1').allowed) t.fail(`message ${i}`);
  t.equal(g.mailboxSubmission('mb1').allowed, false, 'the 61st in the hour');
  t.equal(g.mailboxSubmission('mb2').allowed, true, 'per mailbox');
  clock.advance(60 * MINUTE - SECOND);
  t.equal(g.mailboxSubmission('mb1').allowed, false);
  clock.advance(SECOND);
  t.equal(g.mailboxSubmission('mb1').allowed, true, 'a new window');
});

t.test('failed logins: 10 from one IP or for one username within 15 minutes block until the window ends', async (t) => {
  const clock = new FakeClock();
  const g = new SmtpGuards(clock);
  for (let i = 0; i < 9; i++) g.loginFailed('10.0.0.1', `user${i}@x.test`);
  t.equal(g.loginBlocked('10.0.0.1', 'someone@x.test'), false, 'nine failures');
  g.loginFailed('10.0.0.1', 'last@x.test');
  t.equal(g.loginBlocked('10.0.0.1', 'someone@x.test'), true, 'the tenth blocks the IP');
  t.equal(g.loginBlocked('10.0.0.2', 'someone@x.test'), false, 'another IP is not blocked');
  for (let i = 0; i < 10; i++) g.loginFailed(`10.1.0.${i}`, 'Victim@x.test');
  t.equal(g.loginBlocked('10.9.9.9', 'victim@x.test'), true, 'ten for one username from many IPs block the username');
  clock.advance(15 * MINUTE);
  t.equal(g.loginBlocked('10.0.0.1', 'someone@x.test'), false, 'cleared when the window ends');
  t.equal(g.loginBlocked('10.9.9.9', 'victim@x.test'), false);
});

t.test('quota refusals of a submitted message are 451', async (t) => {
  t.same(QUOTA_SMTP_REPLY, { code: 451, enhanced: '4.7.1' });
  for (const code of ['monthly_limit_exceeded', 'daily_limit_exceeded', 'send_limit_exceeded'] as const) t.ok(isSendQuotaRefusal(new AppError(429, code, 'x')), code);
  t.notOk(isSendQuotaRefusal(new AppError(429, 'rate_limit_exceeded', 'x')));
});
