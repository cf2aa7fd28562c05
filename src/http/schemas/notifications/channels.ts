import { z } from 'zod';
import { emailAddress } from '../../../core/validation.js';
import { ALERT_KINDS } from '../../../services/platform/index.js';
import { CHANNEL_TYPES } from '../../../services/notifications/index.js';
import { boolean, name, queryBoolean } from '../common.js';

const url = z.string({ error: 'must be an http or https URL' }).trim().min(1, 'must be an http or https URL').max(2048, 'must be at most 2048 characters');
const alerts = z
  .array(z.enum(ALERT_KINDS, { error: `must be one of ${ALERT_KINDS.join(', ')}` }), { error: 'must be an array of alert kinds' })
  .min(1, 'must name at least one alert kind')
  .max(ALERT_KINDS.length, `must have at most ${ALERT_KINDS.length} entries`);
const type = z.enum(CHANNEL_TYPES, { error: `must be one of ${CHANNEL_TYPES.join(', ')}` });

export const CreateChannel = z
  .object({ name: name(100), type, url: url.optional(), email: emailAddress().optional(), alerts: alerts.optional(), enabled: boolean().optional() })
  .meta({ id: 'CreateNotificationChannel' });

export const UpdateChannel = z
  .object({ name: name(100).optional(), type: type.optional(), url: url.optional(), email: emailAddress().optional(), alerts: alerts.optional(), enabled: boolean().optional() })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'Request body must contain at least one of: name, url, email, alerts, enabled' })
  .meta({ id: 'UpdateNotificationChannel' });

export const Channel = z
  .object({
    id: z.number().int(),
    name: z.string(),
    type,
    target: z.string().describe('the webhook URL or the address; a Slack or Discord URL only up to its host'),
    alerts: z.array(z.enum(ALERT_KINDS)),
    enabled: z.boolean(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'NotificationChannel' });

export const CreatedChannel = Channel.extend({
  secret: z.string().nullable().describe('a webhook channel’s signing secret (whsec_…), shown once; null for other types'),
}).meta({ id: 'CreatedNotificationChannel' });

export const Alert = z
  .object({
    id: z.number().int(),
    kind: z.string(),
    message: z.string(),
    data: z.record(z.string(), z.unknown()),
    createdAt: z.iso.datetime(),
    acknowledgedAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Alert' });

export const ChannelDelivery = z
  .object({
    id: z.number().int(),
    channelId: z.number().int(),
    alertId: z.number().int().nullable(),
    alertKind: z.string(),
    payload: Alert,
    status: z.enum(['pending', 'delivered', 'failed']),
    statusCode: z.number().int().nullable(),
    responseBody: z.string().nullable(),
    attempts: z.number().int(),
    nextRetryAt: z.iso.datetime().nullable(),
    deliveredAt: z.iso.datetime().nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'NotificationDelivery' });

export const AlertListQuery = z.object({
  acknowledged: queryBoolean().optional(),
  kind: z.enum(ALERT_KINDS, { error: `must be one of ${ALERT_KINDS.join(', ')}` }).optional(),
});
