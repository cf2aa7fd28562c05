import { z } from 'zod';
import { defineRoute } from '../route.js';
import { paged } from '../schemas/common.js';
import { parsePaging } from '../../core/paging.js';
import { EVENT_TYPES } from '../../events/types.js';
import { listTeamEvents } from '../../services/events.js';

const EventQuery = z.object({
  type: z.enum(EVENT_TYPES, { error: 'must be a known event type' }).optional(),
});

const Event = z
  .object({ id: z.number().int(), type: z.enum(EVENT_TYPES), created_at: z.iso.datetime(), data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'Event' });

export const eventRoutes = [
  defineRoute({
    method: 'GET',
    path: '/events',
    summary: "The team's event log (what webhooks deliver), newest first; filter by `type`",
    tag: 'Events',
    access: 'full_access',
    query: EventQuery,
    paged: true,
    response: paged(Event),
    async handle({ app, principal, query, rawQuery }) {
      return listTeamEvents(app, principal.teamId, query.type, parsePaging(rawQuery));
    },
  }),
];
