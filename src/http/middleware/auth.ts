// Bearer authentication, the per-route permission check and, for OAuth access tokens, the scope check.
import type Koa from 'koa';
import type { AppContext } from '../../context.js';
import { AppError, forbidden } from '../../core/errors.js';
import { authenticate, type Principal } from '../../services/platform/index.js';
import type { Access } from '../route.js';
import { scopeList, type ScopeNeed } from '../scopes.js';

export const DEFAULT_CHALLENGE = 'Bearer realm="api"';

/** The box's base URL as clients reach it: MAIL_PUBLIC_URL, else the request's own origin. No trailing slash. */
export const baseUrlOf = (app: AppContext, ctx: Koa.Context): string => app.config.publicUrl ?? `${ctx.protocol}://${ctx.host}`;

/**
 * RFC 9728 5.1: with OAuth on, a 401 names the protected-resource metadata, so a client can find the
 * authorization server by itself. A route's own challenge (/mcp) wins.
 */
function challengeOf(app: AppContext, ctx: Koa.Context, own: string | undefined): string {
  if (own !== undefined) return own;
  if (!app.config.oauthEnabled) return DEFAULT_CHALLENGE;
  return `${DEFAULT_CHALLENGE}, resource_metadata="${baseUrlOf(app, ctx)}/.well-known/oauth-protected-resource"`;
}

const invalidKey = (challenge: string) => new AppError(401, 'unauthorized', 'Invalid API key', { 'WWW-Authenticate': challenge });

/** 403 naming the scope (RFC 6750 3.1 insufficient_scope in the header). */
function insufficientScope(need: ScopeNeed): AppError {
  if (need === null) return forbidden('Insufficient scope: no OAuth scope grants this endpoint; use an API key');
  const names = scopeList(need);
  const words = names.length === 1 ? `the ${names[0]} scope` : `one of the scopes ${names.join(', ')}`;
  return new AppError(403, 'forbidden', `Insufficient scope: this endpoint needs ${words}`, {
    'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${names.join(' ')}"`,
  });
}

/**
 * Resolves the caller of a route, or throws 401 (with `challenge`, else the default one) or 403. Returns null for
 * public routes. `scope`: what an OAuth access token needs here (scopes.ts); undefined leaves the scope to the
 * caller. An OAuth token is held to its scope instead of a key's permission.
 */
export async function authorise(app: AppContext, ctx: Koa.Context, access: Access, challenge?: string, scope?: ScopeNeed): Promise<Principal | null> {
  if (access === 'public') return null;
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw invalidKey(challengeOf(app, ctx, challenge));
  const principal = await authenticate(app, match[1]!);
  if (!principal) throw invalidKey(challengeOf(app, ctx, challenge));
  if (principal.scopes && scope !== undefined) {
    const held = principal.scopes;
    if (!scopeList(scope).some((s) => held.includes(s))) throw insufficientScope(scope);
    return principal;
  }
  if (access === 'full_access' && principal.permission !== 'full_access') throw forbidden();
  return principal;
}
