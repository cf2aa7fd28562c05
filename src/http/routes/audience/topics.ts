import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { ContactSubscriptions, CreateTopic, SetSubscriptions, Subscriber, SubscribersQuery, Topic, UpdateTopic } from '../../schemas/audience/topics.js';
import { parsePaging } from '../../../core/paging.js';
import {
  clearContactSubscription,
  createTopic,
  deleteTopic,
  getContactSubscriptions,
  getTopic,
  listSubscribers,
  listTopics,
  setContactSubscriptions,
  updateTopic,
} from '../../../services/audience/index.js';

const tag = 'Subscription topics';

/** Spec: Form A, default per_page 50 for topic subscribers. */
const SUBSCRIBERS_PER_PAGE = 50;

// The contact paths come before /subscription-topics/{id}: `contacts` is no topic id.
export const topicRoutes = [
  defineRoute({
    method: 'GET',
    path: '/subscription-topics/contacts/{contactId}/subscriptions',
    summary:
      'Where a contact (by id or address) stands with each topic, newest topic first: its choice, or the topic’s default (`by_default`). `unsubscribed`: the contact left everything, so no topic’s mail reaches it',
    tag,
    access: 'full_access',
    response: ContactSubscriptions,
    async handle({ app, principal, params }) {
      return getContactSubscriptions(app, principal.teamId, params.contactId!);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/subscription-topics/contacts/{contactId}/subscriptions',
    summary:
      'Record a contact’s choices: `{ subscriptions: [{ topic_id, subscribed }] }` (1–100), all or nothing (unknown topics: 422 naming them). Leaving a topic records contact.unsubscribed with its topic_id. Answers the contact’s subscriptions',
    tag,
    access: 'full_access',
    body: SetSubscriptions,
    response: ContactSubscriptions.extend({ success: z.literal(true) }),
    async handle({ app, principal, params, body }) {
      return { success: true, ...(await setContactSubscriptions(app, principal.teamId, params.contactId!, body.subscriptions)) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/subscription-topics/contacts/{contactId}/subscriptions/{topicId}',
    summary: 'Forget a contact’s choice for a topic: the topic’s default applies again. Answers the contact’s subscriptions',
    tag,
    access: 'full_access',
    response: ContactSubscriptions.extend({ success: z.literal(true) }),
    async handle({ app, principal, params }) {
      return { success: true, ...(await clearContactSubscription(app, principal.teamId, params.contactId!, params.topicId!)) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/subscription-topics',
    summary: 'List the team’s subscription topics, newest first',
    tag,
    access: 'full_access',
    response: z.object({ topics: z.array(Topic) }),
    async handle({ app, principal }) {
      return { topics: await listTopics(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/subscription-topics',
    summary:
      'Create a topic: `name` (unique in the team, any case: 409), `description`, `default_subscription` (opt_in: subscribed until they opt out; opt_out: not until they opt in), `visibility` (public, default: on the preference page; private: API only)',
    tag,
    access: 'full_access',
    body: CreateTopic,
    status: 201,
    response: z.object({ success: z.literal(true), topic: Topic }),
    async handle({ app, principal, body }) {
      return { success: true as const, topic: await createTopic(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/subscription-topics/{id}',
    summary: 'Get a topic',
    tag,
    access: 'full_access',
    response: z.object({ topic: Topic }),
    async handle({ app, principal, params }) {
      return { topic: await getTopic(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/subscription-topics/{id}',
    summary: 'Change a topic’s name, description, default or visibility (a new default moves every contact that made no choice)',
    tag,
    access: 'full_access',
    body: UpdateTopic,
    response: z.object({ success: z.literal(true), topic: Topic }),
    async handle({ app, principal, params, body }) {
      return { success: true, topic: await updateTopic(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/subscription-topics/{id}',
    summary: 'Delete a topic and every choice made for it; 409 while a dynamic segment’s rules name it',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteTopic(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/subscription-topics/{id}/subscribers',
    summary:
      'A topic’s subscribers (`subscribed` true, the default) or the contacts who do not receive it (false), most recently changed first (Form A, 50 per page by default). A contact without a choice counts with the topic’s default, changed when it was created; a contact unsubscribed from everything is never a subscriber',
    tag,
    access: 'full_access',
    query: SubscribersQuery,
    paged: true,
    response: paged(Subscriber),
    async handle({ app, principal, params, query, rawQuery }) {
      return listSubscribers(app, principal.teamId, params.id!, query.subscribed, parsePaging(rawQuery, SUBSCRIBERS_PER_PAGE));
    },
  }),
];
