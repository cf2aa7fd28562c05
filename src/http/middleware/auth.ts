// Bearer authentication and the per-route permission check.
import type Koa from 'koa';
import type { AppContext } from '../../context.js';
import { AppError, forbidden } from '../../core/errors.js';
import { authenticate, type Principal } from '../../services/platform/index.js';
import type { Access } from '../route.js';

const invalidKey = () => new AppError(401, 'unauthorized', 'Invalid API key', { 'WWW-Authenticate': 'Bearer realm="api"' });

/** Resolves the caller of a route, or throws 401/403. Returns null for public routes. */
export async function authorise(app: AppContext, ctx: Koa.Context, access: Access): Promise<Principal | null> {
  if (access === 'public') return null;
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw invalidKey();
  const principal = await authenticate(app, match[1]!);
  if (!principal) throw invalidKey();
  if (access === 'full_access' && principal.permission !== 'full_access') throw forbidden();
  return principal;
}
