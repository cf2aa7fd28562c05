// Bearer authentication and the per-route permission check.
import type Koa from 'koa';
import type { AppContext } from '../../context.js';
import { AppError, forbidden } from '../../core/errors.js';
import { authenticate, type Principal } from '../../services/platform/index.js';
import type { Access } from '../route.js';

export const DEFAULT_CHALLENGE = 'Bearer realm="api"';

const invalidKey = (challenge: string) => new AppError(401, 'unauthorized', 'Invalid API key', { 'WWW-Authenticate': challenge });

/** Resolves the caller of a route, or throws 401 (with `challenge`) or 403. Returns null for public routes. */
export async function authorise(app: AppContext, ctx: Koa.Context, access: Access, challenge = DEFAULT_CHALLENGE): Promise<Principal | null> {
  if (access === 'public') return null;
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw invalidKey(challenge);
  const principal = await authenticate(app, match[1]!);
  if (!principal) throw invalidKey(challenge);
  if (access === 'full_access' && principal.permission !== 'full_access') throw forbidden();
  return principal;
}
