// Edge limits (spec: Limits, Edge limits): token buckets per client IP, whatever the credential, before
// anything else runs. A refusal is a small HTML 429 with no JSON and no rate-limit headers. Buckets live in
// memory on the middleware built for one HTTP app (a restart refills them), refilled by the context clock.
import type Koa from 'koa';
import type { Clock } from '../../core/clock.js';
import { payloadTooLarge } from '../../core/errors.js';
import { EDGE_REFILL_UNIT_MS, edgeBucketFor } from '../../limits/table.js';
import { MAX_BODY_BYTES } from './body.js';

export const EDGE_REFUSAL_HTML =
  '<!DOCTYPE html>\n<html><head><title>429 Too Many Requests</title></head><body><h1>429 Too Many Requests</h1><p>Slow down and try again shortly.</p></body></html>\n';

interface Bucket {
  tokens: number;
  at: number;
  perSecond: number;
  burst: number;
}

export function edgeLimit(clock: Clock): Koa.Middleware {
  const buckets = new Map<string, Bucket>();
  return async (ctx, next) => {
    const spec = edgeBucketFor(ctx.method, ctx.path);
    const now = clock.now().getTime();
    const key = `${ctx.ip} ${spec.name}`;
    const b = buckets.get(key) ?? { tokens: spec.burst, at: now, perSecond: spec.perSecond, burst: spec.burst };
    b.tokens = Math.min(spec.burst, b.tokens + (Math.max(0, now - b.at) / EDGE_REFILL_UNIT_MS) * spec.perSecond);
    b.at = now;
    if (b.tokens < 1) {
      buckets.set(key, b);
      ctx.status = 429;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = EDGE_REFUSAL_HTML;
      return;
    }
    b.tokens -= 1;
    if (buckets.size >= 50_000) {
      // A full bucket holds no information: drop those so idle clients cost nothing.
      for (const [k, v] of buckets) if (v.tokens + ((now - v.at) / EDGE_REFILL_UNIT_MS) * v.perSecond >= v.burst) buckets.delete(k);
    }
    buckets.set(key, b);
    await next();
  };
}

/**
 * A declared body over 36 MB is refused at the edge (413), before authentication or any byte of it is
 * read; the body reader still cuts off a chunked body as soon as it grows past the cap. Always on.
 */
export function edgeBodyCap(limit = MAX_BODY_BYTES): Koa.Middleware {
  return async (ctx, next) => {
    if (Number(ctx.get('content-length') || NaN) > limit) {
      ctx.set('Connection', 'close');
      throw payloadTooLarge(`Request body exceeds the ${limit / 1024 / 1024} MB limit`);
    }
    await next();
  };
}
