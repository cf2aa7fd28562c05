// One way to declare an HTTP route: method, path, access, the zod schemas it validates with, and a handler.
// The same declarations drive the router, the permission check and the OpenAPI document, so they cannot drift.
import type Koa from 'koa';
import type { z } from 'zod';
import type { AppContext } from '../context.js';
import type { Principal } from '../services/platform/index.js';
import type { ScopeNeed } from './scopes.js';

/** public: no credential; sending_access: any key; full_access: full_access keys only. */
export type Access = 'public' | 'sending_access' | 'full_access';
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface Request<B, Q, A extends Access> {
  app: AppContext;
  principal: A extends 'public' ? null : Principal;
  params: Record<string, string>;
  body: Out<B>;
  query: Out<Q>;
  /** The raw query string values, for paging. */
  rawQuery: Record<string, string | string[] | undefined>;
  koa: Koa.Context;
}

export interface RouteDef<B extends z.ZodType | undefined, Q extends z.ZodType | undefined, A extends Access> {
  method: Method;
  /** OpenAPI style: `/domains/{id}`. */
  path: string;
  summary: string;
  tag: string;
  access: A;
  /** The OAuth scope an access token needs here; when absent, the one table in `scopes.ts` says (by path). */
  scope?: ScopeNeed;
  body?: B;
  query?: Q;
  /** Documents Form A paging parameters (page, per_page, limit). */
  paged?: boolean;
  /**
   * A bare JSON array body is read as `{ [arrayBody]: array }` (Resend's SDKs post `/emails/batch` so);
   * the object form stays the documented one.
   */
  arrayBody?: string;
  /** Success status; 200 unless stated. */
  status?: number;
  /** Documented response body. */
  response?: z.ZodType;
  /** The `WWW-Authenticate` challenge of this route's 401 (default `Bearer realm="api"`); /mcp names its resource metadata. */
  challenge?: (app: AppContext) => string;
  /**
   * Runs first, before authentication and the rate limit (e.g. a public route's CORS headers, so that even its
   * 429 can be read by the page that posted).
   */
  prepare?: (app: AppContext, koa: Koa.Context) => Promise<void>;
  /** The handler reads and validates the body itself (JSON or a form post); `body` only documents it. */
  ownBody?: boolean;
  /** Returns the JSON body, or undefined when the handler wrote `koa.body` itself. */
  handle(req: Request<B, Q, A>): Promise<unknown>;
}

// Erased form kept in the registry.
export interface Route {
  method: Method;
  path: string;
  summary: string;
  tag: string;
  access: Access;
  scope?: ScopeNeed;
  body?: z.ZodType;
  query?: z.ZodType;
  paged?: boolean;
  arrayBody?: string;
  status?: number;
  response?: z.ZodType;
  challenge?: (app: AppContext) => string;
  prepare?: (app: AppContext, koa: Koa.Context) => Promise<void>;
  ownBody?: boolean;
  handle(req: ErasedRequest): Promise<unknown>;
}

interface ErasedRequest extends Omit<Request<undefined, undefined, Access>, 'body' | 'query' | 'principal'> {
  principal: Principal | null;
  body: unknown;
  query: unknown;
}

export function defineRoute<
  B extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  A extends Access = Access,
>(def: RouteDef<B, Q, A>): Route {
  return def as unknown as Route;
}

/** `/domains/{id}` → `/domains/:id` */
export const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');
