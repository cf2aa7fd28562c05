// Per-plan account limits (spec: Limits, Account limits). Request rates, edge buckets, sending quotas and caps: src/limits/table.ts.
import type { Plan } from '../../config.js';

export interface PlanLimits {
  domains: number;
  apiKeys: number;
  webhooks: number;
  /** Days of email log kept; Infinity keeps everything. */
  retentionDays: number;
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  free: { domains: 1, apiKeys: 5, webhooks: 20, retentionDays: 14 },
  starter: { domains: 3, apiKeys: 10, webhooks: 20, retentionDays: 14 },
  pro: { domains: 10, apiKeys: 50, webhooks: 20, retentionDays: 30 },
  scale: { domains: 1000, apiKeys: 1000, webhooks: 20, retentionDays: 90 },
  enterprise: { domains: Infinity, apiKeys: Infinity, webhooks: 20, retentionDays: Infinity },
};

/**
 * Plans whose domains may be given one of the box's dedicated outbound addresses (POST /domains/{id}/ip): the
 * spec's limits table leaves it open; a dedicated address is a Scale-and-above feature at the services the
 * spec follows, so it is here too.
 */
export const DEDICATED_IP_PLANS: readonly Plan[] = ['scale', 'enterprise'];

export function limitsFor(plan: Plan): PlanLimits {
  return PLAN_LIMITS[plan];
}
