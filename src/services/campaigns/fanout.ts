// A broadcast on its way out, as durable jobs (src/jobs/queue.ts) on the `campaigns` lane:
//
//   broadcast.start   at send time (or scheduled_at): freezes the audience into broadcast_recipients, in pages
//                     (INSERT … SELECT over the team's contacts in key order, at most the highest key when
//                     sending started), each page its own transaction; a rerun goes on after the last key
//                     frozen. Then, in one transaction: the count, the quota (a scheduled broadcast that no
//                     longer fits fails here, before anything goes out), the A/B split, the first fan-out job
//                     and the winner job.
//   broadcast.fanout  one page (MAIL_BROADCAST_PAGE_SIZE recipients) per run, handed to the send path
//                     (sendEmails: each recipient an ordinary email with its merge tags, unsubscribe links and
//                     the broadcast's id), due as of the broadcast's start so that it is leased before the
//                     deliveries it queued. Each recipient row is marked with its email in the transaction that
//                     writes the email (SendOptions.afterWriteAll: one statement for the page's emails in that
//                     transaction), so a crash neither loses nor doubles one: a
//                     rerun takes only rows still pending. Then it enqueues the next run. It waits (retries a
//                     moment later) while MAIL_BROADCAST_MAX_IN_FLIGHT of the broadcast's emails are still
//                     waiting for delivery, so a campaign never queues 100,000 deliveries ahead of the
//                     transactional mail that arrives meanwhile. Runs for one broadcast never overlap (one
//                     process owns the database; a lock per broadcast).
//   broadcast.winner  at test_ends_at: the A/B winner (highest open rate), then the fan-out of the rest.
//   broadcast.settle  after the last page: waits until no email of the broadcast is still queued (each was
//                     handed to the MTA), then `sent` and the broadcast.sent event.
import type { AppContext } from '../../context.js';
import { execute, placeholders, queryRows, readsOf, settleAll, type Queryable } from '../../db/index.js';
import { updateFromValues } from '../../db/batcher.js';
import { write } from '../../db/script.js';
import { AppError } from '../../core/errors.js';
import { recordEvent } from '../../events/recorder.js';
import type { Job, JobOutcome } from '../../jobs/queue.js';
import { campaignAudience, marketableContactSql } from '../audience/index.js';
import { cancelEmail, getUsage, sendEmails, type SendEmailInput } from '../sending/index.js';
import { contactUnsubscribeUrl, loadTemplate, mergeScope, parseContent, renderCopy, variantSource, type MergeContact, type ParsedContent, type VariantContent } from './content.js';

export const START_JOB = 'broadcast.start';
export const FANOUT_JOB = 'broadcast.fanout';
export const WINNER_JOB = 'broadcast.winner';
export const SETTLE_JOB = 'broadcast.settle';
/** The job lane of campaign work: at most three quarters of the worker's slots, the rest stays for other work. */
export const CAMPAIGN_LANE = 'campaigns';
/** Contacts frozen per transaction. */
export const FREEZE_PAGE = 5_000;
/** How soon a fan-out looks again while too many of its emails wait for delivery, and a settle check again (ms). */
const BACKOFF_MS = 100;
const SETTLE_POLL_MS = 1_000;

export interface BroadcastRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  from_header: string;
  reply_to: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  template_id: string | null;
  tags: string;
  segment_ids: string;
  topic_id: string | null;
  ab_test: string | null;
  status: 'draft' | 'scheduled' | 'testing' | 'waiting_for_winner' | 'sending' | 'sent' | 'cancelled' | 'failed';
  scheduled_at: string | null;
  resend_of: string | null;
  resend_to: string | null;
  api_key_id: string | null;
  mode: 'live' | 'test';
  audience_max_pk: number | null;
  start_job_id: number | null;
  frozen: number;
  recipient_count: number;
  test_ends_at: string | null;
  winner: string | null;
  winner_reason: string | null;
  failure: string | null;
  started_at: string | null;
  sent_at: string | null;
  cancelled_at: string | null;
  created_at: string;
  updated_at: string;
}

interface AbTest {
  variants: VariantContent[];
  test_duration_minutes: number;
  test_percentage: number;
}

const abOf = (row: BroadcastRow): AbTest | null => (row.ab_test === null ? null : (JSON.parse(row.ab_test) as AbTest));

/** A human open: tracking marks the opens of image proxies that fetch every image (Apple MPP, …) `machine`. */
export const HUMAN_SQL = "coalesce(json_extract(ev.data, '$.machine'), 0) = 0";

/**
 * Who a broadcast reaches, as a predicate over `contacts AS c`: its segments and topic (audience's
 * campaignAudience, always only marketable contacts); a re-send: the original's recipients that got an email,
 * filtered by what they did with it, and still marketable (and receiving the topic).
 */
export async function audienceRule(q: Queryable, row: BroadcastRow, now: Date): Promise<{ sql: string; bindings: unknown[] }> {
  if (row.resend_of === null) return campaignAudience(q, row.team_id, { segmentIds: JSON.parse(row.segment_ids) as string[], topicId: row.topic_id }, now);
  const parent = (await q('broadcasts').where({ team_id: row.team_id, id: row.resend_of }).first('pk')) as { pk: number } | undefined;
  const did = (type: string) => `EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = pr.email_id AND ev.type = '${type}' AND ${HUMAN_SQL})`;
  const filter = row.resend_to === 'non_openers' ? `AND NOT ${did('opened')}` : row.resend_to === 'non_clickers' ? `AND NOT ${did('clicked')}` : '';
  const within = `EXISTS (SELECT 1 FROM broadcast_recipients AS pr WHERE pr.broadcast_pk = ? AND pr.contact_pk = c.pk AND pr.status = 'queued' ${filter})`;
  if (row.topic_id === null) return { sql: `${within} AND ${marketableContactSql}`, bindings: [parent?.pk ?? 0] };
  const topical = await campaignAudience(q, row.team_id, { segmentIds: [], topicId: row.topic_id }, now);
  return { sql: `${within} AND ${topical.sql}`, bindings: [parent?.pk ?? 0, ...topical.bindings] };
}

// One fan-out (or start) at a time per broadcast: a second job for it waits for the first.
const locks = new WeakMap<AppContext, Map<number, Promise<unknown>>>();
async function exclusive<T>(ctx: AppContext, pk: number, fn: () => Promise<T>): Promise<T> {
  let map = locks.get(ctx);
  if (!map) locks.set(ctx, (map = new Map()));
  const before = map.get(pk) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const tail = run.catch(() => undefined);
  map.set(pk, tail);
  try {
    return await run;
  } finally {
    if (map.get(pk) === tail) map.delete(pk);
  }
}

async function load(q: Queryable, pk: number): Promise<BroadcastRow | undefined> {
  return q<BroadcastRow>('broadcasts').where({ pk }).first();
}

const ACTIVE = new Set<BroadcastRow['status']>(['scheduled', 'testing', 'waiting_for_winner', 'sending']);

// ---- start: freeze the audience ----

export async function runStart(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { pk } = job.payload as { pk: number };
  return exclusive(ctx, pk, async () => {
    let row = await load(ctx.db, pk);
    if (!row || !ACTIVE.has(row.status) || row.frozen) return;
    const at = ctx.clock.now();
    if (row.status === 'scheduled' || row.audience_max_pk === null) {
      // Sending starts now: the audience is fixed at the contacts that exist now.
      const [max] = await queryRows<{ m: number | null }>(ctx.db, 'SELECT max(pk) AS m FROM contacts WHERE team_id = ?', [row.team_id]);
      const status = row.ab_test !== null ? 'testing' : 'sending';
      await ctx.db('broadcasts').where({ pk }).update({ status, audience_max_pk: max?.m ?? 0, started_at: row.started_at ?? at.toISOString(), updated_at: at.toISOString() });
      row = (await load(ctx.db, pk))!;
    }
    const rule = await audienceRule(ctx.db, row, at);
    for (;;) {
      const done = await ctx.db.transaction(async (trx) => {
        const now = await load(trx, pk);
        if (!now || !ACTIVE.has(now.status)) return true; // cancelled meanwhile
        const [last] = await queryRows<{ m: number | null }>(trx, 'SELECT max(contact_pk) AS m FROM broadcast_recipients WHERE broadcast_pk = ?', [pk]);
        const n = await execute(
          trx,
          `INSERT INTO broadcast_recipients (broadcast_pk, contact_pk, bucket, variant, status, email_id, error)
           SELECT ?, c.pk, abs(random() % 1000000000), NULL, 'pending', NULL, NULL FROM contacts AS c
           WHERE c.team_id = ? AND c.pk > ? AND c.pk <= ? AND ${rule.sql} ORDER BY c.pk LIMIT ?`,
          [pk, row!.team_id, last?.m ?? 0, row!.audience_max_pk ?? 0, ...rule.bindings, FREEZE_PAGE],
        );
        return n < FREEZE_PAGE;
      });
      if (done) break;
      await new Promise((resolve) => setImmediate(resolve)); // let requests in between pages
    }
    // The count and the quota (read outside the transaction: the one write connection would wait for itself).
    const [count] = await queryRows<{ n: number }>(ctx.db, 'SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_pk = ?', [pk]);
    const n = count?.n ?? 0;
    const refusal = await quotaRefusal(ctx, row, n);
    await ctx.db.transaction(async (trx) => {
      const fresh = await load(trx, pk);
      if (fresh && !ACTIVE.has(fresh.status)) await trx('broadcast_recipients').where({ broadcast_pk: pk, status: 'pending' }).update({ status: 'cancelled' });
      if (!fresh || !ACTIVE.has(fresh.status) || fresh.frozen) return;
      const now = ctx.clock.now();
      const update: Partial<BroadcastRow> = { frozen: 1, recipient_count: n, updated_at: now.toISOString() };
      if (refusal) {
        Object.assign(update, { status: 'failed', failure: refusal });
        await trx('broadcast_recipients').where({ broadcast_pk: pk }).update({ status: 'cancelled' });
      } else {
        const ab = abOf(fresh);
        if (ab) {
          await assignVariants(trx, pk, n, ab);
          const endsAt = new Date(now.getTime() + ab.test_duration_minutes * 60_000);
          update.test_ends_at = endsAt.toISOString();
          await ctx.jobs.enqueue(trx, WINNER_JOB, { pk }, { runAt: endsAt, lane: CAMPAIGN_LANE });
        }
        await ctx.jobs.enqueue(trx, FANOUT_JOB, { pk }, { lane: CAMPAIGN_LANE });
      }
      await trx('broadcasts').where({ pk }).update(update);
    });
  });
}

/** The quota at the start of a scheduled broadcast (a send now was checked by the request): a message, or null. */
async function quotaRefusal(ctx: AppContext, row: BroadcastRow, n: number): Promise<string | null> {
  if (row.mode === 'test') return null;
  const usage = await getUsage(ctx, row.team_id);
  if (usage.on_hold) return `sending is on hold for safety review (${usage.hold_reason ?? 'held by an operator'})`;
  if (usage.past_allowance === 'refused' && usage.allowance !== null && usage.sent + n > usage.allowance) {
    return `monthly_limit_exceeded: ${n} recipients and ${Math.max(0, usage.allowance - usage.sent)} emails left of the ${usage.plan} plan's ${usage.allowance} this month`;
  }
  return null;
}

/**
 * The A/B split: the test group is `test_percentage` % of the audience (rounded, at least one recipient per
 * variant while the audience allows), taken in the order of each recipient's random bucket; within it each
 * variant gets its share by weight (cumulative, so the shares add up exactly). The others wait for the winner.
 */
export async function assignVariants(trx: Queryable, pk: number, n: number, ab: AbTest): Promise<void> {
  const group = Math.min(n, Math.max(ab.variants.length, Math.round((n * ab.test_percentage) / 100)));
  const total = ab.variants.reduce((s, v) => s + v.weight, 0);
  let cum = 0;
  const bounds = ab.variants.map((v) => {
    cum += v.weight;
    return Math.round((group * cum) / total);
  });
  const cases = bounds.map((b, i) => `WHEN r < ${b} THEN ${i}`).join(' ');
  await execute(
    trx,
    `UPDATE broadcast_recipients AS br SET variant = x.v FROM (
       SELECT contact_pk, CASE ${cases} ELSE NULL END AS v
       FROM (SELECT contact_pk, row_number() OVER (ORDER BY bucket, contact_pk) - 1 AS r FROM broadcast_recipients WHERE broadcast_pk = ?)
     ) AS x WHERE br.broadcast_pk = ? AND br.contact_pk = x.contact_pk AND x.v IS NOT NULL`,
    [pk, pk],
  );
}

// ---- fan-out ----

interface PageRow extends MergeContact {
  contact_pk: number;
  variant: number | null;
  has_contact: number;
}

export async function runFanout(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { pk } = job.payload as { pk: number };
  return exclusive(ctx, pk, async () => {
    const row = await load(ctx.db, pk);
    if (!row || !row.frozen || (row.status !== 'testing' && row.status !== 'sending' && row.status !== 'waiting_for_winner')) return;
    const ab = abOf(row);
    const winnerIndex = ab && row.winner !== null ? ab.variants.findIndex((v) => v.name === row.winner) : null;
    // Too many of its emails still wait for delivery: look again in a moment (other work runs meanwhile).
    const [flight] = await queryRows<{ n: number }>(readsOf(ctx.db), "SELECT count(*) AS n FROM emails WHERE broadcast_id = ? AND status = 'queued'", [row.id]);
    if ((flight?.n ?? 0) >= ctx.config.broadcastMaxInFlight) return { retryAt: new Date(ctx.clock.now().getTime() + BACKOFF_MS) };

    const eligible = ab && row.winner === null ? 'AND br.variant IS NOT NULL' : '';
    const page = await queryRows<PageRow>(
      ctx.db,
      `SELECT br.contact_pk, br.variant, c.pk IS NOT NULL AS has_contact, c.pk, c.id, c.email, c.first_name, c.last_name, c.properties
       FROM broadcast_recipients AS br LEFT JOIN contacts AS c ON c.pk = br.contact_pk
       WHERE br.broadcast_pk = ? AND br.status = 'pending' ${eligible} ORDER BY br.contact_pk LIMIT ?`,
      [pk, ctx.config.broadcastPageSize],
    );
    if (page.length === 0) {
      await finishFanout(ctx, row);
      return;
    }
    await sendPage(ctx, row, ab, winnerIndex, page);
    // Cancelled while the page was being written: what it queued stays in too.
    const after = await load(ctx.db, pk);
    if (after?.status === 'cancelled') {
      await cancelQueuedEmails(ctx, row);
      return;
    }
    await ctx.jobs.enqueue(ctx.db, FANOUT_JOB, { pk }, { lane: CAMPAIGN_LANE, runAt: nextPageAt(ctx, row) });
  });
}

/**
 * When the next page is due: as of the broadcast's start, so that its one fan-out job is leased before the
 * deliveries its pages queued (the queue leases the oldest due first; otherwise each page would wait behind
 * every delivery of the one before). Never later than now.
 */
function nextPageAt(ctx: AppContext, row: BroadcastRow): Date {
  const now = ctx.clock.now();
  const started = row.started_at === null ? now.getTime() : Date.parse(row.started_at);
  return new Date(Math.min(started, now.getTime()));
}

/**
 * The parsed content per variant (index), and of the broadcast itself (-1). Parsed once per broadcast, not per
 * page: kept while the broadcast's row (updated_at) and its template's published version stay the same (the
 * template is looked up per page, so an unpublished one still fails the next page).
 */
async function contentsOf(ctx: AppContext, row: BroadcastRow, ab: AbTest | null): Promise<Map<number, ParsedContent>> {
  const template = await loadTemplate(ctx, row.team_id, row.template_id);
  const key = `${row.updated_at}\0${template ? `${template.id}:${template.version}` : ''}`;
  let cache = parsedContents.get(ctx);
  if (!cache) parsedContents.set(ctx, (cache = new Map()));
  const kept = cache.get(row.pk);
  if (kept && kept.key === key) return kept.contents;
  const base = { subject: row.subject, html: row.html, text: row.text };
  const map = new Map<number, ParsedContent>([[-1, parseContent(base, template)]]);
  ab?.variants.forEach((v, i) => map.set(i, parseContent(variantSource(base, v), template)));
  if (cache.size >= PARSED_CONTENTS_KEPT) cache.delete(cache.keys().next().value!);
  cache.set(row.pk, { key, contents: map });
  return map;
}
/** Broadcasts whose parsed content is kept (a few send at a time). */
const PARSED_CONTENTS_KEPT = 16;
const parsedContents = new WeakMap<AppContext, Map<number, { key: string; contents: Map<number, ParsedContent> }>>();
/** Recipients rendered between two yields to the event loop (a page's copies are rendered in slices). */
const RENDER_SLICE = 20;

async function sendPage(ctx: AppContext, row: BroadcastRow, ab: AbTest | null, winnerIndex: number | null, page: PageRow[]): Promise<void> {
  const at = ctx.clock.now();
  let contents: Map<number, ParsedContent>;
  const failed: Array<{ contact_pk: number; error: string }> = [];
  try {
    contents = await contentsOf(ctx, row, ab);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    // The template was unpublished or deleted since the send: every recipient of the page fails with why.
    await markFailed(ctx, row.pk, page.map((p) => ({ contact_pk: p.contact_pk, error: err.message })));
    return;
  }
  const topic = row.topic_id === null ? null : (((await ctx.db('topics').where({ team_id: row.team_id, id: row.topic_id }).first('pk', 'id')) as { pk: number; id: string } | undefined) ?? null);
  const replyTo = row.reply_to === null ? undefined : (JSON.parse(row.reply_to) as string[]);
  const tags = JSON.parse(row.tags) as string[];
  const inputs: SendEmailInput[] = [];
  const sent: PageRow[] = [];
  // The page's own link for `{{ unsubscribe_url }}` is signed only when some part reads it (a template may).
  const readsUrl = [...contents.values()].some((c) => c.template !== null || [c.subject, c.html, c.text].some((part) => part?.variables.includes('unsubscribe_url')));
  for (const [i, p] of page.entries()) {
    // Requests (a transactional POST /emails) get the event loop between slices of the page's rendering.
    if (i > 0 && i % RENDER_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    if (!p.has_contact) {
      failed.push({ contact_pk: p.contact_pk, error: 'the contact was deleted' });
      continue;
    }
    const content = contents.get(p.variant ?? winnerIndex ?? -1)!;
    try {
      const copy = renderCopy(content, mergeScope(p, readsUrl ? contactUnsubscribeUrl(ctx, p, topic, at) : null));
      inputs.push({
        from: row.from_header,
        to: [p.email],
        ...(replyTo ? { reply_to: replyTo } : {}),
        ...copy,
        tags,
        broadcast_id: row.id,
        ...(row.topic_id !== null ? { topic_id: row.topic_id } : { unsubscribe: true }),
      });
      sent.push(p);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      failed.push({ contact_pk: p.contact_pk, error: err.message });
    }
  }
  const sender = { teamId: row.team_id, apiKeyId: row.api_key_id, mode: row.mode };
  // Beside each email, in its transaction: the recipient marked with it, and the contact's last send (what the
  // engagement segments read: `inactive_90d` and `never_opened` are about contacts who were sent mail).
  const sentAt = at.toISOString();
  const results = await sendEmails(ctx, sender, inputs, {
    afterWriteAll: async (trx, emails) => {
      await settleAll([
        updateFromValues(
          trx,
          'broadcast_recipients',
          ['broadcast_pk', 'contact_pk'],
          { status: "'queued'", email_id: 'v.email_id' },
          emails.map((e) => ({ broadcast_pk: row.pk, contact_pk: sent[e.index]!.contact_pk, email_id: e.id })),
        ),
        row.mode === 'live' ? write(trx, `UPDATE contacts SET last_sent_at = ? WHERE pk IN (${placeholders(emails.length)})`, [sentAt, ...emails.map((e) => sent[e.index]!.contact_pk)]) : undefined,
      ]);
    },
  });
  results.forEach((r, i) => {
    if (r instanceof AppError) failed.push({ contact_pk: sent[i]!.contact_pk, error: `${r.code}: ${r.message}` });
  });
  if (failed.length > 0) await markFailed(ctx, row.pk, failed);
}

async function markFailed(ctx: AppContext, pk: number, rows: Array<{ contact_pk: number; error: string }>): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    for (const r of rows) {
      await execute(trx, "UPDATE broadcast_recipients SET status = 'failed', error = ? WHERE broadcast_pk = ? AND contact_pk = ? AND status = 'pending'", [r.error.slice(0, 500), pk, r.contact_pk]);
    }
  });
}

/** Nothing eligible is pending: an A/B test waits for its winner; otherwise the broadcast settles. */
async function finishFanout(ctx: AppContext, row: BroadcastRow): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const fresh = await load(trx, row.pk);
    if (!fresh) return;
    if (fresh.ab_test !== null && fresh.winner === null) {
      if (fresh.status === 'testing') await trx('broadcasts').where({ pk: row.pk }).update({ status: 'waiting_for_winner', updated_at: ctx.clock.now().toISOString() });
      return;
    }
    if (fresh.status === 'sending') await ctx.jobs.enqueue(trx, SETTLE_JOB, { pk: row.pk }, { lane: CAMPAIGN_LANE, dedupeKey: `${SETTLE_JOB}:${row.pk}` });
  });
}

/** Cancels the broadcast's emails still waiting for delivery (each through the send path's cancel); answers how many. */
export async function cancelQueuedEmails(ctx: AppContext, row: Pick<BroadcastRow, 'id' | 'team_id'>): Promise<number> {
  const queued = await queryRows<{ public_id: string }>(ctx.db, "SELECT public_id FROM emails WHERE broadcast_id = ? AND status = 'queued'", [row.id]);
  let n = 0;
  for (const e of queued) {
    try {
      await cancelEmail(ctx, { teamId: row.team_id, apiKeyId: '', ownOnly: false }, e.public_id);
      n++;
    } catch (err) {
      if (!(err instanceof AppError)) throw err; // its delivery started meanwhile: it goes
    }
  }
  return n;
}

// ---- the A/B winner ----

export interface VariantStats {
  index: number;
  recipients: number;
  sent: number;
  delivered: number;
  opens: number;
  clicks: number;
  open_rate: number;
  click_rate: number;
}

/** Per variant of the test group: recipients, emails accepted, delivered, unique (human) opens and clicks; rates over the emails accepted. */
export async function variantStats(ctx: AppContext, row: BroadcastRow, ab: AbTest): Promise<VariantStats[]> {
  const rows = await queryRows<{ variant: number; recipients: number; sent: number; delivered: number; opens: number; clicks: number }>(
    readsOf(ctx.db),
    `SELECT br.variant AS variant, count(*) AS recipients, count(br.email_id) AS sent,
       sum(e.status IN ('delivered', 'complained')) AS delivered,
       sum(EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = br.email_id AND ev.type = 'opened' AND ${HUMAN_SQL})) AS opens,
       sum(EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = br.email_id AND ev.type = 'clicked' AND ${HUMAN_SQL})) AS clicks
     FROM broadcast_recipients AS br LEFT JOIN emails AS e ON e.id = br.email_id
     WHERE br.broadcast_pk = ? AND br.variant IS NOT NULL GROUP BY br.variant`,
    [row.pk],
  );
  return ab.variants.map((_, index) => {
    const r = rows.find((x) => x.variant === index);
    const sent = r?.sent ?? 0;
    const opens = Number(r?.opens ?? 0);
    const clicks = Number(r?.clicks ?? 0);
    return {
      index,
      recipients: r?.recipients ?? 0,
      sent,
      delivered: Number(r?.delivered ?? 0),
      opens,
      clicks,
      open_rate: sent === 0 ? 0 : opens / sent,
      click_rate: sent === 0 ? 0 : clicks / sent,
    };
  });
}

/** The variant with the highest open rate; ties go to the higher click rate, then to the earlier variant. */
export async function pickWinner(ctx: AppContext, row: BroadcastRow, ab: AbTest): Promise<{ name: string; reason: string }> {
  const stats = await variantStats(ctx, row, ab);
  const best = [...stats].sort((a, b) => b.open_rate - a.open_rate || b.click_rate - a.click_rate || a.index - b.index)[0]!;
  const tied = stats.filter((s) => s.open_rate === best.open_rate).length > 1;
  return { name: ab.variants[best.index]!.name, reason: tied ? 'open_rate_tie' : 'open_rate' };
}

export async function runWinner(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { pk } = job.payload as { pk: number };
  const row = await load(ctx.db, pk);
  const ab = row ? abOf(row) : null;
  if (!row || !ab || row.winner !== null || (row.status !== 'testing' && row.status !== 'waiting_for_winner')) return;
  const chosen = await pickWinner(ctx, row, ab);
  await ctx.db.transaction(async (trx) => {
    const fresh = await load(trx, pk);
    if (!fresh || fresh.winner !== null || (fresh.status !== 'testing' && fresh.status !== 'waiting_for_winner')) return;
    await trx('broadcasts').where({ pk }).update({ winner: chosen.name, winner_reason: chosen.reason, status: 'sending', updated_at: ctx.clock.now().toISOString() });
    await ctx.jobs.enqueue(trx, FANOUT_JOB, { pk }, { lane: CAMPAIGN_LANE });
  });
}

// ---- settle: every email handed to the MTA ----

export async function runSettle(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { pk } = job.payload as { pk: number };
  const row = await load(ctx.db, pk);
  if (!row || row.status !== 'sending') return;
  const [pending] = await queryRows<{ n: number }>(ctx.db, "SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_pk = ? AND status = 'pending'", [pk]);
  if ((pending?.n ?? 0) > 0) return; // a fan-out job is still on it (it enqueues this job again when done)
  const [queued] = await queryRows<{ n: number }>(ctx.db, "SELECT count(*) AS n FROM emails WHERE broadcast_id = ? AND status = 'queued'", [row.id]);
  if ((queued?.n ?? 0) > 0) return { retryAt: new Date(ctx.clock.now().getTime() + SETTLE_POLL_MS) };
  await ctx.db.transaction(async (trx) => {
    const fresh = await load(trx, pk);
    if (!fresh || fresh.status !== 'sending') return;
    const counts = await queryRows<{ status: string; n: number }>(trx, 'SELECT status, count(*) AS n FROM broadcast_recipients WHERE broadcast_pk = ? GROUP BY status', [pk]);
    const of = (s: string) => counts.find((c) => c.status === s)?.n ?? 0;
    const at = ctx.clock.now();
    const handed = of('queued');
    if (handed === 0 && fresh.recipient_count > 0) {
      const [first] = await queryRows<{ error: string | null }>(trx, "SELECT error FROM broadcast_recipients WHERE broadcast_pk = ? AND status = 'failed' LIMIT 1", [pk]);
      await trx('broadcasts').where({ pk }).update({ status: 'failed', failure: `no recipient could be sent: ${first?.error ?? 'unknown'}`, updated_at: at.toISOString() });
      return;
    }
    await trx('broadcasts').where({ pk }).update({ status: 'sent', sent_at: at.toISOString(), updated_at: at.toISOString() });
    await recordEvent(trx, at, fresh.team_id, 'broadcast.sent', {
      broadcast_id: fresh.id,
      name: fresh.name,
      recipients: fresh.recipient_count,
      sent: handed,
      failed: of('failed'),
      winner: fresh.winner,
    });
  });
}

/** Registers the campaign jobs' handlers (appliance.ts). */
export function registerCampaignJobs(ctx: AppContext): void {
  ctx.jobs.register(START_JOB, (job) => runStart(ctx, job));
  ctx.jobs.register(FANOUT_JOB, (job) => runFanout(ctx, job));
  ctx.jobs.register(WINNER_JOB, (job) => runWinner(ctx, job));
  ctx.jobs.register(SETTLE_JOB, (job) => runSettle(ctx, job));
}
