import { z } from 'zod';
import { idempotencyKeyOf } from '../../idempotency.js';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { Email, EmailEvent, EmailListQuery, Reschedule, SendBatch, SendEmail } from '../../schemas/sending/emails.js';
import { parsePaging } from '../../../core/paging.js';
import { AppError } from '../../../core/errors.js';
import {
  previewEmail, spamPreview, cancelEmail, getEmail, listEmailEvents, listEmails, readerOf as reader, rescheduleEmail, senderOf as sender, sendEmail, sendEmails
} from '../../../services/sending/index.js';

const Accepted = z.object({ id: z.string().describe('em_… id') });

function sendRoute(path: string) {
  return defineRoute({
    method: 'POST',
    path,
    summary: 'Send an email (queued for delivery, or scheduled with scheduled_at); answers 202 with its id',
    tag: 'Emails',
    access: 'sending_access',
    body: SendEmail,
    status: 202,
    response: Accepted,
    async handle({ app, principal, body, koa }) {
      const key = idempotencyKeyOf(koa, body.idempotency_key);
      const { id } = await sendEmail(app, sender(principal), { ...body, idempotency_key: key });
      return { id };
    },
  });
}

export const emailRoutes = [
  sendRoute('/emails'),
  sendRoute('/emails/send'),
  defineRoute({
    method: 'POST',
    path: '/emails/batch',
    summary: 'Send up to 100 emails; each element answers { id } or its own { error, code }',
    tag: 'Emails',
    access: 'sending_access',
    body: SendBatch,
    arrayBody: 'emails',
    status: 202,
    response: z.object({ data: z.array(z.union([Accepted, z.object({ error: z.string(), code: z.string() })])) }),
    async handle({ app, principal, body }) {
      const results = await sendEmails(app, sender(principal), body.emails);
      const data = results.map((r) => (r instanceof AppError ? { error: r.message, code: r.code } : { id: r.id }));
      return { data };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/emails/preview',
    summary: 'Render a SendEmailInput without sending: final headers (DKIM-signed when the domain is verified), text, html and size',
    tag: 'Emails',
    access: 'sending_access',
    body: SendEmail,
    async handle({ app, principal, body }) {
      return previewEmail(app, sender(principal), body);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/emails/spam-preview',
    summary: 'Score a SendEmailInput against the content rules (see docs/API.md); sends nothing',
    tag: 'Emails',
    access: 'sending_access',
    body: SendEmail,
    response: z.object({
      score: z.number(),
      threshold: z.number(),
      verdict: z.enum(['ok', 'likely_spam']),
      rules: z.array(z.object({ name: z.string(), score: z.number(), description: z.string() })),
    }),
    async handle({ app, principal, body }) {
      return spamPreview(app, sender(principal), body);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/emails',
    summary: 'List emails, newest first (Form A paging; filters)',
    tag: 'Emails',
    access: 'sending_access',
    query: EmailListQuery,
    paged: true,
    response: paged(
      z.object({
        id: z.number().int(),
        publicId: z.string(),
        from: z.string(),
        to: z.array(z.string()),
        subject: z.string(),
        status: z.string(),
        tags: z.array(z.string()),
        mode: z.string(),
        createdAt: z.string(),
        scheduledAt: z.string().nullable(),
        sentAt: z.string().nullable(),
        deliveredAt: z.string().nullable(),
      }),
    ),
    async handle({ app, principal, query, rawQuery }) {
      return listEmails(app, reader(principal), query, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/emails/{id}',
    summary: 'Get an email with its recipients and their outcome',
    tag: 'Emails',
    access: 'sending_access',
    response: Email,
    async handle({ app, principal, params }) {
      return getEmail(app, reader(principal), params.id!);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/emails/{id}/events',
    summary: "The email's timeline, oldest first",
    tag: 'Emails',
    access: 'sending_access',
    response: z.object({ events: z.array(EmailEvent) }),
    async handle({ app, principal, params }) {
      return { events: await listEmailEvents(app, reader(principal), params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/emails/{id}',
    summary: 'Reschedule a queued email',
    tag: 'Emails',
    access: 'sending_access',
    body: Reschedule,
    response: Success,
    async handle({ app, principal, params, body }) {
      await rescheduleEmail(app, reader(principal), params.id!, body.scheduled_at);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/emails/{id}/cancel',
    summary: 'Cancel a queued or scheduled email',
    tag: 'Emails',
    access: 'sending_access',
    response: Success,
    async handle({ app, principal, params }) {
      await cancelEmail(app, reader(principal), params.id!);
      return { success: true };
    },
  }),
];
