// The Koa application, built by a factory so tests and the appliance share it.
// Middleware order: access log → edge limits (HTML 429) → error handler → body cap (413) → router → 405/404.
// Per route: authenticate → rate limit → read and validate the body and query → handler.
import Koa from 'koa';
import Router from '@koa/router';
import type { AppContext } from '../context.js';
import { AppError, notFound } from '../core/errors.js';
import { parseBody, parseQuery } from '../core/validation.js';
import { accessLog } from './middleware/access-log.js';
import { authorise } from './middleware/auth.js';
import { readJsonBody } from './middleware/body.js';
import { errorHandler } from './middleware/errors.js';
import { edgeBodyCap, edgeLimit } from './middleware/edge-limit.js';
import { applyRateLimit, FixedWindowCounter } from './middleware/rate-limit.js';
import { koaPath, type Route } from './route.js';
import { scopeOf } from './scopes.js';
import { allRoutes } from './routes/index.js';

/** A route that takes a bare JSON array (`arrayBody`) reads it as the object form's list; anything else as it came. */
const bodyInput = (route: Route, raw: unknown): unknown => (route.arrayBody && Array.isArray(raw) ? { [route.arrayBody]: raw } : raw);

function mount(router: Router, app: AppContext, route: Route, rates: FixedWindowCounter | null): void {
  const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options';
  router[method](koaPath(route.path), async (ctx) => {
    if (route.prepare) await route.prepare(app, ctx);
    const principal = await authorise(app, ctx, route.access, route.challenge?.(app), scopeOf(route));
    if (rates) applyRateLimit(rates, ctx, route, principal);
    const rawQuery = ctx.query as Record<string, string | string[] | undefined>;
    const body = route.body && !route.ownBody ? parseBody(route.body, bodyInput(route, await readJsonBody(ctx))) : undefined;
    const query = route.query ? parseQuery(route.query, rawQuery) : undefined;
    const result = await route.handle({ app, principal, params: ctx.params as Record<string, string>, body, query, rawQuery, koa: ctx });
    if (result !== undefined) {
      ctx.status = route.status ?? 200;
      ctx.body = result;
    }
  });
}

/** Which request limits run; both follow `config.rateLimits` unless a caller (a test) says otherwise. */
export interface HttpLimitOptions {
  edge?: boolean;
  perCredential?: boolean;
}

const methodNotAllowed = (method: string, path: string, allowed: string[]) =>
  new AppError(405, 'method_not_allowed', `Method ${method} not allowed on ${path}`, { Allow: allowed.join(', ') });

export function createHttpApp(app: AppContext, routes: Route[] = allRoutes, limits: HttpLimitOptions = {}): Koa {
  const koa = new Koa({ proxy: false });
  koa.silent = true; // errors are logged by errorHandler, once
  const router = new Router();
  // Rate-limit windows and edge buckets live on objects made for this app: a restart resets them.
  const rates = (limits.perCredential ?? app.config.rateLimits) ? new FixedWindowCounter(app.clock) : null;
  for (const route of routes) mount(router, app, route, rates);

  koa.use(accessLog(app.log));
  if (limits.edge ?? app.config.rateLimits) koa.use(edgeLimit(app.clock));
  koa.use(errorHandler(app.log));
  koa.use(edgeBodyCap());
  // A path that is a route of its own (POST /emails/batch) is not an id of a parameterised one (GET
  // /emails/{id}): another method on it is a 405, not "Email not found".
  const staticMethods = new Map<string, string[]>();
  for (const r of routes) if (!r.path.includes('{')) staticMethods.set(r.path, [...(staticMethods.get(r.path) ?? []), r.method]);
  koa.use(async (ctx, next) => {
    const methods = staticMethods.get(ctx.path);
    if (methods && !methods.includes(ctx.method) && !(ctx.method === 'HEAD' && methods.includes('GET'))) throw methodNotAllowed(ctx.method, ctx.path, methods);
    await next();
  });
  koa.use(router.routes());
  koa.use(async (ctx) => {
    const match = router.match(ctx.path, ctx.method);
    if (match.path.length > 0) {
      throw methodNotAllowed(ctx.method, ctx.path, [...new Set(match.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD'));
    }
    throw notFound(`Route not found: ${ctx.method} ${ctx.path}`);
  });
  return koa;
}
