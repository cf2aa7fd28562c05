// Builds the RFC 5322 message of an email with nodemailer's MailComposer (MIME structure, encodings,
// header folding). Pure: data in, bytes out.
import MailComposer from 'nodemailer/lib/mail-composer';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { compile } from 'html-to-text';

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

/** A readable text part for an HTML-only email: links kept as "text [url]", images dropped. Compiled once. */
export const htmlToText: (html: string) => string = compile({
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
  ],
});

/** The MIME type for a file name, as MailComposer would infer it. */
export function inferContentType(filename: string): string {
  return detectMimeType(filename);
}

export async function composeMessage(input: ComposeInput): Promise<Buffer> {
  const composer = new MailComposer({
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
  });
  return composer.compile().build();
}
