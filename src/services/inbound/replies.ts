// Answering an inbound email: reply, forward, and draft-reply. Reply and forward go out through the one
// send path (services/sending/emails.ts `sendEmails`: verified sender domain, quotas, suppressions, DKIM, events)
// with In-Reply-To / References threading and the original quoted; draft-reply sends nothing: it stores
// the draft in the Drafts folder of the mailbox that received the original (when one did), or returns it.
import type { AppContext } from '../../context.js';
import { AppError, badRequest, unprocessable } from '../../core/errors.js';
import { addressKey, parseMailbox } from '../../core/address.js';
import { newPublicId } from '../../core/ids.js';
import { composeMessage } from '../../mta/compose.js';
import { MailStoreError, type MailStore } from '../../mailstore/types.js';
import { MAX_RECIPIENTS, sendEmails, type AttachmentInput, type SendEmailInput, type Sender } from '../sending/index.js';
import { loadInbound, type InboundEmail } from './inbound-emails.js';
import { rfc5322Date } from './receiver.js';

export interface ReplyInput {
  /** Default: the address the original was sent to (its first envelope recipient). */
  from?: string | undefined;
  /** Default: the original's Reply-To, else its From. */
  to?: string[] | undefined;
  cc?: string[] | undefined;
  bcc?: string[] | undefined;
  /** Also copy the original's To and Cc (minus the sender of the reply). */
  reply_all?: boolean | undefined;
  /** Default: `Re: <original subject>`. */
  subject?: string | undefined;
  html?: string | undefined;
  text?: string | undefined;
  /** Quote the original below the answer (default true). */
  quote?: boolean | undefined;
  headers?: Record<string, string> | undefined;
  attachments?: AttachmentInput[] | undefined;
  tags?: string[] | undefined;
  idempotency_key?: string | undefined;
}

export interface ForwardInput {
  to: string[];
  from?: string | undefined;
  cc?: string[] | undefined;
  bcc?: string[] | undefined;
  /** Default: `Fwd: <original subject>`. */
  subject?: string | undefined;
  /** A note above the forwarded message. */
  text?: string | undefined;
  html?: string | undefined;
  /** Attach the original's attachments (default true). */
  include_attachments?: boolean | undefined;
  tags?: string[] | undefined;
  idempotency_key?: string | undefined;
}

/** Header values are capped at 1,024 characters by the send path: keep the first and the latest ids. */
export function referencesHeader(previous: string[], messageId: string | null): string | undefined {
  const ids = [...previous, ...(messageId ? [messageId] : [])].filter((v, i, all) => all.indexOf(v) === i);
  if (ids.length === 0) return undefined;
  let kept = ids;
  while (kept.join(' ').length > 1024 && kept.length > 2) kept = [kept[0]!, ...kept.slice(2)];
  return kept.join(' ').slice(0, 1024);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const quoteText = (s: string) => s.replace(/\r\n/g, '\n').split('\n').map((l) => (l.startsWith('>') ? `>${l}` : `> ${l}`)).join('\n');
const textAsHtml = (s: string) => escapeHtml(s).replace(/\r?\n/g, '<br>\n');

function attribution(e: InboundEmail): string {
  const when = e.date ?? e.created_at;
  return `On ${rfc5322Date(new Date(when))}, ${e.from} wrote:`;
}

const withPrefix = (prefix: string, subject: string) => (new RegExp(`^${prefix}:`, 'i').test(subject.trim()) ? subject : `${prefix}: ${subject}`.trim());

function defaultFrom(e: InboundEmail): string {
  return e.envelope.rcpt_to[0] ?? e.to[0] ?? '';
}

/** The SendEmailInput of a reply (no I/O). */
export function buildReply(e: InboundEmail, input: ReplyInput): SendEmailInput {
  const from = input.from ?? defaultFrom(e);
  const self = parseMailbox(from)?.address;
  const to = input.to ?? (e.reply_to.length ? e.reply_to : [e.from]);
  if (to.length === 0 || !to[0]) throw unprocessable('The inbound email has no From or Reply-To address to reply to; give `to`');
  const cc = [...(input.cc ?? [])];
  if (input.reply_all) {
    const skip = new Set([...to, ...cc, ...(self ? [self] : [])].map((a) => addressKey(parseMailbox(a)?.address ?? a)));
    for (const a of [...e.to, ...e.cc]) {
      const bare = parseMailbox(a)?.address;
      if (!bare || skip.has(addressKey(bare))) continue;
      skip.add(addressKey(bare));
      cc.push(a);
    }
  }
  const quote = input.quote ?? true;
  let text = input.text;
  let html = input.html;
  if (quote) {
    const original = e.text ?? '';
    if (text !== undefined || html === undefined) text = `${text ?? ''}\n\n${attribution(e)}\n${quoteText(original)}\n`;
    if (html !== undefined) {
      const body = e.html ?? textAsHtml(original);
      html = `${html}\n<br><br>\n<div>${escapeHtml(attribution(e))}</div>\n<blockquote style="margin:0 0 0 .8ex;border-left:1px solid #ccc;padding-left:1ex">${body}</blockquote>`;
    }
  }
  const headers: Record<string, string> = { ...input.headers };
  if (e.message_id) headers['In-Reply-To'] = e.message_id;
  const refs = referencesHeader(e.references, e.message_id);
  if (refs) headers.References = refs;
  return {
    from,
    to,
    ...(cc.length ? { cc: cc.slice(0, MAX_RECIPIENTS) } : {}),
    ...(input.bcc ? { bcc: input.bcc } : {}),
    subject: input.subject ?? withPrefix('Re', e.subject),
    ...(text !== undefined ? { text } : {}),
    ...(html !== undefined ? { html } : {}),
    headers,
    ...(input.attachments ? { attachments: input.attachments } : {}),
    ...(input.tags ? { tags: input.tags } : {}),
    ...(input.idempotency_key ? { idempotency_key: input.idempotency_key } : {}),
  };
}

function forwardedBlock(e: InboundEmail): { text: string; html: string } {
  const lines = [
    '---------- Forwarded message ---------',
    `From: ${e.from}`,
    `Date: ${rfc5322Date(new Date(e.date ?? e.created_at))}`,
    `Subject: ${e.subject}`,
    `To: ${e.to.join(', ')}`,
    ...(e.cc.length ? [`Cc: ${e.cc.join(', ')}`] : []),
  ];
  return {
    text: `${lines.join('\n')}\n\n${e.text ?? ''}`,
    html: `<div>${lines.map(escapeHtml).join('<br>\n')}</div><br>\n${e.html ?? textAsHtml(e.text ?? '')}`,
  };
}

export function buildForward(e: InboundEmail, input: ForwardInput, attachments: AttachmentInput[]): SendEmailInput {
  const block = forwardedBlock(e);
  const note = (s: string | undefined) => (s ? `${s}\n\n` : '');
  const text = `${note(input.text)}${block.text}`;
  const html = input.html !== undefined || e.html !== null ? `${input.html ? `${input.html}<br><br>\n` : input.text ? `${textAsHtml(input.text)}<br><br>\n` : ''}${block.html}` : undefined;
  const headers: Record<string, string> = {};
  const refs = referencesHeader(e.references, e.message_id);
  if (refs) headers.References = refs;
  return {
    from: input.from ?? defaultFrom(e),
    to: input.to,
    ...(input.cc ? { cc: input.cc } : {}),
    ...(input.bcc ? { bcc: input.bcc } : {}),
    subject: input.subject ?? withPrefix('Fwd', e.subject),
    text,
    ...(html !== undefined ? { html } : {}),
    headers,
    ...(attachments.length ? { attachments } : {}),
    ...(input.tags ? { tags: input.tags } : {}),
    ...(input.idempotency_key ? { idempotency_key: input.idempotency_key } : {}),
  };
}

async function sendOne(ctx: AppContext, sender: Sender, input: SendEmailInput): Promise<{ id: string }> {
  const [result] = await sendEmails(ctx, sender, [input]);
  if (result instanceof AppError) throw result;
  return { id: result!.id };
}

export async function replyToInbound(ctx: AppContext, sender: Sender, id: number, input: ReplyInput): Promise<{ id: string }> {
  const { email } = await loadInbound(ctx, sender.teamId, id);
  return sendOne(ctx, sender, buildReply(email, input));
}

export async function forwardInbound(ctx: AppContext, sender: Sender, id: number, input: ForwardInput): Promise<{ id: string }> {
  const { email, attachments } = await loadInbound(ctx, sender.teamId, id);
  const originals: AttachmentInput[] =
    input.include_attachments === false
      ? []
      : attachments.map((a, i) => ({ filename: a.filename ?? `attachment-${i + 1}`, content: a.content.toString('base64'), content_type: a.content_type }));
  if (originals.length > 10) throw unprocessable(`The inbound email has ${originals.length} attachments; a forward carries at most 10 (set include_attachments to false)`);
  return sendOne(ctx, sender, buildForward(email, input, originals));
}

export interface DraftReply {
  /** The draft was stored in a mailbox's Drafts folder. */
  stored: boolean;
  mailbox_id: number | null;
  /** Why a mailbox that received the original did not keep the draft (over its quota); null otherwise. */
  reason: string | null;
  folder: string | null;
  uid: number | null;
  draft: {
    from: string;
    to: string[];
    cc: string[];
    subject: string;
    text: string | null;
    html: string | null;
    in_reply_to: string | null;
    references: string | null;
    message_id: string;
    /** The RFC 5322 message of the draft. */
    mime: string;
  };
}

export async function draftReply(ctx: AppContext, store: MailStore | null, teamId: string, id: number, input: ReplyInput): Promise<DraftReply> {
  const { row, email } = await loadInbound(ctx, teamId, id);
  const built = buildReply(email, { ...input, ...(input.text === undefined && input.html === undefined ? { text: '' } : {}) });
  const parse = (list: string[] | undefined, field: string) =>
    (list ?? []).map((a, i) => {
      const m = parseMailbox(a);
      if (!m) throw badRequest(`${field}.${i}: must be a valid email address`);
      return m;
    });
  const [from] = parse([built.from], 'from');
  const messageId = `<${newPublicId('draft')}@${ctx.config.hostname}>`;
  const raw = await composeMessage({
    from: from!,
    to: parse(built.to, 'to'),
    cc: parse(built.cc, 'cc'),
    replyTo: [],
    subject: built.subject ?? '',
    html: built.html,
    text: built.text,
    headers: built.headers ?? {},
    attachments: [],
    messageId,
    date: ctx.clock.now(),
  });
  const draft: DraftReply['draft'] = {
    from: built.from,
    to: built.to,
    cc: built.cc ?? [],
    subject: built.subject ?? '',
    text: built.text ?? null,
    html: built.html ?? null,
    in_reply_to: built.headers?.['In-Reply-To'] ?? null,
    references: built.headers?.References ?? null,
    message_id: messageId,
    mime: raw.toString('utf8'),
  };
  // The first mailbox the original was delivered to that still exists (one deleted since is skipped); over
  // its quota it keeps nothing and the answer says why (the draft is in the answer anyway).
  for (const mailboxId of store ? (JSON.parse(row.mailbox_ids) as number[]) : []) {
    try {
      const copy = await store!.append(mailboxId, 'Drafts', raw, ['\\Draft', '\\Seen'], ctx.clock.now());
      return { stored: true, mailbox_id: mailboxId, folder: 'Drafts', uid: copy.uid, reason: null, draft };
    } catch (err) {
      if (!(err instanceof MailStoreError) || (err.code !== 'not_found' && err.code !== 'quota_exceeded')) throw err;
      if (err.code === 'quota_exceeded') return { stored: false, mailbox_id: mailboxId, folder: null, uid: null, reason: `Mailbox ${mailboxId} is over its quota`, draft };
    }
  }
  return { stored: false, mailbox_id: null, folder: null, uid: null, reason: null, draft };
}
