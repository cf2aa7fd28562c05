// The OAuth 2.0 authorization server's endpoints (issue 33; spec: Authentication 5) and the discovery documents
// (RFC 8414 for the server, RFC 9728 for the API and /mcp as protected resources). Behind MAIL_OAUTH_ENABLED:
// off, every one answers 404 exactly as an unknown path does. The token, revocation and registration endpoints
// answer errors in the RFCs' shape (`{ error, error_description }`, RFC 6749 5.2 / RFC 7591 3.2.2), which OAuth
// client libraries read, rather than the API's `{ error, code }`.
import type Koa from 'koa';
import { defineRoute, type Route } from '../../route.js';
import type { AppContext } from '../../../context.js';
import { notFound } from '../../../core/errors.js';
import { readJsonBody } from '../../middleware/body.js';
import { baseUrlOf } from '../../middleware/auth.js';
import {
  approveAuthorization, checkAuthorizationRequest, checkLogin, type ClientCredentials, exchangeCode, OAuthError, refreshTokens,
  registerClient, revokeToken, SCOPES
} from '../../../services/platform/index.js';
import { consentPage, errorPage, type HiddenParams } from './oauth-page.js';

const tag = 'OAuth 2.0 (public)';
const FORM_MAX_BYTES = 16 * 1024;
/** The authorization request's parameters the consent form carries back. */
const REQUEST_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'resource'];

function enabled(app: AppContext, koa: Koa.Context): void {
  if (!app.config.oauthEnabled) throw notFound(`Route not found: ${koa.method} ${koa.path}`);
}

async function readForm(koa: Koa.Context): Promise<URLSearchParams> {
  if (Number(koa.get('content-length') || 0) > FORM_MAX_BYTES) throw new OAuthError(400, 'invalid_request', 'Request body too large');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of koa.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FORM_MAX_BYTES) throw new OAuthError(400, 'invalid_request', 'Request body too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** RFC 6749 3.2: a parameter sent twice is an error; empty counts as absent. */
function single(form: URLSearchParams, name: string): string | null {
  const all = form.getAll(name);
  if (all.length > 1) throw new OAuthError(400, 'invalid_request', `${name} must not be repeated`);
  return all[0] ? all[0] : null;
}

function noStore(koa: Koa.Context): void {
  koa.set('Cache-Control', 'no-store');
  koa.set('Pragma', 'no-cache');
}

/** Runs a JSON endpoint: an OAuthError becomes the RFC's error body (401 invalid_client with its challenge). */
async function oauthJson(koa: Koa.Context, run: () => Promise<{ status?: number; body: unknown }>): Promise<undefined> {
  noStore(koa);
  try {
    const { status, body } = await run();
    koa.status = status ?? 200;
    koa.body = body;
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err;
    koa.status = err.status;
    if (err.status === 401) koa.set('WWW-Authenticate', 'Basic realm="oauth"');
    koa.body = { error: err.error, error_description: err.description };
  }
  return undefined;
}

/** RFC 6749 2.3.1: HTTP Basic (each part form-urlencoded) or client_id / client_secret in the body, not both. */
function clientCredentials(koa: Koa.Context, form: URLSearchParams): ClientCredentials {
  const header = koa.get('authorization');
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  const bodySecret = single(form, 'client_secret');
  if (basic) {
    if (bodySecret) throw new OAuthError(400, 'invalid_request', 'Use one client authentication method');
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new OAuthError(401, 'invalid_client', 'Malformed Basic credentials');
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    const clientId = dec(decoded.slice(0, colon));
    const bodyId = single(form, 'client_id');
    if (bodyId && bodyId !== clientId) throw new OAuthError(400, 'invalid_request', 'client_id does not match the credentials');
    return { clientId, secret: dec(decoded.slice(colon + 1)) || null };
  }
  return { clientId: single(form, 'client_id'), secret: bodySecret };
}

/**
 * `redirectOrigin`: where the consent form's answer redirects to. Browsers hold a form's redirects to CSP
 * form-action too, so the app's origin is allowed beside 'self' (and nothing else).
 */
function html(koa: Koa.Context, status: number, body: string, redirectOrigin?: string): undefined {
  koa.status = status;
  koa.type = 'text/html; charset=utf-8';
  noStore(koa);
  koa.set('Referrer-Policy', 'no-referrer');
  koa.set('X-Robots-Tag', 'noindex');
  koa.set('X-Frame-Options', 'DENY');
  // No framing (clickjacking of the approve button); the form may post only back here.
  const formAction = redirectOrigin ? `'self' ${redirectOrigin}` : "'self'";
  koa.set('Content-Security-Policy', `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'`);
  koa.body = body;
  return undefined;
}

/** 303 back to the client's redirect URI with the answer's parameters and the issuer (RFC 9207). */
function redirectBack(app: AppContext, koa: Koa.Context, redirectUri: string, params: Record<string, string | null>): undefined {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  url.searchParams.set('iss', baseUrlOf(app, koa));
  noStore(koa);
  koa.status = 303;
  koa.redirect(url.toString());
  return undefined;
}

/** The authorization request, checked: a fatal problem is a page; an error the client can hear goes back to it. */
async function authorizationRequest(app: AppContext, koa: Koa.Context, get: (name: string) => string | null) {
  const check = await checkAuthorizationRequest(app, get);
  if (check.kind === 'fatal') return html(koa, 400, errorPage(check.description));
  if (check.kind === 'redirect') return redirectBack(app, koa, check.redirectUri, { error: check.error, error_description: check.description, state: check.state });
  return check.request;
}

function hiddenOf(get: (name: string) => string | null): HiddenParams {
  const out: HiddenParams = {};
  for (const name of REQUEST_PARAMS) {
    const v = get(name);
    if (v !== null) out[name] = v;
  }
  return out;
}

/** RFC 8414 2: what clients discover. */
function serverMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/revoke`,
    registration_endpoint: `${base}/oauth/register`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${base}/openapi.json`,
  };
}

/** RFC 9728 2: the resource, its authorization server, the scopes it understands. */
function resourceMetadata(base: string, resource: string, scopes: readonly string[]) {
  return { resource, authorization_servers: [base], scopes_supported: [...scopes], bearer_methods_supported: ['header'], resource_documentation: `${base}/openapi.json` };
}

const MCP_SCOPES = ['mcp:read', 'mcp:send', 'mcp:admin'];

export const oauthRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    summary: 'OAuth 2.0 authorization server metadata (RFC 8414; no credential; 404 unless MAIL_OAUTH_ENABLED)',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      return serverMetadata(baseUrlOf(app, koa));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/.well-known/oauth-protected-resource',
    summary: 'Protected resource metadata of the API (RFC 9728; no credential; 404 unless MAIL_OAUTH_ENABLED)',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      const base = baseUrlOf(app, koa);
      return resourceMetadata(base, base, SCOPES);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/.well-known/oauth-protected-resource/mcp',
    summary: 'Protected resource metadata of the MCP endpoint /mcp (RFC 9728; no credential; 404 unless MAIL_OAUTH_ENABLED)',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      const base = baseUrlOf(app, koa);
      return resourceMetadata(base, `${base}/mcp`, MCP_SCOPES);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/oauth/authorize',
    summary:
      'Authorization endpoint (RFC 6749 4.1, PKCE S256 required): the consent page (HTML) with the app’s name, the scopes in plain words, the login of the person approving, approve and deny',
    tag,
    access: 'public',
    async handle({ app, koa, rawQuery }) {
      enabled(app, koa);
      const get = (name: string): string | null => {
        const v = rawQuery[name];
        if (Array.isArray(v)) throw new OAuthError(400, 'invalid_request', `${name} must not be repeated`);
        return v ? v : null;
      };
      try {
        const request = await authorizationRequest(app, koa, get);
        if (!request) return undefined;
        return html(koa, 200, consentPage(request, hiddenOf(get), null, ''), new URL(request.redirectUri).origin);
      } catch (err) {
        if (err instanceof OAuthError) return html(koa, 400, errorPage(err.description));
        throw err;
      }
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/oauth/authorize',
    summary:
      'The consent form (application/x-www-form-urlencoded: the request’s parameters, `email`, `password`, `decision` approve|deny). Answers 303 to the redirect URI with `code` (or `error=access_denied`), `state` and `iss`; a wrong login shows the page again (401)',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      try {
        const form = await readForm(koa);
        const get = (name: string) => single(form, name);
        const request = await authorizationRequest(app, koa, get);
        if (!request) return undefined;
        const decision = get('decision');
        if (decision === 'deny') {
          return redirectBack(app, koa, request.redirectUri, { error: 'access_denied', error_description: 'The person denied the request', state: request.state });
        }
        if (decision !== 'approve') return html(koa, 400, errorPage('The form was not sent by its Approve or Deny button.'));
        const email = get('email') ?? '';
        const user = await checkLogin(app, email, get('password') ?? '');
        if (!user) return html(koa, 401, consentPage(request, hiddenOf(get), 'Wrong login or password.', email), new URL(request.redirectUri).origin);
        const code = await approveAuthorization(app, request, user);
        return redirectBack(app, koa, request.redirectUri, { code, state: request.state });
      } catch (err) {
        if (err instanceof OAuthError) return html(koa, 400, errorPage(err.description));
        throw err;
      }
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/oauth/token',
    summary:
      'Token endpoint (application/x-www-form-urlencoded): grant_type=authorization_code (code, redirect_uri, code_verifier) or refresh_token (refresh_token, scope to narrow); client_id for public clients, HTTP Basic or client_secret for confidential ones',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      return oauthJson(koa, async () => {
        const form = await readForm(koa);
        const creds = clientCredentials(koa, form);
        const grantType = single(form, 'grant_type');
        if (grantType === 'authorization_code') {
          return { body: await exchangeCode(app, creds, { code: single(form, 'code'), redirectUri: single(form, 'redirect_uri'), codeVerifier: single(form, 'code_verifier') }) };
        }
        if (grantType === 'refresh_token') {
          return { body: await refreshTokens(app, creds, { refreshToken: single(form, 'refresh_token'), scope: single(form, 'scope') }) };
        }
        if (!grantType) throw new OAuthError(400, 'invalid_request', 'grant_type is required');
        throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/oauth/revoke',
    summary:
      'Token revocation (RFC 7009; application/x-www-form-urlencoded `token`, optional `token_type_hint`, the client’s authentication): 200 with an empty body, also for an unknown token; a refresh token revokes its whole grant',
    tag,
    access: 'public',
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      return oauthJson(koa, async () => {
        const form = await readForm(koa);
        await revokeToken(app, clientCredentials(koa, form), single(form, 'token'));
        return { body: '' };
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/oauth/register',
    summary:
      'Dynamic client registration (RFC 7591; JSON): public clients only (token_endpoint_auth_method none, PKCE), redirect_uris on https or http://localhost; answers 201 with client_id',
    tag,
    access: 'public',
    status: 201,
    async handle({ app, koa }) {
      enabled(app, koa);
      koa.set('Access-Control-Allow-Origin', '*');
      return oauthJson(koa, async () => {
        const meta = await readJsonBody(koa, FORM_MAX_BYTES).catch(() => {
          throw new OAuthError(400, 'invalid_client_metadata', 'The body must be a JSON object of client metadata');
        });
        if (!meta || typeof meta !== 'object' || Array.isArray(meta)) throw new OAuthError(400, 'invalid_client_metadata', 'The body must be a JSON object of client metadata');
        const m = meta as Record<string, unknown>;
        const uris = m.redirect_uris;
        if (!Array.isArray(uris) || uris.length === 0 || !uris.every((u) => typeof u === 'string')) {
          throw new OAuthError(400, 'invalid_redirect_uri', 'redirect_uris must be a non-empty array of URLs');
        }
        const method = m.token_endpoint_auth_method ?? 'none';
        if (method !== 'none') throw new OAuthError(400, 'invalid_client_metadata', 'Only public clients may register themselves: token_endpoint_auth_method must be none');
        const grants = m.grant_types ?? ['authorization_code'];
        if (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
          throw new OAuthError(400, 'invalid_client_metadata', 'grant_types may hold authorization_code and refresh_token only');
        }
        const responses = m.response_types ?? ['code'];
        if (!Array.isArray(responses) || responses.some((r) => r !== 'code')) throw new OAuthError(400, 'invalid_client_metadata', 'response_types may hold code only');
        if (m.scope !== undefined && typeof m.scope !== 'string') throw new OAuthError(400, 'invalid_client_metadata', 'scope must be a string');
        const name = typeof m.client_name === 'string' && m.client_name.trim() ? m.client_name : 'Unnamed app';
        const { client } = await registerClient(app, { name, redirectUris: uris as string[], scope: m.scope as string | undefined, registeredBy: 'dynamic' });
        return {
          status: 201,
          body: {
            client_id: client.client_id,
            client_id_issued_at: Math.floor(Date.parse(client.created_at) / 1000),
            client_name: client.client_name,
            redirect_uris: client.redirect_uris,
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none',
            scope: client.scope,
          },
        };
      });
    },
  }),
];
