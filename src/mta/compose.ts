// Builds the RFC 5322 message of an email with nodemailer's MailComposer (MIME structure, encodings,
// header folding). Pure: data in, bytes out.
//
// MailComposer builds the tree (headers, boundaries, transfer encodings); its stream-based serialiser costs
// about 2 ms of CPU per message (a pipeline and an AbortController per node), so `buildSync` writes the
// same tree synchronously — the same bytes, as MimeNode.stream() would write them (test/mta/compose.test.ts
// compares the two) — whenever every node holds a string or a Buffer; anything else goes through build().
import MailComposer from 'nodemailer/lib/mail-composer';
import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import type MimeNode from 'nodemailer/lib/mime-node';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';
import { plainTextOf } from './html-scan.js';
import { renderHtmlText } from './html-text.js';
import { randomHex } from '../core/ids.js';

export interface Mailbox {
  name?: string | undefined;
  address: string;
}

export interface ComposeAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface ComposeInput {
  from: Mailbox;
  to: Mailbox[];
  cc: Mailbox[];
  replyTo: Mailbox[];
  subject: string;
  html?: string | undefined;
  text?: string | undefined;
  headers: Record<string, string>;
  attachments: ComposeAttachment[];
  messageId: string;
  date: Date;
}

/** Above this many characters of html, the text part is derived without a parser (plainTextOf). */
export const HTML_TO_TEXT_LIMIT = 512 * 1024;

/**
 * A readable text part for an HTML-only email, as html-to-text renders it (html-text.ts): links kept as
 * "text [url]", images dropped, wrapped at 78. A body over HTML_TO_TEXT_LIMIT, or one the renderer gives up
 * on (nesting deeper than the stack, quotes or lists past its rewrite budget), gets the linear tag-stripping
 * text of html-scan.ts instead.
 */
export function htmlToText(html: string): string {
  if (html.length > HTML_TO_TEXT_LIMIT) return plainTextOf(html);
  try {
    return renderHtmlText(html);
  } catch {
    return plainTextOf(html);
  }
}

/** The MIME type for a file name, as MailComposer would infer it. */
export function inferContentType(filename: string): string {
  return detectMimeType(filename);
}

/** The parts of a MimeNode that MimeNode.stream() reads and the typings leave out. */
interface NodeInternals {
  _raw?: unknown;
  _transforms?: unknown[];
  _processFuncs?: unknown[];
}

/** QP content above this is encoded by nodemailer's Encoder in 64 KB slices; buildSync leaves it to build(). */
const QP_SYNC_LIMIT = 64 * 1024;

/**
 * The message MimeNode.build() would produce, written synchronously; undefined when some node needs the
 * stream path (stream, file or URL content, a raw node, transforms, a newline option, large QP text).
 */
export function buildSync(root: MimeNode): Buffer | undefined {
  const out: Buffer[] = [];
  const walk = (node: MimeNode): boolean => {
    const internals = node as unknown as NodeInternals;
    if (internals._raw || internals._transforms?.length || internals._processFuncs?.length || node.newline) return false;
    const content = node.content;
    if (content !== undefined && content !== null && typeof content !== 'string' && !Buffer.isBuffer(content)) return false;
    out.push(Buffer.from(`${node.buildHeaders()}\r\n\r\n`, 'utf8'));
    // What buildHeaders() just decided and wrote (getTransferEncoding() again would rescan the content).
    const encoding = String(node.getHeader('Content-Transfer-Encoding') ?? '').toLowerCase().trim();
    if (content) {
      if (encoding === 'base64') out.push(Buffer.from(base64Wrap(base64Encode(content), 76), 'latin1'));
      else if (encoding === 'quoted-printable') {
        // Outside text/*, nodemailer encodes lone CR and LF as data: not what the plain encoder does.
        if (!/^text\//i.test(node.contentType ?? '')) return false;
        const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
        if (bytes.length > QP_SYNC_LIMIT) return false;
        out.push(Buffer.from(qpWrap(qpEncode(bytes), 76), 'latin1'));
      } else out.push(typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    }
    if (node.multipart) {
      node.childNodes.forEach((child, i) => {
        out.push(Buffer.from(`${i > 0 ? '\r\n' : ''}--${String(node.boundary)}\r\n`, 'latin1'));
        if (!walk(child)) throw new NeedsStreams();
      });
      out.push(Buffer.from(`\r\n--${String(node.boundary)}--\r\n`, 'latin1'));
    }
    return true;
  };
  try {
    if (!walk(root)) return undefined;
  } catch (err) {
    if (err instanceof NeedsStreams) return undefined;
    throw err;
  }
  // LastNewline: the message ends with a line break.
  const last = out.findLast((b) => b.length > 0);
  const end = last?.[last.length - 1];
  if (end === 0x0d) out.push(Buffer.from('\n'));
  else if (end !== 0x0a) out.push(Buffer.from('\r\n'));
  return Buffer.concat(out);
}

class NeedsStreams extends Error {}


export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const options: ConstructorParameters<typeof MailComposer>[0] & { baseBoundary: string } = {
    // The random part of the message's multipart boundaries: 8 bytes, as MailComposer would draw them for
    // every MIME node it makes, once per message from the pooled CSPRNG bytes of core/ids.ts.
    baseBoundary: randomHex(8),
    from: input.from,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo.length ? input.replyTo : undefined,
    subject: input.subject,
    html: input.html,
    text: input.text ?? (input.html !== undefined ? htmlToText(input.html) : undefined),
    headers: input.headers,
    attachments: input.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
    messageId: input.messageId,
    date: input.date,
  };
  const root = new MailComposer(options).compile();
  return buildSync(root) ?? root.build();
}
