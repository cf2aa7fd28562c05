// The audience: contacts, segments and subscription topics — the services behind /contacts, /segments and
// /subscription-topics.
import { z } from 'zod';
import { ContactListQuery, CreateContact, UpdateContact } from '../../http/schemas/audience/contacts.js';
import { createContact, getContact, getSegment, getTopic, listContacts, listSegments, listTopics, updateContact } from '../../services/audience/index.js';
import { defineTool, idArg, PAGING, pageOf } from '../tool.js';

const contactId = idArg('the contact id, or its email address');
const flag = (what: string) => z.boolean({ error: 'must be true or false' }).optional().describe(what);

export const audienceTools = [
  defineTool({
    name: 'list_contacts',
    title: 'List contacts',
    description:
      'Contacts, newest first (a segment\'s members oldest first). `search`: part of an email address or a name; `segment_id`: members of that segment; `unsubscribed`: true or false; `engagement_segment`: active_30d, inactive_90d or never_opened. Paged: `page`, `per_page`.',
    scope: 'mcp:read',
    input: z.object({ ...ContactListQuery.shape, unsubscribed: flag('true: only unsubscribed contacts; false: only subscribed ones'), ...PAGING }),
    async handler(ctx, principal, input) {
      const filters = { search: input.search, segmentId: input.segment_id, unsubscribed: input.unsubscribed, engagementSegment: input.engagement_segment };
      return listContacts(ctx, principal.teamId, filters, pageOf(input));
    },
  }),
  defineTool({
    name: 'get_contact',
    title: 'Get a contact',
    description: 'One contact by its id or email address: names, whether unsubscribed, its custom properties, when it was created.',
    scope: 'mcp:read',
    input: z.object({ id: contactId }),
    async handler(ctx, principal, input) {
      return { contact: await getContact(ctx, principal.teamId, input.id) };
    },
  }),
  defineTool({
    name: 'create_contact',
    title: 'Create a contact',
    description:
      'Add a contact: `email`, optional `first_name`, `last_name`, `unsubscribed`, and `properties` (each must be a contact property defined for the team, its value of that type). An address that is a contact already gives a conflict error; use update_contact then.',
    scope: 'mcp:admin',
    input: CreateContact,
    async handler(ctx, principal, input) {
      return { contact: await createContact(ctx, principal.teamId, input) };
    },
  }),
  defineTool({
    name: 'update_contact',
    title: 'Update a contact',
    description: "Change a contact's `first_name`, `last_name`, `unsubscribed` or `properties` (merged into the ones it has; a property set to null is removed). By id or email address.",
    scope: 'mcp:admin',
    input: z.object({ id: contactId, ...UpdateContact.shape }),
    async handler(ctx, principal, input) {
      const { id, ...changes } = input;
      await updateContact(ctx, principal.teamId, id, changes);
      return { success: true };
    },
  }),
  defineTool({
    name: 'list_segments',
    title: 'List segments',
    description: "The team's segments, oldest first: manual ones (contacts added by hand or import) and dynamic ones (`rules` over contact fields and properties). list_contacts with `segment_id` gives the members.",
    scope: 'mcp:read',
    input: z.object({}),
    async handler(ctx, principal) {
      return { segments: await listSegments(ctx, principal.teamId) };
    },
  }),
  defineTool({
    name: 'get_segment',
    title: 'Get a segment',
    description: 'One segment with how many contacts are in it now.',
    scope: 'mcp:read',
    input: z.object({ id: idArg('the segment id, as list_segments gave it') }),
    async handler(ctx, principal, input) {
      return { segment: await getSegment(ctx, principal.teamId, input.id) };
    },
  }),
  defineTool({
    name: 'list_topics',
    title: 'List subscription topics',
    description: "The team's subscription topics (what a contact can subscribe to or leave on the preference page), newest first, with each one's default and visibility.",
    scope: 'mcp:read',
    input: z.object({}),
    async handler(ctx, principal) {
      return { topics: await listTopics(ctx, principal.teamId) };
    },
  }),
  defineTool({
    name: 'get_topic',
    title: 'Get a subscription topic',
    description: 'One subscription topic by id.',
    scope: 'mcp:read',
    input: z.object({ id: idArg('the topic id, as list_topics gave it') }),
    async handler(ctx, principal, input) {
      return { topic: await getTopic(ctx, principal.teamId, input.id) };
    },
  }),
];
