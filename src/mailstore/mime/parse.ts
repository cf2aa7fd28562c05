// A light MIME tree over a raw RFC 5322 message: offsets into the buffer (no copies of bodies), headers
// unfolded for reading and kept raw for HEADER.FIELDS. Enough for ENVELOPE, BODYSTRUCTURE, BODY[section]
// and SEARCH; it never throws on malformed input (a broken multipart becomes an opaque part).
import libmime from 'libmime';
import { readHeaderFields, type HeaderField } from '../headers.js';

export type { HeaderField } from '../headers.js';

export interface ContentType {
  type: string;
  subtype: string;
  params: Record<string, string>;
}

export interface MimeNode {
  /** Offset of the first header byte. */
  start: number;
  /** Offset of the first body byte (after the blank line). */
  bodyStart: number;
  /** Offset one past the last body byte. */
  end: number;
  headers: HeaderField[];
  contentType: ContentType;
  /** Parts of a multipart. */
  children: MimeNode[];
  /** The embedded message of a message/rfc822 part. */
  message: MimeNode | null;
}

const MAX_DEPTH = 20;
const MAX_PARTS = 1000;

export function header(node: MimeNode, key: string): string | null {
  for (const h of node.headers) if (h.key === key) return h.value;
  return null;
}

function findHeaderEnd(raw: Buffer, start: number, end: number): { headerEnd: number; bodyStart: number } {
  // A message that starts with a blank line has no header fields.
  if (raw[start] === 0x0a) return { headerEnd: start, bodyStart: start + 1 };
  if (raw[start] === 0x0d && raw[start + 1] === 0x0a) return { headerEnd: start, bodyStart: start + 2 };
  let i = start;
  while (i < end) {
    const nl = raw.indexOf(0x0a, i);
    if (nl === -1 || nl >= end) break;
    const next = nl + 1;
    if (raw[next] === 0x0a && next < end) return { headerEnd: next, bodyStart: next + 1 };
    if (raw[next] === 0x0d && raw[next + 1] === 0x0a && next + 1 < end) return { headerEnd: next, bodyStart: next + 2 };
    i = next;
  }
  return { headerEnd: end, bodyStart: end };
}

/** The header fields of a MIME node, read as the store reads them (so ENVELOPE, SEARCH and the summary agree). */
export const parseHeaderBlock = readHeaderFields;

export function parseContentType(value: string | null, fallback: string): ContentType {
  const parsed = libmime.parseHeaderValue(value ?? fallback);
  let [type, subtype] = String(parsed.value || '').toLowerCase().split('/');
  if (!type || !subtype) [type, subtype] = fallback.split('/') as [string, string];
  const params: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed.params ?? {})) params[k.toLowerCase()] = String(v);
  if (type === 'text' && !params.charset && !value) params.charset = 'us-ascii';
  return { type: type!, subtype: subtype! , params };
}

function parseNode(raw: Buffer, start: number, end: number, defaultType: string, depth: number, counter: { parts: number }): MimeNode {
  const { headerEnd, bodyStart } = findHeaderEnd(raw, start, end);
  const headers = parseHeaderBlock(raw, start, headerEnd);
  const ctValue = headers.find((h) => h.key === 'content-type')?.value ?? null;
  const contentType = parseContentType(ctValue, defaultType);
  const node: MimeNode = { start, bodyStart, end, headers, contentType, children: [], message: null };
  counter.parts++;
  if (depth >= MAX_DEPTH || counter.parts > MAX_PARTS) return node;
  if (contentType.type === 'multipart') {
    // A multipart without its required boundary (RFC 2046 §5.1.1), or whose boundary never occurs, is read as
    // the default text/plain (RFC 2045 §5.2): a BODYSTRUCTURE of type "MULTIPART" without parts is not one.
    const boundary = contentType.params.boundary;
    if (boundary) node.children = splitMultipart(raw, bodyStart, end, boundary, contentType.subtype === 'digest' ? 'message/rfc822' : 'text/plain', depth, counter);
    if (node.children.length === 0) node.contentType = { type: 'text', subtype: 'plain', params: { charset: 'us-ascii' } };
  } else if (contentType.type === 'message' && contentType.subtype === 'rfc822') {
    const cte = (headers.find((h) => h.key === 'content-transfer-encoding')?.value ?? '7bit').toLowerCase();
    if (cte !== 'base64' && cte !== 'quoted-printable') node.message = parseNode(raw, bodyStart, end, 'text/plain', depth + 1, counter);
  }
  return node;
}

function splitMultipart(raw: Buffer, start: number, end: number, boundary: string, childType: string, depth: number, counter: { parts: number }): MimeNode[] {
  const delim = Buffer.from('--' + boundary);
  const starts: number[] = []; // offsets of delimiter lines
  let closeAt = -1;
  let pos = start;
  while (pos < end) {
    const at = raw.indexOf(delim, pos);
    if (at === -1 || at >= end) break;
    const lineStart = at === start || raw[at - 1] === 0x0a;
    if (!lineStart) {
      pos = at + delim.length;
      continue;
    }
    const after = at + delim.length;
    if (raw[after] === 0x2d && raw[after + 1] === 0x2d) {
      closeAt = at;
      starts.push(at);
      break;
    }
    starts.push(at);
    pos = after;
  }
  if (closeAt === -1) starts.push(end + 2); // unterminated: the last part runs to the end
  const parts: MimeNode[] = [];
  for (let i = 0; i + 1 < starts.length; i++) {
    const nl = raw.indexOf(0x0a, starts[i]!);
    if (nl === -1 || nl >= end) break;
    const partStart = nl + 1;
    // The CRLF before the next delimiter belongs to the delimiter (RFC 2046 §5.1.1).
    let partEnd = Math.min(starts[i + 1]!, end);
    if (partEnd < end || starts[i + 1]! <= end) {
      if (raw[partEnd - 1] === 0x0a) partEnd--;
      if (raw[partEnd - 1] === 0x0d) partEnd--;
    }
    if (partEnd < partStart) partEnd = partStart;
    parts.push(parseNode(raw, partStart, partEnd, childType, depth + 1, counter));
  }
  return parts;
}

export function parseMessage(raw: Buffer): MimeNode {
  return parseNode(raw, 0, raw.length, 'text/plain', 0, { parts: 0 });
}
