// Per-credential request rate limits (spec: Limits, Request rate limits): fixed windows counted per
// credential, method and exact path, the figures from limits/table.ts. Counters live in memory on the
// limiter object built for one HTTP app: a restart of the appliance resets every window (a fresh window
// only ever lets a caller through sooner, never refuses one wrongly).
import type Koa from 'koa';
import { AppError } from '../../core/errors.js';
import { FixedWindowCounter } from '../../limits/fixed-window.js';
import { rateLimitOf, rateRuleFor, type RateRule } from '../../limits/table.js';
import type { Principal } from '../../services/platform/index.js';
import type { Route } from '../route.js';

export { FixedWindowCounter } from '../../limits/fixed-window.js';

export const RATE_LIMIT_MESSAGE = 'Rate limit exceeded. Please try again later.';

/**
 * The exact path of a request as its route spells it, with the request's own ids: the router matches paths
 * case-insensitively and with a trailing slash, so `/API-Keys/` must not open a second window beside `/api-keys`
 * (the ids themselves are kept as given: `em_AbC` and `em_abc` are two emails).
 */
function exactPath(route: Pick<Route, 'path'>, ctx: Koa.Context): string {
  const params = (ctx.params ?? {}) as Record<string, string | undefined>;
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? '');
}

/** The counter key of a request under a rule: who (credential or client IP) + method + exact path. */
export function counterKey(rule: RateRule, route: Pick<Route, 'path'>, ctx: Koa.Context, principal: Principal | null): string {
  const who = rule.per === 'ip' || !principal ? `ip:${ctx.ip}` : `key:${principal.keyId}`;
  return rule.single ? `${who} ANY ${rule.path}` : `${who} ${ctx.method} ${exactPath(route, ctx)}`;
}

/**
 * Counts the request against its route's rule, if any; sets X-RateLimit-* on the response and throws
 * the 429 (with Retry-After) when over. Called after authentication and before the body is read,
 * so a refused request is not processed.
 */
export function applyRateLimit(counter: FixedWindowCounter, ctx: Koa.Context, route: Pick<Route, 'method' | 'path'>, principal: Principal | null): void {
  const rule = rateRuleFor(route.method, route.path);
  if (!rule) return;
  const limit = rateLimitOf(rule, principal?.plan);
  const hit = counter.hit(counterKey(rule, route, ctx, principal), limit, rule.windowMs);
  const headers = {
    'X-RateLimit-Limit': String(hit.limit),
    'X-RateLimit-Remaining': String(hit.remaining),
    'X-RateLimit-Reset': String(Math.ceil(hit.resetAt / 1000)),
  };
  ctx.set(headers);
  if (!hit.allowed) {
    throw new AppError(429, 'rate_limit_exceeded', RATE_LIMIT_MESSAGE, { ...headers, 'Retry-After': String(hit.retryAfter) });
  }
}
