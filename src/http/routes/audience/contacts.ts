import { Readable } from 'node:stream';
import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { Contact, ContactListQuery, CreateContact, ImportContacts, ImportResult, UpdateContact } from '../../schemas/audience/contacts.js';
import { parsePaging } from '../../../core/paging.js';
import { createContact, deleteContact, exportContacts, getContact, importContacts, listContacts, updateContact } from '../../../services/audience/index.js';

const tag = 'Contacts';

export const contactRoutes = [
  defineRoute({
    method: 'GET',
    path: '/contacts',
    summary:
      'List contacts, newest first (Form A paging). `search`: a substring of the email or a name (any case); `segment_id`: that segment’s members, oldest first; `unsubscribed`: true or false; `engagement_segment`: active_30d, inactive_90d or never_opened',
    tag,
    access: 'full_access',
    query: ContactListQuery,
    paged: true,
    response: paged(Contact),
    async handle({ app, principal, query, rawQuery }) {
      const filters = { search: query.search, segmentId: query.segment_id, unsubscribed: query.unsubscribed, engagementSegment: query.engagement_segment };
      return listContacts(app, principal.teamId, filters, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/contacts',
    summary: 'Create a contact; `properties` must be defined contact properties, each value of its type. 409 when the address is a contact already',
    tag,
    access: 'full_access',
    body: CreateContact,
    status: 201,
    response: z.object({ contact: Contact }),
    async handle({ app, principal, body }) {
      return { contact: await createContact(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/contacts/import',
    summary:
      'Import contacts from CSV text (header row with `email`; `first_name`, `last_name`, `unsubscribed` and defined properties as further columns; at most 10,000 rows). New addresses are created, known ones updated (an empty cell changes nothing); bad rows are reported by line and left out. With `segment_id` (a manual segment) every imported contact joins it',
    tag,
    access: 'full_access',
    body: ImportContacts,
    response: ImportResult,
    async handle({ app, principal, body }) {
      return { success: true, ...(await importContacts(app, principal.teamId, { csv: body.csv, segmentId: body.segment_id })) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/contacts/export',
    summary: 'Every contact of the team as CSV (text/csv), oldest first: id, email, first_name, last_name, unsubscribed, created_at, then each property A–Z',
    tag,
    access: 'full_access',
    async handle({ app, principal, koa }) {
      koa.type = 'text/csv; charset=utf-8';
      koa.set('Content-Disposition', 'attachment; filename="contacts.csv"');
      koa.body = Readable.from(exportContacts(app, principal.teamId));
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/contacts/{id}',
    summary: 'Get a contact by its id or its email address',
    tag,
    access: 'full_access',
    response: z.object({ contact: Contact }),
    async handle({ app, principal, params }) {
      return { contact: await getContact(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/contacts/{id}',
    summary: 'Change a contact’s names, `unsubscribed` or `properties` (merged; a key set to null is removed); by id or address',
    tag,
    access: 'full_access',
    body: UpdateContact,
    response: Success,
    async handle({ app, principal, params, body }) {
      await updateContact(app, principal.teamId, params.id!, body);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/contacts/{id}',
    summary: 'Delete a contact (by id or address): it leaves its segments and topics',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteContact(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
];
