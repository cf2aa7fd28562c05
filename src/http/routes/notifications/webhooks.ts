import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { PageMeta, Success } from '../../schemas/common.js';
import { BatchReplay, CreatedWebhook, CreateWebhook, RotateSecret, UpdateWebhook, Webhook, WebhookDelivery } from '../../schemas/notifications/webhooks.js';
import { parsePaging } from '../../../core/paging.js';
import { batchReplay, createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, replayDelivery, rotateWebhookSecret, testWebhook, updateWebhook } from '../../../services/notifications/index.js';

const tag = 'Webhooks';

export const webhookRoutes = [
  defineRoute({
    method: 'POST',
    path: '/webhooks',
    summary: 'Create a webhook endpoint; its signing secret is in `secret`, shown once (20 per team)',
    tag,
    access: 'full_access',
    body: CreateWebhook,
    status: 201,
    response: CreatedWebhook,
    async handle({ app, principal, body }) {
      return createWebhook(app, principal.teamId, body);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/webhooks',
    summary: "List the team's webhook endpoints, newest first",
    tag,
    access: 'full_access',
    response: z.object({ webhooks: z.array(Webhook) }),
    async handle({ app, principal }) {
      return { webhooks: await listWebhooks(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/webhooks/{id}',
    summary: 'Get a webhook endpoint',
    tag,
    access: 'full_access',
    response: z.object({ webhook: Webhook }),
    async handle({ app, principal, params }) {
      return { webhook: await getWebhook(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/webhooks/{id}',
    summary: 'Change the URL or the events, or enable/disable (`enabled`); re-enabling delivers events from then on',
    tag,
    access: 'full_access',
    body: UpdateWebhook,
    response: Success,
    async handle({ app, principal, params, body }) {
      await updateWebhook(app, principal.teamId, params.id!, body);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/webhooks/{id}',
    summary: 'Delete a webhook endpoint and its delivery log; nothing further is delivered to it',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteWebhook(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/{id}/test',
    summary: 'Send a `webhook.test` event now; answers with the recorded delivery (one attempt, no retries)',
    tag,
    access: 'full_access',
    response: z.object({ success: z.literal(true), delivery: WebhookDelivery }),
    async handle({ app, principal, params }) {
      return { success: true, delivery: await testWebhook(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/webhooks/{id}/deliveries',
    summary: 'The delivery log of an endpoint, newest first (Form A paging)',
    tag,
    access: 'full_access',
    paged: true,
    response: z.object({ deliveries: z.array(WebhookDelivery), pagination: PageMeta }),
    async handle({ app, principal, params, rawQuery }) {
      const page = await listDeliveries(app, principal.teamId, params.id!, parsePaging(rawQuery));
      return { deliveries: page.data, pagination: page.meta };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/{id}/deliveries/{did}/replay',
    summary: 'Re-send a delivery’s original payload now: a new attempt on that delivery, answered with the delivery',
    tag,
    access: 'full_access',
    response: z.object({ success: z.literal(true), delivery: WebhookDelivery }),
    async handle({ app, principal, params }) {
      return { success: true, delivery: await replayDelivery(app, principal.teamId, params.id!, params.did!) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/{id}/deliveries/batch-replay',
    summary: 'Queue a replay of failed deliveries, oldest first (at most `limit`, 100 by default, 1,000 per call); call again while `remaining` > 0',
    tag,
    access: 'full_access',
    body: BatchReplay,
    response: z.object({ success: z.literal(true), replayed: z.number().int(), remaining: z.number().int() }),
    async handle({ app, principal, params, body }) {
      return { success: true, ...(await batchReplay(app, principal.teamId, params.id!, body)) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/{id}/rotate-secret',
    summary: 'Give the endpoint a new signing secret (in `secret`, shown once); for `graceHours` (0..168, default 24) deliveries carry both signatures, the new first',
    tag,
    access: 'full_access',
    body: RotateSecret,
    response: z.object({ success: z.literal(true), secret: z.string(), previousSecretExpiresAt: z.iso.datetime().nullable() }),
    async handle({ app, principal, params, body }) {
      return { success: true, ...(await rotateWebhookSecret(app, principal.teamId, params.id!, body.graceHours)) };
    },
  }),
];
