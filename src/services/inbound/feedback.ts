// Mail that comes back: asynchronous bounces (DSN, RFC 3464, and the common non-standard texts) and
// complaints (ARF, RFC 5965) applied to the email and recipient they belong to, with the same records the
// delivery path writes (services/sending/delivery.ts): recipient status, timeline, webhook events, suppressions.
//
// Matching: the return path of every email is `bounces+<em_id>@<sender domain>` (delivery.ts `returnPath`),
// so a notice addressed there names its email; a notice that reached us otherwise is matched by the
// returned original's Message-ID (`<em_id@MAIL_HOSTNAME>`). Either way the email must have been sent from
// the domain the notice came to, so one team cannot touch another's emails. The recipient is the
// report's Original-Recipient or Final-Recipient (for ARF: Original-Rcpt-To, or the "for <…>" of the
// reporting provider's Received header in the enclosed copy), else the email's only one. The enclosed
// copy's To and Cc never decide: they name every visible recipient and none of the Bcc ones.
import type { Queryable } from '../../db/index.js';
import { addressKey } from '../../core/address.js';
import { recordEvents, type EventRow } from '../../events/recorder.js';
import { classifyBounce, enhancedCodeOf } from '../../mta/bounce.js';
import { emailEventRow, RETURN_PATH_PREFIX, timelineRow, type EmailRow, type RecipientRow, type TimelineRow, deriveEmailStatus } from '../sending/index.js';
import { addSuppression } from '../audience/index.js';
import { FOREIGN_MESSAGE_ID } from '../../db/migrations/011-email-message-ids.js';

export interface BounceRecipient {
  /** Final-Recipient (or the address a text bounce names). */
  address: string | null;
  originalAddress: string | null;
  action: 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';
  /** RFC 3463 status, e.g. 5.1.1. */
  status: string;
  /** The remote server's reply, `smtp;` prefix removed. */
  diagnostic: string | null;
  remoteMta: string | null;
}

export interface BounceNotice {
  format: 'dsn' | 'text';
  reportingMta: string | null;
  recipients: BounceRecipient[];
  originalMessageId: string | null;
  /** To and Cc of the returned original (when it came back). */
  originalTo: string[];
}

export interface ComplaintNotice {
  /** abuse, fraud, virus, other, not-spam, auth-failure (RFC 5965 §7.3, RFC 6591). */
  feedbackType: string;
  userAgent: string | null;
  originalMailFrom: string | null;
  originalRcptTo: string[];
  arrivalDate: string | null;
  sourceIp: string | null;
  originalMessageId: string | null;
  originalTo: string[];
  /** The "for <address>" of the enclosed copy's Received headers: the mailbox the provider delivered it to. */
  receivedFor: string[];
}

/** Where a notice arrived: the box's domain it was addressed to, and the em_ id of a VERP address. */
export interface NoticeTarget {
  /**
   * The box's domain the notice was addressed to: the email must have been sent from it. Null for the box's
   * feedback-loop address (FEEDBACK_LOOP_LOCAL_PART), which serves every team: the email is then named only
   * by the returned Message-ID, which this host wrote.
   */
  domain: string | null;
  emailPublicId: string | null;
}

/** Feedback types that are complaints; `not-spam` and `auth-failure` (RFC 6591 failure reports) are not. */
const COMPLAINT_TYPES = new Set(['abuse', 'fraud', 'virus', 'other']);

const PUBLIC_ID_RE = /^em_[A-Za-z0-9]{6,64}$/;

/** `bounces+em_abc@acme.example` → `em_abc`; null for any other address. */
export function emailIdFromReturnPath(address: string): string | null {
  const local = address.slice(0, address.lastIndexOf('@'));
  if (local.slice(0, RETURN_PATH_PREFIX.length).toLowerCase() !== RETURN_PATH_PREFIX) return null;
  const id = local.slice(RETURN_PATH_PREFIX.length);
  return PUBLIC_ID_RE.test(id) ? id : null;
}

/** A Message-ID's two sides (`<left@right>`, the brackets optional), or null when it is not one. */
function messageIdParts(messageId: string | null): { left: string; right: string } | null {
  const m = messageId ? /^<?([^@<>\s]+)@([^<>\s]+)>?$/.exec(messageId.trim()) : null;
  return m ? { left: m[1]!, right: m[2]! } : null;
}

/** `<em_abc@mx.example>` → `em_abc` when the right side is this box. */
export function emailIdFromMessageId(messageId: string | null, hostname: string): string | null {
  const id = messageIdParts(messageId);
  if (!id || id.right.toLowerCase() !== hostname.toLowerCase()) return null;
  return PUBLIC_ID_RE.test(id.left) ? id.left : null;
}

async function findEmail(q: Queryable, target: NoticeTarget, originalMessageId: string | null, hostname: string): Promise<EmailRow | undefined> {
  const publicId = target.emailPublicId ?? emailIdFromMessageId(originalMessageId, hostname);
  // As the store keeps Message-IDs: in angle brackets.
  const parts = publicId ? null : messageIdParts(originalMessageId);
  const foreignId = parts && `<${parts.left}@${parts.right}>`;
  if (!publicId && !foreignId) return undefined;
  // The box's own Message-IDs carry the public id; an SMTP submission keeps its client's, found as it is
  // (the newest live email with it: a client that sends one message twice gives both the same id).
  const email = publicId
    ? await q<EmailRow>('emails').where({ public_id: publicId }).first()
    : await q<EmailRow>('emails').where({ message_id: foreignId!, mode: 'live' }).whereRaw(FOREIGN_MESSAGE_ID).orderBy('id', 'desc').first();
  // A test-mode email never left the box: a report about it is forged or mistaken, and must not bounce it
  // or put a live address on the suppression list.
  if (!email || email.mode === 'test') return undefined;
  return target.domain === null || email.from_domain.toLowerCase() === target.domain.toLowerCase() ? email : undefined;
}

/**
 * The recipient a notice names, else the email's only recipient (a notice that came back to this email's
 * own return path concerns one of its recipients). With several recipients and none named, nobody: a
 * guess would bounce, suppress or mark as complaining someone else.
 */
function pickRecipient(recipients: RecipientRow[], candidates: Array<string | null | undefined>): RecipientRow | undefined {
  for (const c of candidates) {
    if (!c) continue;
    const r = recipients.find((x) => addressKey(x.address) === addressKey(c));
    if (r) return r;
  }
  return recipients.length === 1 ? recipients[0] : undefined;
}

/** Everything one notice changes; written by the caller's transaction. */
interface Changes {
  recipients: Map<number, Partial<RecipientRow>>;
  timeline: TimelineRow[];
  events: Array<Omit<EventRow, 'id'>>;
  suppressions: Array<{ address: string; reason: 'bounce' | 'complaint'; details: string }>;
}

async function write(q: Queryable, at: Date, email: EmailRow, all: RecipientRow[], c: Changes): Promise<void> {
  const now = at.toISOString();
  for (const [id, values] of c.recipients) await q('email_recipients').where({ id }).update({ ...values, updated_at: now });
  if (c.timeline.length) await q('email_events').insert(c.timeline);
  await recordEvents(q, c.events);
  for (const s of c.suppressions) await addSuppression(q, at, email.team_id, s.address, s.reason, s.details.slice(0, 500), email.public_id);
  if (c.recipients.size > 0) {
    const statuses = all.map((r) => (c.recipients.get(r.id)?.status ?? r.status));
    const status = deriveEmailStatus(statuses, true);
    if (status !== email.status) await q('emails').where({ id: email.id }).update({ status, updated_at: now });
  }
}

export interface NoticeResult {
  /** The email the notice was matched to, or null. */
  emailId: string | null;
  /** Recipients whose record changed or got an event. */
  applied: string[];
}

/**
 * Applies a bounce notice: `failed` → the recipient is bounced (email.bounced, suppression when the address
 * does not exist, as for a bounce during delivery); `delayed` → email.soft_bounced and the remote's reply on
 * the recipient, whose status is unchanged (the remote is still trying). Positive notices are ignored, and
 * so is a failure already recorded with the same status code (a repeated notice).
 */
export async function applyBounce(q: Queryable, at: Date, hostname: string, target: NoticeTarget, notice: BounceNotice): Promise<NoticeResult> {
  const email = await findEmail(q, target, notice.originalMessageId, hostname);
  if (!email) return { emailId: null, applied: [] };
  const all = await q<RecipientRow>('email_recipients').where('email_id', email.id).orderBy('id');
  const c: Changes = { recipients: new Map(), timeline: [], events: [], suppressions: [] };
  const applied: string[] = [];
  for (const n of notice.recipients) {
    if (n.action !== 'failed' && n.action !== 'delayed') continue;
    const r = pickRecipient(all, [n.originalAddress, n.address]);
    if (!r || r.status === 'complained' || c.recipients.has(r.id)) continue;
    const message = (n.diagnostic ?? `${n.action} (${n.status})`).slice(0, 2000);
    const basic = /^\s*([245]\d\d)\b/.exec(n.diagnostic ?? '');
    // Classified by the remote server's own reply when it has an enhanced code: a report's Status can be
    // the reporting MTA's summary (Exim's 5.0.0 "retry timeout exceeded" over "452 4.2.2 Mailbox full").
    const enhanced = (n.diagnostic ? enhancedCodeOf(n.diagnostic) : undefined) ?? n.status;
    const category = classifyBounce({ code: basic ? Number(basic[1]) : undefined, enhanced, message });
    const bounce = { bounce_message: message, bounce_code: n.status, bounce_category: category };
    const source = { source: notice.format === 'dsn' ? 'dsn' : 'bounce_message', reporting_mta: notice.reportingMta, remote_mta: n.remoteMta };
    const hard = n.action === 'failed';
    if (hard) {
      if (r.status === 'bounced' && r.last_code === n.status) continue;
      c.recipients.set(r.id, { status: 'bounced', last_code: n.status, last_message: message, bounce_category: category });
      c.timeline.push(timelineRow(email, at, 'bounced', { recipient: r.address, ...bounce, ...source }));
      c.events.push(emailEventRow(email, at, 'email.bounced', { recipient: r.address, ...bounce }));
      if (category === 'invalid_mailbox') c.suppressions.push({ address: r.address, reason: 'bounce', details: `${n.status} ${message}` });
    } else {
      c.recipients.set(r.id, { last_code: n.status, last_message: message, bounce_category: category });
      c.timeline.push(timelineRow(email, at, 'sending', { recipient: r.address, remote_delay: true, ...bounce, ...source }));
      c.events.push(emailEventRow(email, at, 'email.soft_bounced', { recipient: r.address, ...bounce }));
    }
    applied.push(r.address);
  }
  // Soft notices change no status: only hard ones go into the status derivation.
  const statusChanges: Changes = { ...c, recipients: new Map([...c.recipients].filter(([, v]) => v.status !== undefined)) };
  for (const [id, values] of c.recipients) if (values.status === undefined) await q('email_recipients').where({ id }).update({ ...values, updated_at: at.toISOString() });
  await write(q, at, email, all, statusChanges);
  return { emailId: email.public_id, applied };
}

/** Applies an ARF complaint: the recipient is complained (email.complained) and suppressed (reason complaint). */
export async function applyComplaint(q: Queryable, at: Date, hostname: string, target: NoticeTarget, notice: ComplaintNotice): Promise<NoticeResult> {
  if (!COMPLAINT_TYPES.has(notice.feedbackType)) return { emailId: null, applied: [] };
  const email = await findEmail(q, target, notice.originalMessageId, hostname);
  if (!email) return { emailId: null, applied: [] };
  const all = await q<RecipientRow>('email_recipients').where('email_id', email.id).orderBy('id');
  const r = pickRecipient(all, [...notice.originalRcptTo, ...notice.receivedFor]);
  if (!r || r.status === 'complained') return { emailId: email.public_id, applied: [] };
  const data = { recipient: r.address, feedback_type: notice.feedbackType, user_agent: notice.userAgent, arrival_date: notice.arrivalDate };
  const c: Changes = {
    recipients: new Map([[r.id, { status: 'complained' }]]),
    timeline: [timelineRow(email, at, 'complained', data)],
    events: [emailEventRow(email, at, 'email.complained', data)],
    suppressions: [{ address: r.address, reason: 'complaint', details: `${notice.feedbackType} report${notice.userAgent ? ` from ${notice.userAgent}` : ''}` }],
  };
  await write(q, at, email, all, c);
  return { emailId: email.public_id, applied: [r.address] };
}
