import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { getUsage } from '../../../services/sending/index.js';
import { PLANS } from '../../../config.js';

const UsageQuery = z.object({
  month: z
    .string({ error: 'must be a month as YYYY-MM' })
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be a month as YYYY-MM')
    .optional(),
});

const Usage = z
  .object({
    team_id: z.string(),
    plan: z.enum(PLANS),
    month: z.string().describe('YYYY-MM (UTC)'),
    sent: z.number().int().describe('live messages accepted this month (test mode and idempotent replays excluded)'),
    allowance: z.number().int().nullable().describe('messages included in the plan; null: unlimited'),
    overage: z.number().int().describe('messages past the allowance, billed on paid plans'),
    overage_cost_eur: z.number().describe('overage × 0.25 EUR per 1,000, to the cent'),
    past_allowance: z.enum(['refused', 'billed', 'unlimited']),
    on_hold: z.boolean(),
    hold_reason: z.string().nullable(),
    external: z.object({
      window_started_at: z.string().nullable(),
      window_ends_at: z.string().nullable(),
      sent: z.number().int(),
      cap: z.number().int().nullable(),
    }),
  })
  .meta({ id: 'Usage' });

export const usageRoutes = [
  defineRoute({
    method: 'GET',
    path: '/usage',
    summary: "The team's sending this month (or `month=YYYY-MM`): count, allowance, overage and its cost, hold and external-recipient window",
    tag: 'Usage',
    access: 'full_access',
    query: UsageQuery,
    response: Usage,
    async handle({ app, principal, query }) {
      return getUsage(app, principal.teamId, query.month);
    },
  }),
];
