import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { Success } from '../../schemas/common.js';
import {
  Broadcast,
  BroadcastListQuery,
  BroadcastPage,
  CreateBroadcast,
  EndAbTest,
  InactiveContacts,
  InactiveQuery,
  Performance,
  PerformanceQuery,
  ResendBroadcast,
  SendBroadcast,
  TestBroadcast,
  UpdateBroadcast,
  Variants,
} from '../../schemas/campaigns/broadcasts.js';
import { parsePaging } from '../../../core/paging.js';
import {
  broadcastPerformance,
  broadcastVariants,
  cancelBroadcast,
  createBroadcast,
  deleteBroadcast,
  endAbTest,
  getBroadcast,
  inactiveRecipients,
  listBroadcasts,
  resendBroadcast,
  sendBroadcast,
  testBroadcast,
  updateBroadcast,
} from '../../../services/campaigns/index.js';
import { apiKeyIdOf, type Principal } from '../../../services/platform/index.js';

const sender = (p: Principal) => ({ teamId: p.teamId, apiKeyId: apiKeyIdOf(p), mode: p.mode });
const withBroadcast = z.object({ success: z.literal(true), broadcast: Broadcast });

export const broadcastRoutes = [
  defineRoute({
    method: 'GET',
    path: '/broadcasts',
    summary: 'List broadcasts, newest first (Form A paging); `search` in name and subject, `status`',
    tag: 'Broadcasts',
    access: 'full_access',
    paged: true,
    query: BroadcastListQuery,
    response: BroadcastPage,
    async handle({ app, principal, query, rawQuery }) {
      return listBroadcasts(app, principal.teamId, query, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts',
    summary: 'Create a draft broadcast (CreateBroadcast); unknown segments, topic or an unpublished template → 422',
    tag: 'Broadcasts',
    access: 'full_access',
    body: CreateBroadcast,
    status: 201,
    response: withBroadcast,
    async handle({ app, principal, body }) {
      return { success: true, broadcast: await createBroadcast(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/broadcasts/performance',
    summary: 'Per broadcast that started sending since `since` (default 90 days): recipients, delivered, bounced, complained, unsubscribed, unique opens and clicks and their rates; best first by `metric` (default open_rate); `limit` 1..100 (default 20)',
    tag: 'Broadcasts',
    access: 'full_access',
    query: PerformanceQuery,
    response: Performance,
    async handle({ app, principal, query }) {
      return broadcastPerformance(app, principal.teamId, { limit: query.limit ?? 20, metric: query.metric, since: query.since });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/broadcasts/{id}',
    summary: 'Get a broadcast',
    tag: 'Broadcasts',
    access: 'full_access',
    response: z.object({ broadcast: Broadcast }),
    async handle({ app, principal, params }) {
      return { broadcast: await getBroadcast(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/broadcasts/{id}',
    summary: 'Change a draft or scheduled broadcast (a new `scheduled_at` moves a scheduled one); any other status → 422',
    tag: 'Broadcasts',
    access: 'full_access',
    body: UpdateBroadcast,
    response: withBroadcast,
    async handle({ app, principal, params, body }) {
      return { success: true, broadcast: await updateBroadcast(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/broadcasts/{id}',
    summary: 'Delete a draft broadcast (any other status → 422)',
    tag: 'Broadcasts',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteBroadcast(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts/{id}/send',
    summary: 'Send a draft: now, or at `scheduled_at` (body, else the broadcast’s); the audience is frozen when it starts. Empty audience or unverified sender domain → 422; past a Free plan’s monthly allowance → 429 monthly_limit_exceeded, nothing sent',
    tag: 'Broadcasts',
    access: 'full_access',
    body: SendBroadcast,
    response: withBroadcast,
    async handle({ app, principal, params, body }) {
      return { success: true, broadcast: await sendBroadcast(app, sender(principal), params.id!, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts/{id}/cancel',
    summary: 'Cancel a scheduled or in-flight broadcast: recipients not handed over yet and emails whose delivery has not started stay in; `cancelled` counts both',
    tag: 'Broadcasts',
    access: 'full_access',
    response: withBroadcast.extend({ cancelled: z.number().int() }),
    async handle({ app, principal, params }) {
      const r = await cancelBroadcast(app, principal.teamId, params.id!);
      return { success: true, broadcast: r.broadcast, cancelled: r.cancelled };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts/{id}/test',
    summary: 'Send the broadcast (or one `variant`) now to 1..10 addresses as ordinary emails; the audience and the broadcast are untouched',
    tag: 'Broadcasts',
    access: 'full_access',
    body: TestBroadcast,
    response: z.object({ success: z.literal(true), data: z.array(z.object({ email: z.string(), id: z.string() })) }),
    async handle({ app, principal, params, body }) {
      return { success: true, data: await testBroadcast(app, sender(principal), params.id!, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts/{id}/resend',
    summary: 'Re-send a sent broadcast as a new one (returned, 201) to its `non_openers`, `non_clickers` or `all` its recipients, as they stand now',
    tag: 'Broadcasts',
    access: 'full_access',
    body: ResendBroadcast,
    status: 201,
    response: withBroadcast,
    async handle({ app, principal, params, body }) {
      return { success: true, broadcast: await resendBroadcast(app, sender(principal), params.id!, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/broadcasts/{id}/end-ab-test',
    summary: 'End an A/B test now: the named `variant`, or the highest open rate so far, goes to the rest of the audience',
    tag: 'Broadcasts',
    access: 'full_access',
    body: EndAbTest,
    response: withBroadcast,
    async handle({ app, principal, params, body }) {
      return { success: true, broadcast: await endAbTest(app, principal.teamId, params.id!, body.variant) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/broadcasts/{id}/variants',
    summary: 'An A/B test’s variants: test-group recipients, sends, deliveries, unique opens and clicks, rates, and the winner',
    tag: 'Broadcasts',
    access: 'full_access',
    response: Variants,
    async handle({ app, principal, params }) {
      return broadcastVariants(app, principal.teamId, params.id!);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/broadcasts/{id}/non-openers',
    summary: 'Recipients whose email was delivered and who have not opened it; `limit` 1..5,000 (default 500); `count` is the total',
    tag: 'Broadcasts',
    access: 'full_access',
    query: InactiveQuery,
    response: InactiveContacts,
    async handle({ app, principal, params, query }) {
      return inactiveRecipients(app, principal.teamId, params.id!, 'opened', query.limit ?? 500);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/broadcasts/{id}/non-clickers',
    summary: 'Recipients whose email was delivered and who have not clicked a link in it; `limit` 1..5,000 (default 500); `count` is the total',
    tag: 'Broadcasts',
    access: 'full_access',
    query: InactiveQuery,
    response: InactiveContacts,
    async handle({ app, principal, params, query }) {
      return inactiveRecipients(app, principal.teamId, params.id!, 'clicked', query.limit ?? 500);
    },
  }),
];
