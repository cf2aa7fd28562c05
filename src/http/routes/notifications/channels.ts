import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { PageMeta, Success } from '../../schemas/common.js';
import { Alert, AlertListQuery, Channel, ChannelDelivery, CreatedChannel, CreateChannel, UpdateChannel } from '../../schemas/notifications/channels.js';
import { parsePaging } from '../../../core/paging.js';
import {
  createChannel, deleteChannel, listChannelDeliveries, listChannels, replayChannelDelivery, testChannel, updateChannel
} from '../../../services/notifications/index.js';
import { acknowledgeAlert, pageAlerts } from '../../../services/platform/index.js';

const tag = 'Notification channels';

export const channelRoutes = [
  defineRoute({
    method: 'GET',
    path: '/notification-channels',
    summary: "List the team's notification channels, newest first",
    tag,
    access: 'full_access',
    response: z.object({ channels: z.array(Channel) }),
    async handle({ app, principal }) {
      return { channels: await listChannels(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/notification-channels',
    summary:
      'Create a channel: `type` webhook (signed like webhook events; its secret in `secret`, shown once), slack or discord (an incoming-webhook `url`), or email (`email`); `alerts`: the alert kinds it receives (all when omitted). 20 per team',
    tag,
    access: 'full_access',
    body: CreateChannel,
    status: 201,
    response: z.object({ channel: CreatedChannel }),
    async handle({ app, principal, body }) {
      return { channel: await createChannel(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/notification-channels/{id}',
    summary: 'Change a channel: the fields given replace its own (`type` cannot change: 422)',
    tag,
    access: 'full_access',
    body: UpdateChannel,
    response: z.object({ channel: Channel }),
    async handle({ app, principal, params, body }) {
      return { channel: await updateChannel(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/notification-channels/{id}',
    summary: 'Delete a channel and its delivery log; nothing further is sent to it',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteChannel(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/notification-channels/{id}/test',
    summary: 'Send a test notification now (one attempt, no retries); answers with the recorded delivery',
    tag,
    access: 'full_access',
    response: z.object({ success: z.literal(true), delivery: ChannelDelivery }),
    async handle({ app, principal, params }) {
      return { success: true, delivery: await testChannel(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/notification-channels/{id}/deliveries',
    summary: 'The delivery log of a channel, newest first (Form A paging)',
    tag,
    access: 'full_access',
    paged: true,
    response: z.object({ deliveries: z.array(ChannelDelivery), meta: PageMeta }),
    async handle({ app, principal, params, rawQuery }) {
      const page = await listChannelDeliveries(app, principal.teamId, params.id!, parsePaging(rawQuery));
      return { deliveries: page.data, meta: page.meta };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/notification-channels/{id}/deliveries/{deliveryId}/replay',
    summary: 'Re-send a delivery’s alert now: a new attempt on that delivery, answered with the delivery',
    tag,
    access: 'full_access',
    response: z.object({ success: z.literal(true), delivery: ChannelDelivery }),
    async handle({ app, principal, params }) {
      return { success: true, delivery: await replayChannelDelivery(app, principal.teamId, params.id!, params.deliveryId!) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/alerts',
    summary: "The team's alerts, newest first (Form A paging); `acknowledged`: true or false; `kind`: one alert kind",
    tag,
    access: 'full_access',
    query: AlertListQuery,
    paged: true,
    response: z.object({ alerts: z.array(Alert), meta: PageMeta }),
    async handle({ app, principal, query, rawQuery }) {
      const page = await pageAlerts(app, principal.teamId, parsePaging(rawQuery), { acknowledged: query.acknowledged, kind: query.kind });
      return { alerts: page.data, meta: page.meta };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/alerts/{id}/acknowledge',
    summary: 'Mark an alert seen (idempotent); answers with the alert',
    tag,
    access: 'full_access',
    response: z.object({ success: z.literal(true), alert: Alert }),
    async handle({ app, principal, params }) {
      return { success: true, alert: await acknowledgeAlert(app, principal.teamId, params.id!) };
    },
  }),
];
