import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { Contact, ContactProperty, CreateProperty, CreateSegment, PreviewSegment, Segment, SegmentContacts, UpdateProperty, UpdateSegment } from '../../schemas/audience/contacts.js';
import { parsePaging } from '../../../core/paging.js';
import { Broadcast } from '../../schemas/campaigns/broadcasts.js';
import { broadcastsOfSegment } from '../../../services/campaigns/index.js';
import {
  addMembers,
  createProperty,
  createSegment,
  deleteProperty,
  deleteSegment,
  getSegment,
  listMembers,
  listProperties,
  listSegments,
  previewSegment,
  removeMembers,
  updateProperty,
  updateSegment,
} from '../../../services/audience/index.js';

export const segmentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/segments',
    summary: 'List the team’s segments, oldest first',
    tag: 'Segments',
    access: 'full_access',
    response: z.object({ segments: z.array(Segment) }),
    async handle({ app, principal }) {
      return { segments: await listSegments(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/segments',
    summary: 'Create a segment: manual (`name` only; add contacts to it) or dynamic (`rules`: its members are the contacts the rules match when read)',
    tag: 'Segments',
    access: 'full_access',
    body: CreateSegment,
    status: 201,
    response: z.object({ success: z.literal(true), segment: Segment }),
    async handle({ app, principal, body }) {
      return { success: true, segment: await createSegment(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/segments/preview',
    summary: 'Count the contacts `rules` would match and show the first 10 (oldest first), saving nothing',
    tag: 'Segments',
    access: 'full_access',
    body: PreviewSegment,
    response: z.object({ count: z.number().int(), contacts: z.array(Contact) }),
    async handle({ app, principal, body }) {
      return previewSegment(app, principal.teamId, body.rules);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/segments/{id}',
    summary: 'Get a segment with how many contacts are in it now',
    tag: 'Segments',
    access: 'full_access',
    response: z.object({ segment: Segment.extend({ contact_count: z.number().int() }) }),
    async handle({ app, principal, params }) {
      return { segment: await getSegment(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/segments/{id}',
    summary: 'Rename a segment, or give a dynamic segment new rules',
    tag: 'Segments',
    access: 'full_access',
    body: UpdateSegment,
    response: Success,
    async handle({ app, principal, params, body }) {
      await updateSegment(app, principal.teamId, params.id!, body);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/segments/{id}',
    summary: 'Delete a segment (its contacts stay)',
    tag: 'Segments',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteSegment(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/segments/{id}/contacts',
    summary: 'Add contacts to a manual segment (at most 1,000 ids; unknown ids → 422 naming them, nothing added); `added` counts those new to it',
    tag: 'Segments',
    access: 'full_access',
    body: SegmentContacts,
    response: z.object({ success: z.literal(true), added: z.number().int() }),
    async handle({ app, principal, params, body }) {
      return { success: true, ...(await addMembers(app, principal.teamId, params.id!, body.contact_ids)) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/segments/{id}/contacts',
    summary: 'Remove contacts (`contact_ids` in the body) from a manual segment; `removed` counts those that were in it',
    tag: 'Segments',
    access: 'full_access',
    body: SegmentContacts,
    response: z.object({ success: z.literal(true), removed: z.number().int() }),
    async handle({ app, principal, params, body }) {
      return { success: true, ...(await removeMembers(app, principal.teamId, params.id!, body.contact_ids)) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/segments/{id}/contacts/{contactId}',
    summary: 'Remove one contact from a manual segment',
    tag: 'Segments',
    access: 'full_access',
    response: z.object({ success: z.literal(true), removed: z.number().int() }),
    async handle({ app, principal, params }) {
      return { success: true, ...(await removeMembers(app, principal.teamId, params.id!, [params.contactId!])) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/segments/{id}/members',
    summary: 'The contacts in a segment, oldest first (Form A paging); 404 for an unknown segment',
    tag: 'Segments',
    access: 'full_access',
    paged: true,
    response: paged(Contact),
    async handle({ app, principal, params, rawQuery }) {
      return listMembers(app, principal.teamId, params.id!, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/segments/{id}/broadcasts',
    summary: 'The broadcasts that name the segment in `segment_ids`, newest first; 404 for an unknown segment',
    tag: 'Segments',
    access: 'full_access',
    response: z.object({ broadcasts: z.array(Broadcast) }),
    async handle({ app, principal, params }) {
      await getSegment(app, principal.teamId, params.id!);
      return { broadcasts: await broadcastsOfSegment(app, principal.teamId, params.id!) };
    },
  }),
];

export const propertyRoutes = [
  defineRoute({
    method: 'GET',
    path: '/contact-properties',
    summary: 'The team’s contact property definitions, by name A–Z',
    tag: 'Contact properties',
    access: 'full_access',
    response: z.object({ properties: z.array(ContactProperty) }),
    async handle({ app, principal }) {
      return { properties: await listProperties(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/contact-properties',
    summary: 'Define a contact property: `name` (a letter, then letters, digits, _) and `type` (string, number, date, boolean)',
    tag: 'Contact properties',
    access: 'full_access',
    body: CreateProperty,
    status: 201,
    response: z.object({ success: z.literal(true), property: ContactProperty }),
    async handle({ app, principal, body }) {
      return { success: true, property: await createProperty(app, principal.teamId, body) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/contact-properties/{id}',
    summary: 'Rename a property (contacts and segment rules follow) or change its type (only while no contact has a value)',
    tag: 'Contact properties',
    access: 'full_access',
    body: UpdateProperty,
    response: z.object({ success: z.literal(true), property: ContactProperty }),
    async handle({ app, principal, params, body }) {
      return { success: true, property: await updateProperty(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/contact-properties/{id}',
    summary: 'Delete a property definition and its value from every contact',
    tag: 'Contact properties',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteProperty(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
];
