// Sending: the one path every sender (API, batch, SMTP submission, broadcasts, workflows, MCP) goes
// through. Checks the rules, then writes the email, its recipients, attachments, timeline, webhook events
// and its delivery job in one transaction. Also the reads, reschedule and cancel.
import { createHash } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { Queryable } from '../db/index.js';
import { AppError, badRequest, conflict, notFound, unprocessable } from '../core/errors.js';
import { domainOf, parseMailbox, type Mailbox } from '../core/address.js';
import { newPublicId } from '../core/ids.js';
import { DAY } from '../core/clock.js';
import { toPage, type Page, type PageRequest } from '../core/paging.js';
import { htmlToText, inferContentType } from '../mta/compose.js';
import type { KeyMode } from './api-keys.js';
import { addTimeline, emitEmailEvent, json, type AttachmentRow, type EmailRow, type RecipientRow, type TimelineType } from './email-records.js';
import { isPending, type EmailStatus, type RecipientStatus } from './email-status.js';
import { suppressedAmong } from './suppressions.js';
import { checkAndCountSend, recordHold } from './quotas.js';

export const DELIVER_JOB = 'email.deliver';

/** Spec, Limits: per-request limits checked after validation (422). */
export const MAX_RECIPIENTS = 50;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
export const MAX_ATTACHMENTS_TOTAL_BYTES = 25 * 1024 * 1024;
export const IDEMPOTENCY_WINDOW_MS = DAY;

/** Who sends: a team, through an API key (or, later, a mailbox login), live or test. */
export interface Sender {
  teamId: string;
  apiKeyId: string | null;
  mode: KeyMode;
}

export interface AttachmentInput {
  filename: string;
  /** base64 */
  content: string;
  content_type?: string | undefined;
}

export interface SendEmailInput {
  from: string;
  to: string[];
  cc?: string[] | undefined;
  bcc?: string[] | undefined;
  reply_to?: string[] | undefined;
  subject?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
  headers?: Record<string, string> | undefined;
  tags?: string[] | undefined;
  attachments?: AttachmentInput[] | undefined;
  idempotency_key?: string | undefined;
  scheduled_at?: string | undefined;
  template_id?: string | undefined;
  variables?: Record<string, string> | undefined;
}

export interface SendResult {
  id: string;
  /** The idempotency key matched an earlier send: nothing new was sent. */
  replayed: boolean;
}

function mailboxes(list: string[] | undefined, field: string): Mailbox[] {
  return (list ?? []).map((s, i) => {
    const m = parseMailbox(s);
    if (!m) throw badRequest(`${field}.${i}: must be a valid email address`);
    return m;
  });
}

/** A stable hash of what was asked, to tell an idempotent replay from a different request with the same key. */
function requestHash(input: SendEmailInput): string {
  const { idempotency_key: _key, ...rest } = input;
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined).map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
        : v;
  return createHash('sha256').update(JSON.stringify(canonical(rest))).digest('hex');
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function decodeAttachments(list: AttachmentInput[]): Array<Omit<AttachmentRow, 'id' | 'email_id'>> {
  let total = 0;
  return list.map((a, i) => {
    const content = Buffer.from(a.content.replace(/\s+/g, ''), 'base64');
    if (content.length > MAX_ATTACHMENT_BYTES) {
      throw unprocessable(`attachments.${i}: '${a.filename}' is ${mb(content.length)} decoded; one attachment may be at most 10 MB`);
    }
    total += content.length;
    if (total > MAX_ATTACHMENTS_TOTAL_BYTES) {
      throw unprocessable(`Attachments total more than 25 MB decoded (the limit per email)`);
    }
    return { position: i, filename: a.filename, content_type: a.content_type ?? inferContentType(a.filename), size: content.length, content };
  });
}

export const formatMailbox = (m: Mailbox) => (m.name ? `${JSON.stringify(m.name)} <${m.address}>` : m.address);

/** The parts of an input that need no database: addresses, recipient total, attachments (400/422). */
export function prepareInput(input: SendEmailInput) {
  const from = parseMailbox(input.from);
  if (!from) throw badRequest('from: must be a valid email address');
  const to = mailboxes(input.to, 'to');
  const cc = mailboxes(input.cc, 'cc');
  const bcc = mailboxes(input.bcc, 'bcc');
  const replyTo = mailboxes(input.reply_to, 'reply_to');
  if (to.length === 0) throw badRequest('Request body is missing required fields: to');
  const total = to.length + cc.length + bcc.length;
  if (total > MAX_RECIPIENTS) throw unprocessable(`Too many recipients: to, cc and bcc total ${total}; the limit is ${MAX_RECIPIENTS} per email`);
  const attachments = decodeAttachments(input.attachments ?? []);
  if (input.template_id !== undefined) throw unprocessable(`Template '${input.template_id}' not found`);
  let scheduledAt: Date | null = null;
  if (input.scheduled_at !== undefined) {
    scheduledAt = new Date(input.scheduled_at);
    if (Number.isNaN(scheduledAt.getTime())) throw badRequest('scheduled_at: must be an ISO 8601 date-time');
  }
  return { from, to, cc, bcc, replyTo, attachments, fromDomain: domainOf(from.address), scheduledAt };
}

export type PreparedInput = ReturnType<typeof prepareInput>;

/** The team's domain of that name, if any. */
export async function findSenderDomain(ctx: AppContext, teamId: string, name: string) {
  return ctx.db<{ id: string; status: string; team_id: string; name: string }>('domains').where({ team_id: teamId, name }).first('id', 'status');
}

/** The rules an email must pass before it is accepted. Throws AppError (400/422). */
async function checkSend(ctx: AppContext, sender: Sender, input: SendEmailInput) {
  const prepared = prepareInput(input);
  const domain = await findSenderDomain(ctx, sender.teamId, prepared.fromDomain);
  if (!domain) throw unprocessable(`Domain '${prepared.fromDomain}' not found for this team`);
  if (domain.status !== 'verified') throw unprocessable(`Domain '${prepared.fromDomain}' is not verified`);
  return { ...prepared, domainId: domain.id };
}

export async function sendEmail(ctx: AppContext, sender: Sender, input: SendEmailInput): Promise<SendResult> {
  const checked = await checkSend(ctx, sender, input);
  const hash = input.idempotency_key !== undefined ? requestHash(input) : null;
  return ctx.db.transaction(async (trx) => {
    const at = ctx.clock.now();
    if (input.idempotency_key !== undefined) {
      const earlier = await trx<EmailRow>('emails')
        .where({ team_id: sender.teamId, idempotency_key: input.idempotency_key })
        .andWhere('created_at', '>', new Date(at.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString())
        .orderBy('id', 'desc')
        .first('public_id', 'request_hash');
      if (earlier) {
        if (earlier.request_hash === hash) return { id: earlier.public_id, replayed: true };
        throw conflict(`Idempotency key '${input.idempotency_key}' was already used with a different request within the last 24 hours`);
      }
    }
    // Quotas and caps (services/quotas.ts): counted here, after replays, in the send's transaction.
    await checkAndCountSend(ctx, trx, { teamId: sender.teamId, isTest: sender.mode === 'test', recipients: [...checked.to, ...checked.cc, ...checked.bcc].map((m) => m.address) });
    return { id: await insertEmail(ctx, trx, at, sender, input, checked, hash), replayed: false };
  }).catch((err: unknown) => recordHold(ctx, err));
}

async function insertEmail(
  ctx: AppContext,
  trx: Queryable,
  at: Date,
  sender: Sender,
  input: SendEmailInput,
  c: Awaited<ReturnType<typeof checkSend>>,
  hash: string | null,
): Promise<string> {
  const publicId = newPublicId('em');
  const now = at.toISOString();
  const scheduled = c.scheduledAt && c.scheduledAt.getTime() > at.getTime() ? c.scheduledAt : null;
  const row: Omit<EmailRow, 'id'> = {
    public_id: publicId,
    team_id: sender.teamId,
    api_key_id: sender.apiKeyId,
    domain_id: c.domainId,
    mode: sender.mode,
    from_header: formatMailbox(c.from),
    from_address: c.from.address,
    from_domain: c.fromDomain,
    to_addrs: JSON.stringify(c.to.map(formatMailbox)),
    cc_addrs: JSON.stringify(c.cc.map(formatMailbox)),
    bcc_addrs: JSON.stringify(c.bcc.map(formatMailbox)),
    reply_to: JSON.stringify(c.replyTo.map(formatMailbox)),
    subject: input.subject ?? '',
    html: input.html ?? null,
    // Derived once, here, so the stored email shows exactly the text part that is sent.
    text: input.text ?? (input.html !== undefined ? htmlToText(input.html) : null),
    headers: JSON.stringify(input.headers ?? {}),
    tags: JSON.stringify(input.tags ?? []),
    status: 'queued',
    message_id: `<${publicId}@${ctx.config.hostname}>`,
    idempotency_key: input.idempotency_key ?? null,
    request_hash: hash,
    job_id: null,
    attempts: 0,
    scheduled_at: scheduled ? scheduled.toISOString() : null,
    sent_at: null,
    delivered_at: null,
    created_at: now,
    updated_at: now,
  };
  const [id] = (await trx('emails').insert(row)) as [number];
  const email: EmailRow = { id, ...row };

  const all = [...c.to.map((m) => ['to', m] as const), ...c.cc.map((m) => ['cc', m] as const), ...c.bcc.map((m) => ['bcc', m] as const)];
  const suppressed = await suppressedAmong(trx, sender.teamId, all.map(([, m]) => m.address));
  const recipients = all.map(([kind, m]) => ({
    email_id: id,
    kind,
    address: m.address,
    domain: domainOf(m.address),
    status: (suppressed.has(m.address.toLowerCase()) ? 'suppressed' : 'queued') as RecipientStatus,
    updated_at: now,
  }));
  await trx('email_recipients').insert(recipients);
  if (c.attachments.length) await trx('email_attachments').insert(c.attachments.map((a) => ({ ...a, email_id: id })));

  await addTimeline(trx, email, at, 'queued', scheduled ? { scheduled_at: email.scheduled_at } : {});
  if (scheduled) await emitEmailEvent(trx, email, at, 'email.scheduled', { scheduled_at: email.scheduled_at });
  const blocked = recipients.filter((r) => r.status === 'suppressed').map((r) => r.address);
  if (blocked.length) await emitEmailEvent(trx, email, at, 'email.suppressed', { suppressed: blocked });

  if (blocked.length === recipients.length) {
    await trx('emails').where({ id }).update({ status: 'failed' });
    await addTimeline(trx, email, at, 'failed', { reason: 'every recipient is on the suppression list', suppressed: blocked });
    await emitEmailEvent(trx, email, at, 'email.failed', { reason: 'every recipient is on the suppression list' });
  } else {
    const jobId = await ctx.jobs.enqueue(trx, DELIVER_JOB, { emailId: id }, { runAt: scheduled ?? at });
    await trx('emails').where({ id }).update({ job_id: jobId });
  }
  return publicId;
}

// ---- reads ----

/** A caller of the read endpoints: sending_access keys see only what they sent. */
export interface Reader {
  teamId: string;
  apiKeyId: string;
  ownOnly: boolean;
}

async function findEmail(q: Queryable, reader: Reader, publicId: string): Promise<EmailRow> {
  const query = q<EmailRow>('emails').where({ team_id: reader.teamId, public_id: publicId });
  if (reader.ownOnly) query.andWhere('api_key_id', reader.apiKeyId);
  const row = await query.first();
  if (!row) throw notFound('Email not found');
  return row;
}

/** Who and what, as the API shows them for an email and for its preview. */
export interface EmailContentView {
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  html: string | null;
  text: string | null;
}

export interface EmailDetail extends EmailContentView {
  id: string;
  tags: string[];
  headers: Record<string, string>;
  status: EmailStatus;
  mode: 'live' | 'test';
  message_id: string;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
  recipients: Array<{ email: string; type: 'to' | 'cc' | 'bcc'; status: RecipientStatus; code: string | null; message: string | null; bounce_category: string | null }>;
  created_at: string;
  scheduled_at: string | null;
  sent_at: string | null;
  delivered_at: string | null;
}

export async function getEmail(ctx: AppContext, reader: Reader, publicId: string): Promise<EmailDetail> {
  const e = await findEmail(ctx.db, reader, publicId);
  const [recipients, attachments] = await Promise.all([
    ctx.db<RecipientRow>('email_recipients').where('email_id', e.id).orderBy('id'),
    ctx.db<AttachmentRow>('email_attachments').where('email_id', e.id).orderBy('position').select('filename', 'content_type', 'size'),
  ]);
  return {
    id: e.public_id,
    from: e.from_header,
    to: json(e.to_addrs),
    cc: json(e.cc_addrs),
    bcc: json(e.bcc_addrs),
    reply_to: json(e.reply_to),
    subject: e.subject,
    html: e.html,
    text: e.text,
    tags: json(e.tags),
    headers: json(e.headers),
    status: e.status,
    mode: e.mode,
    message_id: e.message_id,
    attachments: attachments.map((a) => ({ filename: a.filename, content_type: a.content_type, size: a.size })),
    recipients: recipients.map((r) => ({
      email: r.address,
      type: r.kind,
      status: r.status,
      code: r.last_code,
      message: r.last_message,
      bounce_category: r.bounce_category,
    })),
    created_at: e.created_at,
    scheduled_at: e.scheduled_at,
    sent_at: e.sent_at,
    delivered_at: e.delivered_at,
  };
}

export interface EmailListFilter {
  status?: EmailStatus | undefined;
  domain_id?: string | undefined;
  to?: string | undefined;
  from?: string | undefined;
  subject?: string | undefined;
  tag?: string | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  provider?: string | undefined;
  country?: string | undefined;
  device?: string | undefined;
}

/** Form A item: camelCase, numeric id and publicId, no bodies. */
export interface EmailListItem {
  id: number;
  publicId: string;
  from: string;
  to: string[];
  subject: string;
  status: EmailStatus;
  tags: string[];
  mode: 'live' | 'test';
  createdAt: string;
  scheduledAt: string | null;
  sentAt: string | null;
  deliveredAt: string | null;
}

const likeEscape = (s: string) => `%${s.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Newest first. `provider`, `country` and `device` describe opens and clicks, which are not tracked yet: they match nothing. */
export async function listEmails(ctx: AppContext, reader: Reader, f: EmailListFilter, paging: PageRequest): Promise<Page<EmailListItem>> {
  const q = ctx.db<EmailRow>('emails').where('team_id', reader.teamId);
  if (reader.ownOnly) q.andWhere('api_key_id', reader.apiKeyId);
  if (f.status) q.andWhere('status', f.status);
  if (f.domain_id) q.andWhere('domain_id', f.domain_id);
  if (f.from) q.andWhereRaw(`lower(from_header) LIKE ? ESCAPE '\\'`, [likeEscape(f.from)]);
  if (f.subject) q.andWhereRaw(`lower(subject) LIKE ? ESCAPE '\\'`, [likeEscape(f.subject)]);
  if (f.to) {
    q.andWhereRaw(`EXISTS (SELECT 1 FROM email_recipients r WHERE r.email_id = emails.id AND lower(r.address) LIKE ? ESCAPE '\\')`, [likeEscape(f.to)]);
  }
  if (f.tag) q.andWhereRaw('EXISTS (SELECT 1 FROM json_each(emails.tags) WHERE json_each.value = ?)', [f.tag]);
  if (f.date_from) q.andWhere('created_at', '>=', new Date(f.date_from).toISOString());
  if (f.date_to) q.andWhere('created_at', '<=', new Date(f.date_to).toISOString());
  if (f.provider || f.country || f.device) q.andWhereRaw('0');
  const [{ n }] = (await q.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await q.clone().orderBy('id', 'desc').offset(paging.offset).limit(paging.perPage);
  return toPage(
    rows.map((e) => ({
      id: e.id,
      publicId: e.public_id,
      from: e.from_header,
      to: json<string[]>(e.to_addrs),
      subject: e.subject,
      status: e.status,
      tags: json<string[]>(e.tags),
      mode: e.mode,
      createdAt: e.created_at,
      scheduledAt: e.scheduled_at,
      sentAt: e.sent_at,
      deliveredAt: e.delivered_at,
    })),
    Number(n),
    paging,
  );
}

export async function listEmailEvents(ctx: AppContext, reader: Reader, publicId: string): Promise<Array<{ type: TimelineType; timestamp: string; data: Record<string, unknown> }>> {
  const e = await findEmail(ctx.db, reader, publicId);
  const rows = await ctx.db<{ type: TimelineType; data: string; created_at: string }>('email_events').where('email_id', e.id).orderBy('id');
  return rows.map((r) => ({ type: r.type, timestamp: r.created_at, data: json(r.data) }));
}

// ---- reschedule and cancel: only while nothing has been attempted ----

function notWaiting(e: EmailRow, action: string): AppError {
  return unprocessable(`Email cannot be ${action}: its status is '${e.status}'; only a queued email that has not started sending can be ${action}`);
}

export async function rescheduleEmail(ctx: AppContext, reader: Reader, publicId: string, scheduledAt: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const e = await findEmail(trx, reader, publicId);
    const at = ctx.clock.now();
    const when = new Date(scheduledAt);
    const runAt = when.getTime() > at.getTime() ? when : at;
    if (e.status !== 'queued' || e.job_id === null || !(await ctx.jobs.reschedule(trx, e.job_id, runAt))) throw notWaiting(e, 'rescheduled');
    const next = { ...e, scheduled_at: runAt.toISOString(), updated_at: at.toISOString() };
    await trx('emails').where({ id: e.id }).update({ scheduled_at: next.scheduled_at, updated_at: next.updated_at });
    await addTimeline(trx, e, at, 'queued', { scheduled_at: next.scheduled_at, rescheduled: true });
    await emitEmailEvent(trx, next, at, 'email.scheduled', { scheduled_at: next.scheduled_at });
  });
}

export async function cancelEmail(ctx: AppContext, reader: Reader, publicId: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const e = await findEmail(trx, reader, publicId);
    if (e.status !== 'queued' || e.job_id === null || !(await ctx.jobs.cancel(trx, e.job_id))) throw notWaiting(e, 'cancelled');
    const at = ctx.clock.now();
    const pending = await trx<RecipientRow>('email_recipients').where('email_id', e.id).select('id', 'status');
    const ids = pending.filter((r) => isPending(r.status)).map((r) => r.id);
    await trx('email_recipients').whereIn('id', ids).update({ status: 'cancelled', updated_at: at.toISOString() });
    await trx('emails').where({ id: e.id }).update({ status: 'cancelled', job_id: null, updated_at: at.toISOString() });
    await addTimeline(trx, e, at, 'cancelled');
  });
}
