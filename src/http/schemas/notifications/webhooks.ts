import { z } from 'zod';
import { EVENT_TYPES } from '../../../events/types.js';
import { boolean } from '../common.js';

const url = z.string({ error: 'must be an http or https URL' }).trim().min(1, 'must be an http or https URL').max(2048, 'must be at most 2048 characters');
const events = z
  .array(z.enum(EVENT_TYPES, { error: 'must be a known event type' }), { error: 'must be an array of event types' })
  .min(1, 'must name at least one event type')
  .max(EVENT_TYPES.length, `must have at most ${EVENT_TYPES.length} entries`);

export const CreateWebhook = z.object({ url, events }).meta({ id: 'CreateWebhook' });

export const UpdateWebhook = z
  .object({ url: url.optional(), events: events.optional(), enabled: boolean().optional() })
  .refine((v) => v.url !== undefined || v.events !== undefined || v.enabled !== undefined, {
    message: 'Request body must contain at least one of: url, events, enabled',
  })
  .meta({ id: 'UpdateWebhook' });

export const Webhook = z
  .object({
    id: z.number().int(),
    url: z.string(),
    events: z.array(z.string()),
    active: z.boolean(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'Webhook' });

export const CreatedWebhook = Webhook.extend({
  secret: z.string().describe('the signing secret (whsec_…), shown once'),
}).meta({ id: 'CreatedWebhook' });

export const WebhookDelivery = z
  .object({
    id: z.number().int(),
    webhookId: z.number().int(),
    eventType: z.string(),
    payload: z.object({ type: z.string(), created_at: z.iso.datetime(), data: z.record(z.string(), z.unknown()) }),
    statusCode: z.number().int().nullable(),
    responseBody: z.string().nullable(),
    attempts: z.number().int(),
    nextRetryAt: z.iso.datetime().nullable(),
    deliveredAt: z.iso.datetime().nullable(),
    createdAt: z.iso.datetime(),
    status: z.enum(['pending', 'delivered', 'rejected', 'failed']).describe('which rule applied: rejected = the endpoint answered 406'),
  })
  .meta({ id: 'WebhookDelivery' });

const int = (min: number, max: number) =>
  z.number({ error: `must be an integer between ${min} and ${max}` }).int(`must be an integer between ${min} and ${max}`).min(min, `must be an integer between ${min} and ${max}`).max(max, `must be an integer between ${min} and ${max}`);

export const BatchReplay = z
  .object({
    withinMinutes: int(1, 525_600).optional(),
    eventType: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional(),
    limit: int(1, 1000).optional(),
  })
  .meta({ id: 'BatchReplay' });

export const RotateSecret = z.object({ graceHours: int(0, 168).default(24) }).meta({ id: 'RotateWebhookSecret' });
