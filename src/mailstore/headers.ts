// The header block of a raw RFC 5322 message: where it ends, its fields (unfolded), and the summary
// (ENVELOPE fields) stored beside each blob. Pure; no I/O.
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

/** Parses a header block (string or raw message) into unfolded fields. Malformed lines are skipped. */
export function parseHeaders(input: Buffer | string): HeaderMap {
  const block = typeof input === 'string' ? input : input.subarray(0, headerSize(input)).toString('utf8');
  const map: HeaderMap = new Map();
  let name: string | null = null;
  let value = '';
  const flush = () => {
    if (name === null) return;
    const list = map.get(name);
    const v = value.trim();
    if (list) list.push(v);
    else map.set(name, [v]);
    name = null;
  };
  for (const line of block.split(/\r?\n/)) {
    if (line === '') break;
    if (line[0] === ' ' || line[0] === '\t') {
      if (name !== null) value += ' ' + line.trim();
      continue;
    }
    flush();
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    name = line.slice(0, colon).trim().toLowerCase();
    value = line.slice(colon + 1);
  }
  flush();
  return map;
}

export const firstHeader = (headers: HeaderMap, name: string): string | null => headers.get(name.toLowerCase())?.[0] ?? null;

type Parsed = { name: string; address?: string; group?: Parsed[] };

function flatten(list: Parsed[], out: EnvelopeAddress[]): void {
  for (const a of list) {
    if (a.group) flatten(a.group, out);
    else if (a.address) out.push({ name: a.name ? a.name : null, address: a.address });
  }
}

export function parseAddressList(value: string | null): EnvelopeAddress[] {
  if (!value) return [];
  const out: EnvelopeAddress[] = [];
  try {
    flatten(addressparser(value) as Parsed[], out);
  } catch {
    return [];
  }
  return out;
}

export function summarize(raw: Buffer): MessageSummary {
  const size = headerSize(raw);
  const h = parseHeaders(raw.subarray(0, size).toString('utf8'));
  const addr = (name: string) => parseAddressList(h.get(name)?.join(', ') ?? null);
  return {
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
    headerSize: size,
  };
}
