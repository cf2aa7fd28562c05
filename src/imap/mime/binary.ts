// BINARY[section] (RFC 3516 §4.2): a part's content with its Content-Transfer-Encoding undone. base64 and
// quoted-printable are decoded; 7bit, 8bit and binary (and none) are the bytes as stored; any other encoding is
// one the server cannot decode (the FETCH answers NO [UNKNOWN-CTE]). The empty section is the whole message, and
// a multipart or message/rfc822 part its body as it is (RFC 2045 §6.4: such parts are never encoded).
import { findPart } from './section.js';
import { header, type MimeNode } from './parse.js';

export type BinaryContent = { data: Buffer } | { unknownCte: string } | null;

const IDENTITY = new Set(['', '7bit', '8bit', 'binary']);
const HEX = /^[0-9A-Fa-f]{2}$/;

/** Quoted-printable (RFC 2045 §6.7) over bytes: `=XX` escapes, `=` soft line breaks; anything else as it is. */
export function decodeQuotedPrintable(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(body.length);
  let n = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== 0x3d) {
      out[n++] = c;
      continue;
    }
    // A soft line break: `=` then optional trailing blanks then CRLF (or LF).
    let j = i + 1;
    while (body[j] === 0x20 || body[j] === 0x09) j++;
    if (body[j] === 0x0d && body[j + 1] === 0x0a) {
      i = j + 1;
      continue;
    }
    if (body[j] === 0x0a) {
      i = j;
      continue;
    }
    const hex = body.toString('latin1', i + 1, i + 3);
    if (HEX.test(hex)) {
      out[n++] = parseInt(hex, 16);
      i += 2;
    } else {
      out[n++] = c; // a lone `=` is kept (RFC 2045 §6.7 note 1: robust decoding)
    }
  }
  return out.subarray(0, n);
}

/** The decoded content of the part at `path` (null: no such part). */
export function binaryContent(raw: Buffer, root: MimeNode, path: number[]): BinaryContent {
  if (path.length === 0) return { data: raw };
  const part = findPart(root, path);
  if (!part) return null;
  const body = raw.subarray(part.bodyStart, part.end);
  if (part.children.length || part.message || part.contentType.type === 'multipart' || part.contentType.type === 'message') return { data: body };
  const cte = (header(part, 'content-transfer-encoding') ?? '').trim().toLowerCase();
  if (IDENTITY.has(cte)) return { data: body };
  if (cte === 'base64') return { data: Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/]/g, ''), 'base64') };
  if (cte === 'quoted-printable') return { data: decodeQuotedPrintable(body) };
  return { unknownCte: cte };
}
