// Builds the RFC 5322 message of an email with nodemailer's MailComposer (MIME structure, encodings,
// header folding). Pure: data in, bytes out.
//
// MailComposer builds the tree (headers, boundaries, transfer encodings); its stream-based serialiser costs
// about 2 ms of CPU per message (a pipeline and an AbortController per node), so `buildSync` writes the
// same tree synchronously — the same bytes, as MimeNode.stream() would write them (test/mta/compose.test.ts
// compares the two) — whenever every node holds a string or a Buffer; anything else goes through build().
import MailComposer from 'nodemailer/lib/mail-composer';
import { encode as base64Encode, wrap as base64Wrap } from 'nodemailer/lib/base64';
import { detectMimeType, encodeWord, foldLines } from 'nodemailer/lib/mime-funcs';
import MimeNode from 'nodemailer/lib/mime-node';
import { encode as qpEncode, wrap as qpWrap } from 'nodemailer/lib/qp';
import { plainTextOf } from './html-scan.js';
import { renderHtmlText } from './html-text.js';
import { headerFolds, isUnstructuredHeader } from '../core/header-lines.js';
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

/**
 * The text/plain part of a message: the sender's text, or the one derived from its html when there is none.
 * A blank text beside an html body (a template's empty string) counts as none: MailComposer leaves an empty
 * text out, so the message went out html-only (no multipart/alternative; SpamAssassin's MIME_HTML_ONLY, and
 * HTML_MIME_NO_HTML_TAG for a fragment), and a whitespace-only one is an alternative sharing no word with the
 * html (MPART_ALT_DIFF, 2.2 points). RFC 2046 §5.1.4: the alternatives are the same content.
 */
export function textPartOf(input: Pick<ComposeInput, 'html' | 'text'>): string | undefined {
  const given = textGiven(input);
  return given !== undefined || input.html === undefined ? given : htmlToText(input.html);
}

/** The sender's text as it counts (textPartOf): undefined when absent, or blank beside an html body. */
export function textGiven(input: { html?: string | undefined; text?: string | undefined }): string | undefined {
  return input.html === undefined || (input.text !== undefined && /\S/.test(input.text)) ? input.text : undefined;
}

type HeaderValue = string | { prepared: boolean; value: string };

/**
 * An unstructured header (Subject, Comments, an X- header) as MailComposer should write it. MailComposer
 * folds only at whitespace, so a run of 997 characters without any (a token, a long URL; the API allows
 * subjects of 998 and header values of 1,024) went out on a line over 998. Such a value is written as
 * RFC 2047 encoded words instead, which fold; decoders give back the same text. Any other value is left to
 * MailComposer. (A structured header that would not fold is refused by the API's schema.)
 */
export function unstructuredHeader(name: string, value: string): HeaderValue {
  if (headerFolds(name, value)) return value;
  const folded = foldLines(`${name}: ${encodeWord(value, 'Q', 52)}`, 76);
  return { prepared: true, value: folded.slice(name.length + 2) };
}

/** The message's Subject and custom headers as MailComposer takes them. */
function headersOf(input: Pick<ComposeInput, 'subject' | 'headers'>): Record<string, HeaderValue> {
  const headers: Record<string, HeaderValue> = {};
  for (const [name, value] of Object.entries(input.headers)) headers[name] = isUnstructuredHeader(name) ? unstructuredHeader(name, value) : value;
  const subject = unstructuredHeader('Subject', input.subject);
  if (typeof subject !== 'string') headers.Subject = subject;
  return headers;
}

/** MailComposer's options for a message, but for its boundaries. */
export function composerOptions(input: ComposeInput): ConstructorParameters<typeof MailComposer>[0] {
  const headers = headersOf(input);
  return {
    from: input.from,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo.length ? input.replyTo : undefined,
    subject: headers.Subject ? undefined : input.subject,
    html: input.html,
    text: textPartOf(input),
    headers,
    attachments: input.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
    messageId: input.messageId,
    date: input.date,
  };
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

// MailComposer creates each child node (a multipart/alternative, its text and html parts) without the
// message's baseBoundary, so every MimeNode it makes draws 8 random bytes of its own (crypto.randomBytes,
// synchronous: ~4 % of a render thread's CPU in a broadcast) that it never uses: a node's boundary is built
// from its root's baseBoundary (MimeNode._generateBoundary). Children get their parent's instead; the bytes
// written do not change.
const createChild = MimeNode.prototype.createChild;
MimeNode.prototype.createChild = function (this: MimeNode, contentType: string | MimeNode.Options, options?: MimeNode.Options) {
  if (typeof contentType === 'object' && options === undefined) return createChild.call(this, undefined as unknown as string, { baseBoundary: this.baseBoundary, ...contentType });
  return createChild.call(this, contentType as string, { baseBoundary: this.baseBoundary, ...options });
};


export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const options: ConstructorParameters<typeof MailComposer>[0] & { baseBoundary: string } = {
    // The random part of the message's multipart boundaries: 8 bytes, as MailComposer would draw them for
    // every MIME node it makes, once per message from the pooled CSPRNG bytes of core/ids.ts.
    baseBoundary: randomHex(8),
    ...composerOptions(input),
  };
  const root = new MailComposer(options).compile();
  return buildSync(root) ?? root.build();
}
