// Every figure of the spec's Limits section that is not an account limit, in one table
// (account limits and retention per plan: PLAN_LIMITS in services/platform/limits.ts). Middleware, the quota
// service and the usage report read these; no figure is written anywhere else.
import type { Plan } from '../config.js';
import { HOUR, MINUTE, SECOND } from '../core/clock.js';

// ---- 1. Request rate limits (per credential, method and exact path; fixed windows) ----

export type RateMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'ANY';

export interface RateRule {
  method: RateMethod;
  /** Path template as routes declare it; parameter names do not matter (`{id}` = `{did}`). */
  path: string;
  /** The paid-plan figure; Free (and no plan) gets half, rounded down, unless `samePerPlan`. */
  paid: number;
  windowMs: number;
  /** `credential` (the default) or `ip`: the public signup-form submit is counted per client IP. */
  per: 'credential' | 'ip';
  /** One counter for every method and path of the rule (MCP), instead of one per method + exact path. */
  single?: boolean;
  samePerPlan?: boolean;
}

type Row = [paid: number, windowMs: number, endpoints: string[], extra?: Partial<RateRule>];

/** The spec's table, row by row: `METHOD /path` entries. */
const ROWS: Row[] = [
  [60, MINUTE, [
    'POST /emails', 'POST /emails/send', 'POST /email-validations', 'POST /templates/{id}/render', 'PUT /workflows/{id}/graph',
    'POST /inbound/{id}/reply', 'POST /inbound/{id}/forward', 'POST /inbound/{id}/draft-reply', 'POST /contacts',
    'PUT /notification-channels/{id}', 'DELETE /notification-channels/{id}',
  ]],
  [30, MINUTE, [
    'POST /emails/preview', 'POST /emails/spam-preview', 'POST /emails/{id}/cancel', 'POST /broadcasts', 'PATCH /broadcasts/{id}',
    'POST /templates', 'POST /templates/presets/{presetId}/use', 'PATCH /templates/{id}', 'DELETE /templates/{id}',
    'POST /templates/{id}/duplicate', 'POST /templates/{id}/publish', 'POST /templates/{id}/unpublish', 'POST /workflows',
    'POST /workflows/{id}/activate', 'POST /workflows/{id}/pause', 'POST /segments', 'POST /contact-properties',
    'PATCH /contact-properties/{id}', 'DELETE /contact-properties/{id}', 'POST /subscription-topics', 'PATCH /subscription-topics/{id}',
    'DELETE /subscription-topics/{id}', 'POST /subscription-topics/contacts/{contactId}/subscriptions',
    'DELETE /subscription-topics/contacts/{contactId}/subscriptions', 'DELETE /subscription-topics/contacts/{contactId}/subscriptions/{topicId}',
    'POST /suppressions', 'DELETE /suppressions/{email}', 'POST /signup-forms', 'PATCH /signup-forms/{id}', 'DELETE /signup-forms/{id}',
  ]],
  [10, MINUTE, [
    'POST /emails/batch', 'POST /email-validations/batch', 'POST /broadcasts/{id}/send', 'POST /broadcasts/{id}/test',
    'POST /broadcasts/{id}/resend', 'POST /broadcasts/{id}/cancel', 'POST /broadcasts/{id}/end-ab-test', 'POST /workflows/{id}/trigger',
    'POST /domains', 'POST /domains/{id}/ip', 'DELETE /domains/{id}/ip', 'POST /api-keys', 'POST /api-keys/{id}/rotate',
    'DELETE /api-keys/{id}', 'POST /webhooks', 'PATCH /webhooks/{id}', 'DELETE /webhooks/{id}', 'POST /webhooks/{id}/test',
    'POST /webhooks/{id}/rotate-secret', 'POST /webhooks/{id}/deliveries/{did}/replay', 'POST /notification-channels/{id}/test',
    'POST /notification-channels/{id}/deliveries/{deliveryId}/replay', 'POST /contacts/import', 'POST /segments/preview',
    'POST /suppressions/import', 'POST /mailboxes', 'PATCH /mailboxes/{id}', 'DELETE /mailboxes/{id}', 'POST /mailboxes/{id}/password',
    'POST /mailboxes/{id}/shares', 'DELETE /mailboxes/{id}/shares/{targetId}', 'PUT /mailboxes/{id}/filters', 'POST /mailboxes/aliases',
    'DELETE /mailboxes/aliases/{id}',
  ]],
  [20, MINUTE, ['POST /notification-channels']],
  [300, MINUTE, ['POST /workflows/events']],
  [120, MINUTE, ['ANY /mcp'], { single: true }],
  [5, MINUTE, ['GET /contacts/export']],
  [3, MINUTE, ['POST /webhooks/{id}/deliveries/batch-replay']],
  [10, 15 * MINUTE, ['POST /domains/{id}/verify']],
  [5, HOUR, ['POST /domains/{id}/dkim/rotate']],
  [20, 15 * MINUTE, ['POST /domains/{id}/dkim/rotate/activate']],
  [10, HOUR, ['DELETE /domains/{id}/dkim/rotate']],
  [10, MINUTE, ['POST /signup-forms/{id}/submit'], { per: 'ip', samePerPlan: true }],
];

export const RATE_LIMITS: readonly RateRule[] = ROWS.flatMap(([paid, windowMs, endpoints, extra]) =>
  endpoints.map((e) => {
    const [method, path] = e.split(' ') as [RateMethod, string];
    return { method, path, paid, windowMs, per: 'credential' as const, ...extra };
  }),
);

/** `/domains/{name}` and `/domains/:id` both → `/domains/{}`. */
export const pathShape = (template: string) => template.replace(/\{[^}]*\}|:\w+/g, '{}');

const RULE_INDEX = new Map(RATE_LIMITS.map((r) => [`${r.method} ${pathShape(r.path)}`, r]));

/** The rule of a declared route (method + path template), or undefined: no limit, no headers. */
export function rateRuleFor(method: string, template: string): RateRule | undefined {
  const shape = pathShape(template);
  return RULE_INDEX.get(`${method.toUpperCase()} ${shape}`) ?? RULE_INDEX.get(`ANY ${shape}`);
}

/** Plans below `starter` (Free, or a team without a plan) get half of each figure, rounded down. */
export function rateLimitOf(rule: RateRule, plan: Plan | null | undefined): number {
  if (rule.samePerPlan || rule.per === 'ip') return rule.paid;
  return plan && plan !== 'free' ? rule.paid : Math.floor(rule.paid / 2);
}

// ---- 2. Edge limits (per client IP, any credential): token buckets ----

export interface EdgeBucket {
  name: 'send' | 'tracking' | 'other';
  /** Tokens added per second. */
  perSecond: number;
  burst: number;
}

export const EDGE_SEND: EdgeBucket = { name: 'send', perSecond: 10, burst: 20 };
export const EDGE_OTHER: EdgeBucket = { name: 'other', perSecond: 30, burst: 50 };
/**
 * The tracking pixel and links (GET /track/…): a mail provider's image proxy (Gmail's, Yahoo's, Apple's)
 * fetches for many readers from a few addresses, and a campaign's opens arrive in bursts. A hit costs an HMAC
 * and, for a good token, a share of a batched write (services/sending/tracking.ts).
 */
export const EDGE_TRACKING: EdgeBucket = { name: 'tracking', perSecond: 2000, burst: 5000 };
/** Spec: POST /emails/send and POST /emails/batch share the send bucket; every other request the other. */
export const EDGE_SEND_PATHS: readonly string[] = ['/emails/send', '/emails/batch'];
export const EDGE_REFILL_UNIT_MS = SECOND;

export function edgeBucketFor(method: string, path: string): EdgeBucket {
  // As the router matches them: any case, with or without a trailing slash (`POST /Emails/Send/` sends too).
  if ((method === 'GET' || method === 'HEAD') && /^\/track\/(open|click)\//i.test(path)) return EDGE_TRACKING;
  return method === 'POST' && EDGE_SEND_PATHS.includes(path.replace(/\/+$/, '').toLowerCase()) ? EDGE_SEND : EDGE_OTHER;
}

// ---- 3. Sending quotas ----

export interface SendQuota {
  /** Messages included per calendar month (UTC); Infinity: unlimited. */
  monthlyIncluded: number;
  /** Past the allowance: refuse (429 monthly_limit_exceeded) or continue and bill the overage. */
  pastAllowance: 'refuse' | 'bill' | 'none';
}

export const SEND_QUOTAS: Record<Plan, SendQuota> = {
  free: { monthlyIncluded: 3000, pastAllowance: 'refuse' },
  starter: { monthlyIncluded: 10_000, pastAllowance: 'bill' },
  pro: { monthlyIncluded: 50_000, pastAllowance: 'bill' },
  scale: { monthlyIncluded: 100_000, pastAllowance: 'bill' },
  enterprise: { monthlyIncluded: Infinity, pastAllowance: 'none' },
};

/** Overage price: EUR per 1,000 messages past the allowance (prorated to the message, shown to the cent). */
export const OVERAGE_EUR_PER_1000 = 0.25;

/** External-recipient caps (one unit per send with a recipient outside the team's own domains). */
export const EXTERNAL_CAPS = {
  /** Any account in its first hour: past this, sending is held for review. */
  firstHour: { ageMs: HOUR, cap: 10 },
  /** Free always, paid plans while younger than `paidUntilAgeMs`: per fixed window starting at the first counted send. */
  daily: { cap: 50, windowMs: 24 * HOUR, paidUntilAgeMs: 72 * HOUR },
  /** In this first stretch of an account a daily breach holds sending instead of answering 429. */
  holdInsteadUntilAgeMs: 24 * HOUR,
  /**
   * Paid plans after 72 hours: no fixed cap, but a window whose count passes
   * max(floor, factor × the busiest earlier window) is "far above the account's history" and held.
   */
  anomaly: { floor: 1000, factor: 10 },
} as const;

/** `send_limit_exceeded` (the operator's platform-wide pause) affects accounts younger than this. */
export const NEW_ACCOUNT_AGE_MS = 72 * HOUR;

// ---- 4. SMTP (spec: Limits, SMTP); the submission listener applies them through limits/smtp-guards.ts ----

export const SMTP_LIMITS = {
  /** Mailbox-login submission: messages per mailbox per hour; API-key submission has no per-message limit. */
  mailboxSubmissions: { limit: 60, windowMs: HOUR },
  /** Failed logins from one IP, or for one username, within the window block further attempts until it ends. */
  failedLogins: { limit: 10, windowMs: 15 * MINUTE },
} as const;

// ---- 5. Mailboxes (spec: Mailboxes are for Pro and above; the counts are ours, the spec gives none) ----

/** Live mailboxes per team; 0: the plan has no mailboxes (403). */
export const MAILBOX_CAPS: Record<Plan, number> = {
  free: 0,
  starter: 0,
  pro: 100,
  scale: 1000,
  enterprise: Infinity,
};
