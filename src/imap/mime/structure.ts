// ENVELOPE, BODY and BODYSTRUCTURE (RFC 3501 §7.4.2) from a parsed MIME tree, as protocol text ready to
// send (the server caches these strings per message content, so a large FETCH does no parsing).
import { parseAddressList } from './addresses.js';
import { header, parseMessage, type HeaderField, type MimeNode } from './parse.js';
import { formatString, formatValue, Raw, type ImapValue } from '../protocol/writer.js';
import libmime from 'libmime';

function addressList(headers: HeaderField[], key: string): ImapValue {
  const h = headers.find((x) => x.key === key);
  if (!h || !h.value) return null;
  const list = parseAddressList(h.value);
  if (list.length === 0) return null;
  // `"(" 1*address ")"` (RFC 3501 §9): the addresses side by side, as the stored-summary path writes them.
  const addresses = list.map((a): ImapValue => {
    if (a.kind === 'group-start') return [null, null, a.name, null];
    if (a.kind === 'group-end') return [null, null, null, null];
    return [a.name, null, a.mailbox, a.host];
  });
  return new Raw(`(${addresses.map(formatValue).join('')})`);
}

function envelopeValue(headers: HeaderField[]): ImapValue {
  const get = (k: string) => headers.find((h) => h.key === k)?.value ?? null;
  const from = addressList(headers, 'from');
  const sender = addressList(headers, 'sender') ?? from;
  const replyTo = addressList(headers, 'reply-to') ?? from;
  return [get('date'), get('subject'), from, sender, replyTo, addressList(headers, 'to'), addressList(headers, 'cc'), addressList(headers, 'bcc'), get('in-reply-to'), get('message-id')];
}

function paramsValue(params: Record<string, string>): ImapValue {
  const entries = Object.entries(params);
  if (entries.length === 0) return null;
  return entries.flatMap(([k, v]) => [k.toUpperCase(), v]);
}

function dispositionValue(node: MimeNode): ImapValue {
  const v = header(node, 'content-disposition');
  if (!v) return null;
  const parsed = libmime.parseHeaderValue(v);
  const params: Record<string, string> = {};
  for (const [k, val] of Object.entries(parsed.params ?? {})) params[k.toLowerCase()] = String(val);
  return [String(parsed.value || 'attachment').toUpperCase(), paramsValue(params)];
}

function languageValue(node: MimeNode): ImapValue {
  const v = header(node, 'content-language');
  if (!v) return null;
  const langs = v.split(',').map((s) => s.trim()).filter(Boolean);
  return langs.length === 1 ? langs[0]! : langs.length ? langs : null;
}

function countLines(raw: Buffer, start: number, end: number): number {
  let n = 0;
  let i = raw.indexOf(0x0a, start);
  while (i !== -1 && i < end) {
    n++;
    i = raw.indexOf(0x0a, i + 1);
  }
  // A last line without its newline still counts.
  if (end > start && raw[end - 1] !== 0x0a) n++;
  return n;
}

const EMPTY_ENVELOPE: ImapValue = [null, null, null, null, null, null, null, null, null, null];

function emptyBody(extended: boolean): ImapValue {
  const basic: ImapValue[] = ['TEXT', 'PLAIN', ['CHARSET', 'us-ascii'], null, null, '7BIT', 0, 0];
  return extended ? [...basic, null, null, null, null] : basic;
}

function bodyValue(raw: Buffer, node: MimeNode, extended: boolean): ImapValue {
  const ct = node.contentType;
  if (node.children.length) {
    const v: ImapValue[] = node.children.map((c) => bodyValue(raw, c, extended));
    v.push(ct.subtype.toUpperCase());
    if (extended) {
      const params = { ...ct.params };
      v.push(paramsValue(params), dispositionValue(node), languageValue(node), header(node, 'content-location'));
    }
    return v;
  }
  const size = node.end - node.bodyStart;
  const v: ImapValue[] = [
    ct.type.toUpperCase(),
    ct.subtype.toUpperCase(),
    paramsValue(ct.params),
    header(node, 'content-id'),
    header(node, 'content-description'),
    (header(node, 'content-transfer-encoding') ?? '7BIT').toUpperCase(),
    size,
  ];
  if (ct.type === 'message' && ct.subtype === 'rfc822') {
    // MESSAGE/RFC822 always goes on with the envelope, body and lines of the encapsulated message (RFC 3501
    // §7.4.2; clients parse them by the type). One not readable in place (base64 or quoted-printable, which RFC
    // 2046 §5.2.1 forbids, or past the nesting limit) has an empty envelope and an empty text/plain body.
    const inner = node.message;
    v.push(inner ? envelopeValue(inner.headers) : EMPTY_ENVELOPE, inner ? bodyValue(raw, inner, extended) : emptyBody(extended), countLines(raw, node.bodyStart, node.end));
  } else if (ct.type === 'text') {
    v.push(countLines(raw, node.bodyStart, node.end));
  }
  if (extended) v.push(header(node, 'content-md5'), dispositionValue(node), languageValue(node), header(node, 'content-location'));
  return v;
}

export interface FetchSummary {
  envelope: string;
  body: string;
  bodystructure: string;
}

export function summarize(raw: Buffer, tree: MimeNode = parseMessage(raw)): FetchSummary {
  return {
    envelope: formatValue(envelopeValue(tree.headers)),
    body: formatValue(bodyValue(raw, tree, false)),
    bodystructure: formatValue(bodyValue(raw, tree, true)),
  };
}

/** ENVELOPE from a header block alone (when only headers are at hand). */
export function envelopeFromHeaders(headers: HeaderField[]): string {
  return formatValue(envelopeValue(headers));
}

/** The store's per-blob header summary (src/mailstore/types.ts `MessageSummary`), as far as ENVELOPE needs it. */
export interface HeaderSummary {
  date: string | null;
  subject: string | null;
  from: SummaryAddress[];
  sender: SummaryAddress[];
  replyTo: SummaryAddress[];
  to: SummaryAddress[];
  cc: SummaryAddress[];
  bcc: SummaryAddress[];
  inReplyTo: string | null;
  messageId: string | null;
}
interface SummaryAddress {
  name: string | null;
  address: string;
}

const nstring = (v: string | null) => (v === null ? 'NIL' : formatString(v));

function summaryAddresses(list: SummaryAddress[]): string {
  if (list.length === 0) return 'NIL';
  let out = '(';
  for (const a of list) {
    const at = a.address.lastIndexOf('@');
    const mailbox = at > 0 ? a.address.slice(0, at) : a.address;
    const host = at > 0 ? a.address.slice(at + 1) : null;
    out += `(${nstring(a.name)} NIL ${formatString(mailbox)} ${nstring(host)})`;
  }
  return out + ')';
}

/**
 * ENVELOPE from the store's header summary (sender and reply-to default to from, RFC 3501 §7.4.2). Built as
 * text directly: a cold FETCH 1:* (ENVELOPE) formats one per message.
 */
export function envelopeFromSummary(h: HeaderSummary): string {
  const from = summaryAddresses(h.from);
  const sender = h.sender.length ? summaryAddresses(h.sender) : from;
  const replyTo = h.replyTo.length ? summaryAddresses(h.replyTo) : from;
  return `(${nstring(h.date)} ${nstring(h.subject)} ${from} ${sender} ${replyTo} ${summaryAddresses(h.to)} ${summaryAddresses(h.cc)} ${summaryAddresses(h.bcc)} ${nstring(h.inReplyTo)} ${nstring(h.messageId)})`;
}
