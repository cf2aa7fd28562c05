// The header block of a raw RFC 5322 message: where it ends, its fields (unfolded), and the summary
// (ENVELOPE fields) stored beside each blob. Pure; no I/O.
import { isUtf8 } from 'node:buffer';
import addressparser from 'nodemailer/lib/addressparser';
import type { EnvelopeAddress, MessageSummary } from './types.js';

/** Field name (lower case) → values in order of appearance. */
export type HeaderMap = Map<string, string[]>;

/** Bytes of the header block including the blank line that ends it (the whole message when there is none). */
export function headerSize(raw: Buffer): number {
  // A message may start with its body (no header at all): an empty first line.
  if (raw[0] === 0x0a) return 1;
  if (raw[0] === 0x0d && raw[1] === 0x0a) return 2;
  for (let i = raw.indexOf(0x0a); i !== -1 && i < raw.length; i = raw.indexOf(0x0a, i + 1)) {
    if (raw[i + 1] === 0x0a) return i + 2;
    if (raw[i + 1] === 0x0d && raw[i + 2] === 0x0a) return i + 3;
  }
  return raw.length;
}

/**
 * The message with every line ending CRLF (RFC 5322 §2.1): a bare LF or CR (an IMAP client's APPEND of a
 * Unix file, an MX peer's bare-LF DATA) becomes CRLF. IMAP's RFC822.SIZE and POP3's LIST are the stored
 * size, and POP3's RETR sends CRLF line ends, so a stored bare LF made LIST announce fewer octets than RETR
 * sent (RFC 1939 §11: the size must count each line end as the two octets sent). The source itself when
 * it has none.
 */
export function withCrlfLineEnds(raw: Buffer): Buffer {
  let bare = false;
  for (let i = raw.indexOf(0x0a); i !== -1; i = raw.indexOf(0x0a, i + 1)) {
    if (i === 0 || raw[i - 1] !== 0x0d) {
      bare = true;
      break;
    }
  }
  if (!bare) {
    for (let i = raw.indexOf(0x0d); i !== -1; i = raw.indexOf(0x0d, i + 1)) {
      if (raw[i + 1] !== 0x0a) {
        bare = true;
        break;
      }
    }
  }
  return bare ? Buffer.from(raw.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1') : raw;
}

// WHATWG windows-1252 for bytes 0x80–0x9F; every other byte is its own code point (Latin-1). Node's own
// TextDecoder('windows-1252') decodes these 32 as Latin-1 since 20.18.3 (nodejs/node#60888), hence the table.
const CP1252_80_9F =
  '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f' +
  '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

/**
 * The text of a header field's bytes: UTF-8 when they are valid UTF-8 (ASCII included), else Windows-1252,
 * which is what a mailer that writes raw 8-bit header bytes without an encoded word (RFC 2047) almost always
 * means (Latin-1, and browsers' and mail clients' reading of unlabeled 8-bit text). Decoded as UTF-8, such a
 * byte became U+FFFD in ENVELOPE and SEARCH could not find the word. Called once per field, so one Latin-1
 * field does not change how a UTF-8 field beside it reads. Encoded words are left for the reader to decode.
 */
export function decodeHeaderBytes(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  return bytes.toString('latin1').replace(/[\x80-\x9f]/g, (c) => CP1252_80_9F[c.charCodeAt(0) - 0x80]!);
}

/** One header field: lower-cased name, unfolded value (encoded words kept), and where its lines are. */
export interface HeaderField {
  key: string;
  /** Unfolded and trimmed, decoded by decodeHeaderBytes. */
  value: string;
  /** Byte offsets of the field's original lines (final line end included) in the message: IMAP's
   * HEADER.FIELDS answers these bytes as they are, 8-bit bytes that are not UTF-8 included. */
  rawStart: number;
  rawEnd: number;
}

/**
 * The header fields in `raw[start, end)`, read on the bytes: a field is its line and the folded lines after
 * it, decoded as one (decodeHeaderBytes). A line without a colon is skipped with its folded lines; reading
 * stops at the end given (callers pass the header block's).
 */
export function readHeaderFields(raw: Buffer, start = 0, end = raw.length): HeaderField[] {
  const out: HeaderField[] = [];
  const lineEnd = (from: number) => {
    const nl = raw.indexOf(0x0a, from);
    return nl === -1 || nl >= end ? end : nl + 1;
  };
  let i = start;
  while (i < end) {
    let next = lineEnd(i);
    while (next < end && (raw[next] === 0x20 || raw[next] === 0x09)) next = lineEnd(next);
    const [line, ...folded] = decodeHeaderBytes(raw.subarray(i, next)).replace(/\r?\n$/, '').split('\n');
    const colon = line!.indexOf(':');
    if (colon > 0) {
      let value = line!.slice(colon + 1).trim();
      for (const l of folded) value += ' ' + l.trim();
      out.push({ key: line!.slice(0, colon).trim().toLowerCase(), value, rawStart: i, rawEnd: next });
    }
    i = next;
  }
  return out;
}

/** Parses a header block (string or raw message) into unfolded fields. Malformed lines are skipped. */
export function parseHeaders(input: Buffer | string): HeaderMap {
  const raw = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  const map: HeaderMap = new Map();
  for (const { key, value } of readHeaderFields(raw, 0, headerSize(raw))) {
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  }
  return map;
}

export const firstHeader = (headers: HeaderMap, name: string): string | null => headers.get(name.toLowerCase())?.[0] ?? null;

type Parsed = { name: string; address?: string; group?: Parsed[] };

/** Appends the addresses of `list`, groups flattened into their members; true when it held a group. */
function flatten(list: Parsed[], out: EnvelopeAddress[]): boolean {
  let grouped = false;
  for (const a of list) {
    if (a.group) {
      flatten(a.group, out);
      grouped = true;
    } else if (a.address) out.push({ name: a.name ? a.name : null, address: a.address });
  }
  return grouped;
}

function readAddressList(value: string | null): { list: EnvelopeAddress[]; grouped: boolean } {
  if (!value) return { list: [], grouped: false };
  const list: EnvelopeAddress[] = [];
  try {
    return { list, grouped: flatten(addressparser(value) as Parsed[], list) };
  } catch {
    return { list: [], grouped: false };
  }
}

export function parseAddressList(value: string | null): EnvelopeAddress[] {
  return readAddressList(value).list;
}

export function summarize(raw: Buffer, h: HeaderMap = parseHeaders(raw)): MessageSummary {
  let grouped = false;
  const addr = (name: string) => {
    const read = readAddressList(h.get(name)?.join(', ') ?? null);
    grouped ||= read.grouped;
    return read.list;
  };
  const summary: MessageSummary = {
    date: firstHeader(h, 'date'),
    subject: firstHeader(h, 'subject'),
    from: addr('from'),
    sender: addr('sender'),
    replyTo: addr('reply-to'),
    to: addr('to'),
    cc: addr('cc'),
    bcc: addr('bcc'),
    inReplyTo: firstHeader(h, 'in-reply-to'),
    messageId: firstHeader(h, 'message-id'),
    headerSize: headerSize(raw),
  };
  if (grouped) summary.groups = true;
  return summary;
}
