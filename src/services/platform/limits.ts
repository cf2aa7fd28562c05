// Per-plan account limits (spec: Limits, Account limits). Request rates, edge buckets, sending quotas and caps: src/limits/table.ts.
import type { Plan } from '../../config.js';

export interface PlanLimits {
  domains: number;
  apiKeys: number;
  webhooks: number;
  /** Days of email log kept; Infinity keeps everything. */
  retentionDays: number;
  /** A domain may be given one of the box's dedicated outbound addresses (POST /domains/{id}/ip). */
  dedicatedIp: boolean;
}

export const PLAN_LIMITS: Record<Plan, PlanLimits> = {
  free: { domains: 1, apiKeys: 5, webhooks: 20, retentionDays: 14, dedicatedIp: false },
  starter: { domains: 3, apiKeys: 10, webhooks: 20, retentionDays: 14, dedicatedIp: false },
  pro: { domains: 10, apiKeys: 50, webhooks: 20, retentionDays: 30, dedicatedIp: false },
  scale: { domains: 1000, apiKeys: 1000, webhooks: 20, retentionDays: 90, dedicatedIp: true },
  enterprise: { domains: Infinity, apiKeys: Infinity, webhooks: 20, retentionDays: Infinity, dedicatedIp: true },
};

export function limitsFor(plan: Plan): PlanLimits {
  return PLAN_LIMITS[plan];
}
