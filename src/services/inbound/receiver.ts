// Receiving one message at the MX, after its recipients were accepted (services/inbound/routing.ts):
//   1. authenticate it with mailauth (SPF, DKIM, DMARC, ARC) through the box's resolver (auth.ts:
//      on worker threads);
//   2. decide: a DMARC failure under p=reject is refused, or filed as junk (MAIL_INBOUND_DMARC_REJECT);
//   3. prepend our trace headers (Return-Path, Authentication-Results, Received-SPF, Received), after removing
//      any Authentication-Results that claims to be ours (RFC 8601 §5);
//   4. store durably: mailbox copies (the mail store, filters applied), inbound emails for webhook routes,
//      bounce and complaint notices applied to our emails, DMARC aggregate reports. Only then does the
//      adapter answer 250. A failure before the end answers 4xx and the sender retries (at-least-once).
// The database writes of messages arriving together share one transaction (group commit, db/batcher.ts).
import type { AppContext } from '../../context.js';
import { SharedWriter } from '../../db/batcher.js';
import { randomBase62 } from '../../core/ids.js';
import type { AuthInput, AuthVerdict, InboundAuthPool } from './auth.js';
import type { DmarcAggregateReport } from './dmarc-reports.js';
import { storeDmarcReport } from './dmarc-reports.js';
import { applyBounce, applyComplaint, type BounceNotice, type ComplaintNotice } from './feedback.js';
import { insertInbound, parseInbound, type AuthSummary } from './inbound-emails.js';
import type { HostDomain, LocalDomain, RecipientRoute } from './routing.js';
import { headerSize } from '../../mailstore/index.js';
import { unsubscribeByMessage } from '../sending/index.js';

export interface InboundClient {
  ip: string;
  /** EHLO/HELO name. */
  helo: string;
  tls: boolean;
  /** MAIL FROM carried SMTPUTF8 (RFC 6531). */
  smtpUtf8?: boolean;
  /**
   * Mail the box itself sends to an address it serves (services/inbound/local-delivery.ts): its sender was authenticated
   * when it was accepted (an API key, SMTP AUTH, the box's own mail) and it is checked from 127.0.0.1, which no
   * SPF record names, so DMARC's verdict is recorded but never refuses it or files it as junk.
   */
  local?: boolean;
}

/** What the adapter read from a message sent to our own addresses (pure parsers in src/smtp/reports/). */
export interface Notices {
  bounce?: BounceNotice | null;
  complaint?: ComplaintNotice | null;
  dmarc?: DmarcAggregateReport | { error: string };
}

export interface InboundMessage {
  raw: Buffer;
  /** Envelope sender; '' for the null reverse path (bounces). */
  mailFrom: string;
  routes: RecipientRoute[];
  client: InboundClient;
  notices: Notices;
}

export type ReceiveResult =
  | { status: 'accepted'; queueId: string; junk: boolean }
  | { status: 'refused'; reason: 'dmarc_reject'; message: string }
  /** Not accepted for now: the sender should try again (a DMARC failure that rests on an unanswered look-up). */
  | { status: 'deferred'; reason: 'dmarc_temperror'; message: string };

/** Mailbox delivery, wired by the composition root once a mail store exists (services/inbound/mailbox-delivery.ts). */
export type MailboxDelivery = (raw: Buffer, routes: Array<Extract<RecipientRoute, { kind: 'mailbox' }>>, opts: { junk: boolean; mailFrom: string }) => Promise<void>;

export interface InboundReceiver {
  receive(message: InboundMessage): Promise<ReceiveResult>;
}

function summarize(auth: AuthVerdict | null, header: string): AuthSummary {
  if (!auth) return { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror', arc: 'temperror', header };
  const dkim = auth.dkim;
  return {
    spf: auth.spf ?? 'none',
    dkim: dkim.length === 0 ? 'none' : dkim.some((r) => r === 'pass') ? 'pass' : dkim[0]!,
    dmarc: auth.dmarc ? auth.dmarc.result : 'none',
    arc: auth.arc ?? 'none',
    header,
  };
}

const RFC2822_DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const RFC2822_MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** RFC 5322 §3.3 date-time in UTC. */
export function rfc5322Date(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${RFC2822_DAYS[d.getUTCDay()]}, ${d.getUTCDate()} ${RFC2822_MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`;
}

/** Removes Authentication-Results fields whose authserv-id is ours: only this box may speak for itself. */
export function stripOwnAuthResults(raw: Buffer, authservId: string): Buffer {
  // The header block without the empty line that ends it (the body is never decoded).
  const head = raw.toString('latin1', 0, headerSize(raw)).replace(/\r?\n\r?\n$/, '');
  const escaped = authservId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const own = new RegExp(`^authentication-results:\\s*${escaped}\\s*(;|$)`, 'i');
  if (!/^authentication-results:/im.test(head)) return raw;
  const fields = head.split(/\r?\n(?![ \t])/);
  const kept = fields.filter((f) => !own.test(f.replace(/\r?\n[ \t]+/g, ' ')));
  if (kept.length === fields.length) return raw;
  return Buffer.concat([Buffer.from(kept.join('\r\n'), 'latin1'), raw.subarray(Buffer.byteLength(head, 'latin1'))]);
}

const cleanHeaderValue = (s: string) => s.replace(/[\r\n]+/g, ' ').slice(0, 255);

/** The receiver; `auth` runs the mailauth checks (services/inbound/auth.ts: on its threads, or inline). */
export function createInboundReceiver(ctx: AppContext, mailboxes: MailboxDelivery | null, auth: InboundAuthPool): InboundReceiver {
  const log = ctx.log.child({ component: 'mx' });
  const hostname = ctx.config.hostname;
  const writer = new SharedWriter(ctx.db, 'in-order');

  async function check(message: InboundMessage): Promise<AuthVerdict | null> {
    const input: AuthInput = { raw: message.raw, ip: message.client.ip, helo: message.client.helo, sender: message.mailFrom, mta: hostname };
    try {
      return await auth.check(input, ctx.clock.now());
    } catch (err) {
      log.warn({ err }, 'mailauth could not check a message');
      return null;
    }
  }

  async function receive(message: InboundMessage): Promise<ReceiveResult> {
    const queueId = randomBase62(16);
    const at = ctx.clock.now();
    const auth = await check(message);
    // mailauth's folding can leave empty lines between fields: one field per line group, CRLF-terminated.
    const authHeaders = auth
      ? auth.headers.split(/\r?\n/).filter((l) => l.trim() !== '').map((l) => `${l}\r\n`).join('')
      : `Authentication-Results: ${hostname}; none (authentication could not be checked)\r\n`;
    const summary = summarize(auth, authHeaders.replace(/\r?\n[ \t]*/g, ' ').trim());

    const dmarc = auth?.dmarc;
    const enforced = !message.client.local;
    const dmarcReject = enforced && Boolean(dmarc && dmarc.result === 'fail' && dmarc.policy === 'reject');
    if (dmarcReject && ctx.config.inboundDmarcReject === 'refuse') {
      // A failure that rests on a look-up the DNS did not answer (an SPF temperror, a DKIM key not fetched)
      // is not a verdict (RFC 7208 §2.6.6, RFC 6376 §6.1.2): the sender is asked to try again, not refused
      // for good over our resolver's or their DNS host's bad minute. Only when the identifier could have
      // aligned: a forger's own signature whose key does not resolve changes nothing.
      if (auth?.unansweredMayAlign) {
        log.info({ queueId, from: message.mailFrom, domain: dmarc?.domain ?? null, spf: auth.spf, dkim: auth.dkim }, 'deferred: DMARC reject rests on a DNS temperror');
        return { status: 'deferred', reason: 'dmarc_temperror', message: `DMARC could not be checked for ${dmarc?.domain ?? 'its domain'} (a DNS look-up went unanswered), try again later` };
      }
      log.info({ queueId, from: message.mailFrom, domain: dmarc ? dmarc.domain : null }, 'refused: DMARC policy reject');
      return { status: 'refused', reason: 'dmarc_reject', message: `Message refused: it fails DMARC and ${dmarc?.domain ?? 'its domain'} publishes p=reject` };
    }
    const junk = dmarcReject || (enforced && Boolean(dmarc && dmarc.result === 'fail' && dmarc.policy === 'quarantine'));

    const rcpts = message.routes.map((r) => r.address);
    // The "with" protocol (IANA Mail Transmission Types): ESMTP, ESMTPS (RFC 3848), and UTF8SMTP, UTF8SMTPS for
    // a transaction that used SMTPUTF8 (RFC 6531 §3.7.3), as Postfix writes them.
    const protocol = `${message.client.smtpUtf8 ? 'UTF8SMTP' : 'ESMTP'}${message.client.tls ? 'S' : ''}`;
    const received =
      `Received: from ${cleanHeaderValue(message.client.helo || 'unknown')} ([${message.client.ip}])\r\n` +
      `\tby ${hostname} with ${protocol} id ${queueId}${rcpts.length === 1 ? `\r\n\tfor <${cleanHeaderValue(rcpts[0]!)}>` : ''};\r\n\t${rfc5322Date(at)}\r\n`;
    const trace = Buffer.from(`Return-Path: <${cleanHeaderValue(message.mailFrom)}>\r\n${authHeaders}${received}`, 'utf8');
    const stored = Buffer.concat([trace, stripOwnAuthResults(message.raw, hostname)]);

    // 1. Mailboxes (the store commits its own transaction; filters decided per mailbox).
    const webhook = new Map<string, { domain: LocalDomain | HostDomain; rcpt: string[]; mailboxIds: number[] }>();
    for (const r of message.routes) {
      if (r.kind !== 'webhook' && !(r.kind === 'mailbox' && r.alsoWebhook)) continue;
      const entry = webhook.get(r.domain.name) ?? { domain: r.domain, rcpt: [], mailboxIds: [] };
      entry.rcpt.push(r.address);
      if (r.kind === 'mailbox') entry.mailboxIds.push(...r.mailboxIds);
      webhook.set(r.domain.name, entry);
    }
    // Parsed before anything is stored: a message that cannot be parsed is refused (451) before a mailbox
    // copy exists, so the sender's retry does not store a second one.
    const parsed = webhook.size > 0 ? await parseInbound(stored) : undefined;
    const mailboxRoutes = message.routes.filter((r): r is Extract<RecipientRoute, { kind: 'mailbox' }> => r.kind === 'mailbox');
    if (mailboxRoutes.length > 0) {
      if (!mailboxes) throw new Error('mailbox delivery is not wired');
      await mailboxes(stored, mailboxRoutes, { junk, mailFrom: message.mailFrom });
    }

    // 2. Everything in the box's own tables, in one (shared) transaction.
    const feedback = message.routes.filter((r): r is Extract<RecipientRoute, { kind: 'feedback' }> => r.kind === 'feedback');
    const feedbackLoop = message.routes.some((r) => r.kind === 'webhook' && r.feedbackLoop);
    const reports = message.routes.filter((r): r is Extract<RecipientRoute, { kind: 'dmarc' }> => r.kind === 'dmarc');
    const unsubscribes = message.routes.filter((r): r is Extract<RecipientRoute, { kind: 'unsubscribe' }> => r.kind === 'unsubscribe');
    if (webhook.size === 0 && feedback.length === 0 && reports.length === 0 && unsubscribes.length === 0) return { status: 'accepted', queueId, junk };

    const { notices } = message;
    await writer.run(async (trx) => {
      for (const w of webhook.values()) {
        const view = await insertInbound(trx, at, { domain: w.domain, mailFrom: message.mailFrom, rcptTo: w.rcpt, mailboxIds: [...new Set(w.mailboxIds)], auth: summary, junk, raw: stored, message: parsed! });
        log.info({ queueId, inbound: view.id, domain: w.domain.name }, 'inbound email stored');
      }
      if (feedbackLoop && message.notices.complaint) {
        const r = await applyComplaint(trx, at, hostname, { domain: null, emailPublicId: null }, message.notices.complaint);
        log.info({ queueId, email: r.emailId, recipients: r.applied, feedbackType: message.notices.complaint.feedbackType }, 'complaint report (feedback loop)');
      }
      for (const f of feedback) {
        const target = { domain: f.domain.name, emailPublicId: f.emailPublicId };
        if (notices.complaint) {
          const r = await applyComplaint(trx, at, hostname, target, notices.complaint);
          log.info({ queueId, email: r.emailId, recipients: r.applied, feedbackType: notices.complaint.feedbackType }, 'complaint report');
        } else if (notices.bounce) {
          const r = await applyBounce(trx, at, hostname, target, notices.bounce);
          log.info({ queueId, email: r.emailId, recipients: r.applied }, 'bounce notice');
        } else {
          log.info({ queueId, to: f.address }, 'mail to a return path that is neither a bounce nor a complaint: dropped');
        }
      }
      // The mailto of an email's List-Unsubscribe (RFC 2369): whatever the message says, it unsubscribes.
      for (const u of unsubscribes) {
        const left = await unsubscribeByMessage(ctx, trx, at, u.token);
        log.info({ queueId, from: message.mailFrom, changed: left }, 'unsubscribe by mail');
      }
      for (const d of reports) {
        if (!notices.dmarc || 'error' in notices.dmarc) {
          log.warn({ queueId, to: d.address, reason: notices.dmarc && 'error' in notices.dmarc ? notices.dmarc.error : 'not parsed' }, 'unreadable DMARC report: dropped');
          continue;
        }
        const outcome = await storeDmarcReport(trx, at, { id: d.domain.id, teamId: d.domain.teamId, name: d.domain.name }, notices.dmarc);
        log.info({ queueId, domain: d.domain.name, org: notices.dmarc.orgName, reportId: notices.dmarc.reportId, outcome }, 'DMARC aggregate report');
      }
    });
    return { status: 'accepted', queueId, junk };
  }

  return { receive };
}
