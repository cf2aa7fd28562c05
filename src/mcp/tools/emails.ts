// Emails: send (one or a batch), read (list, one with its timeline), cancel and reschedule — the send path and
// the reads behind POST/GET /emails. A sending_access key acts on the emails it sent itself.
import { z } from 'zod';
import { AppError } from '../../core/errors.js';
import { EmailListQuery, Reschedule, SendBatch, SendEmail } from '../../http/schemas/sending/emails.js';
import {
  cancelEmail, getEmail, listEmailEvents, listEmails, readerOf, rescheduleEmail, senderOf, sendEmail, sendEmails
} from '../../services/sending/index.js';
import { defineTool, idArg, pageOf, PAGING } from '../tool.js';

const emailId = idArg('the email id (em_…), as send_email or list_emails gave it');

export const emailTools = [
  defineTool({
    name: 'send_email',
    title: 'Send an email',
    description:
      'Send one email through the box (queued for delivery now, or at `scheduled_at`). `from` must be an address on a verified domain of the team (see list_domains). Give `html` and/or `text`, or a published `template_id` with `variables`. Returns `{ id }` (em_…); follow the delivery with get_email. `idempotency_key` makes a retry safe: the same key within 24 h sends nothing new and returns the first id.',
    scope: 'mcp:send',
    permission: 'sending_access',
    input: SendEmail,
    async handler(ctx, principal, input) {
      const { id } = await sendEmail(ctx, senderOf(principal), input);
      return { id };
    },
  }),
  defineTool({
    name: 'send_batch',
    title: 'Send a batch of emails',
    description:
      'Send up to 100 emails in one call (each shaped as send_email\'s arguments, in `emails`). Each element answers on its own: `{ id }` when accepted, or `{ error, code }` (a bad sender domain, a quota) while the others are sent.',
    scope: 'mcp:send',
    permission: 'sending_access',
    input: SendBatch,
    async handler(ctx, principal, input) {
      const results = await sendEmails(ctx, senderOf(principal), input.emails);
      return { data: results.map((r) => (r instanceof AppError ? { error: r.message, code: r.code } : { id: r.id })) };
    },
  }),
  defineTool({
    name: 'list_emails',
    title: 'List emails',
    description:
      'List sent and scheduled emails, newest first, with their status (queued, scheduled, sent, delivered, bounced, …). Filters: `status`, `domain_id`, substrings of `to`/`from`/`subject`, `tag`, `date_from`/`date_to` (ISO 8601). Paged: `page`, `per_page`; the answer\'s `meta` says how many pages there are.',
    scope: 'mcp:read',
    permission: 'sending_access',
    input: EmailListQuery.extend(PAGING),
    async handler(ctx, principal, input) {
      const { page, per_page, ...filters } = input;
      return listEmails(ctx, readerOf(principal), filters, pageOf({ page, per_page }));
    },
  }),
  defineTool({
    name: 'get_email',
    title: 'Get an email and its timeline',
    description:
      'One email: addresses, subject, bodies, status, each recipient\'s outcome (delivered, bounced with the receiving server\'s reply), and its timeline (`events`, oldest first: queued, sent, delivered, opened, clicked, bounced, …).',
    scope: 'mcp:read',
    permission: 'sending_access',
    input: z.object({ id: emailId }),
    async handler(ctx, principal, input) {
      const reader = readerOf(principal);
      const [email, events] = await Promise.all([getEmail(ctx, reader, input.id), listEmailEvents(ctx, reader, input.id)]);
      return { ...email, events };
    },
  }),
  defineTool({
    name: 'cancel_email',
    title: 'Cancel an email',
    description: 'Cancel an email that is still queued or scheduled (not yet handed to the receiving server). Answers `{ success: true }`; an email already sent gives an error.',
    scope: 'mcp:send',
    permission: 'sending_access',
    input: z.object({ id: emailId }),
    async handler(ctx, principal, input) {
      await cancelEmail(ctx, readerOf(principal), input.id);
      return { success: true };
    },
  }),
  defineTool({
    name: 'reschedule_email',
    title: 'Reschedule an email',
    description: 'Move a queued or scheduled email to a new time: `scheduled_at` (ISO 8601 date-time with offset, e.g. 2030-01-31T09:00:00Z). Answers `{ success: true }`.',
    scope: 'mcp:send',
    permission: 'sending_access',
    input: z.object({ id: emailId, ...Reschedule.shape }),
    async handler(ctx, principal, input) {
      await rescheduleEmail(ctx, readerOf(principal), input.id, input.scheduled_at);
      return { success: true };
    },
  }),
];
