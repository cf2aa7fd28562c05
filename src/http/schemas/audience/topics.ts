// Subscription topics and a contact's subscriptions (spec: subscription topics).
import { z } from 'zod';
import { boolean, name, queryBoolean } from '../common.js';
import { DEFAULT_SUBSCRIPTIONS, TOPIC_VISIBILITIES } from '../../../services/audience/index.js';

const defaultSubscription = z
  .enum(DEFAULT_SUBSCRIPTIONS, { error: `must be one of ${DEFAULT_SUBSCRIPTIONS.join(', ')}` })
  .describe('opt_in: contacts are subscribed until they opt out; opt_out: not subscribed until they opt in');
const visibility = z
  .enum(TOPIC_VISIBILITIES, { error: `must be one of ${TOPIC_VISIBILITIES.join(', ')}` })
  .describe('public topics are listed on the preference page reached from an email; private ones only through the API');
const description = z.string({ error: 'must be a string or null' }).trim().max(500, 'must be at most 500 characters').nullable();

export const CreateTopic = z
  .object({ name: name(100), description: description.optional(), default_subscription: defaultSubscription, visibility: visibility.default('public') })
  .meta({ id: 'CreateSubscriptionTopic' });

export const UpdateTopic = z
  .object({ name: name(100).optional(), description: description.optional(), default_subscription: defaultSubscription.optional(), visibility: visibility.optional() })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { message: 'Request body must contain at least one of: name, description, default_subscription, visibility' })
  .meta({ id: 'UpdateSubscriptionTopic' });

export const Topic = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    default_subscription: defaultSubscription,
    visibility,
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'SubscriptionTopic' });

export const SubscribersQuery = z.object({
  subscribed: queryBoolean().default(true),
});

export const Subscriber = z
  .object({
    contact_id: z.string(),
    email: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    subscribed: z.boolean(),
    by_default: z.boolean().describe('no choice recorded: the topic’s default applies'),
    changed_at: z.iso.datetime().describe('when the contact made its choice (its creation, for a default)'),
  })
  .meta({ id: 'TopicSubscriber' });

export const SetSubscriptions = z
  .object({
    subscriptions: z
      .array(z.object({ topic_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty'), subscribed: boolean() }, { error: 'must be an object with topic_id and subscribed' }), {
        error: 'must be an array of { topic_id, subscribed }',
      })
      .min(1, 'must hold at least one choice')
      .max(100, 'must have at most 100 entries'),
  })
  .meta({ id: 'SetContactSubscriptions' });

export const ContactSubscriptions = z
  .object({
    contact_id: z.string(),
    unsubscribed: z.boolean().describe('unsubscribed from everything: no topic’s mail reaches the contact, whatever `subscriptions` say'),
    subscriptions: z.array(
      z.object({
        topic_id: z.string(),
        topic_name: z.string(),
        subscribed: z.boolean(),
        by_default: z.boolean(),
        updated_at: z.iso.datetime(),
      }),
    ),
  })
  .meta({ id: 'ContactSubscriptions' });
