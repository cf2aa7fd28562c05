import { z } from 'zod';
import { name, PageMeta } from '../common.js';
import { emailAddress } from '../../../core/validation.js';
import { BROADCAST_STATUSES, MAX_TEST_ADDRESSES, MAX_VARIANTS, MIN_VARIANTS, PERFORMANCE_METRICS, RESEND_AUDIENCES } from '../../../services/campaigns/index.js';

const str = () => z.string({ error: 'must be a string' });
const body = (field: string) => str().max(2_000_000, `${field} must be at most 2,000,000 characters`);
const subject = () => str().min(1, 'must not be empty').max(998, 'must be at most 998 characters');
const dateTime = () => z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' });
const tags = () => z.array(str().min(1, 'must not be empty').max(64, 'must be at most 64 characters'), { error: 'must be an array of strings' }).max(10, 'must have at most 10 entries');
const ids = () => z.array(str().min(1, 'must not be empty'), { error: 'must be an array of segment ids' }).max(20, 'must have at most 20 entries');
const replyTo = () => z.union([str(), z.array(str()).max(50, 'must have at most 50 entries')], { error: 'must be an address or an array of addresses' });

const Variant = z.object({
  name: name(100),
  subject: subject(),
  weight: z.number({ error: 'must be an integer 1..100' }).int('must be an integer 1..100').min(1, 'must be an integer 1..100').max(100, 'must be an integer 1..100'),
  html: body('html').optional(),
  text: body('text').optional(),
});

export const AbTest = z
  .object({
    variants: z.array(Variant, { error: 'must be an array of variants' }).min(MIN_VARIANTS, `must have ${MIN_VARIANTS} to ${MAX_VARIANTS} variants`).max(MAX_VARIANTS, `must have ${MIN_VARIANTS} to ${MAX_VARIANTS} variants`),
    test_duration_minutes: z.number({ error: 'must be an integer of at least 5' }).int('must be an integer of at least 5').min(5, 'must be an integer of at least 5').max(43_200, 'must be at most 43,200 (30 days)'),
    test_percentage: z.number({ error: 'must be an integer 1..100' }).int('must be an integer 1..100').min(1, 'must be an integer 1..100').max(100, 'must be an integer 1..100').optional()
      .describe('share of the audience (%) split between the variants by weight; the winner goes to the rest (default 20)'),
  })
  .meta({ id: 'AbTest' });

export const CreateBroadcast = z
  .object({
    name: name(200),
    from: str().min(1, 'must not be empty').max(320, 'must be at most 320 characters'),
    subject: subject(),
    html: body('html').optional().describe('required unless template_id is given'),
    text: body('text').optional(),
    template_id: str().min(1, 'must not be empty').optional().describe('a published template: its html and text where the broadcast gives none'),
    reply_to: replyTo().optional(),
    tags: tags().optional(),
    segment_ids: ids().optional(),
    topic_id: str().min(1, 'must not be empty').optional(),
    scheduled_at: dateTime().optional().describe('when POST /broadcasts/{id}/send starts it (it starts at once without one)'),
    ab_test: AbTest.optional(),
  })
  .refine((v) => v.html !== undefined || v.template_id !== undefined, { message: 'Request body is missing required fields: html', path: ['html'] })
  .meta({ id: 'CreateBroadcast' });

export const UpdateBroadcast = z
  .object({
    name: name(200).optional(),
    from: str().min(1, 'must not be empty').max(320, 'must be at most 320 characters').optional(),
    subject: subject().optional(),
    html: body('html').nullable().optional(),
    text: body('text').nullable().optional(),
    template_id: str().min(1, 'must not be empty').nullable().optional(),
    reply_to: replyTo().nullable().optional(),
    tags: tags().nullable().optional(),
    segment_ids: ids().nullable().optional(),
    topic_id: str().min(1, 'must not be empty').nullable().optional(),
    scheduled_at: dateTime().nullable().optional(),
    ab_test: AbTest.nullable().optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'Request body must contain at least one field to change' })
  .meta({ id: 'UpdateBroadcast' });

export const SendBroadcast = z.object({ scheduled_at: dateTime().optional().describe('start then instead (overrides the broadcast’s own)') });

export const TestBroadcast = z
  .object({
    to: z.array(emailAddress(), { error: 'must be an array of addresses' }).min(1, 'must have at least 1 entry').max(MAX_TEST_ADDRESSES, `must have at most ${MAX_TEST_ADDRESSES} entries`),
    variant: str().optional().describe('the A/B variant to send (by name); the broadcast’s own content otherwise'),
  })
  .meta({ id: 'TestBroadcast' });

export const ResendBroadcast = z
  .object({
    to: z.enum(RESEND_AUDIENCES, { error: `must be one of ${RESEND_AUDIENCES.join(', ')}` }),
    name: name(200).optional(),
    subject: subject().optional(),
    scheduled_at: dateTime().optional(),
  })
  .meta({ id: 'ResendBroadcast' });

export const EndAbTest = z.object({ variant: str().optional().describe('the winner to send; the highest open rate so far when absent') });

const Variant_ = z.object({ name: z.string(), subject: z.string(), weight: z.number().int(), html: z.string().nullable().optional(), text: z.string().nullable().optional() });

export const Broadcast = z
  .object({
    id: z.string(),
    name: z.string(),
    from: z.string(),
    reply_to: z.array(z.string()),
    subject: z.string(),
    html: z.string().nullable(),
    text: z.string().nullable(),
    template_id: z.string().nullable(),
    tags: z.array(z.string()),
    segment_ids: z.array(z.string()),
    topic_id: z.string().nullable(),
    ab_test: z.object({ variants: z.array(Variant_), test_duration_minutes: z.number().int(), test_percentage: z.number().int() }).nullable(),
    status: z.enum(BROADCAST_STATUSES),
    scheduled_at: z.iso.datetime().nullable(),
    recipients: z.number().int().describe('contacts in the audience frozen when sending started'),
    winner: z.string().nullable(),
    test_ends_at: z.iso.datetime().nullable(),
    resend_of: z.string().nullable(),
    resend_to: z.enum(RESEND_AUDIENCES).nullable(),
    failure: z.string().nullable(),
    started_at: z.iso.datetime().nullable(),
    sent_at: z.iso.datetime().nullable(),
    cancelled_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Broadcast' });

export const BroadcastPage = z.object({ data: z.array(Broadcast), meta: PageMeta });

const intParam = (max: number) =>
  z
    .string({ error: `must be an integer 1..${max}` })
    .regex(/^\d{1,7}$/, `must be an integer 1..${max}`)
    .transform(Number)
    .pipe(z.number().min(1, `must be an integer 1..${max}`).max(max, `must be an integer 1..${max}`));

export const BroadcastListQuery = z.object({
  search: z.string().max(200, 'must be at most 200 characters').optional(),
  status: z.enum(BROADCAST_STATUSES, { error: `must be one of ${BROADCAST_STATUSES.join(', ')}` }).optional(),
});

export const PerformanceQuery = z.object({
  limit: intParam(100).optional(),
  metric: z.enum(PERFORMANCE_METRICS, { error: `must be one of ${PERFORMANCE_METRICS.join(', ')}` }).optional(),
  since: dateTime().optional(),
});

export const InactiveQuery = z.object({ limit: intParam(5_000).optional() });

const rates = {
  open_rate: z.number(),
  click_rate: z.number(),
};

export const Performance = z
  .object({
    metric: z.enum(PERFORMANCE_METRICS),
    since: z.iso.datetime(),
    broadcasts: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        status: z.string(),
        started_at: z.iso.datetime().nullable(),
        sent_at: z.iso.datetime().nullable(),
        recipients: z.number().int(),
        sent: z.number().int(),
        delivered: z.number().int(),
        bounced: z.number().int(),
        complained: z.number().int(),
        unsubscribed: z.number().int(),
        unique_opens: z.number().int(),
        unique_clicks: z.number().int(),
        ...rates,
        bounce_rate: z.number(),
        complaint_rate: z.number(),
        unsubscribe_rate: z.number(),
      }),
    ),
  })
  .meta({ id: 'BroadcastPerformance' });

export const InactiveContacts = z.object({
  broadcast: z.string(),
  count: z.number().int(),
  contacts: z.array(z.object({ id: z.string(), email: z.string(), first_name: z.string().nullable(), last_name: z.string().nullable() })),
});

export const Variants = z.object({
  variants: z.array(
    z.object({
      name: z.string(),
      subject: z.string(),
      weight: z.number().int(),
      recipients: z.number().int(),
      sent: z.number().int(),
      delivered: z.number().int(),
      opens: z.number().int(),
      clicks: z.number().int(),
      ...rates,
      winner: z.boolean(),
    }),
  ),
  winner: z.string().nullable(),
  winner_reason: z.string().nullable().describe('open_rate, open_rate_tie (then the higher click rate, then the earlier variant) or chosen'),
  test_ends_at: z.iso.datetime().nullable(),
  test_percentage: z.number().int(),
});
