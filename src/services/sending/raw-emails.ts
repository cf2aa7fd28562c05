// The raw send path: a finished MIME message (what SMTP submission receives) sent through the same checks,
// quotas, suppressions, tables, jobs and events as an API send (services/sending/emails.ts). The differences: the
// envelope recipients are the SMTP RCPT TO addresses (whoever the headers name), the message is stored as
// given (Bcc header removed; Message-ID and Date added when missing, as an MSA does: RFC 6409 §8) and
// delivery DKIM-signs it instead of composing one.
import { randomBytes } from 'node:crypto';
import type { AddressObject, Attachment, EmailAddress } from 'mailparser';
import type { AppContext } from '../../context.js';
import { AppError, badRequest, forbidden, unprocessable } from '../../core/errors.js';
import { addressKey, domainOf, normaliseAddress, type Mailbox } from '../../core/address.js';
import { toSevenBit } from '../../mta/seven-bit.js';
import { findSenderDomain, formatMailbox, MAX_RECIPIENTS, submitChecked, type CheckedSend, type PreparedInput, type SendResult, type Sender } from './emails.js';

export interface RawSubmission {
  /** The envelope recipients (SMTP RCPT TO), bare addresses. */
  recipients: string[];
  /** The message as submitted (SMTP DATA, dot-unstuffed). */
  raw: Buffer;
  /** A mailbox login sends only as its own address: the From header must be this one. */
  requireFrom?: string | undefined;
}

export interface RawSendResult extends SendResult {
  /** The message as the sender's Sent folder should keep it: as submitted plus the added Message-ID/Date (Bcc kept). */
  sentCopy: Buffer;
}

interface HeaderField {
  /** Lower-cased name. */
  name: string;
  /** The whole field, folds included, without its final line break. */
  raw: string;
}

/** Splits a message at its first empty line into header fields and the body (both as given). */
export function splitHeader(raw: Buffer): { fields: HeaderField[]; body: Buffer } {
  // The header ends at the first empty line (CRLF or bare LF); a message may start with it (no header).
  let end = -1;
  let sep = 0;
  if (raw[0] === 0x0a) [end, sep] = [0, 1];
  else if (raw[0] === 0x0d && raw[1] === 0x0a) [end, sep] = [0, 2];
  for (let i = raw.indexOf(0x0a); end < 0 && i >= 0; i = raw.indexOf(0x0a, i + 1)) {
    if (raw[i + 1] === 0x0a) [end, sep] = [i + 1, 1];
    else if (raw[i + 1] === 0x0d && raw[i + 2] === 0x0a) [end, sep] = [i + 1, 2];
  }
  const head = (end < 0 ? raw : raw.subarray(0, end)).toString('latin1'); // bytes 1:1
  const body = end < 0 ? Buffer.alloc(0) : raw.subarray(end + sep);
  const fields: HeaderField[] = [];
  for (const line of head.split(/\r?\n/)) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && fields.length > 0) fields[fields.length - 1]!.raw += `\r\n${line}`;
    else if (line.length > 0) fields.push({ name: line.slice(0, Math.max(0, line.indexOf(':'))).trim().toLowerCase(), raw: line });
  }
  return { fields, body };
}

/** Bare LF (and bare CR) to CRLF, as the message goes on the wire. */
function crlf(body: Buffer): Buffer {
  const text = body.toString('latin1');
  return /\r(?!\n)|(?<!\r)\n/.test(text) ? Buffer.from(text.replace(/\r\n|\r|\n/g, '\r\n'), 'latin1') : body;
}

function join(fields: HeaderField[], body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(fields.map((f) => `${f.raw}\r\n`).join('') + '\r\n', 'latin1'), crlf(body)]);
}

function addresses(obj: AddressObject | AddressObject[] | undefined): Mailbox[] {
  const flat = (list: EmailAddress[]): EmailAddress[] => list.flatMap((a) => (a.group ? flat(a.group) : [a]));
  const out: Mailbox[] = [];
  for (const o of Array.isArray(obj) ? obj : obj ? [obj] : []) {
    for (const a of flat(o.value)) {
      const address = a.address ? normaliseAddress(a.address) : null;
      if (address) out.push(a.name ? { name: a.name, address } : { address });
    }
  }
  return out;
}

/** The RFC 5322 date-time of `at` (RFC 5322 §3.3), in UTC. */
function rfc5322Date(at: Date): string {
  return at.toUTCString().replace(/GMT$/, '+0000');
}

const NO_BYTES = Buffer.alloc(0);

/**
 * The message's attachments as reads of the email list them (GET /emails/{id}: filename, content type,
 * decoded size), found once here from the parse the checks need anyway. Their bytes stay in the stored
 * source, which delivery signs as it is: the rows' `content` is empty. Every part mailparser does not take
 * for the text or html body counts (inline images, attached messages); a part that names no file has ''.
 */
function listedAttachments(list: Attachment[]): CheckedSend['checked']['attachments'] {
  return list.map((a, i) => ({ position: i, filename: a.filename ?? '', content_type: a.contentType, size: a.content.length, content: NO_BYTES }));
}

/** Checks a raw message and hands it to the send path's writer. Throws AppError (400/403/422, or a quota refusal). */
export async function sendRawEmail(ctx: AppContext, sender: Sender, submission: RawSubmission): Promise<RawSendResult> {
  const result = await sendRaw(ctx, sender, submission);
  ctx.metrics.emailsAccepted.inc({ source: 'smtp' });
  return result;
}

async function sendRaw(ctx: AppContext, sender: Sender, submission: RawSubmission): Promise<RawSendResult> {
  const { fields, body } = splitHeader(submission.raw);
  // mailparser (~13 MiB) is loaded with the first raw send (SMTP submission).
  const { simpleParser } = await import('mailparser');
  const parsed = await simpleParser(submission.raw, { skipImageLinks: true, skipTextToHtml: true });

  const fromFields = fields.filter((f) => f.name === 'from');
  const from = addresses(parsed.from);
  if (fromFields.length !== 1 || from.length !== 1) throw badRequest('The message must have one From header with one address');
  const sender0 = from[0]!;
  if (submission.requireFrom && addressKey(sender0.address) !== addressKey(submission.requireFrom)) {
    throw forbidden(`A mailbox sends only as its own address: From must be ${submission.requireFrom}`);
  }
  const fromDomain = domainOf(sender0.address);
  const domain = await findSenderDomain(ctx, sender.teamId, fromDomain);
  if (!domain) throw unprocessable(`Domain '${fromDomain}' not found for this team`);
  if (domain.status !== 'verified') throw unprocessable(`Domain '${fromDomain}' is not verified`);

  // Envelope recipients, once each; the headers say which are To and Cc, everyone else is a Bcc.
  const envelope = new Map<string, string>();
  for (const r of submission.recipients) {
    const address = normaliseAddress(r);
    if (!address) throw badRequest(`Recipient '${r}' is not a valid email address`);
    if (!envelope.has(addressKey(address))) envelope.set(addressKey(address), address);
  }
  if (envelope.size === 0) throw badRequest('The message has no recipients');
  if (envelope.size > MAX_RECIPIENTS) throw unprocessable(`Too many recipients: ${envelope.size}; the limit is ${MAX_RECIPIENTS} per email`);
  const named = new Map<string, { kind: 'to' | 'cc'; box: Mailbox }>();
  for (const box of addresses(parsed.cc)) named.set(addressKey(box.address), { kind: 'cc', box });
  for (const box of addresses(parsed.to)) named.set(addressKey(box.address), { kind: 'to', box });
  const to: Mailbox[] = [];
  const cc: Mailbox[] = [];
  const bcc: Mailbox[] = [];
  for (const [key, address] of envelope) {
    const n = named.get(key);
    (n?.kind === 'to' ? to : n?.kind === 'cc' ? cc : bcc).push(n ? { ...n.box, address } : { address });
  }

  // The source as it goes out: no Bcc, and the Message-ID and Date an MSA adds when the client did not.
  const added: HeaderField[] = [];
  let messageId = fields.find((f) => f.name === 'message-id') ? parsed.messageId : undefined;
  if (!messageId) {
    messageId = `<${randomBytes(12).toString('hex')}@${ctx.config.hostname}>`;
    added.push({ name: 'message-id', raw: `Message-ID: ${messageId}` });
  }
  if (!fields.some((f) => f.name === 'date')) added.push({ name: 'date', raw: `Date: ${rfc5322Date(ctx.clock.now())}` });
  // 7-bit, in lines of at most 998 characters, whatever server it goes to (mta/seven-bit.ts).
  const source = await toSevenBit(join([...fields.filter((f) => f.name !== 'bcc'), ...added], body));
  const sentCopy = join([...fields, ...added], body);

  const checked: PreparedInput & { domainId: string } = {
    from: sender0,
    to,
    cc,
    bcc,
    replyTo: addresses(parsed.replyTo),
    attachments: listedAttachments(parsed.attachments),
    fromDomain,
    scheduledAt: null,
    // A finished message keeps the headers its client wrote: the box adds no unsubscribe links to it.
    links: null,
    domainId: domain.id,
  };
  const item: CheckedSend = {
    sender,
    // What reads of the email show (GET /emails/{id}); the message itself is `raw`.
    input: {
      from: formatMailbox(sender0),
      to: to.map(formatMailbox),
      subject: (parsed.subject ?? '').slice(0, 998),
      ...(typeof parsed.html === 'string' ? { html: parsed.html } : {}),
      ...(parsed.text !== undefined ? { text: parsed.text } : {}),
    },
    checked,
    hash: null,
    raw: { source, messageId },
  };
  const result = await submitChecked(ctx, item);
  if (result instanceof AppError) throw result;
  return { ...result, sentCopy };
}
