// The OpenAPI 3.1 document, generated from the same route declarations and zod schemas the router
// validates with (OpenAPI 3.1 uses JSON Schema 2020-12, which is what zod emits).
import { z } from 'zod';
import { rateRuleFor } from '../limits/table.js';
import type { Route } from './route.js';
import { scopeList, scopeOf } from './scopes.js';
import { SCOPE_WORDS, SCOPES } from '../services/platform/index.js';
import { ErrorBody } from './schemas/common.js';

type Json = Record<string, unknown>;

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'Invalid request (invalid_request)',
  '401': 'Missing or invalid credential (unauthorized)',
  '403': 'Key lacks permission or plan limit reached (forbidden)',
  '404': 'Not found (not_found)',
  '409': 'Already exists (conflict)',
  '413': 'Body over 36 MB (payload_too_large)',
  '422': 'Well-formed but cannot be processed (unprocessable_entity)',
  '429':
    'Rate limit of the key (rate_limit_exceeded, with X-RateLimit-* and Retry-After) or, on the send routes, a sending quota (monthly_limit_exceeded, daily_limit_exceeded, send_limit_exceeded)',
};

/** Spec, Versioning: "The interface description carries the version `1.0`" (the interface's, not the software's). */
export const API_VERSION = '1.0';

/** `version`: the appliance's own version, given as `x-appliance-version` beside the interface's. */
export function buildOpenApi(routes: Route[], version: string): Json {
  const registry = z.registry<{ id?: string }>();
  const schema = (s: z.ZodType, io: 'input' | 'output'): Json => {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(s, { io, unrepresentable: 'any', target: 'draft-2020-12', metadata: registry }) as Json;
    return rest;
  };
  const errorRef = { $ref: '#/components/schemas/Error' };
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const parameters: Json[] = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (r.paged) {
      parameters.push(
        { name: 'page', in: 'query', schema: { type: 'integer', minimum: 1, default: 1 } },
        { name: 'per_page', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        { name: 'limit', in: 'query', description: 'Form B synonym of per_page', schema: { type: 'integer', minimum: 1, maximum: 100 } },
      );
    }
    if (r.query) {
      const q = schema(r.query, 'input') as { properties?: Record<string, Json>; required?: string[] };
      for (const [name, s] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema: s });
      }
    }
    const responses: Json = {
      [String(r.status ?? 200)]: {
        description: 'Success',
        ...(r.response ? { content: { 'application/json': { schema: schema(r.response, 'output') } } } : {}),
      },
    };
    const errors = r.access === 'public' ? ['400'] : ['400', '401', '403', '404', '409', '413', '422'];
    if (rateRuleFor(r.method, r.path)) errors.push('429');
    for (const code of errors) responses[code] = { description: ERROR_RESPONSES[code], content: { 'application/json': { schema: errorRef } } };
    const op: Json = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method.toLowerCase()}${r.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      security: r.access === 'public' ? [] : scopeOf(r) === null ? [{ bearer: [] }] : [{ bearer: [] }, ...scopeList(scopeOf(r)).map((s) => ({ oauth2: [s] }))],
      'x-permission': r.access,
      ...(r.access === 'public' ? {} : { 'x-oauth-scope': scopeOf(r) }),
      parameters,
      responses,
    };
    if (r.body) {
      op.requestBody = {
        required: true,
        ...(r.arrayBody ? { description: `A bare JSON array is also accepted, read as { "${r.arrayBody}": [...] } (as Resend's SDKs send it)` } : {}),
        content: { 'application/json': { schema: schema(r.body, 'input') } },
      };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Mail appliance API', version: API_VERSION, 'x-appliance-version': version },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'API key (sk_live_… or sk_test_…), or an OAuth access token (pat_…) checked against the operation’s scope' },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth 2.0 authorization code with PKCE (S256), when the operator enables it (MAIL_OAUTH_ENABLED). An operation lists the scopes that open it (any one); x-oauth-scope null: API keys only',
          flows: {
            authorizationCode: {
              authorizationUrl: '/oauth/authorize',
              tokenUrl: '/oauth/token',
              refreshUrl: '/oauth/token',
              scopes: Object.fromEntries(SCOPES.map((s) => [s, SCOPE_WORDS[s]])),
            },
          },
        },
      },
      schemas: { Error: schema(ErrorBody, 'output') },
    },
    paths,
  };
}
