// Decoded text of a message for SEARCH BODY/TEXT/HEADER (RFC 3501 §6.4.4: substring, case-insensitive).
import libmime from 'libmime';
import charset from 'libmime/lib/charset.js';
import { header, type MimeNode } from './parse.js';

function decodeQuotedPrintable(s: string): Buffer {
  const bytes: number[] = [];
  const src = s.replace(/=\r?\n/g, '');
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(src.slice(i + 1, i + 3))) {
      bytes.push(parseInt(src.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      const code = src.charCodeAt(i);
      bytes.push(code & 0xff);
    }
  }
  return Buffer.from(bytes);
}

function decodePart(raw: Buffer, node: MimeNode): string {
  const body = raw.subarray(node.bodyStart, node.end);
  const cte = (header(node, 'content-transfer-encoding') ?? '').toLowerCase();
  let bytes: Buffer = body;
  if (cte === 'base64') bytes = Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  else if (cte === 'quoted-printable') bytes = decodeQuotedPrintable(body.toString('latin1'));
  try {
    return charset.decode(bytes, node.contentType.params.charset ?? 'utf-8');
  } catch {
    return bytes.toString('utf8');
  }
}

/**
 * Text of the message's text/* parts (and those of embedded messages), decoded. The other message/* parts
 * are text too (message/delivery-status, message/disposition-notification: a bounce's "Final-Recipient"), as is
 * an encoded message/rfc822 part, read whole.
 */
export function bodyText(raw: Buffer, node: MimeNode): string {
  if (node.children.length) return node.children.map((c) => bodyText(raw, c)).join('\n');
  if (node.message) return headerText(node.message) + '\n' + bodyText(raw, node.message);
  if (node.contentType.type === 'text' || node.contentType.type === 'message') return decodePart(raw, node);
  return '';
}

/**
 * The header fields of every body part (its MIME header: Content-Type, Content-Disposition with the
 * attachment's file name, Content-Description), decoded, RFC 2231 parameters included. SEARCH TEXT looks at
 * the whole message (RFC 3501 §6.4.4), and these fields are part of its body.
 */
export function partHeaderText(node: MimeNode): string {
  const out: string[] = [];
  const walk = (n: MimeNode) => {
    for (const c of n.children) {
      out.push(headerText(c));
      for (const key of ['content-type', 'content-disposition']) {
        const v = header(c, key);
        if (v) out.push(...Object.values(libmime.parseHeaderValue(v).params ?? {}).map(String));
      }
      walk(c);
    }
    if (n.message) walk(n.message);
  };
  walk(node);
  return out.join('\n');
}

export function decodeHeaderValue(value: string): string {
  try {
    return libmime.decodeWords(value);
  } catch {
    return value;
  }
}

export function headerText(node: MimeNode): string {
  return node.headers.map((h) => `${h.key}: ${decodeHeaderValue(h.value)}`).join('\n');
}
