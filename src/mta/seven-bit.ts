// A message safe for any SMTP server: 7-bit bodies in lines of at most 998 characters.
//
// RFC 6152 §3: 8-bit data may only go to a server that offers 8BITMIME, and a client that cannot send it
// must convert it or bounce; RFC 5321 §4.5.3.1.6: a line is at most 1,000 octets with its CRLF. A submitted
// message is the client's and may be either (Thunderbird sends `Content-Transfer-Encoding: 8bit` to a server
// that offers 8BITMIME, as ours does); an MSA may fix up what it takes (RFC 6409 §8). So the submission
// path converts once, before the message is stored and signed: every part whose body has an 8-bit byte
// or an over-long line is re-encoded as quoted-printable (mailsplit's rewriter: the same bytes, decoded
// alike), the rest of the message byte for byte. Headers are left as they are (raw UTF-8 in a header is
// RFC 6532, a matter of SMTPUTF8, not of the body).
import { Joiner, Rewriter, Splitter, type MimeNode } from '@zone-eu/mailsplit';
import { pipeline } from 'node:stream/promises';
import { Readable, Writable } from 'node:stream';

/** RFC 5322 §2.1.1: characters a line, CRLF excluded. */
const MAX_LINE = 998;

/** Whether `raw` has a byte over 0x7f or a line over 998 characters (headers included: a line is a line). */
export function needsSevenBit(raw: Buffer): boolean {
  let line = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c > 0x7f) return true;
    if (c === 0x0a) line = 0;
    else if (c !== 0x0d && ++line > MAX_LINE) return true;
  }
  return false;
}

/** A part whose body is bytes as they are (no transfer encoding of its own) and not a container of parts. */
function rewritable(node: MimeNode): boolean {
  if (node.multipart || /^message\//i.test(node.contentType || '')) return false;
  return node.encoding !== 'base64' && node.encoding !== 'quoted-printable';
}

/**
 * The message with every part that is not already base64 or quoted-printable re-encoded as quoted-printable
 * (its Content-Transfer-Encoding updated; a message without MIME-Version gets one, or the encoding would not
 * be read). Returns `raw` itself when nothing needs it.
 */
export async function toSevenBit(raw: Buffer): Promise<Buffer> {
  if (!needsSevenBit(raw)) return raw;
  // An inline message/rfc822 part is split into its own parts, which are then converted too; one attached
  // as a file (Content-Disposition: attachment) is one body that may not be re-encoded (RFC 2046 §5.2.1)
  // and goes as it is.
  const splitter = new Splitter({ defaultInlineEmbedded: true });
  const rewriter = new Rewriter((node: MimeNode) => {
    if (!rewritable(node)) return false;
    const headers = node.headers;
    if (node.root && headers && !headers.hasHeader('MIME-Version')) headers.add('MIME-Version', '1.0');
    return true;
  });
  // The rewriter decodes a selected part and hands it back through an encoder of quoted-printable.
  rewriter.on('node', (data: { decoder: NodeJS.ReadableStream & NodeJS.WritableStream; encoder: NodeJS.WritableStream }) => {
    data.decoder.pipe(data.encoder);
  });
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  try {
    await pipeline(Readable.from([raw]), splitter, rewriter, new Joiner(), sink);
  } catch {
    // A structure mailsplit refuses (over 1,000 parts, a 1 MB header block): sent as it came, as before.
    return raw;
  }
  // The rewriter ends a part that had no final line break with a bare LF: CRLF, as everything else.
  const out = Buffer.concat(chunks).toString('latin1');
  return Buffer.from(out.replace(/(?<!\r)\n/g, '\r\n'), 'latin1');
}
