// Email log retention (spec: Limits, Account limits): emails older than their team's plan keeps are
// deleted with their recipients, attachments and timeline. A wake-up (at start, then hourly: the
// appliance's timer, which holds no work) looks for expired emails and, when there are some, enqueues the
// durable retention job. The job deletes in small batches, one short transaction each, so the API is never
// held up: after a full batch it runs again at once (other jobs and requests interleave), after a short
// one it is done. Mailboxes deleted through the API (a soft delete: the address stops receiving and
// logging in at once) are purged with their messages after MAILBOX_PURGE_GRACE_MS, by the same job.
// The mail store's change feed (one row per message change, for IMAP sessions' updates) keeps
// MAIL_CHANGES_WINDOW_MS of changes; older ones are pruned by the same job. A session whose cursor is older
// than what is kept resynchronises from the messages (`syncChanges` answers null); CONDSTORE's CHANGEDSINCE
// reads the messages' own MODSEQ, and QRESYNC (which would need old expunges) is not offered.
import type { AppContext } from '../context.js';
import { DAY, HOUR } from '../core/clock.js';
import type { JobOutcome } from '../jobs/queue.js';
import { CHANGE_PRUNE_BATCH } from '../mailstore/index.js';
import { PLANS } from '../config.js';
import { PLAN_LIMITS } from './limits.js';

export const RETENTION_JOB = 'limits.retention';
export const RETENTION_BATCH = 200;
export const RETENTION_INTERVAL_MS = HOUR;
/** A soft-deleted mailbox keeps its messages this long (an operator can still restore it), then is purged. */
export const MAILBOX_PURGE_GRACE_MS = 30 * DAY;
/** Mailboxes purged per job run (each with all its messages, one transaction each). */
export const MAILBOX_PURGE_BATCH = 10;
/** How long the mail store's change feed keeps a change. */
export const MAIL_CHANGES_WINDOW_MS = 7 * DAY;

const purgeCutoff = (ctx: AppContext) => new Date(ctx.clock.now().getTime() - MAILBOX_PURGE_GRACE_MS);
const changesCutoff = (ctx: AppContext) => new Date(ctx.clock.now().getTime() - MAIL_CHANGES_WINDOW_MS);

/** Enqueues the retention job when some email has expired, a deleted mailbox is due or old mail store changes are kept (the dedupe key keeps one at a time). True when it did. */
export async function scheduleRetention(ctx: AppContext): Promise<boolean> {
  if ((await expiredEmailIds(ctx, 1)).length === 0 && !(await ctx.mailstore.hasDeletedAccounts(purgeCutoff(ctx))) && !(await ctx.mailstore.hasChangesBefore(changesCutoff(ctx)))) return false;
  return (await ctx.jobs.enqueue(ctx.db, RETENTION_JOB, {}, { dedupeKey: RETENTION_JOB })) !== null;
}

/**
 * Ids of at most `limit` expired emails, oldest first per plan. An email still waiting for delivery
 * (queued, e.g. scheduled far ahead, or sending with a retry due) is kept until it is done.
 */
async function expiredEmailIds(ctx: AppContext, limit: number): Promise<number[]> {
  const now = ctx.clock.now().getTime();
  const ids: number[] = [];
  for (const plan of PLANS) {
    const days = PLAN_LIMITS[plan].retentionDays;
    if (!Number.isFinite(days) || ids.length >= limit) continue;
    const cutoff = new Date(now - days * DAY).toISOString();
    const rows = await ctx.db('emails as e')
      .join('teams as t', 't.id', 'e.team_id')
      .where('t.plan', plan)
      .andWhere('e.created_at', '<', cutoff)
      .whereNull('e.job_id')
      .whereNotIn('e.status', ['queued', 'sending'])
      .orderBy('e.id')
      .limit(limit - ids.length)
      .select<Array<{ id: number }>>('e.id');
    ids.push(...rows.map((r) => r.id));
  }
  return ids;
}

/** Deletes at most `limit` expired emails with their recipients, attachments and timeline; returns how many. */
export async function deleteExpiredEmails(ctx: AppContext, limit = RETENTION_BATCH): Promise<number> {
  const ids = await expiredEmailIds(ctx, limit);
  if (ids.length === 0) return 0;
  await ctx.db.transaction(async (trx) => {
    for (const table of ['email_events', 'email_attachments', 'email_recipients']) await trx(table).whereIn('email_id', ids).delete();
    await trx('emails').whereIn('id', ids).delete();
  });
  return ids.length;
}

/** The job handler: one batch; again at once after a full one, done after a short one. */
export async function runRetention(ctx: AppContext): Promise<JobOutcome> {
  const deleted = await deleteExpiredEmails(ctx);
  if (deleted > 0) ctx.log.info({ deleted }, 'retention: deleted expired emails');
  const purged = await ctx.mailstore.purgeDeletedAccounts(purgeCutoff(ctx), MAILBOX_PURGE_BATCH);
  if (purged > 0) ctx.log.info({ purged }, 'retention: purged deleted mailboxes');
  const pruned = await ctx.mailstore.pruneChanges(changesCutoff(ctx));
  if (pruned > 0) ctx.log.info({ pruned }, 'retention: pruned mail store changes');
  if (deleted >= RETENTION_BATCH || purged >= MAILBOX_PURGE_BATCH || pruned >= CHANGE_PRUNE_BATCH) return { retryAt: ctx.clock.now() };
}

/** The hourly wake-up of a running appliance; returns a stop function. */
export function startRetentionTimer(ctx: AppContext, everyMs = RETENTION_INTERVAL_MS): () => void {
  const timer = setInterval(() => {
    scheduleRetention(ctx).catch((err: unknown) => ctx.log.error({ err }, 'retention: could not schedule'));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
