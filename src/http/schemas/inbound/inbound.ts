// Inbound emails (spec: Workflows, signup forms, validation, inbound; body shapes are ours, see docs/API.md
// "Inbound emails") and DMARC aggregate reports.
import { z } from 'zod';
import { SendEmail } from '../sending/emails.js';
import { boolean } from '../common.js';
import { INBOUND_MODES } from '../../../services/platform/index.js';

const f = SendEmail.shape;

export const InboundMode = z.enum(INBOUND_MODES, { error: `must be one of ${INBOUND_MODES.join(', ')}` });

export const InboundListQuery = z.object({ domain: z.string().optional() });

const AttachmentMeta = z.object({
  filename: z.string().nullable(),
  content_type: z.string(),
  size: z.number().int(),
  content_id: z.string().nullable(),
  disposition: z.string().nullable(),
});

export const InboundEmail = z
  .object({
    id: z.number().int(),
    domain: z.string(),
    from: z.string(),
    to: z.array(z.string()),
    cc: z.array(z.string()),
    reply_to: z.array(z.string()),
    subject: z.string(),
    text: z.string().nullable(),
    html: z.string().nullable(),
    headers: z.array(z.object({ name: z.string(), value: z.string() })),
    message_id: z.string().nullable(),
    in_reply_to: z.string().nullable(),
    references: z.array(z.string()),
    date: z.string().nullable(),
    envelope: z.object({ mail_from: z.string(), rcpt_to: z.array(z.string()) }),
    authentication: z.object({ spf: z.string(), dkim: z.string(), dmarc: z.string(), arc: z.string() }),
    junk: z.boolean(),
    attachments: z.array(AttachmentMeta),
    size: z.number().int(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'InboundEmail' });

export const InboundListItem = z.object({
  id: z.number().int(),
  domain: z.string(),
  from: z.string(),
  to: z.array(z.string()),
  subject: z.string(),
  messageId: z.string().nullable(),
  attachmentCount: z.number().int(),
  junk: z.boolean(),
  createdAt: z.iso.datetime(),
});

export const InboundAttachments = z.object({
  attachments: z.array(
    z.object({ filename: z.string().nullable(), contentType: z.string(), size: z.number().int(), contentId: z.string().nullable(), content: z.string().describe('base64') }),
  ),
});

export const Reply = z
  .object({
    from: f.from.optional(),
    to: f.to.optional(),
    cc: f.cc,
    bcc: f.bcc,
    reply_all: boolean().optional(),
    replyAll: boolean().optional(),
    subject: f.subject,
    html: f.html,
    text: f.text,
    quote: boolean().optional(),
    headers: f.headers,
    attachments: f.attachments,
    tags: f.tags,
    idempotency_key: f.idempotency_key,
  })
  .transform(({ replyAll, ...rest }) => ({ ...rest, reply_all: rest.reply_all ?? replyAll }))
  .meta({ id: 'InboundReply' });

export const ReplyToSend = Reply.refine((v) => v.html !== undefined || v.text !== undefined, { message: 'Request body must include html or text' });

export const Forward = z
  .object({
    to: f.to,
    from: f.from.optional(),
    cc: f.cc,
    bcc: f.bcc,
    subject: f.subject,
    text: f.text,
    html: f.html,
    include_attachments: boolean().optional(),
    tags: f.tags,
    idempotency_key: f.idempotency_key,
  })
  .meta({ id: 'InboundForward' });

export const DraftReply = z
  .object({
    stored: z.boolean(),
    mailbox_id: z.number().int().nullable(),
    folder: z.string().nullable(),
    uid: z.number().int().nullable(),
    draft: z.object({
      from: z.string(),
      to: z.array(z.string()),
      cc: z.array(z.string()),
      subject: z.string(),
      text: z.string().nullable(),
      html: z.string().nullable(),
      in_reply_to: z.string().nullable(),
      references: z.string().nullable(),
      message_id: z.string(),
      mime: z.string(),
    }),
  })
  .meta({ id: 'DraftReply' });

const DmarcRecord = z.object({
  source_ip: z.string(),
  count: z.number().int(),
  disposition: z.string(),
  dkim: z.string(),
  spf: z.string(),
  reasons: z.array(z.object({ type: z.string(), comment: z.string().nullable() })),
  header_from: z.string().nullable(),
  envelope_from: z.string().nullable(),
  envelope_to: z.string().nullable(),
  auth_results: z.object({
    dkim: z.array(z.object({ domain: z.string(), selector: z.string().nullable(), result: z.string() })),
    spf: z.array(z.object({ domain: z.string(), scope: z.string().nullable(), result: z.string() })),
  }),
});

export const DmarcReport = z
  .object({
    id: z.number().int(),
    org_name: z.string(),
    org_email: z.string().nullable(),
    report_id: z.string(),
    date_begin: z.iso.datetime(),
    date_end: z.iso.datetime(),
    policy_published: z.object({
      domain: z.string(),
      adkim: z.string().nullable(),
      aspf: z.string().nullable(),
      p: z.string().nullable(),
      sp: z.string().nullable(),
      pct: z.number().int().nullable(),
    }),
    message_count: z.number().int(),
    pass_count: z.number().int(),
    fail_count: z.number().int(),
    records: z.array(DmarcRecord),
    received_at: z.iso.datetime(),
  })
  .meta({ id: 'DmarcReport' });

export const DmarcReportList = z.object({
  reports: z.array(DmarcReport),
  pagination: z.object({ page: z.number().int(), perPage: z.number().int(), total: z.number().int(), totalPages: z.number().int() }),
});
