// Usage and quotas: this month's sending against the plan (GET /usage) and the plan's account limits.
import { z } from 'zod';
import { limitsFor } from '../../services/platform/index.js';
import { getUsage } from '../../services/sending/index.js';
import { defineTool } from '../tool.js';

const finite = (n: number) => (Number.isFinite(n) ? n : null);

export const usageTools = [
  defineTool({
    name: 'get_usage',
    title: 'Usage and quotas',
    description:
      "The team's sending this month (or `month`, YYYY-MM): messages sent, the plan's allowance, overage and its cost, whether sending is on hold and why, the external-recipient window; and the plan's limits (`limits`, null where unlimited). Check it before a large send.",
    scope: 'mcp:read',
    input: z.object({
      month: z.string({ error: 'must be a month as YYYY-MM' }).regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be a month as YYYY-MM').optional().describe('YYYY-MM (UTC); this month when omitted'),
    }),
    async handler(ctx, principal, input) {
      const usage = await getUsage(ctx, principal.teamId, input.month);
      const l = limitsFor(usage.plan);
      const limits = { domains: finite(l.domains), api_keys: finite(l.apiKeys), webhooks: finite(l.webhooks), retention_days: finite(l.retentionDays) };
      return { ...usage, limits };
    },
  }),
];
