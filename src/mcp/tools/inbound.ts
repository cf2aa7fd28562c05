// Inbound mail (received on the team's domains and routed to webhooks): list, read one, reply — the services
// behind /inbound. A reply goes through the one send path.
import { z } from 'zod';
import { parseBody } from '../../core/validation.js';
import { InboundListQuery, Reply, ReplyToSend } from '../../http/schemas/inbound/inbound.js';
import { getInbound, listInbound, replyToInbound } from '../../services/inbound/index.js';
import { senderOf } from '../../services/sending/index.js';
import { defineTool, PAGING, pageOf } from '../tool.js';

const inboundId = z
  .number({ error: 'must be a positive integer' })
  .int('must be a positive integer')
  .min(1, 'must be a positive integer')
  .max(Number.MAX_SAFE_INTEGER, 'must be a positive integer')
  .describe('the inbound email id (an integer), as list_inbound gave it');

/** The reply's own fields (the schema before its transform), beside the id of the email answered. */
const replyFields = (Reply as unknown as { in: z.ZodObject }).in.shape;

export const inboundTools = [
  defineTool({
    name: 'list_inbound',
    title: 'List inbound mail',
    description:
      "Mail received on the team's domains, newest first: sender, recipients, subject, when. `domain` keeps one domain's mail (a name; an unknown name gives an empty page). Paged: `page`, `per_page`. Read one with get_inbound.",
    scope: 'mcp:read',
    input: InboundListQuery.extend(PAGING),
    async handler(ctx, principal, input) {
      const { page, per_page, domain } = input;
      return listInbound(ctx, principal.teamId, { domain }, pageOf({ page, per_page }));
    },
  }),
  defineTool({
    name: 'get_inbound',
    title: 'Read an inbound email',
    description: "One received email: addresses, subject, text and html, headers, its authentication results (SPF, DKIM, DMARC) and its attachments' names, types and sizes.",
    scope: 'mcp:read',
    input: z.object({ id: inboundId }),
    async handler(ctx, principal, input) {
      return getInbound(ctx, principal.teamId, input.id);
    },
  }),
  defineTool({
    name: 'reply_to_inbound',
    title: 'Reply to an inbound email',
    description:
      'Reply to a received email through the send path: addressed to its sender (`reply_all` adds the other recipients), subject "Re: …", threaded (In-Reply-To, References), the original quoted unless `quote` is false. Give `html` and/or `text`; `from` defaults to the address the email was sent to (on a verified domain). Returns `{ id }` of the email sent.',
    scope: 'mcp:send',
    input: z.object({ id: inboundId, ...replyFields }),
    async handler(ctx, principal, input) {
      const { id, ...reply } = input as { id: number } & Record<string, unknown>;
      return replyToInbound(ctx, senderOf(principal), id, parseBody(ReplyToSend, reply));
    },
  }),
];
