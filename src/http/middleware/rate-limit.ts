// Per-credential request rate limits (spec: Limits, Request rate limits): fixed windows counted per
// credential, method and exact path, the figures from limits/table.ts. Counters live in memory on the
// limiter object built for one HTTP app: a restart of the appliance resets every window (a fresh window
// only ever lets a caller through sooner, never refuses one wrongly).
import type Koa from 'koa';
import type { Clock } from '../../core/clock.js';
import { AppError } from '../../core/errors.js';
import { rateLimitOf, rateRuleFor, type RateRule } from '../../limits/table.js';
import type { Principal } from '../../services/api-keys.js';
import type { Route } from '../route.js';

export const RATE_LIMIT_MESSAGE = 'Rate limit exceeded. Please try again later.';

interface Window {
  endsAt: number;
  count: number;
}

export interface Hit {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the window ends. */
  resetAt: number;
  /** Whole seconds until then (at least 1). */
  retryAfter: number;
}

/** Fixed windows keyed by string; a window starts with its first hit and resets fully at its end. */
export class FixedWindowCounter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly clock: Clock) {}

  /** Counts one request (refused ones too) and says whether it is within `limit`. */
  hit(key: string, limit: number, windowMs: number): Hit {
    const now = this.clock.now().getTime();
    let w = this.windows.get(key);
    if (!w || w.endsAt <= now) {
      if (this.windows.size >= 50_000) this.sweep(now);
      w = { endsAt: now + windowMs, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    const retryAfter = Math.max(1, Math.ceil((w.endsAt - now) / 1000));
    return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetAt: w.endsAt, retryAfter };
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k);
  }
}

/** The counter key of a request under a rule: who (credential or client IP) + method + exact path. */
export function counterKey(rule: RateRule, ctx: Koa.Context, principal: Principal | null): string {
  const who = rule.per === 'ip' || !principal ? `ip:${ctx.ip}` : `key:${principal.keyId}`;
  return rule.single ? `${who} ANY ${rule.path}` : `${who} ${ctx.method} ${ctx.path}`;
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
  const hit = counter.hit(counterKey(rule, ctx, principal), limit, rule.windowMs);
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
