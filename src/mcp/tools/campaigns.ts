// Broadcasts: list, read, create, send, performance — the services behind /broadcasts.
import { z } from 'zod';
import { BroadcastListQuery, CreateBroadcast, PerformanceQuery, SendBroadcast } from '../../http/schemas/campaigns/broadcasts.js';
import { broadcastPerformance, createBroadcast, getBroadcast, listBroadcasts, sendBroadcast } from '../../services/campaigns/index.js';
import { apiKeyIdOf } from '../../services/platform/index.js';
import { defineTool, idArg, PAGING, pageOf } from '../tool.js';

const broadcastId = idArg('the broadcast id (bc_…), as list_broadcasts or create_broadcast gave it');

export const campaignTools = [
  defineTool({
    name: 'list_broadcasts',
    title: 'List broadcasts',
    description:
      'Broadcasts (campaigns to segments or a topic\'s subscribers), newest first. `search`: part of a name; `status`: draft, scheduled, testing, waiting_for_winner, sending, sent, cancelled or failed. Paged: `page`, `per_page`.',
    scope: 'mcp:read',
    input: z.object({ ...BroadcastListQuery.shape, ...PAGING }),
    async handler(ctx, principal, input) {
      return listBroadcasts(ctx, principal.teamId, { search: input.search, status: input.status }, pageOf(input));
    },
  }),
  defineTool({
    name: 'get_broadcast',
    title: 'Get a broadcast',
    description: 'One broadcast: its content, audience (segment_ids, topic_id), status, schedule, A/B test and counts of recipients.',
    scope: 'mcp:read',
    input: z.object({ id: broadcastId }),
    async handler(ctx, principal, input) {
      return { broadcast: await getBroadcast(ctx, principal.teamId, input.id) };
    },
  }),
  defineTool({
    name: 'create_broadcast',
    title: 'Create a broadcast (draft)',
    description:
      'A draft broadcast: `name`, `from` (on a verified domain), `subject`, `html` (or a published `template_id`), and its audience: `segment_ids` and/or `topic_id`. Merge tags: {{ contact.first_name }}, {{ contact.<property> }}, {{ unsubscribe_url }}. Optional `scheduled_at`, `ab_test` (2–5 variants). Nothing is sent until send_broadcast.',
    scope: 'mcp:admin',
    input: CreateBroadcast,
    async handler(ctx, principal, input) {
      return { broadcast: await createBroadcast(ctx, principal.teamId, input) };
    },
  }),
  defineTool({
    name: 'send_broadcast',
    title: 'Send a broadcast',
    description:
      'Starts a draft broadcast now, or at `scheduled_at`: its audience is fixed when it starts (segment members and topic subscribers, minus unsubscribed and suppressed contacts) and each contact gets one personalised email. Every recipient counts toward the monthly quota.',
    scope: 'mcp:send',
    input: z.object({ id: broadcastId, ...SendBroadcast.shape }),
    async handler(ctx, principal, input) {
      const sender = { teamId: principal.teamId, apiKeyId: apiKeyIdOf(principal), mode: principal.mode };
      return { broadcast: await sendBroadcast(ctx, sender, input.id, { scheduled_at: input.scheduled_at }) };
    },
  }),
  defineTool({
    name: 'broadcast_performance',
    title: 'Broadcast performance',
    description:
      'Recent broadcasts with recipients, delivered, bounced, complained, unsubscribed, unique opens and clicks and their rates, best first by `metric` (open_rate unless given). `limit` 1–100 (default 20), `since` an ISO date-time.',
    scope: 'mcp:read',
    input: z.object({
      limit: z.number({ error: 'must be an integer 1..100' }).int('must be an integer 1..100').min(1, 'must be an integer 1..100').max(100, 'must be an integer 1..100').optional().describe('how many broadcasts, 1..100 (default 20)'),
      metric: PerformanceQuery.shape.metric,
      since: PerformanceQuery.shape.since,
    }),
    async handler(ctx, principal, input) {
      return broadcastPerformance(ctx, principal.teamId, { limit: input.limit ?? 20, metric: input.metric, since: input.since });
    },
  }),
];
