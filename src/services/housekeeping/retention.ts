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
// reads the messages' own MODSEQ, and QRESYNC reads the store's tombstones (mailstore/vanished.ts), kept apart.
// The team's other logs follow its email retention: the event log (GET /events), webhook deliveries (but
// one still pending) and inbound emails with their attachments, by the same job, 200 rows a transaction.
// And, by age, in batches of 200 (each area prunes its own rows, see each function):
// - finished workflow runs (completed, exited, failed) with their steps, kept as long as the team's plan keeps
//   emails, at most WORKFLOW_RUN_KEEP_MAX_DAYS (the default Enterprise plan keeps emails forever);
// - OAuth authorization codes and access/refresh tokens a day after they expired (OAUTH_EXPIRED_KEEP_MS);
// - the provider block counters (blocking bounces per provider and hour) after 7 days (PROVIDER_BLOCKS_KEEP_MS);
// - contacts a double opt-in signup created and nobody confirmed, 30 days after their last link expired, unless
//   they have other data (automation/signup-forms.ts `pruneUnconfirmedSignups`).
import type { AppContext } from '../../context.js';
import { DAY, HOUR } from '../../core/clock.js';
import type { JobOutcome } from '../../jobs/queue.js';
import { CHANGE_PRUNE_BATCH } from '../../mailstore/index.js';
import { PLANS, type Plan } from '../../config.js';
import { OAUTH_EXPIRED_KEEP_MS, PLAN_LIMITS, pruneExpiredOAuth } from '../platform/index.js';
import { PROVIDER_BLOCKS_KEEP_MS, pruneProviderBlocks } from '../sending/index.js';
import { CONFIRM_LIFETIME_DAYS, pruneFinishedRuns, pruneUnconfirmedSignups, UNCONFIRMED_KEEP_DAYS } from '../automation/index.js';

export const RETENTION_JOB = 'limits.retention';
export const RETENTION_BATCH = 200;
export const RETENTION_INTERVAL_MS = HOUR;
/** A soft-deleted mailbox keeps its messages this long (an operator can still restore it), then is purged. */
export const MAILBOX_PURGE_GRACE_MS = 30 * DAY;
/** Mailboxes purged per job run (each with all its messages, one transaction each). */
export const MAILBOX_PURGE_BATCH = 10;
/** How long the mail store's change feed keeps a change. */
export const MAIL_CHANGES_WINDOW_MS = 7 * DAY;

/** A finished workflow run is kept as long as its team's plan keeps emails, and at most this long. */
export const WORKFLOW_RUN_KEEP_MAX_DAYS = 90;

const purgeCutoff = (ctx: AppContext) => new Date(ctx.clock.now().getTime() - MAILBOX_PURGE_GRACE_MS);
const changesCutoff = (ctx: AppContext) => new Date(ctx.clock.now().getTime() - MAIL_CHANGES_WINDOW_MS);

/** Enqueues the retention job when some email or log row has expired, a deleted mailbox is due or old mail store changes are kept (the dedupe key keeps one at a time). True when it did. */
export async function scheduleRetention(ctx: AppContext): Promise<boolean> {
  const due =
    (await expiredEmailIds(ctx, 1)).length > 0 ||
    (await expiredLogRows(ctx, 1)).length > 0 ||
    (await ctx.mailstore.hasDeletedAccounts(purgeCutoff(ctx))) ||
    (await ctx.mailstore.hasChangesBefore(changesCutoff(ctx))) ||
    (await othersDue(ctx));
  if (!due) return false;
  return (await ctx.jobs.enqueue(ctx.db, RETENTION_JOB, {}, { dedupeKey: RETENTION_JOB })) !== null;
}

/** When a finished workflow run of a team on `plan` is old enough to go. */
function runCutoff(plan: string, now: number): Date {
  const days = Math.min(PLAN_LIMITS[plan as Plan]?.retentionDays ?? Infinity, WORKFLOW_RUN_KEEP_MAX_DAYS);
  return new Date(now - days * DAY);
}

/** Whether a finished workflow run, an expired OAuth code or token, an old provider block count or an unconfirmed contact is due (indexed look-ups). */
async function othersDue(ctx: AppContext): Promise<boolean> {
  const now = ctx.clock.now().getTime();
  const oauth = new Date(now - OAUTH_EXPIRED_KEEP_MS).toISOString();
  const unconfirmed = new Date(now - (CONFIRM_LIFETIME_DAYS + UNCONFIRMED_KEEP_DAYS) * DAY).toISOString();
  const runs = PLANS.map(() => `EXISTS (SELECT 1 FROM teams AS t CROSS JOIN workflow_runs AS r WHERE t.plan = ? AND r.team_id = t.id AND r.active = 0 AND r.finished_at < ?)`);
  const [row] = (await ctx.db.raw(
    `SELECT ${runs.join(' OR ')}
        OR EXISTS (SELECT 1 FROM oauth_codes WHERE expires_at < ?) OR EXISTS (SELECT 1 FROM oauth_tokens WHERE expires_at < ?)
        OR EXISTS (SELECT 1 FROM provider_blocks WHERE hour < ?)
        OR EXISTS (SELECT 1 FROM contacts AS c WHERE c.opt_in_status = 'pending'
             AND EXISTS (SELECT 1 FROM signups AS s WHERE s.contact_pk = c.pk)
             AND NOT EXISTS (SELECT 1 FROM signups AS s WHERE s.contact_pk = c.pk AND (s.status <> 'pending' OR s.created_at >= ?))) AS due`,
    [...PLANS.flatMap((p) => [p, runCutoff(p, now).toISOString()]), oauth, oauth, new Date(now - PROVIDER_BLOCKS_KEEP_MS).toISOString().slice(0, 13), unconfirmed],
  )) as Array<{ due: number }>;
  return Boolean(row?.due);
}

/** Prunes one batch of each of the others (see the head of this file); returns the largest count. */
export async function pruneOthers(ctx: AppContext, limit = RETENTION_BATCH): Promise<number> {
  const now = ctx.clock.now().getTime();
  let runs = 0;
  for (const plan of PLANS) runs += await pruneFinishedRuns(ctx, plan, runCutoff(plan, now), limit - runs);
  const oauth = await pruneExpiredOAuth(ctx, new Date(now - OAUTH_EXPIRED_KEEP_MS), limit);
  const blocks = await pruneProviderBlocks(ctx, new Date(now - PROVIDER_BLOCKS_KEEP_MS), limit);
  const contacts = await pruneUnconfirmedSignups(ctx, limit);
  if (runs + oauth + blocks + contacts > 0) ctx.log.info({ workflowRuns: runs, oauth, providerBlocks: blocks, unconfirmedContacts: contacts }, 'retention: pruned');
  return Math.max(runs, oauth, blocks, contacts);
}

/** What a plan keeps starts at this time (ISO); null when it keeps everything (or the plan is unknown). */
function retentionCutoff(plan: string, now: number): string | null {
  const days = PLAN_LIMITS[plan as Plan]?.retentionDays;
  return days !== undefined && Number.isFinite(days) ? new Date(now - days * DAY).toISOString() : null;
}

/**
 * Ids of at most `limit` expired emails, oldest first per plan. An email still waiting for delivery
 * (queued, e.g. scheduled far ahead, or sending with a retry due) is kept until it is done.
 */
async function expiredEmailIds(ctx: AppContext, limit: number): Promise<number[]> {
  const now = ctx.clock.now().getTime();
  const ids: number[] = [];
  for (const plan of PLANS) {
    const cutoff = retentionCutoff(plan, now);
    if (cutoff === null || ids.length >= limit) continue;
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

/** A team's log, kept as long as its plan keeps emails; `owner` is the column naming the team or its webhook. */
const TEAM_LOGS = [
  { table: 'events', owner: 'team_id' },
  { table: 'inbound_emails', owner: 'team_id' }, // its attachments go with it (ON DELETE CASCADE)
  { table: 'webhook_deliveries', owner: 'webhook_id' },
] as const;

type LogRows = { table: (typeof TEAM_LOGS)[number]['table']; ids: number[] };

/**
 * At most `limit` expired rows of the teams' logs, oldest first per owner. Ids grow with `created_at`, so
 * each owner's first rows by id (its index) are read and filtered: never a scan of a long log for rows
 * that are not there.
 */
async function expiredLogRows(ctx: AppContext, limit: number): Promise<LogRows[]> {
  const now = ctx.clock.now().getTime();
  const found: LogRows[] = [];
  let left = limit;
  const teams = await ctx.db('teams').select<Array<{ id: string; plan: string }>>('id', 'plan');
  for (const team of teams) {
    const cutoff = retentionCutoff(team.plan, now);
    if (cutoff === null) continue;
    const webhookIds = (await ctx.db('webhooks').where({ team_id: team.id }).select<Array<{ id: number }>>('id')).map((w) => w.id);
    for (const log of TEAM_LOGS) {
      for (const owner of log.owner === 'team_id' ? [team.id] : webhookIds) {
        if (left <= 0) return found;
        const rows = await ctx.db(log.table).where(log.owner, owner).orderBy('id').limit(left).select<Array<{ id: number; created_at: string; status?: string }>>(log.table === 'webhook_deliveries' ? ['id', 'created_at', 'status'] : ['id', 'created_at']);
        const ids = rows.filter((r) => r.created_at < cutoff && r.status !== 'pending').map((r) => r.id);
        if (ids.length > 0) found.push({ table: log.table, ids });
        left -= ids.length;
      }
    }
  }
  return found;
}

/** Deletes at most `limit` expired log rows (events, webhook deliveries, inbound emails), one transaction; returns how many. */
export async function deleteExpiredLogs(ctx: AppContext, limit = RETENTION_BATCH): Promise<number> {
  const found = await expiredLogRows(ctx, limit);
  if (found.length === 0) return 0;
  await ctx.db.transaction(async (trx) => {
    for (const { table, ids } of found) await trx(table).whereIn('id', ids).delete();
  });
  return found.reduce((n, f) => n + f.ids.length, 0);
}

/** The job handler: one batch; again at once after a full one, done after a short one. */
export async function runRetention(ctx: AppContext): Promise<JobOutcome> {
  const deleted = await deleteExpiredEmails(ctx);
  if (deleted > 0) ctx.log.info({ deleted }, 'retention: deleted expired emails');
  const logs = await deleteExpiredLogs(ctx);
  if (logs > 0) ctx.log.info({ deleted: logs }, 'retention: deleted expired events, webhook deliveries and inbound emails');
  const purged = await ctx.mailstore.purgeDeletedAccounts(purgeCutoff(ctx), MAILBOX_PURGE_BATCH);
  if (purged > 0) ctx.log.info({ purged }, 'retention: purged deleted mailboxes');
  const pruned = await ctx.mailstore.pruneChanges(changesCutoff(ctx));
  if (pruned > 0) ctx.log.info({ pruned }, 'retention: pruned mail store changes');
  const others = await pruneOthers(ctx);
  if (deleted >= RETENTION_BATCH || logs >= RETENTION_BATCH || purged >= MAILBOX_PURGE_BATCH || pruned >= CHANGE_PRUNE_BATCH || others >= RETENTION_BATCH) return { retryAt: ctx.clock.now() };
}

/** The hourly wake-up of a running appliance; returns a stop function. */
export function startRetentionTimer(ctx: AppContext, everyMs = RETENTION_INTERVAL_MS): () => void {
  const timer = setInterval(() => {
    scheduleRetention(ctx).catch((err: unknown) => ctx.log.error({ err }, 'retention: could not schedule'));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
