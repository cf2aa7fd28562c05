// SendEmailInput and friends (spec: Emails, SendEmailInput, Attachment). Schema limits answer 400;
// the checks that need the database or decoding (verified domain, recipient total, attachment sizes) are
// the service's and answer 422.
import { z } from 'zod';
import { parseMailbox } from '../../../core/address.js';
import { displayNameFolds, headerFolds, isUnstructuredHeader } from '../../../core/header-lines.js';
import { EMAIL_STATUSES } from '../../../services/sending/index.js';

const mailbox = z.string({ error: 'must be a valid email address' }).superRefine((v, zctx) => {
  const m = parseMailbox(v);
  if (!m) zctx.addIssue({ code: 'custom', message: 'must be a valid email address' });
  else if (m.name && !displayNameFolds(m.name)) {
    zctx.addIssue({ code: 'custom', message: 'has a display name with a run without spaces too long for one header line (RFC 5322: 998 characters)' });
  }
});

/** A list of addresses; a single string is accepted as a one-item list. */
const addressList = (max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? [v] : v),
    z.array(mailbox, { error: 'must be an array of email addresses' }).max(max, `must contain at most ${max} addresses`),
  );

// RFC 5322 §2.2 field name: printable ASCII except colon. It cannot be folded: a bound keeps `Name: ` and
// the start of its value on the first line.
const MAX_HEADER_NAME = 256;
// The whole header block of a message must stay under what receivers keep (Postfix's header_size_limit is
// 100 KB; past it the rest is dropped and the DKIM signature with it): custom headers get 64 KB of it.
const MAX_CUSTOM_HEADER_BYTES = 64 * 1024;
const HEADER_NAME_RE = /^[\x21-\x39\x3b-\x7e]+$/;
/** Headers the box writes itself; a custom value would break signing or addressing. */
export const RESERVED_HEADERS = new Set(
  [
    'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'reply-to', 'sender', 'return-path',
    'dkim-signature', 'mime-version', 'content-type', 'content-transfer-encoding', 'received',
  ],
);

const headers = z
  .record(
    z
      .string()
      .regex(HEADER_NAME_RE, 'header names must be printable ASCII without colons')
      .max(MAX_HEADER_NAME, `header names must be at most ${MAX_HEADER_NAME} characters`),
    z
      .string({ error: 'header values must be strings' })
      .max(1024, 'must be at most 1,024 characters')
      .refine((v) => !/[\r\n]/.test(v), 'must not contain line breaks'),
  )
  .superRefine((h, zctx) => {
    let size = 0;
    for (const name of Object.keys(h)) size += name.length + h[name]!.length + 4; // `Name: value` CRLF
    if (size > MAX_CUSTOM_HEADER_BYTES) {
      zctx.addIssue({ code: 'custom', message: `must total at most ${MAX_CUSTOM_HEADER_BYTES / 1024} KB (names and values)` });
      return;
    }
    for (const name of Object.keys(h)) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        zctx.addIssue({ code: 'custom', path: [name], message: 'is set by the service and cannot be given as a custom header' });
      } else if (!isUnstructuredHeader(name) && !headerFolds(name, h[name]!)) {
        // A structured field (a URL list, message ids) cannot be folded inside a token, nor encoded.
        zctx.addIssue({ code: 'custom', path: [name], message: 'has a run without spaces too long for one header line (RFC 5322: 998 characters with its name)' });
      }
    }
  });

export const MAX_IDEMPOTENCY_KEY = 256;

const notBlank = (v: string | undefined) => v !== undefined && /\S/.test(v);

/**
 * Base64 (RFC 4648 §4; whitespace between characters allowed, padding optional): the alphabet, `=` only
 * at the end, and a length that is whole bytes — a lone sixth-bit character left over (`Y`) or padding
 * that does not complete a quantum (`YWJj=`) is not base64, though Buffer.from would decode it silently.
 * One pass, nothing copied (a content may be 30 MB).
 */
export function isBase64(v: string): boolean {
  let data = 0;
  let pad = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) continue; // whitespace
    if (c === 0x3d) {
      if (++pad > 2) return false;
    } else if (pad > 0) return false; // data after padding
    else if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f) data++;
    else return false;
  }
  return pad === 0 ? data % 4 !== 1 : (data + pad) % 4 === 0;
}

export const Attachment = z.object({
  filename: z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  content: z.string({ error: 'must be a base64 string' }).refine(isBase64, 'must be base64'),
  content_type: z
    .string({ error: 'must be a MIME type such as application/pdf' })
    .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'must be a MIME type such as application/pdf')
    .optional(),
}, { error: 'must be an object with filename and content' });

export const SendEmail = z
  .object({
    from: mailbox,
    to: addressList(50),
    cc: addressList(50).optional(),
    bcc: addressList(50).optional(),
    reply_to: addressList(50).optional(),
    subject: z.string({ error: 'must be a string' }).max(998, 'must be at most 998 characters').optional(),
    html: z.string({ error: 'must be a string' }).optional(),
    text: z.string({ error: 'must be a string' }).optional(),
    headers: headers.optional(),
    tags: z
      .array(z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'), {
        error: 'must be an array of strings',
      })
      .max(10, 'must contain at most 10 tags')
      .optional(),
    attachments: z.array(Attachment, { error: 'must be an array' }).max(10, 'must contain at most 10 attachments').optional(),
    idempotency_key: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(MAX_IDEMPOTENCY_KEY, `must be at most ${MAX_IDEMPOTENCY_KEY} characters`).optional(),
    scheduled_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
    template_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
    variables: z
      .record(z.string(), z.union([z.string(), z.number(), z.boolean()], { error: 'must be a string, number or boolean' }).transform(String), { error: 'must be an object of variable values' })
      .optional(),
    unsubscribe: z
      .boolean({ error: 'must be a boolean' })
      .optional()
      .describe('true: carry List-Unsubscribe (an https link and a mailto) and List-Unsubscribe-Post (RFC 8058 one-click); the one recipient must be a contact, whom the links unsubscribe from everything'),
    topic_id: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .optional()
      .describe('sent for this subscription topic: carries the unsubscribe links (leaving the topic); skipped (failed, email.suppressed) when the contact is not subscribed to it'),
  })
  .refine((v) => v.to.length > 0, { path: ['to'], message: 'must contain at least one address' })
  .refine((v) => !(v.unsubscribe === false && v.topic_id !== undefined), { path: ['unsubscribe'], message: 'cannot be false with topic_id: an email sent for a topic always carries its unsubscribe links' })
  .refine((v) => !((v.unsubscribe === true || v.topic_id !== undefined) && Object.keys(v.headers ?? {}).some((h) => /^list-unsubscribe(-post)?$/i.test(h))), {
    path: ['headers'],
    message: 'must not set List-Unsubscribe or List-Unsubscribe-Post when unsubscribe or topic_id is given: the service writes them',
  })
  // An empty or blank body is no body: as on the wire, where a blank text beside html counts as none.
  .refine((v) => notBlank(v.html) || notBlank(v.text) || v.template_id !== undefined, {
    message: 'Request body must include html, text or template_id',
  })
  .meta({ id: 'SendEmail' });

export type SendEmailBody = z.output<typeof SendEmail>;

export const SendBatch = z.object({
  emails: z
    .array(SendEmail, { error: 'must be an array of emails' })
    .min(1, 'must contain at least 1 email')
    .max(100, 'must contain at most 100 emails (the batch limit)'),
});

export const Reschedule = z.object({
  scheduled_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }),
});

// A substring to look for: a control character matches nothing stored (a NUL ended SQLite's LIKE pattern
// there, so `to=%00` matched every email).
const searchText = z.string().refine((v) => !/[\x00-\x1f\x7f]/.test(v), 'must not contain control characters');

export const EmailListQuery = z.object({
  status: z.enum(EMAIL_STATUSES, { error: `must be one of ${EMAIL_STATUSES.join(', ')}` }).optional(),
  domain_id: z.string().optional(),
  to: searchText.optional(),
  from: searchText.optional(),
  subject: searchText.optional(),
  tag: z.string().optional(),
  date_from: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
  date_to: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).optional(),
  provider: z.string().optional().describe('emails opened or clicked through this provider (tracking): gmail, apple, outlook, yahoo, thunderbird, other, unknown'),
  country: z.string().optional().describe('emails opened or clicked from this country (ISO 3166-1 alpha-2, any case; the client address by the offline GeoIP table)'),
  device: z.string().optional().describe('emails opened or clicked on this device: desktop, mobile, tablet, unknown'),
});

export const Email = z
  .object({
    id: z.string(),
    from: z.string(),
    to: z.array(z.string()),
    cc: z.array(z.string()),
    bcc: z.array(z.string()),
    reply_to: z.array(z.string()),
    subject: z.string(),
    html: z.string().nullable(),
    text: z.string().nullable(),
    tags: z.array(z.string()),
    headers: z.record(z.string(), z.string()),
    status: z.enum(EMAIL_STATUSES),
    mode: z.enum(['live', 'test']),
    message_id: z.string(),
    attachments: z.array(z.object({ filename: z.string(), content_type: z.string(), size: z.number().int() })),
    recipients: z.array(
      z.object({
        email: z.string(),
        type: z.enum(['to', 'cc', 'bcc']),
        status: z.string(),
        code: z.string().nullable(),
        message: z.string().nullable(),
        bounce_category: z.string().nullable(),
      }),
    ),
    created_at: z.iso.datetime(),
    scheduled_at: z.iso.datetime().nullable(),
    sent_at: z.iso.datetime().nullable(),
    delivered_at: z.iso.datetime().nullable(),
    template: z.object({ id: z.string(), version: z.number().int() }).nullable().describe('the template and version the email was rendered from'),
    broadcast_id: z.string().nullable().describe('the broadcast (bc_…) this email is one recipient’s copy of'),
  })
  .meta({ id: 'Email' });

export const EmailEvent = z.object({ type: z.string(), timestamp: z.iso.datetime(), data: z.record(z.string(), z.unknown()) });
