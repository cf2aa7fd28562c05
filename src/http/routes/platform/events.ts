import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged } from '../../schemas/common.js';
import { parsePaging } from '../../../core/paging.js';
import { EVENT_TYPES, type EventType } from '../../../events/types.js';
import { listTeamEvents } from '../../../services/platform/index.js';

/** `type`: one event type, several comma-separated, or the parameter repeated (`?type=a&type=b`). */
const EventQuery = z.object({
  type: z
    .union([z.string(), z.array(z.string())], { error: 'must be a known event type' })
    .optional()
    .transform((v, zctx) => {
      if (v === undefined) return undefined;
      const types = (Array.isArray(v) ? v : [v]).flatMap((x) => x.split(',')).map((x) => x.trim());
      const unknown = types.find((x) => !(EVENT_TYPES as readonly string[]).includes(x));
      if (unknown === undefined) return types as EventType[];
      zctx.addIssue({ code: 'custom', message: `must be a known event type ('${unknown.slice(0, 64)}' is not)` });
      return z.NEVER;
    }),
});

const Event = z
  .object({ id: z.number().int(), type: z.enum(EVENT_TYPES), created_at: z.iso.datetime(), data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'Event' });

export const eventRoutes = [
  defineRoute({
    method: 'GET',
    path: '/events',
    summary: "The team's event log (what webhooks deliver), newest first; filter by `type` (comma-separated or repeated for several)",
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
