// Bearer authentication, the per-route permission check and, for OAuth access tokens, the scope check.
import type Koa from 'koa';
import type { AppContext } from '../../context.js';
import { AppError, forbidden } from '../../core/errors.js';
import { authenticate, type Principal } from '../../services/platform/index.js';
import type { Access } from '../route.js';
import { scopeList, type ScopeNeed } from '../scopes.js';

/** The box's base URL as clients reach it: MAIL_PUBLIC_URL, else the request's own origin. No trailing slash. */
export const baseUrlOf = (app: AppContext, ctx: Koa.Context): string => app.config.publicUrl ?? `${ctx.protocol}://${ctx.host}`;

/**
 * RFC 9728 5.1: with OAuth on, a 401 names the protected-resource metadata, so an MCP client can find the
 * authorization server by itself (`/mcp` has its own document).
 */
function challenge(app: AppContext, ctx: Koa.Context): string {
  if (!app.config.oauthEnabled) return 'Bearer realm="api"';
  const suffix = ctx.path === '/mcp' || ctx.path.startsWith('/mcp/') ? '/mcp' : '';
  return `Bearer realm="api", resource_metadata="${baseUrlOf(app, ctx)}/.well-known/oauth-protected-resource${suffix}"`;
}

const invalidKey = (app: AppContext, ctx: Koa.Context) => new AppError(401, 'unauthorized', 'Invalid API key', { 'WWW-Authenticate': challenge(app, ctx) });

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
 * Resolves the caller of a route, or throws 401/403. Returns null for public routes. `scope`: what an OAuth
 * access token needs here (scopes.ts); undefined leaves the scope to the caller (the MCP tools check their own).
 */
export async function authorise(app: AppContext, ctx: Koa.Context, access: Access, scope?: ScopeNeed): Promise<Principal | null> {
  if (access === 'public') return null;
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw invalidKey(app, ctx);
  const principal = await authenticate(app, match[1]!);
  if (!principal) throw invalidKey(app, ctx);
  if (principal.scopes && scope !== undefined) {
    const held = principal.scopes;
    if (!scopeList(scope).some((s) => held.includes(s))) throw insufficientScope(scope);
    return principal;
  }
  if (access === 'full_access' && principal.permission !== 'full_access') throw forbidden();
  return principal;
}
