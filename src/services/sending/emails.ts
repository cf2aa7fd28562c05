// Sending: the one path every sender (API, batch, SMTP submission, broadcasts, workflows, MCP) goes
// through. Checks the rules, then writes the email, its recipients, attachments, timeline, webhook events
// and its delivery job in one transaction. Also the reads, reschedule and cancel.
import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { nextIds, readsOf, settleAll, type Queryable } from '../../db/index.js';
import { AppError, badRequest, conflict, forbidden, notFound, unprocessable } from '../../core/errors.js';
import { addressKey, domainOf, parseMailbox, type Mailbox } from '../../core/address.js';
import { newPublicId } from '../../core/ids.js';
import { DAY } from '../../core/clock.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { htmlToText, inferContentType, textGiven } from '../../mta/compose.js';
import type { KeyMode } from '../platform/index.js';
import { insertRows, sharedWriterOf } from '../../db/batcher.js';
import { deferForeignKeys } from '../../db/script.js';
import { recordEvents, type EventRow } from '../../events/recorder.js';
import {
  addTimeline,
  emailEventRow,
  emitEmailEvent,
  json,
  timelineRow,
  type AttachmentRow,
  type EmailBodyRow,
  type EmailRow,
  type RecipientRow,
  type TimelineRow,
  type TimelineType,
} from './email-records.js';
import { isPending, type EmailStatus, type RecipientStatus } from './email-status.js';
import { audienceOfSends, signUnsubscribeToken, suppressedAmong, unsubscribeHeaders, type SendAudience } from '../audience/index.js';
import { SendLedger } from './quotas.js';
import { templateForSend, type SendTemplate } from '../templates/index.js';

export const DELIVER_JOB = 'email.deliver';

/**
 * The job lane of an email's delivery (src/jobs/queue.ts): its recipients' domain when they share one, so that
 * a backlog for one destination runs at most three quarters of the delivery slots and leaves the rest to other
 * domains.
 * An email to several domains, or a test-mode one (nothing leaves the box), has none.
 */
function deliveryLane(email: Pick<EmailRow, 'mode'>, recipients: Array<{ domain: string; status: RecipientStatus }>): string | null {
  if (email.mode === 'test') return null;
  const domains = new Set(recipients.filter((r) => r.status !== 'suppressed').map((r) => r.domain));
  return domains.size === 1 ? `to:${[...domains][0]!}` : null;
}

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
  /**
   * Carry unsubscribe links (List-Unsubscribe, RFC 8058 one-click): the one recipient must be a contact of
   * the team; the links unsubscribe them from everything. Implied by `topic_id`.
   */
  unsubscribe?: boolean | undefined;
  /** Sent for this subscription topic: skipped unless the contact is subscribed; the links leave the topic. */
  topic_id?: string | undefined;
  /** The broadcast (`bc_…`) this email is one recipient's copy of (services/campaigns/); recorded on the email. */
  broadcast_id?: string | undefined;
}

/**
 * Written in the transaction that accepts an email, beside it (e.g. a broadcast marks its recipient with the
 * email): both are committed together or not at all. Runs with the writes of that transaction (in the shared
 * writer's, they are held for its write script: use `db/script.ts` `write`).
 */
export type AfterWrite = (trx: Queryable, email: { id: number; publicId: string }) => PromiseLike<unknown>;

/**
 * Written once per transaction beside every email of one sendEmails call that it accepts (by input index, in
 * order): a page of a broadcast marks its recipients with one statement instead of one per email. Same rules
 * as AfterWrite.
 */
export type AfterWriteAll = (trx: Queryable, emails: Array<{ index: number; id: number; publicId: string }>) => PromiseLike<unknown>;

export interface SendOptions {
  /** Per input (by index): what to write beside the email when it is accepted (not for a refused or replayed one). */
  afterWrite?: (index: number) => AfterWrite | undefined;
  /** What to write beside the accepted emails of this call, once per transaction they are written in. */
  afterWriteAll?: AfterWriteAll;
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

/**
 * A stable hash of what was asked, to tell an idempotent replay from a different request with the same key.
 * The same request written two ways hashes alike: keys in any order, an empty list or object as none, and
 * `scheduled_at` as its instant (`…T01:00:00+01:00` is `…T00:00:00.000Z`).
 */
function requestHash(input: SendEmailInput): string {
  const { idempotency_key: _key, ...rest } = input;
  if (rest.scheduled_at !== undefined) rest.scheduled_at = new Date(rest.scheduled_at).toISOString();
  const isEmpty = (v: unknown) => v === undefined || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.keys(v).sort().filter((k) => !isEmpty((v as Record<string, unknown>)[k])).map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
        : v;
  return createHash('sha256').update(JSON.stringify(canonical(rest))).digest('hex');
}

const bytes = (n: number) => `${n.toLocaleString('en-US')} bytes`;

function decodeAttachments(list: AttachmentInput[]): Array<Omit<AttachmentRow, 'id' | 'email_id'>> {
  let total = 0;
  return list.map((a, i) => {
    const content = Buffer.from(a.content.replace(/\s+/g, ''), 'base64');
    if (content.length > MAX_ATTACHMENT_BYTES) {
      throw unprocessable(`attachments.${i}: '${a.filename}' is ${bytes(content.length)} decoded; one attachment may be at most 10 MB (${bytes(MAX_ATTACHMENT_BYTES)})`);
    }
    total += content.length;
    if (total > MAX_ATTACHMENTS_TOTAL_BYTES) {
      throw unprocessable(`Attachments total more than 25 MB decoded (${bytes(MAX_ATTACHMENTS_TOTAL_BYTES)}, the limit per email)`);
    }
    return { position: i, filename: a.filename, content_type: a.content_type ?? inferContentType(a.filename), size: content.length, content };
  });
}

/** `Name <addr>` with the name as an RFC 5322 quoted string (what parseMailbox reads back), or the bare address. */
export const formatMailbox = (m: Mailbox) => (m.name ? `"${m.name.replace(/[\\"]/g, '\\$&')}" <${m.address}>` : m.address);

/** The template and version a send was rendered from. */
export interface TemplateRef {
  id: string;
  version: number;
}

/**
 * A send by `template_id`: the template's published version rendered with the send's `variables` (422 for an
 * unknown or unpublished template, or a declared variable missing). What the request gives itself wins, part
 * by part: its `subject`, its `html` (and then the text derived from that html, unless it gives `text` too),
 * its `text`. Answers the input as it will be stored (without template_id) and the template it came from.
 */
export async function resolveTemplate(
  ctx: AppContext,
  teamId: string,
  input: SendEmailInput,
  lookup: (id: string) => Promise<SendTemplate> = (id) => templateForSend(ctx, teamId, id),
): Promise<{ input: SendEmailInput; template: TemplateRef | null }> {
  if (input.template_id === undefined) return { input, template: null };
  const template = await lookup(input.template_id);
  const r = template.render(input.variables ?? {});
  const { template_id: _id, variables: _variables, ...rest } = input;
  const text = input.text ?? (input.html !== undefined ? undefined : (r.text ?? undefined));
  return {
    input: { ...rest, subject: input.subject ?? r.subject, html: input.html ?? r.html, ...(text !== undefined ? { text } : {}) },
    template: { id: template.id, version: template.version },
  };
}

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
  // A message carries one List-Unsubscribe, and its link names one person.
  const links = input.topic_id !== undefined || input.unsubscribe === true ? { topicId: input.topic_id ?? null } : null;
  if (links && total !== 1) {
    throw unprocessable(`An email with unsubscribe links (unsubscribe or topic_id) goes to exactly one recipient; this one has ${total} (send one email per contact, e.g. with POST /emails/batch)`);
  }
  return { from, to, cc, bcc, replyTo, attachments, fromDomain: domainOf(from.address), scheduledAt, links };
}

export type PreparedInput = ReturnType<typeof prepareInput>;

/** The team's domain of that name, if any (verified ones are remembered for a few seconds: sender-domains.ts). */
export { findSenderDomain } from './sender-domains.js';
import { findSenderDomain } from './sender-domains.js';

/** The rules an email must pass before it is accepted. Throws AppError (400/422). */
async function checkSend(input: SendEmailInput, domainOfTeam: (name: string) => Promise<{ id: string; status: string } | undefined>) {
  const prepared = prepareInput(input);
  const domain = await domainOfTeam(prepared.fromDomain);
  if (!domain) throw unprocessable(`Domain '${prepared.fromDomain}' not found for this team`);
  if (domain.status !== 'verified') throw unprocessable(`Domain '${prepared.fromDomain}' is not verified`);
  return { ...prepared, domainId: domain.id };
}

/** A finished MIME message (SMTP submission, services/sending/raw-emails.ts): kept as given and DKIM-signed at delivery instead of composed. */
export interface RawSource {
  /** The message as it goes out (Bcc removed, Message-ID and Date ensured, CRLF line ends). */
  source: Buffer;
  /** Its Message-ID, with the angle brackets. */
  messageId: string;
}

/** An email that passed its checks, waiting to be written with others in one transaction. */
export interface CheckedSend {
  sender: Sender;
  input: SendEmailInput;
  /** `domainId` null: the box's own system mail (system-mail.ts), which no team domain signs. */
  checked: PreparedInput & { domainId: string | null };
  hash: string | null;
  /** Set for a raw send: the stored source replaces composition (input then only describes the email for reads). */
  raw?: RawSource;
  /** Set for a send by template: the input holds its rendering. */
  template?: TemplateRef | null;
  /** Written beside the email when it is accepted (SendOptions). */
  afterWrite?: AfterWrite | undefined;
  /** Written beside it and the other accepted emails of its call (SendOptions), with its input index. */
  afterWriteAll?: { write: AfterWriteAll; index: number } | undefined;
}

// Accepted emails are written by group commit (src/db/batcher.ts): the sends that arrive while a write
// transaction runs share the next one. One writer per context; the map only finds it.
const writers = new WeakMap<AppContext, (item: CheckedSend) => Promise<SendResult | AppError>>();

// Deriving the text part of an html-only email costs about 17 µs of CPU per KB of html (htmlparser2 parses
// the document, mta/html-text.ts renders it). It is not stored: the render thread that builds the message
// derives it (mta/compose.ts), and a read of the email (GET /emails/{id}) or a preview derives it here — a
// small body's on the event loop (on a render thread the request would wait behind every message queued there
// for building, a broadcast's backlog), a larger body's on the threads (render-pool.ts), so that one big
// email does not hold the event loop. Stored, it doubled the size of a typical email's row (two pages instead
// of one) and cost the send path's event loop ~40 µs per email.
// One deriver per context, like the writers; without one everything is derived here.
const textDerivers = new WeakMap<AppContext, (html: string) => Promise<string>>();
export function setTextDeriver(ctx: AppContext, derive: (html: string) => Promise<string>): void {
  textDerivers.set(ctx, derive);
}
/** Html up to this many characters has its text part derived on the caller's thread (about a quarter of a millisecond). */
export const INLINE_TEXT_LIMIT = 16 * 1024;
/** The text part of an email: the sender's, or derived from its html (on a render thread when it is large). */
export async function deriveText(ctx: AppContext, input: Pick<SendEmailInput, 'html' | 'text'>): Promise<string | null> {
  const given = textGiven(input); // a blank text beside html counts as none, as on the wire (mta/compose.ts)
  if (given !== undefined) return given;
  if (input.html === undefined) return null;
  const derive = textDerivers.get(ctx);
  if (!derive || input.html.length <= INLINE_TEXT_LIMIT) return htmlToText(input.html);
  try {
    return await derive(input.html);
  } catch {
    return htmlToText(input.html); // the thread went away: derive it here
  }
}
function writerOf(ctx: AppContext): (item: CheckedSend) => Promise<SendResult | AppError> {
  let w = writers.get(ctx);
  if (!w) writers.set(ctx, (w = sharedWriterOf(ctx.db).batch((trx, items: CheckedSend[]) => writeEmails(ctx, trx, items))));
  return w;
}

/** Hands an email checked elsewhere (the raw send path) to the group-commit writer: quotas, suppressions and the write as for any send. */
export function submitChecked(ctx: AppContext, item: CheckedSend): Promise<SendResult | AppError> {
  return writerOf(ctx)(item);
}

/** Checks and accepts one email: resolves once it and its delivery job are durably stored. */
export async function sendEmail(ctx: AppContext, sender: Sender, input: SendEmailInput): Promise<SendResult> {
  const [result] = await sendEmails(ctx, sender, [input]);
  if (result instanceof AppError) throw result;
  return result!;
}

/**
 * Checks and accepts several emails (POST /emails/batch): each answers its id or its own AppError; the
 * accepted ones are written together. Errors other than AppError (the store failing) are thrown.
 */
export async function sendEmails(ctx: AppContext, sender: Sender, inputs: SendEmailInput[], options: SendOptions = {}): Promise<Array<SendResult | AppError>> {
  const domains = new Map<string, Promise<{ id: string; status: string } | undefined>>();
  const lookup = (name: string) => {
    let d = domains.get(name);
    if (!d) domains.set(name, (d = findSenderDomain(ctx, sender.teamId, name)));
    return d;
  };
  // A batch looks each of its templates up once.
  const templates = new Map<string, Promise<SendTemplate>>();
  const templateOf = (id: string) => {
    let t = templates.get(id);
    if (!t) templates.set(id, (t = templateForSend(ctx, sender.teamId, id)));
    return t;
  };
  const writer = writerOf(ctx);
  return Promise.all(
    inputs.map(async (input, index) => {
      try {
        // The request as asked (template_id and variables included) is what an idempotent replay compares.
        const hash = input.idempotency_key !== undefined ? requestHash(input) : null;
        const resolved = await resolveTemplate(ctx, sender.teamId, input, templateOf);
        const checked = await checkSend(resolved.input, lookup);
        const result = await writer({
          sender,
          input: resolved.input,
          checked,
          hash,
          template: resolved.template,
          afterWrite: options.afterWrite?.(index),
          afterWriteAll: options.afterWriteAll ? { write: options.afterWriteAll, index } : undefined,
        });
        ctx.metrics.emailsAccepted.inc({ source: 'api' });
        return result;
      } catch (err) {
        if (err instanceof AppError) return err;
        throw err;
      }
    }),
  );
}

/**
 * One transaction for many accepted emails: a handful of multi-row statements whatever their number, in two
 * rounds of statements that run at once (`settleAll`): what the checks read, then every write (the emails'
 * children beside the emails, foreign keys checked at COMMIT). In the shared writer's transaction the writes
 * are held for its write script (db/script.ts) and go with its COMMIT. `trx` must be a write transaction (ids
 * come from the AUTOINCREMENT sequences). Also used directly by system-mail.ts, inside the transaction of the
 * change it reports.
 */
export async function writeEmails(ctx: AppContext, trx: Queryable, items: CheckedSend[]): Promise<Array<SendResult | AppError>> {
  const at = ctx.clock.now();
  const now = at.toISOString();
  const results: Array<SendResult | AppError | undefined> = items.map(() => undefined);
  const recipientsOf = (c: PreparedInput) => [...c.to, ...c.cc, ...c.bcc].map((m) => m.address);
  // A key belongs to the team and the mode: a test-mode send must never answer for a live one (nothing of it
  // left the box) nor a live one for a test one.
  const teamKey = (item: CheckedSend, key: string) => `${item.sender.teamId}\0${item.sender.mode}\0${key}`;

  // Round 1, the reads: earlier emails with the idempotency keys (within 24 h), the quota figures of the
  // teams that are counted, suppressions among every recipient, and the next ids.
  const ledger = new SendLedger(ctx, trx);
  const earlierLookups = new Map<string, Promise<{ id: string; hash: string | null } | undefined>>();
  for (const item of items) {
    const key = item.input.idempotency_key;
    if (key === undefined || earlierLookups.has(teamKey(item, key))) continue;
    earlierLookups.set(
      teamKey(item, key),
      trx<EmailRow>('emails')
        .where({ team_id: item.sender.teamId, mode: item.sender.mode, idempotency_key: key })
        .andWhere('created_at', '>', new Date(at.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString())
        .orderBy('id', 'desc')
        .first('public_id', 'request_hash')
        .then((r) => (r ? { id: r.public_id, hash: r.request_hash } : undefined)),
    );
  }
  const teams = [...new Set(items.map((i) => i.sender.teamId))];
  // Emails with unsubscribe links: their contact and topic (one JSON read, in this round's statement).
  const linked = items.flatMap((item, i) => (item.checked.links ? [{ i, teamId: item.sender.teamId, address: recipientsOf(item.checked)[0]!, topicId: item.checked.links.topicId }] : []));
  const [, , suppressedByTeam, ids, , audiences] = await settleAll([
    settleAll([...earlierLookups.values()]),
    // The box's own system mail (no team domain) is not the team's sending; test mode is not counted.
    ledger.load(items.filter((i) => i.checked.domainId !== null && i.sender.mode !== 'test').map((i) => i.sender.teamId)).catch(() => undefined), // a team that cannot be read fails its own emails in check()
    settleAll(teams.map((teamId) => suppressedAmong(trx, teamId, items.filter((i) => i.sender.teamId === teamId).flatMap((i) => recipientsOf(i.checked))))),
    nextIds(trx, ['emails', 'jobs']),
    // An email's children then go in the same round as the email (below): their foreign keys are checked
    // at COMMIT rather than statement by statement (until the transaction ends).
    deferForeignKeys(trx),
    audienceOfSends(trx, linked),
  ]);
  const audienceOf = new Map<number, SendAudience>(linked.map((l, n) => [l.i, audiences[n]!]));
  const suppressed = new Map(teams.map((teamId, n) => [teamId, suppressedByTeam[n]!]));

  // Idempotency: an earlier email with the key (within 24 h, or earlier in this very batch) answers instead.
  const sameBatch = new Map<string, { id: string; hash: string | null }>();
  const accepted: Array<{ i: number; item: CheckedSend; publicId: string }> = [];
  for (const [i, item] of items.entries()) {
    const key = item.input.idempotency_key;
    const publicId = newPublicId('em');
    if (key !== undefined) {
      const earlier = sameBatch.get(teamKey(item, key)) ?? (await earlierLookups.get(teamKey(item, key)));
      if (earlier) {
        results[i] =
          earlier.hash === item.hash
            ? { id: earlier.id, replayed: true }
            : conflict(`Idempotency key '${key}' was already used with a different request within the last 24 hours`);
        continue;
      }
    }
    // Unsubscribe links need the recipient's contact (and the topic named): refused before they count.
    const audience = audienceOf.get(i);
    if (audience && !audience.contact) {
      results[i] = unprocessable(`'${recipientsOf(item.checked)[0]!}' is not a contact of this team: an email with unsubscribe links goes to a contact (POST /contacts)`);
      continue;
    }
    if (audience && item.checked.links!.topicId !== null && !audience.topic) {
      results[i] = unprocessable(`Topic '${item.checked.links!.topicId}' not found`);
      continue;
    }
    // Quotas and caps (services/sending/quotas.ts), after replays (which do not count); the box's own system mail
    // (no team domain) is not the team's sending and is exempt.
    if (item.checked.domainId !== null) {
      try {
        await ledger.check({ teamId: item.sender.teamId, isTest: item.sender.mode === 'test', recipients: recipientsOf(item.checked) });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        results[i] = err;
        continue;
      }
    }
    if (key !== undefined) sameBatch.set(teamKey(item, key), { id: publicId, hash: item.hash });
    accepted.push({ i, item, publicId });
  }
  if (accepted.length === 0) {
    await ledger.save(); // a hold decided by check() is kept although nothing was accepted
    return results as Array<SendResult | AppError>;
  }

  const emails: EmailRow[] = [];
  const recipients: Array<Omit<RecipientRow, 'id' | 'last_code' | 'last_message' | 'bounce_category'>> = [];
  const attachments: Array<Omit<AttachmentRow, 'id'>> = [];
  const timeline: TimelineRow[] = [];
  const events: Array<Omit<EventRow, 'id'>> = [];
  const jobs: Array<{ email: EmailRow; runAt: Date; lane: string | null }> = [];
  const sources: Array<{ email_id: number; raw: Buffer }> = [];
  const bodies: EmailBodyRow[] = [];

  for (const [n, { i, item, publicId }] of accepted.entries()) {
    const { sender, input, checked: c, hash, template } = item;
    const id = ids.emails + n;
    const audience = audienceOf.get(i);
    const scheduled = c.scheduledAt && c.scheduledAt.getTime() > at.getTime() ? c.scheduledAt : null;
    const email: EmailRow = {
      id,
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
      headers: JSON.stringify(input.headers ?? {}),
      tags: JSON.stringify(input.tags ?? []),
      status: 'queued',
      message_id: item.raw?.messageId ?? `<${publicId}@${ctx.config.hostname}>`,
      idempotency_key: input.idempotency_key ?? null,
      request_hash: hash,
      job_id: null,
      attempts: 0,
      scheduled_at: scheduled ? scheduled.toISOString() : null,
      sent_at: null,
      delivered_at: null,
      template_id: template?.id ?? null,
      template_version: template?.version ?? null,
      broadcast_id: input.broadcast_id ?? null,
      created_at: now,
      updated_at: now,
    };
    emails.push(email);
    if (item.raw) sources.push({ email_id: id, raw: item.raw.source });
    // The sender's text only: an html-only email's is derived from its html where it is needed, by the one
    // function (mta/compose.ts textPartOf), when the message is built and when the email is read.
    const body: EmailBodyRow = { email_id: id, html: input.html ?? null, text: textGiven(input) ?? null };
    if (body.html !== null || body.text !== null) bodies.push(body);

    const blockedSet = suppressed.get(sender.teamId)!;
    // An email for a contact who left (everything, or the topic it is sent for) is not sent: as a suppressed
    // recipient, with why. The suppression list, when it also names them, gives its own reason.
    const optedOut = audience && !blockedSet.has(addressKey(recipientsOf(c)[0]!)) ? optOutReason(audience) : null;
    if (audience && !optedOut) {
      const token = signUnsubscribeToken(ctx, { contact: audience.contact!, topic: audience.topic, emailKey: id }, at);
      email.headers = JSON.stringify({ ...input.headers, ...unsubscribeHeaders(ctx, token) });
    }
    // One recipient per address (the first of to, cc, bcc naming it): one RCPT, one status, one outcome.
    const named = new Set<string>();
    const all = [...c.to.map((m) => ['to', m] as const), ...c.cc.map((m) => ['cc', m] as const), ...c.bcc.map((m) => ['bcc', m] as const)].filter(([, m]) => {
      const key = addressKey(m.address);
      if (named.has(key)) return false;
      named.add(key);
      return true;
    });
    const mine = all.map(([kind, m]) => ({
      email_id: id,
      kind,
      address: m.address,
      domain: domainOf(m.address),
      status: (blockedSet.has(addressKey(m.address)) || optedOut ? 'suppressed' : 'queued') as RecipientStatus,
      updated_at: now,
    }));
    recipients.push(...mine);
    attachments.push(...c.attachments.map((a) => ({ ...a, email_id: id })));

    timeline.push(timelineRow(email, at, 'queued', scheduled ? { scheduled_at: email.scheduled_at } : {}));
    if (scheduled) events.push(emailEventRow(email, at, 'email.scheduled', { scheduled_at: email.scheduled_at }));
    const blocked = mine.filter((r) => r.status === 'suppressed').map((r) => r.address);
    if (blocked.length) events.push(emailEventRow(email, at, 'email.suppressed', { suppressed: blocked, ...(optedOut ? { reason: optedOut } : {}) }));
    if (blocked.length === mine.length) {
      email.status = 'failed';
      const reason = optedOut ?? 'every recipient is on the suppression list';
      timeline.push(timelineRow(email, at, 'failed', { reason, suppressed: blocked }));
      events.push(emailEventRow(email, at, 'email.failed', { reason }));
    } else {
      // Some recipients get it: the timeline says which ones will not, and why (as a delivery failure does).
      for (const address of blocked) timeline.push(timelineRow(email, at, 'failed', { recipient: address, reason: 'on the suppression list' }));
      jobs.push({ email, runAt: scheduled ?? at, lane: deliveryLane(email, mine) });
    }
    results[accepted[n]!.i] = { id: publicId, replayed: false };
  }

  // Jobs get their ids in order from the sequence read above; an email row names its job.
  jobs.forEach((j, n) => (j.email.job_id = ids.jobs + n));
  // The afterWriteAll of each call with emails in this transaction: once, with all of them.
  const together = new Map<AfterWriteAll, Array<{ index: number; id: number; publicId: string }>>();
  accepted.forEach(({ item, publicId }, n) => {
    if (!item.afterWriteAll) return;
    const list = together.get(item.afterWriteAll.write) ?? [];
    list.push({ index: item.afterWriteAll.index, id: ids.emails + n, publicId });
    together.set(item.afterWriteAll.write, list);
  });

  // Round 2: the emails, their jobs, webhook events, the quota counts and the emails' children, at once.
  await settleAll([
    ctx.jobs.enqueueMany(trx, jobs.map((j) => ({ kind: DELIVER_JOB, payload: { emailId: j.email.id }, runAt: j.runAt, lane: j.lane })), ids.jobs),
    insertRows(trx, 'emails', emails),
    recordEvents(trx, events),
    ledger.save(),
    insertRows(trx, 'email_recipients', recipients),
    insertRows(trx, 'email_bodies', bodies),
    // Attachments can be large: one row per statement keeps each statement's size reasonable.
    ...attachments.map((a) => insertRows(trx, 'email_attachments', [a])),
    ...sources.map((r) => insertRows(trx, 'email_sources', [r])),
    insertRows(trx, 'email_events', timeline),
    ...accepted.flatMap(({ item, publicId }, n) => (item.afterWrite ? [item.afterWrite(trx, { id: ids.emails + n, publicId })] : [])),
    ...[...together].map(([write, list]) => write(trx, list)),
  ]);
  return results as Array<SendResult | AppError>;
}

/** Why an email with unsubscribe links is not sent to its contact, or null when it is. */
function optOutReason(a: SendAudience): string | null {
  if (a.contact!.unsubscribed) return 'the contact unsubscribed from all mail';
  if (a.topic && !a.subscribed) return `the contact is not subscribed to topic '${a.topic.name}' (${a.topic.id})`;
  return null;
}

// ---- reads ----

/** A caller of the read endpoints: sending_access keys see only what they sent. */
export interface Reader {
  teamId: string;
  apiKeyId: string;
  ownOnly: boolean;
  /** The caller's key mode: a test-mode key reads live emails but neither cancels nor reschedules one. */
  mode?: KeyMode | undefined;
}

/** A test key (CI, staging) must not change what live sending does, as it may not issue or revoke live keys. */
function mayChange(reader: Reader, e: EmailRow, action: string): void {
  if (reader.mode === 'test' && e.mode !== 'test') throw forbidden(`A test-mode API key can only ${action} test-mode emails`);
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
  /** The template and version the email was rendered from, if any. */
  template: TemplateRef | null;
  /** The broadcast it is one recipient's copy of (`bc_…`), if any. */
  broadcast_id: string | null;
}

export async function getEmail(ctx: AppContext, reader: Reader, publicId: string): Promise<EmailDetail> {
  const reads = readsOf(ctx.db); // the read-only connections: a GET never queues behind the send path's writes
  const e = await findEmail(reads, reader, publicId);
  const [body, recipients, attachments] = await Promise.all([
    reads<EmailBodyRow>('email_bodies').where('email_id', e.id).first(),
    reads<RecipientRow>('email_recipients').where('email_id', e.id).orderBy('id'),
    reads<AttachmentRow>('email_attachments').where('email_id', e.id).orderBy('position').select('filename', 'content_type', 'size'),
  ]);
  return {
    id: e.public_id,
    from: e.from_header,
    to: json(e.to_addrs),
    cc: json(e.cc_addrs),
    bcc: json(e.bcc_addrs),
    reply_to: json(e.reply_to),
    subject: e.subject,
    html: body?.html ?? null,
    text: body ? await deriveText(ctx, { html: body.html ?? undefined, text: body.text ?? undefined }) : null,
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
    template: e.template_id === null ? null : { id: e.template_id, version: e.template_version! },
    broadcast_id: e.broadcast_id ?? null,
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

/**
 * Newest first. `provider`, `country` and `device` match an email with an open or click (a timeline entry
 * `opened`/`clicked`, tracking.ts) that has all of those given: provider and device as tracking names them
 * (any case), country as an ISO 3166-1 alpha-2 code (any case). Machine hits count: they are hits of that
 * provider (`machine` in the entry tells them apart).
 */
export async function listEmails(ctx: AppContext, reader: Reader, f: EmailListFilter, paging: PageRequest): Promise<Page<EmailListItem>> {
  const q = readsOf(ctx.db)<EmailRow>('emails').where('team_id', reader.teamId);
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
  if (f.provider || f.country || f.device) {
    const hit: string[] = [];
    const values: string[] = [];
    if (f.provider) hit.push(`json_extract(ev.data, '$.provider') = ?`), values.push(f.provider.toLowerCase());
    if (f.device) hit.push(`json_extract(ev.data, '$.device') = ?`), values.push(f.device.toLowerCase());
    if (f.country) hit.push(`json_extract(ev.data, '$.country') = ?`), values.push(f.country.toUpperCase());
    q.andWhereRaw(`EXISTS (SELECT 1 FROM email_events ev WHERE ev.email_id = emails.id AND ev.type IN ('opened', 'clicked') AND ${hit.join(' AND ')})`, values);
  }
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
  const reads = readsOf(ctx.db);
  const e = await findEmail(reads, reader, publicId);
  const rows = await reads<{ type: TimelineType; data: string; created_at: string }>('email_events').where('email_id', e.id).orderBy('id');
  return rows.map((r) => ({ type: r.type, timestamp: r.created_at, data: json(r.data) }));
}

// ---- reschedule and cancel: only while nothing has been attempted ----

function notWaiting(e: EmailRow, action: string): AppError {
  return unprocessable(`Email cannot be ${action}: its status is '${e.status}'; only a queued email that has not started sending can be ${action}`);
}

export async function rescheduleEmail(ctx: AppContext, reader: Reader, publicId: string, scheduledAt: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const e = await findEmail(trx, reader, publicId);
    mayChange(reader, e, 'reschedule');
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
    mayChange(reader, e, 'cancel');
    if (e.status !== 'queued' || e.job_id === null || !(await ctx.jobs.cancel(trx, e.job_id))) throw notWaiting(e, 'cancelled');
    const at = ctx.clock.now();
    const pending = await trx<RecipientRow>('email_recipients').where('email_id', e.id).select('id', 'status');
    const ids = pending.filter((r) => isPending(r.status)).map((r) => r.id);
    await trx('email_recipients').whereIn('id', ids).update({ status: 'cancelled', updated_at: at.toISOString() });
    await trx('emails').where({ id: e.id }).update({ status: 'cancelled', job_id: null, updated_at: at.toISOString() });
    await addTimeline(trx, e, at, 'cancelled');
  });
}
