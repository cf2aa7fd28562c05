// A small MIME walker for machine-written reports (RFC 3464 DSNs, RFC 5965 ARF, RFC 7489 aggregate reports):
// headers unfolded, multipart split by boundary, base64 and quoted-printable bodies decoded. mailparser
// flattens message/delivery-status into the text body, which loses exactly the structure a report has.
// Pure: bytes in, a tree out; bounded depth and part count so hostile input cannot blow up.

export interface Header {
  name: string;
  value: string;
}

export interface MimePart {
  headers: Header[];
  /** Lower-cased `type/subtype`; `text/plain` when absent (RFC 2045 §5.2). */
  contentType: string;
  /** Content-Type parameters, names lower-cased. */
  params: Record<string, string>;
  /** Content-Disposition filename or Content-Type name, when given. */
  filename: string | null;
  /** The body with its transfer encoding removed (multipart: the raw body). */
  body: Buffer;
  parts: MimePart[];
}

const MAX_DEPTH = 8;
const MAX_PARTS = 200;

/** Header block lines, unfolded (RFC 5322 §2.2.3). Lines without a colon are skipped. */
export function parseHeaderBlock(block: string): Header[] {
  const out: Header[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && out.length > 0) {
      out[out.length - 1]!.value += ' ' + line.trim();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    out.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1).trim() });
  }
  return out;
}

export function header(headers: Header[], name: string): string | undefined {
  const n = name.toLowerCase();
  return headers.find((h) => h.name.toLowerCase() === n)?.value;
}

/** `type/subtype; a=b; c="d"` → type and params (names lower-cased, quotes removed). */
export function parseParams(value: string): { value: string; params: Record<string, string> } {
  const params: Record<string, string> = {};
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  const first = value.indexOf(';');
  const main = (first < 0 ? value : value.slice(0, first)).trim();
  let m: RegExpExecArray | null;
  while ((m = re.exec(value))) params[m[1]!.toLowerCase()] = (m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!).trim();
  return { value: main, params };
}

/** Splits raw bytes at the first empty line. */
function splitHead(raw: Buffer): { head: string; body: Buffer } {
  const text = raw.toString('latin1');
  const m = /\r?\n\r?\n/.exec(text);
  if (!m) {
    // Only headers, or (a part that starts with a blank line) only a body.
    return /^[\w-]+:/.test(text) ? { head: text, body: Buffer.alloc(0) } : { head: '', body: raw };
  }
  if (m.index === 0) return { head: '', body: raw.subarray(m[0].length) };
  return { head: text.slice(0, m.index), body: raw.subarray(Buffer.byteLength(text.slice(0, m.index + m[0].length), 'latin1')) };
}

function decodeQuotedPrintable(body: Buffer): Buffer {
  const text = body.toString('latin1').replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(text.charCodeAt(i) & 0xff);
  }
  return Buffer.from(bytes);
}

function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'base64':
      return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    case 'quoted-printable':
      return decodeQuotedPrintable(body);
    default:
      return body;
  }
}

function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const text = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const out: Buffer[] = [];
  let pos = text.indexOf(delimiter);
  while (pos >= 0 && out.length < MAX_PARTS) {
    const afterDelim = pos + delimiter.length;
    if (text.startsWith('--', afterDelim)) break; // close delimiter
    const lineEnd = text.indexOf('\n', afterDelim);
    if (lineEnd < 0) break;
    const next = text.indexOf(`\n${delimiter}`, lineEnd);
    const end = next < 0 ? text.length : next > 0 && text[next - 1] === '\r' ? next - 1 : next;
    out.push(Buffer.from(text.slice(lineEnd + 1, end), 'latin1'));
    if (next < 0) break;
    pos = next + 1;
  }
  return out;
}

export function parseMime(raw: Buffer, depth = 0, budget = { parts: 0 }): MimePart {
  const { head, body } = splitHead(raw);
  const headers = parseHeaderBlock(head);
  const ct = parseParams(header(headers, 'content-type') ?? 'text/plain');
  const contentType = ct.value.toLowerCase() || 'text/plain';
  const disposition = parseParams(header(headers, 'content-disposition') ?? '');
  const filename = disposition.params.filename ?? ct.params.name ?? null;
  const part: MimePart = { headers, contentType, params: ct.params, filename, body, parts: [] };
  budget.parts++;
  if (contentType.startsWith('multipart/') && ct.params.boundary && depth < MAX_DEPTH) {
    for (const chunk of splitMultipart(body, ct.params.boundary)) {
      if (budget.parts >= MAX_PARTS) break;
      part.parts.push(parseMime(chunk, depth + 1, budget));
    }
    return part;
  }
  part.body = decodeBody(body, header(headers, 'content-transfer-encoding'));
  return part;
}

/** Every part of the tree, depth first (the root included). */
export function walk(part: MimePart): MimePart[] {
  return [part, ...part.parts.flatMap(walk)];
}

/** RFC 3464 §2.1 / RFC 5965 §3.1 field groups: header-style blocks separated by blank lines. */
export function parseFieldGroups(text: string): Header[][] {
  return text
    .replace(/\r\n/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((block) => parseHeaderBlock(block))
    .filter((g) => g.length > 0);
}

/** A bare address from `rfc822; a@b`, `<a@b>` or `a@b`; null when none. */
/**
 * How much of a header value the address readers look at: report fields and the headers of a returned copy
 * are short, and a megabyte-long one (anyone can send a report to the box) would cost the event loop.
 */
const MAX_ADDRESS_FIELD = 16 * 1024;

export function addressFrom(value: string | undefined): string | null {
  if (!value) return null;
  value = value.slice(0, MAX_ADDRESS_FIELD);
  const v = value.includes(';') ? value.slice(value.indexOf(';') + 1) : value;
  const m = /<?([^\s<>;"@]{1,64}@[^\s<>;"]{1,255})>?/.exec(v.trim());
  return m ? m[1]!.replace(/\.$/, '') : null;
}

/** Every address in a header value such as `A <a@b>, c@d`. */
export function addressesIn(value: string | undefined): string[] {
  if (!value) return [];
  return [...value.slice(0, MAX_ADDRESS_FIELD).matchAll(/([^\s<>,;:"()@]{1,64}@[A-Za-z0-9.-]{1,255})/g)].map((m) => m[1]!);
}
