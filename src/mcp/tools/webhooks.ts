// Webhook endpoints and their deliveries (the failed ones first of all) — the services behind /webhooks.
import { z } from 'zod';
import { WebhookDelivery } from '../../http/schemas/notifications/webhooks.js';
import { listDeliveries, listWebhooks } from '../../services/notifications/index.js';
import { defineTool, idArg, PAGING, pageOf } from '../tool.js';

export const webhookTools = [
  defineTool({
    name: 'list_webhooks',
    title: 'List webhook endpoints',
    description: "The team's webhook endpoints, newest first: URL, the events each receives, whether it is enabled (an endpoint is disabled after 20 failed deliveries in a row).",
    scope: 'mcp:read',
    input: z.object({}),
    async handler(ctx, principal) {
      return { webhooks: await listWebhooks(ctx, principal.teamId) };
    },
  }),
  defineTool({
    name: 'list_webhook_deliveries',
    title: "A webhook's deliveries",
    description:
      "The delivery log of one webhook endpoint, newest first: event, payload, the endpoint's HTTP status and response, attempts, next retry. `status` keeps one kind: failed (retries exhausted or dropped: the default here), pending (retrying), delivered, rejected (the endpoint answered 406). Paged: `page`, `per_page`.",
    scope: 'mcp:read',
    input: z.object({
      webhook_id: z
        .union([z.number().int().min(1), idArg('')], { error: 'must be a webhook id' })
        .transform(String)
        .describe('the webhook endpoint id, as list_webhooks gave it'),
      status: WebhookDelivery.shape.status.default('failed').describe('which deliveries: failed (default), pending, delivered or rejected'),
      ...PAGING,
    }),
    async handler(ctx, principal, input) {
      const page = await listDeliveries(ctx, principal.teamId, input.webhook_id, pageOf(input), { status: input.status });
      return { deliveries: page.data, pagination: page.meta };
    },
  }),
];
