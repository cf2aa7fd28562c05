// The SMTP figures of the spec's Limits section as one object the submission listener holds (made by the
// composition root, counters in memory, time from the context clock): the per-mailbox submission rate and
// the failed-login blocks. Quota refusals of a send are a different matter: services/sending/quotas.ts, answered 451.
import type { Clock } from '../core/clock.js';
import { FixedWindowCounter, type Hit } from './fixed-window.js';
import { SMTP_LIMITS } from './table.js';

export class SmtpGuards {
  private readonly submissions: FixedWindowCounter;
  private readonly failures: FixedWindowCounter;

  constructor(clock: Clock) {
    this.submissions = new FixedWindowCounter(clock);
    this.failures = new FixedWindowCounter(clock);
  }

  /** Counts one message submitted by a mailbox login; `allowed: false` past 60 in the hour (answer with a rate-limit reply). */
  mailboxSubmission(mailboxId: string): Hit {
    const { limit, windowMs } = SMTP_LIMITS.mailboxSubmissions;
    return this.submissions.hit(`mailbox:${mailboxId}`, limit, windowMs);
  }

  /** True while the IP or the username has had 10 failed logins in its current 15-minute window. */
  loginBlocked(ip: string, username: string): boolean {
    const { limit } = SMTP_LIMITS.failedLogins;
    return this.failures.peek(`ip:${ip}`).count >= limit || this.failures.peek(`user:${username.toLowerCase()}`).count >= limit;
  }

  /** Records a failed login against both the IP and the username. */
  loginFailed(ip: string, username: string): void {
    const { limit, windowMs } = SMTP_LIMITS.failedLogins;
    this.failures.hit(`ip:${ip}`, limit, windowMs);
    this.failures.hit(`user:${username.toLowerCase()}`, limit, windowMs);
  }
}
