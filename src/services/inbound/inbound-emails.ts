// Inbound emails: mail for webhook-routed addresses (services/inbound/routing.ts), stored with its parsed
// fields and attachments, announced as `email.inbound` (data = the inbound email as GET /inbound/{id}
// returns it), and read back by GET /inbound, /inbound/{id} and /inbound/{id}/attachments.
import type { AddressObject, ParsedMail } from 'mailparser';
import type { AppContext } from '../../context.js';
import { readsOf, type Queryable } from '../../db/index.js';
import { notFound } from '../../core/errors.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { eventRow, recordEvents } from '../../events/recorder.js';
import { headerSize } from '../../mailstore/headers.js';
import { plainTextOf } from '../../mta/html-scan.js';
import type { HostDomain, LocalDomain } from './routing.js';
import { normaliseDomainName } from '../platform/index.js';

export interface AuthSummary {
  spf: string;
  dkim: string;
  dmarc: string;
  arc: string;
  /** The Authentication-Results header value this box added. */
  header: string;
}

export interface InboundAttachmentMeta {
  filename: string | null;
  content_type: string;
  size: number;
  content_id: string | null;
  disposition: string | null;
}

/** An inbound email as the API returns it (and as `email.inbound` carries it). */
export interface InboundEmail {
  id: number;
  domain: string;
  from: string;
  to: string[];
  cc: string[];
  reply_to: string[];
  subject: string;
  text: string | null;
  html: string | null;
  headers: Array<{ name: string; value: string }>;
  message_id: string | null;
  in_reply_to: string | null;
  references: string[];
  date: string | null;
  envelope: { mail_from: string; rcpt_to: string[] };
  authentication: Omit<AuthSummary, 'header'>;
  junk: boolean;
  attachments: InboundAttachmentMeta[];
  size: number;
  created_at: string;
}

export interface InboundListItem {
  id: number;
  domain: string;
  from: string;
  to: string[];
  subject: string;
  messageId: string | null;
  attachmentCount: number;
  junk: boolean;
  createdAt: string;
}

export interface InboundRow {
  id: number;
  team_id: string;
  domain_id: string | null;
  domain: string;
  mail_from: string;
  rcpt_to: string;
  from_header: string;
  to_addrs: string;
  cc_addrs: string;
  reply_to: string;
  subject: string;
  text: string | null;
  html: string | null;
  headers: string;
  message_id: string | null;
  in_reply_to: string | null;
  references: string | null;
  sent_at: string | null;
  auth: string;
  junk: number | boolean;
  mailbox_ids: string;
  raw: Buffer;
  size: number;
  created_at: string;
}

interface AttachmentRow extends Omit<InboundAttachmentMeta, 'content_type' | 'content_id'> {
  id: number;
  inbound_email_id: number;
  position: number;
  content_type: string;
  content_id: string | null;
  content: Buffer;
}

const json = <T>(s: string): T => JSON.parse(s) as T;

function addresses(a: AddressObject | AddressObject[] | undefined): string[] {
  const list = a === undefined ? [] : Array.isArray(a) ? a : [a];
  return list.flatMap((o) => o.value).flatMap((v) => (v.address ? [v.name ? `${v.name} <${v.address}>` : v.address] : []));
}

/** A message parsed once for every inbound email made from it. */
export interface ParsedInbound {
  parsed: ParsedMail;
  headers: Array<{ name: string; value: string }>;
}

/**
 * Html bodies larger than this get their text from the linear tag stripper (mta/html-scan.ts), not from
 * mailparser's html-to-text: the MX parses on the main thread, and html-to-text's time grows fast.
 */
const HTML_TO_TEXT_MAX = 64 * 1024;

/**
 * The Date header as an instant, or null when there is none or it is not a date (mailparser puts the time of
 * parsing in its place, which read as when the sender wrote it).
 */
function sentAt(headers: Array<{ name: string; value: string }>): string | null {
  const value = headers.find((h) => h.name.toLowerCase() === 'date')?.value;
  const date = value === undefined ? null : new Date(value);
  return date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

/**
 * Parses a received message for the inbound email record. An html body that html-to-text cannot handle
 * (too large, or nested deeper than its recursion allows) does not fail the message: it is parsed again
 * without that conversion and its text is taken by `plainTextOf`.
 */
export async function parseInbound(raw: Buffer): Promise<ParsedInbound> {
  // mailparser (~13 MiB) is loaded with the first message parsed.
  const { simpleParser } = await import('mailparser');
  let parsed: ParsedMail;
  try {
    parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, maxHtmlLengthToParse: HTML_TO_TEXT_MAX });
  } catch {
    const plain = { skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: true } as const;
    // A structure past mailsplit's limits (over 1,000 parts, a part's header over 1 MB: EMAXLEN) is no
    // passing trouble: answered 451, the sender retried it for days and the mailbox copy was lost with it.
    // Its header is read alone; the message itself is kept whole (raw) as any other.
    parsed = await simpleParser(raw, plain).catch((err: unknown) => {
      if ((err as { code?: unknown } | null)?.code !== 'EMAXLEN') throw err;
      return simpleParser(raw.subarray(0, headerSize(raw)), plain);
    });
    if (!parsed.text && typeof parsed.html === 'string') parsed.text = plainTextOf(parsed.html);
  }
  const headers = parsed.headerLines.map((h) => {
    const colon = h.line.indexOf(':');
    return { name: h.line.slice(0, colon).trim(), value: h.line.slice(colon + 1).replace(/\r?\n[ \t]+/g, ' ').trim() };
  });
  return { parsed, headers };
}

export interface NewInbound {
  domain: LocalDomain | HostDomain;
  mailFrom: string;
  rcptTo: string[];
  mailboxIds: number[];
  auth: AuthSummary;
  junk: boolean;
  /** The message as stored, with our trace headers. */
  raw: Buffer;
  message: ParsedInbound;
}

function viewOf(row: InboundRow, attachments: InboundAttachmentMeta[]): InboundEmail {
  const auth = json<AuthSummary>(row.auth);
  return {
    id: row.id,
    domain: row.domain,
    from: row.from_header,
    to: json(row.to_addrs),
    cc: json(row.cc_addrs),
    reply_to: json(row.reply_to),
    subject: row.subject,
    text: row.text,
    html: row.html,
    headers: json(row.headers),
    message_id: row.message_id,
    in_reply_to: row.in_reply_to,
    references: row.references ? row.references.split(/\s+/).filter(Boolean) : [],
    date: row.sent_at,
    envelope: { mail_from: row.mail_from, rcpt_to: json(row.rcpt_to) },
    authentication: { spf: auth.spf, dkim: auth.dkim, dmarc: auth.dmarc, arc: auth.arc },
    junk: Boolean(row.junk),
    attachments,
    size: row.size,
    created_at: row.created_at,
  };
}

/** Writes one inbound email, its attachments and its `email.inbound` event, in the caller's transaction. */
export async function insertInbound(q: Queryable, at: Date, n: NewInbound): Promise<InboundEmail> {
  const p = n.message.parsed;
  const refs = p.references === undefined ? [] : Array.isArray(p.references) ? p.references : [p.references];
  const row: Omit<InboundRow, 'id'> = {
    team_id: n.domain.teamId,
    domain_id: n.domain.id,
    domain: n.domain.name,
    mail_from: n.mailFrom,
    rcpt_to: JSON.stringify(n.rcptTo),
    from_header: addresses(p.from)[0] ?? '',
    to_addrs: JSON.stringify(addresses(p.to)),
    cc_addrs: JSON.stringify(addresses(p.cc)),
    reply_to: JSON.stringify(addresses(p.replyTo)),
    subject: p.subject ?? '',
    text: p.text ?? null,
    html: typeof p.html === 'string' ? p.html : null,
    headers: JSON.stringify(n.message.headers),
    message_id: p.messageId ?? null,
    in_reply_to: p.inReplyTo ?? null,
    references: refs.length ? refs.join(' ') : null,
    sent_at: sentAt(n.message.headers),
    auth: JSON.stringify(n.auth),
    junk: n.junk,
    mailbox_ids: JSON.stringify(n.mailboxIds),
    raw: n.raw,
    size: n.raw.length,
    created_at: at.toISOString(),
  };
  const [id] = (await q('inbound_emails').insert(row)) as number[];
  const attachments: InboundAttachmentMeta[] = [];
  for (const [position, a] of p.attachments.entries()) {
    const meta: InboundAttachmentMeta = {
      filename: a.filename ?? null,
      content_type: a.contentType,
      size: a.content.length,
      content_id: a.contentId ?? null,
      disposition: a.contentDisposition ?? null,
    };
    await q('inbound_attachments').insert({ inbound_email_id: id!, position, ...meta, content: a.content });
    attachments.push(meta);
  }
  const view = viewOf({ ...row, id: id! }, attachments);
  await recordEvents(q, [eventRow(at, n.domain.teamId, 'email.inbound', view as unknown as Record<string, unknown>)]);
  return view;
}

async function findRow(q: Queryable, teamId: string, id: number): Promise<InboundRow> {
  const row = Number.isSafeInteger(id) ? await q<InboundRow>('inbound_emails').where({ team_id: teamId, id }).first() : undefined;
  if (!row) throw notFound('Inbound email not found');
  return row;
}

async function attachmentsOf(q: Queryable, id: number): Promise<AttachmentRow[]> {
  return q<AttachmentRow>('inbound_attachments').where({ inbound_email_id: id }).orderBy('position');
}

const metaOf = (a: AttachmentRow): InboundAttachmentMeta => ({ filename: a.filename, content_type: a.content_type, size: a.size, content_id: a.content_id, disposition: a.disposition });

/** The stored row and its view: for the reply and forward helpers. */
export async function loadInbound(ctx: AppContext, teamId: string, id: number): Promise<{ row: InboundRow; email: InboundEmail; attachments: AttachmentRow[] }> {
  const reads = readsOf(ctx.db);
  const row = await findRow(reads, teamId, id);
  const attachments = await attachmentsOf(reads, row.id);
  return { row, email: viewOf(row, attachments.map(metaOf)), attachments };
}

export async function getInbound(ctx: AppContext, teamId: string, id: number): Promise<InboundEmail> {
  return (await loadInbound(ctx, teamId, id)).email;
}

export interface AttachmentWithContent {
  filename: string | null;
  contentType: string;
  size: number;
  contentId: string | null;
  /** base64 */
  content: string;
}

export async function getInboundAttachments(ctx: AppContext, teamId: string, id: number): Promise<AttachmentWithContent[]> {
  const reads = readsOf(ctx.db);
  const row = await findRow(reads, teamId, id);
  return (await attachmentsOf(reads, row.id)).map((a) => ({ filename: a.filename, contentType: a.content_type, size: a.size, contentId: a.content_id, content: a.content.toString('base64') }));
}

/** Newest first; `domain` is a domain name (an unknown one gives an empty page). */
export async function listInbound(ctx: AppContext, teamId: string, filter: { domain?: string | undefined }, paging: PageRequest): Promise<Page<InboundListItem>> {
  const reads = readsOf(ctx.db);
  const q = reads<InboundRow>('inbound_emails').where('team_id', teamId);
  if (filter.domain !== undefined) {
    // The name as domains are stored (case, trailing dot, IDN to punycode: `bücher.example` finds
    // `xn--bcher-kva.example`); a name that is no valid domain (a one-label host name) is compared as given.
    q.andWhere('domain', normaliseDomainName(filter.domain) ?? filter.domain.trim().toLowerCase().replace(/\.$/, ''));
  }
  const [{ n }] = (await q.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await q
    .clone()
    .orderBy('id', 'desc')
    .offset(paging.offset)
    .limit(paging.perPage)
    .select('id', 'domain', 'from_header', 'to_addrs', 'subject', 'message_id', 'junk', 'created_at', reads.raw('(SELECT COUNT(*) FROM inbound_attachments a WHERE a.inbound_email_id = inbound_emails.id) AS attachment_count'));
  return toPage(
    (rows as unknown as Array<InboundRow & { attachment_count: number }>).map((r) => ({
      id: r.id,
      domain: r.domain,
      from: r.from_header,
      to: json<string[]>(r.to_addrs),
      subject: r.subject,
      messageId: r.message_id,
      attachmentCount: Number(r.attachment_count),
      junk: Boolean(r.junk),
      createdAt: r.created_at,
    })),
    Number(n),
    paging,
  );
}
