// Broadcasts: a campaign to an audience (segments, a subscription topic), personalised per contact and sent
// through the one send path. This file holds the record and the operations the API calls; fanout.ts runs the
// jobs that send it; analytics.ts reads what came back.
//
// States and what moves them:
//   draft ──PATCH──▶ draft                       ──DELETE──▶ (gone)
//   draft ──send (scheduled_at in the future)──▶ scheduled ──PATCH──▶ scheduled ──cancel──▶ cancelled
//   draft ──send (now) / scheduled ──its time──▶ sending (testing with ab_test)
//   testing ──test group handed to the send path──▶ waiting_for_winner
//   testing | waiting_for_winner ──test_duration_minutes elapsed, or end-ab-test──▶ sending (the winner to the rest)
//   sending ──every recipient handed over and no email of it waiting for delivery──▶ sent (event broadcast.sent)
//   sending ──no recipient could be sent (every one refused by the send path), or the quota at start──▶ failed
//   scheduled | testing | waiting_for_winner | sending ──cancel──▶ cancelled
import type { AppContext } from '../../context.js';
import { queryRows, readsOf, type Queryable } from '../../db/index.js';
import { AppError, badRequest, forbidden, notFound, unprocessable } from '../../core/errors.js';
import { parseMailbox } from '../../core/address.js';
import { newPublicId } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import type { KeyMode } from '../platform/index.js';
import { campaignAudience } from '../audience/index.js';
import { findSenderDomain, getUsage, sendEmails, type Sender } from '../sending/index.js';
import { contactUnsubscribeUrl, loadTemplate, mergeScope, parseContent, renderCopy, variantSource, type VariantContent } from './content.js';
import { audienceRule, cancelQueuedEmails, FANOUT_JOB, START_JOB, CAMPAIGN_LANE, pickWinner, type BroadcastRow } from './fanout.js';

export const BROADCAST_STATUSES = ['draft', 'scheduled', 'testing', 'waiting_for_winner', 'sending', 'sent', 'cancelled', 'failed'] as const;
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number];
export const RESEND_AUDIENCES = ['non_openers', 'non_clickers', 'all'] as const;
export type ResendAudience = (typeof RESEND_AUDIENCES)[number];

/** Spec, Limits: 2..5 variants. The test group's share of the audience when `test_percentage` is not given. */
export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 5;
export const DEFAULT_TEST_PERCENTAGE = 20;
export const MAX_TEST_ADDRESSES = 10;

export interface AbTestInput {
  variants: VariantContent[];
  test_duration_minutes: number;
  /** The share of the audience (1..100 %) split between the variants by weight; the winner goes to the rest. */
  test_percentage?: number | undefined;
}

export interface BroadcastInput {
  name: string;
  from: string;
  subject: string;
  html?: string | undefined;
  text?: string | undefined;
  template_id?: string | undefined;
  reply_to?: string | string[] | undefined;
  tags?: string[] | undefined;
  segment_ids?: string[] | undefined;
  topic_id?: string | undefined;
  scheduled_at?: string | undefined;
  ab_test?: AbTestInput | undefined;
}

export type BroadcastUpdate = { [K in keyof BroadcastInput]?: BroadcastInput[K] | null };

export interface StoredAbTest {
  variants: VariantContent[];
  test_duration_minutes: number;
  test_percentage: number;
}

export interface Broadcast {
  id: string;
  name: string;
  from: string;
  reply_to: string[];
  subject: string;
  html: string | null;
  text: string | null;
  template_id: string | null;
  tags: string[];
  segment_ids: string[];
  topic_id: string | null;
  ab_test: StoredAbTest | null;
  status: BroadcastStatus;
  scheduled_at: string | null;
  /** Contacts in the audience frozen when sending started (0 before). */
  recipients: number;
  winner: string | null;
  test_ends_at: string | null;
  resend_of: string | null;
  resend_to: ResendAudience | null;
  failure: string | null;
  started_at: string | null;
  sent_at: string | null;
  cancelled_at: string | null;
  created_at: string;
  updated_at: string;
}

const json = <T>(s: string | null): T | null => (s === null ? null : (JSON.parse(s) as T));

export function toBroadcast(r: BroadcastRow): Broadcast {
  return {
    id: r.id,
    name: r.name,
    from: r.from_header,
    reply_to: json<string[]>(r.reply_to) ?? [],
    subject: r.subject,
    html: r.html,
    text: r.text,
    template_id: r.template_id,
    tags: json<string[]>(r.tags) ?? [],
    segment_ids: json<string[]>(r.segment_ids) ?? [],
    topic_id: r.topic_id,
    ab_test: json<StoredAbTest>(r.ab_test),
    status: r.status,
    scheduled_at: r.scheduled_at,
    recipients: r.recipient_count,
    winner: r.winner,
    test_ends_at: r.test_ends_at,
    resend_of: r.resend_of,
    resend_to: r.resend_to as ResendAudience | null,
    failure: r.failure,
    started_at: r.started_at,
    sent_at: r.sent_at,
    cancelled_at: r.cancelled_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export async function findBroadcast(q: Queryable, teamId: string, id: string): Promise<BroadcastRow> {
  const row = await q<BroadcastRow>('broadcasts').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Broadcast not found');
  return row;
}

// ---- checks of what is stored ----

function checkAbTest(ab: AbTestInput): StoredAbTest {
  if (ab.variants.length < MIN_VARIANTS || ab.variants.length > MAX_VARIANTS) throw badRequest(`ab_test.variants: must have ${MIN_VARIANTS} to ${MAX_VARIANTS} variants`);
  const names = new Set<string>();
  for (const [i, v] of ab.variants.entries()) {
    if (names.has(v.name)) throw badRequest(`ab_test.variants.${i}.name: '${v.name}' is used by another variant`);
    names.add(v.name);
  }
  return {
    variants: ab.variants.map((v) => ({ name: v.name, subject: v.subject, weight: v.weight, html: v.html ?? null, text: v.text ?? null })),
    test_duration_minutes: ab.test_duration_minutes,
    test_percentage: ab.test_percentage ?? DEFAULT_TEST_PERCENTAGE,
  };
}

/** Everything of a broadcast that can be checked before it is sent: addresses, merge-tag syntax, the audience and template named. */
async function checkContent(ctx: AppContext, teamId: string, row: Pick<BroadcastRow, 'from_header' | 'subject' | 'html' | 'text' | 'template_id' | 'ab_test' | 'segment_ids' | 'topic_id'>): Promise<void> {
  if (!parseMailbox(row.from_header)) throw badRequest('from: must be a valid email address');
  if (row.html === null && row.template_id === null) throw badRequest('Request body is missing required fields: html');
  const base = { subject: row.subject, html: row.html, text: row.text };
  parseContent(base);
  const ab = json<StoredAbTest>(row.ab_test);
  for (const v of ab?.variants ?? []) parseContent(variantSource(base, v));
  if (row.template_id !== null) await loadTemplate(ctx, teamId, row.template_id);
  const segments = json<string[]>(row.segment_ids) ?? [];
  if (segments.length > 0 || row.topic_id !== null) await campaignAudience(readsOf(ctx.db), teamId, { segmentIds: segments, topicId: row.topic_id }, ctx.clock.now());
}

function replyTo(v: string | string[] | null | undefined): string | null {
  if (v === undefined || v === null) return null;
  const list = Array.isArray(v) ? v : [v];
  list.forEach((a, i) => {
    if (!parseMailbox(a)) throw badRequest(`reply_to${Array.isArray(v) ? `.${i}` : ''}: must be a valid email address`);
  });
  return JSON.stringify(list);
}

// ---- CRUD ----

export async function createBroadcast(ctx: AppContext, teamId: string, input: BroadcastInput, extra: Partial<BroadcastRow> = {}): Promise<Broadcast> {
  const now = ctx.clock.now().toISOString();
  const row: Omit<BroadcastRow, 'pk'> = {
    id: newPublicId('bc'),
    team_id: teamId,
    name: input.name,
    from_header: input.from,
    reply_to: replyTo(input.reply_to),
    subject: input.subject,
    html: input.html ?? null,
    text: input.text ?? null,
    template_id: input.template_id ?? null,
    tags: JSON.stringify(input.tags ?? []),
    segment_ids: JSON.stringify([...new Set(input.segment_ids ?? [])]),
    topic_id: input.topic_id ?? null,
    ab_test: input.ab_test ? JSON.stringify(checkAbTest(input.ab_test)) : null,
    status: 'draft',
    scheduled_at: input.scheduled_at !== undefined ? new Date(input.scheduled_at).toISOString() : null,
    resend_of: null,
    resend_to: null,
    api_key_id: null,
    mode: 'live',
    audience_max_pk: null,
    start_job_id: null,
    frozen: 0,
    recipient_count: 0,
    test_ends_at: null,
    winner: null,
    winner_reason: null,
    failure: null,
    started_at: null,
    sent_at: null,
    cancelled_at: null,
    created_at: now,
    updated_at: now,
    ...extra,
  };
  await checkContent(ctx, teamId, row);
  const [pk] = (await ctx.db('broadcasts').insert(row)) as [number];
  return toBroadcast({ ...row, pk });
}

export async function getBroadcast(ctx: AppContext, teamId: string, id: string): Promise<Broadcast> {
  return toBroadcast(await findBroadcast(readsOf(ctx.db), teamId, id));
}

export interface BroadcastFilters {
  search?: string | undefined;
  status?: BroadcastStatus | undefined;
}

/** Form A, newest first; `search` in the name and subject (case-insensitive). */
export async function listBroadcasts(ctx: AppContext, teamId: string, f: BroadcastFilters, paging: PageRequest): Promise<Page<Broadcast>> {
  const reads = readsOf(ctx.db);
  const where = ['team_id = ?'];
  const bindings: unknown[] = [teamId];
  if (f.status) {
    where.push('status = ?');
    bindings.push(f.status);
  }
  if (f.search) {
    where.push('(instr(lower(name), ?) > 0 OR instr(lower(subject), ?) > 0)');
    bindings.push(f.search.toLowerCase(), f.search.toLowerCase());
  }
  const [[count], rows] = await Promise.all([
    queryRows<{ n: number }>(reads, `SELECT count(*) AS n FROM broadcasts WHERE ${where.join(' AND ')}`, bindings),
    queryRows<BroadcastRow>(reads, `SELECT * FROM broadcasts WHERE ${where.join(' AND ')} ORDER BY pk DESC LIMIT ? OFFSET ?`, [...bindings, paging.perPage, paging.offset]),
  ]);
  return toPage(rows.map(toBroadcast), count?.n ?? 0, paging);
}

/** GET /segments/{id}/broadcasts: the broadcasts that name the segment, newest first (404 for an unknown segment is the caller's). */
export async function broadcastsOfSegment(ctx: AppContext, teamId: string, segmentId: string): Promise<Broadcast[]> {
  const rows = await queryRows<BroadcastRow>(
    readsOf(ctx.db),
    'SELECT * FROM broadcasts AS b WHERE b.team_id = ? AND EXISTS (SELECT 1 FROM json_each(b.segment_ids) WHERE json_each.value = ?) ORDER BY b.pk DESC',
    [teamId, segmentId],
  );
  return rows.map(toBroadcast);
}

const EDITABLE: BroadcastStatus[] = ['draft', 'scheduled'];

/** PATCH: a draft, or a scheduled broadcast (a new `scheduled_at` moves its start). */
export async function updateBroadcast(ctx: AppContext, teamId: string, id: string, patch: BroadcastUpdate): Promise<Broadcast> {
  return ctx.db.transaction(async (trx) => {
    const row = await findBroadcast(trx, teamId, id);
    if (!EDITABLE.includes(row.status)) throw unprocessable(`Broadcast cannot be changed: its status is '${row.status}'; only a draft or scheduled broadcast can be`);
    const next: BroadcastRow = { ...row };
    if (patch.name != null) next.name = patch.name;
    if (patch.from != null) next.from_header = patch.from;
    if (patch.subject != null) next.subject = patch.subject;
    if (patch.html !== undefined) next.html = patch.html;
    if (patch.text !== undefined) next.text = patch.text;
    if (patch.template_id !== undefined) next.template_id = patch.template_id;
    if (patch.reply_to !== undefined) next.reply_to = replyTo(patch.reply_to);
    if (patch.tags !== undefined) next.tags = JSON.stringify(patch.tags ?? []);
    if (patch.segment_ids !== undefined) next.segment_ids = JSON.stringify([...new Set(patch.segment_ids ?? [])]);
    if (patch.topic_id !== undefined) next.topic_id = patch.topic_id;
    if (patch.ab_test !== undefined) next.ab_test = patch.ab_test ? JSON.stringify(checkAbTest(patch.ab_test)) : null;
    if (patch.scheduled_at !== undefined) next.scheduled_at = patch.scheduled_at === null ? null : new Date(patch.scheduled_at).toISOString();
    await checkContent(ctx, teamId, next);
    const at = ctx.clock.now();
    next.updated_at = at.toISOString();
    if (row.status === 'scheduled' && next.scheduled_at !== row.scheduled_at && row.start_job_id !== null) {
      const runAt = next.scheduled_at === null || Date.parse(next.scheduled_at) < at.getTime() ? at : new Date(next.scheduled_at);
      if (!(await ctx.jobs.reschedule(trx, row.start_job_id, runAt))) throw unprocessable('Broadcast is starting: it can no longer be rescheduled');
    }
    const { pk, ...fields } = next;
    await trx('broadcasts').where({ pk }).update(fields);
    return toBroadcast(next);
  });
}

/** DELETE: a draft only (a broadcast that went out is kept for its analytics). */
export async function deleteBroadcast(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findBroadcast(trx, teamId, id);
    if (row.status !== 'draft') throw unprocessable(`Broadcast cannot be deleted: its status is '${row.status}'; only a draft can be`);
    await trx('broadcasts').where({ pk: row.pk }).delete();
  });
}

// ---- send ----

/** Who sends: the key that said "send" (its mode decides live or test sends). */
export interface BroadcastSender {
  teamId: string;
  /** The key that sent it; null for an OAuth token (its emails record no key). */
  apiKeyId: string | null;
  mode: KeyMode;
}

/** The audience as it stands now, counted (not yet frozen). */
async function countAudience(ctx: AppContext, row: BroadcastRow): Promise<number> {
  const reads = readsOf(ctx.db);
  const rule = await audienceRule(reads, row, ctx.clock.now());
  const [r] = await queryRows<{ n: number }>(reads, `SELECT count(*) AS n FROM contacts AS c WHERE c.team_id = ? AND ${rule.sql}`, [row.team_id, ...rule.bindings]);
  return r?.n ?? 0;
}

/**
 * The sending quota, before anything goes out: every recipient counts, and a plan that refuses past its
 * allowance (Free) refuses the whole broadcast with 429 monthly_limit_exceeded when it would not fit; a team on
 * hold is refused (403). Test-mode keys are not counted.
 */
export async function checkQuota(ctx: AppContext, teamId: string, mode: KeyMode, recipients: number): Promise<void> {
  if (mode === 'test') return;
  const usage = await getUsage(ctx, teamId);
  if (usage.on_hold) throw forbidden(`Sending is on hold for safety review (${usage.hold_reason ?? 'held by an operator'}); contact support to lift it`);
  if (usage.past_allowance === 'refused' && usage.allowance !== null && usage.sent + recipients > usage.allowance) {
    throw new AppError(
      429,
      'monthly_limit_exceeded',
      `Monthly sending limit: this broadcast has ${recipients.toLocaleString('en-US')} recipients and the ${usage.plan} plan has ${Math.max(0, usage.allowance - usage.sent).toLocaleString('en-US')} of its ${usage.allowance.toLocaleString('en-US')} emails left this month; nothing was sent`,
    );
  }
}

/**
 * POST /broadcasts/{id}/send: checks what can be checked now (sender domain verified, template published,
 * audience not empty, quota), then starts it — at once, or at `scheduled_at` (the body's, else the
 * broadcast's) when that is in the future. The audience is frozen when sending starts.
 */
export async function sendBroadcast(ctx: AppContext, sender: BroadcastSender, id: string, opts: { scheduled_at?: string | undefined } = {}): Promise<Broadcast> {
  const row = await findBroadcast(readsOf(ctx.db), sender.teamId, id);
  if (row.status !== 'draft') throw unprocessable(`Broadcast cannot be sent: its status is '${row.status}'; only a draft can be sent`);
  await checkContent(ctx, sender.teamId, row);
  if (row.resend_of === null && (json<string[]>(row.segment_ids) ?? []).length === 0 && row.topic_id === null) {
    throw unprocessable('A broadcast needs an audience: segment_ids or topic_id');
  }
  const from = parseMailbox(row.from_header)!;
  const domainName = from.address.slice(from.address.lastIndexOf('@') + 1);
  const domain = await findSenderDomain(ctx, sender.teamId, domainName);
  if (!domain) throw unprocessable(`Domain '${domainName}' not found for this team`);
  if (domain.status !== 'verified') throw unprocessable(`Domain '${domainName}' is not verified`);
  const n = await countAudience(ctx, row);
  if (n === 0) throw unprocessable('The broadcast’s audience is empty: no contact of its segments or topic may be sent marketing mail');
  await checkQuota(ctx, sender.teamId, sender.mode, n);

  const at = ctx.clock.now();
  const scheduled = opts.scheduled_at ?? row.scheduled_at;
  const runAt = scheduled && Date.parse(scheduled) > at.getTime() ? new Date(scheduled) : at;
  return ctx.db.transaction(async (trx) => {
    const fresh = await findBroadcast(trx, sender.teamId, id);
    if (fresh.status !== 'draft') throw unprocessable(`Broadcast cannot be sent: its status is '${fresh.status}'; only a draft can be sent`);
    const later = runAt.getTime() > at.getTime();
    const jobId = await ctx.jobs.enqueue(trx, START_JOB, { pk: fresh.pk }, { runAt, lane: CAMPAIGN_LANE });
    const next: BroadcastRow = {
      ...fresh,
      status: later ? 'scheduled' : fresh.ab_test !== null ? 'testing' : 'sending',
      scheduled_at: later ? runAt.toISOString() : fresh.scheduled_at,
      api_key_id: sender.apiKeyId,
      mode: sender.mode,
      start_job_id: jobId,
      started_at: later ? null : at.toISOString(),
      updated_at: at.toISOString(),
    };
    const { pk, ...fields } = next;
    await trx('broadcasts').where({ pk }).update(fields);
    return toBroadcast(next);
  });
}

const CANCELLABLE: BroadcastStatus[] = ['scheduled', 'testing', 'waiting_for_winner', 'sending'];

/**
 * POST /broadcasts/{id}/cancel: what has not gone out stays in: recipients not yet handed to the send path,
 * and the broadcast's emails whose delivery has not started. Emails already being delivered go on.
 */
export async function cancelBroadcast(ctx: AppContext, teamId: string, id: string): Promise<{ broadcast: Broadcast; cancelled: number }> {
  const { row, skipped } = await ctx.db.transaction(async (trx) => {
    const row = await findBroadcast(trx, teamId, id);
    if (!CANCELLABLE.includes(row.status)) throw unprocessable(`Broadcast cannot be cancelled: its status is '${row.status}'`);
    const at = ctx.clock.now().toISOString();
    if (row.status === 'scheduled' && row.start_job_id !== null) await ctx.jobs.cancel(trx, row.start_job_id);
    const skipped = (await trx('broadcast_recipients').where({ broadcast_pk: row.pk, status: 'pending' }).update({ status: 'cancelled' })) as number;
    const next = { ...row, status: 'cancelled' as const, cancelled_at: at, updated_at: at };
    await trx('broadcasts').where({ pk: row.pk }).update({ status: next.status, cancelled_at: at, updated_at: at });
    return { row: next, skipped };
  });
  const stopped = await cancelQueuedEmails(ctx, row);
  return { broadcast: toBroadcast(row), cancelled: skipped + stopped };
}

/**
 * POST /broadcasts/{id}/test: the broadcast (or one variant) to the given addresses, now, as ordinary emails
 * (they count toward the quota as any send); the audience and the broadcast's state are untouched. An address
 * that is a contact gets its own merge tags and unsubscribe link; another gets the tags empty (or their defaults).
 */
export async function testBroadcast(ctx: AppContext, sender: Sender, id: string, input: { to: string[]; variant?: string | undefined }): Promise<Array<{ email: string; id: string }>> {
  const row = await findBroadcast(readsOf(ctx.db), sender.teamId, id);
  const base = { subject: row.subject, html: row.html, text: row.text };
  const ab = json<StoredAbTest>(row.ab_test);
  let source = base;
  if (input.variant !== undefined) {
    const v = ab?.variants.find((x) => x.name === input.variant);
    if (!v) throw unprocessable(`Variant '${input.variant}' not found`);
    source = variantSource(base, v);
  }
  const content = parseContent(source, await loadTemplate(ctx, sender.teamId, row.template_id));
  const at = ctx.clock.now();
  const topic = row.topic_id === null ? null : ((await readsOf(ctx.db)('topics').where({ team_id: row.team_id, id: row.topic_id }).first('pk', 'id')) as { pk: number; id: string } | undefined) ?? null;
  const inputs = await Promise.all(
    input.to.map(async (address) => {
      const contact = await readsOf(ctx.db)('contacts').where({ team_id: row.team_id, email_key: address.trim().toLowerCase() }).first('pk', 'id', 'email', 'first_name', 'last_name', 'properties') as
        | { pk: number; id: string; email: string; first_name: string | null; last_name: string | null; properties: string }
        | undefined;
      const scope = contact
        ? mergeScope(contact, contactUnsubscribeUrl(ctx, contact, topic, at))
        : mergeScope({ id: '', email: address, first_name: null, last_name: null, properties: '{}' }, null);
      const copy = renderCopy(content, scope);
      return { from: row.from_header, to: [address], ...(row.reply_to ? { reply_to: json<string[]>(row.reply_to)! } : {}), ...copy, tags: json<string[]>(row.tags) ?? [] };
    }),
  );
  const results = await sendEmails(ctx, sender, inputs);
  return results.map((r, i) => {
    if (r instanceof AppError) throw r;
    return { email: input.to[i]!, id: r.id };
  });
}

/**
 * POST /broadcasts/{id}/resend: a new broadcast (returned) with the same content — the winner's, after an A/B
 * test — to a subset of this one's recipients: those who did not open it (`non_openers`), did not click
 * (`non_clickers`), or every recipient it was sent to (`all`), as they stand now; still only contacts who may
 * be sent marketing mail (and who receive its topic). Sent at once or at `scheduled_at`; the same checks and
 * quota as a send.
 */
export async function resendBroadcast(
  ctx: AppContext,
  sender: BroadcastSender,
  id: string,
  input: { to: ResendAudience; subject?: string | undefined; name?: string | undefined; scheduled_at?: string | undefined },
): Promise<Broadcast> {
  const parent = await findBroadcast(readsOf(ctx.db), sender.teamId, id);
  if (parent.status !== 'sent') throw unprocessable(`Broadcast cannot be re-sent: its status is '${parent.status}'; only a sent broadcast can be`);
  const ab = json<StoredAbTest>(parent.ab_test);
  const winner = ab?.variants.find((v) => v.name === parent.winner);
  const source = winner ? variantSource({ subject: parent.subject, html: parent.html, text: parent.text }, winner) : { subject: parent.subject, html: parent.html, text: parent.text };
  const child = await createBroadcast(
    ctx,
    sender.teamId,
    {
      name: input.name ?? `${parent.name} (re-sent to ${input.to.replace('_', '-')})`,
      from: parent.from_header,
      subject: input.subject ?? source.subject,
      ...(source.html !== null ? { html: source.html } : {}),
      ...(source.text !== null ? { text: source.text } : {}),
      ...(parent.template_id !== null ? { template_id: parent.template_id } : {}),
      reply_to: json<string[]>(parent.reply_to) ?? undefined,
      tags: json<string[]>(parent.tags) ?? [],
      ...(parent.topic_id !== null ? { topic_id: parent.topic_id } : {}),
    },
    { resend_of: parent.id, resend_to: input.to },
  );
  try {
    return await sendBroadcast(ctx, sender, child.id, { scheduled_at: input.scheduled_at });
  } catch (err) {
    await ctx.db('broadcasts').where({ team_id: sender.teamId, id: child.id, status: 'draft' }).delete();
    throw err;
  }
}

/**
 * POST /broadcasts/{id}/end-ab-test: ends the test now; the named variant wins, or the one with the highest
 * open rate so far (pickWinner: ties to the higher click rate, then the earlier variant). The rest of the
 * audience gets it.
 */
export async function endAbTest(ctx: AppContext, teamId: string, id: string, variant?: string): Promise<Broadcast> {
  const row = await findBroadcast(readsOf(ctx.db), teamId, id);
  const ab = json<StoredAbTest>(row.ab_test);
  if (!ab) throw unprocessable('Broadcast has no A/B test');
  if (variant !== undefined && !ab.variants.some((v) => v.name === variant)) throw unprocessable(`Variant '${variant}' not found`);
  if (row.status !== 'testing' && row.status !== 'waiting_for_winner') throw unprocessable(`A/B test cannot be ended: the broadcast's status is '${row.status}'`);
  if (!row.frozen) throw unprocessable('A/B test has not started yet: its audience is still being frozen');
  const chosen = variant !== undefined ? { name: variant, reason: 'chosen' } : await pickWinner(ctx, row, ab);
  return ctx.db.transaction(async (trx) => {
    const fresh = await findBroadcast(trx, teamId, id);
    if (fresh.winner !== null || (fresh.status !== 'testing' && fresh.status !== 'waiting_for_winner')) throw unprocessable(`A/B test cannot be ended: the broadcast's status is '${fresh.status}'`);
    const at = ctx.clock.now().toISOString();
    await trx('broadcasts').where({ pk: fresh.pk }).update({ winner: chosen.name, winner_reason: chosen.reason, status: 'sending', updated_at: at });
    await ctx.jobs.enqueue(trx, FANOUT_JOB, { pk: fresh.pk }, { lane: CAMPAIGN_LANE });
    return toBroadcast({ ...fresh, winner: chosen.name, winner_reason: chosen.reason, status: 'sending', updated_at: at });
  });
}

