// The OAuth 2.0 authorization server (issue 33; spec: Authentication 2, 5, 6): clients, the people who approve,
// authorization codes with PKCE (S256 only), access tokens (`pat_`, 1 hour) and rotating refresh tokens (`prt_`,
// single use; a spent one presented again revokes its whole grant), revocation (RFC 7009). Hand-written on the
// appliance's SQLite; every secret is stored as its SHA-256 (core/secrets) and compared by hash lookup.
// Protocol errors are `OAuthError`s: the adapter renders them as RFC 6749 5.2 `{ error, error_description }`.
import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import { queryRows, readsOf } from '../../db/index.js';
import { conflict, notFound } from '../../core/errors.js';
import { newId, randomBase62 } from '../../core/ids.js';
import { hashSecret, safeEqual } from '../../core/secrets.js';
import { DAY, HOUR, MINUTE } from '../../core/clock.js';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../../mailstore/password.js';
import type { Principal } from './api-keys.js';
import { parseScope, SCOPES, type Scope } from './oauth-scopes.js';

export const ACCESS_TOKEN_TTL_MS = HOUR;
export const REFRESH_TOKEN_TTL_MS = 30 * DAY;
/** RFC 6749 4.1.2: "A maximum authorization code lifetime of 10 minutes is RECOMMENDED". */
export const CODE_TTL_MS = 10 * MINUTE;
export const ACCESS_TOKEN_PATTERN = /^pat_[A-Za-z0-9]{40}$/;

/** An RFC 6749 5.2 / RFC 7591 3.2.2 error: `error` is the registered code. */
export class OAuthError extends Error {
  override name = 'OAuthError';
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(description);
  }
}
const invalidRequest = (d: string) => new OAuthError(400, 'invalid_request', d);
const invalidGrant = (d: string) => new OAuthError(400, 'invalid_grant', d);
const invalidClient = (d = 'Client authentication failed') => new OAuthError(401, 'invalid_client', d);

export interface OAuthClient {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  scope: string;
  /** `none`: a public client (PKCE only); `client_secret_basic`: one registered with a secret by the operator. */
  token_endpoint_auth_method: 'none' | 'client_secret_basic';
  registered_by: 'operator' | 'dynamic';
  created_at: string;
}

interface ClientRow {
  id: string;
  name: string;
  redirect_uris: string;
  scope: string;
  secret_hash: string | null;
  registered_by: 'operator' | 'dynamic';
  created_at: string;
}

const clientView = (r: ClientRow): OAuthClient => ({
  client_id: r.id,
  client_name: r.name,
  redirect_uris: JSON.parse(r.redirect_uris) as string[],
  scope: r.scope,
  token_endpoint_auth_method: r.secret_hash ? 'client_secret_basic' : 'none',
  registered_by: r.registered_by,
  created_at: r.created_at,
});

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A redirect URI a client may register: absolute https, or http on a loopback host (RFC 8252 7.3); no fragment. */
export function redirectUriProblem(uri: string): string | null {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `redirect URI is not an absolute URL: ${uri}`;
  }
  if (u.hash || uri.includes('#')) return `redirect URI must not have a fragment: ${uri}`;
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname)) return null;
  return `redirect URI must use https, or http on localhost: ${uri}`;
}

export interface RegisterClientInput {
  name: string;
  redirectUris: string[];
  /** Scopes the client may ask for; all when omitted. */
  scope?: string;
  /** Operator-registered clients may hold a secret (confidential); dynamic ones never. */
  confidential?: boolean;
  registeredBy: 'operator' | 'dynamic';
}

/** Registers a client; the secret (confidential clients only) is returned once and stored hashed. */
export async function registerClient(ctx: AppContext, input: RegisterClientInput): Promise<{ client: OAuthClient; clientSecret: string | null }> {
  if (input.redirectUris.length === 0) throw new OAuthError(400, 'invalid_redirect_uri', 'At least one redirect URI is required');
  for (const uri of input.redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError(400, 'invalid_redirect_uri', problem);
  }
  const scopes = input.scope === undefined ? [...SCOPES] : parseScope(input.scope);
  if (!scopes || scopes.length === 0) throw new OAuthError(400, 'invalid_client_metadata', `scope must be space-separated names among: ${SCOPES.join(' ')}`);
  const name = input.name.trim().slice(0, 200);
  if (!name) throw new OAuthError(400, 'invalid_client_metadata', 'client_name is required');
  const secret = input.confidential ? `ocs_${randomBase62(40)}` : null;
  const row: ClientRow = {
    id: `oc_${randomBase62(24)}`,
    name,
    redirect_uris: JSON.stringify(input.redirectUris),
    scope: scopes.join(' '),
    secret_hash: secret ? hashSecret(secret) : null,
    registered_by: input.registeredBy,
    created_at: ctx.clock.now().toISOString(),
  };
  await ctx.db('oauth_clients').insert(row);
  return { client: clientView(row), clientSecret: secret };
}

export async function listClients(ctx: AppContext): Promise<OAuthClient[]> {
  return (await ctx.db<ClientRow>('oauth_clients').orderBy('created_at')).map(clientView);
}

/** Deletes a client with every grant and token it holds. */
export async function deleteClient(ctx: AppContext, clientId: string): Promise<void> {
  const n = await ctx.db('oauth_clients').where({ id: clientId }).delete();
  if (n === 0) throw notFound('OAuth client not found');
}

export async function findClient(ctx: AppContext, clientId: string): Promise<OAuthClient | null> {
  const row = await ctx.db<ClientRow>('oauth_clients').where({ id: clientId }).first();
  return row ? clientView(row) : null;
}

// ——— the people who approve: one operator-issued login per team member ———

export interface OAuthUser {
  id: string;
  team_id: string;
  email: string;
  created_at: string;
}

/** Issues a login for a team member; the password is generated, shown once and stored as scrypt. */
export async function createOAuthUser(ctx: AppContext, teamId: string, email: string): Promise<{ user: OAuthUser; password: string }> {
  const address = email.trim().toLowerCase();
  const existing = await ctx.db('oauth_users').where({ email: address }).first();
  if (existing) throw conflict(`A login for ${address} already exists`);
  const password = randomBase62(24);
  const user: OAuthUser = { id: newId(), team_id: teamId, email: address, created_at: ctx.clock.now().toISOString() };
  await ctx.db('oauth_users').insert({ ...user, password_hash: await hashPassword(password) });
  return { user, password };
}

/** A new password for a login; every grant it approved stays (revoke them by deleting the client or the login). */
export async function resetOAuthUserPassword(ctx: AppContext, email: string): Promise<{ user: OAuthUser; password: string }> {
  const address = email.trim().toLowerCase();
  const row = await ctx.db<OAuthUser>('oauth_users').where({ email: address }).first();
  if (!row) throw notFound('Login not found');
  const password = randomBase62(24);
  await ctx.db('oauth_users').where({ id: row.id }).update({ password_hash: await hashPassword(password) });
  return { user: { id: row.id, team_id: row.team_id, email: row.email, created_at: row.created_at }, password };
}

export async function listOAuthUsers(ctx: AppContext, teamId: string): Promise<OAuthUser[]> {
  return ctx.db<OAuthUser>('oauth_users').select('id', 'team_id', 'email', 'created_at').where({ team_id: teamId }).orderBy('created_at');
}

/** Deletes a login and, with it, every grant (and token) it approved. */
export async function deleteOAuthUser(ctx: AppContext, email: string): Promise<void> {
  const n = await ctx.db('oauth_users').where({ email: email.trim().toLowerCase() }).delete();
  if (n === 0) throw notFound('Login not found');
}

/** The login's user when the password matches; the same time is spent for an unknown address. */
export async function checkLogin(ctx: AppContext, email: string, password: string): Promise<OAuthUser | null> {
  const row = await ctx.db<OAuthUser & { password_hash: string }>('oauth_users').where({ email: email.trim().toLowerCase() }).first();
  if (!row) {
    await burnPasswordCheck(password);
    return null;
  }
  if (!(await verifyPassword(password, row.password_hash))) return null;
  return { id: row.id, team_id: row.team_id, email: row.email, created_at: row.created_at };
}

// ——— the authorization request (RFC 6749 4.1.1, RFC 7636 4.3) ———

export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  /** Whether the request named redirect_uri (then the token request must repeat it, RFC 6749 4.1.3). */
  redirectUriGiven: boolean;
  scopes: Scope[];
  state: string | null;
  codeChallenge: string;
}

export type AuthorizationCheck =
  /** Nothing can be sent back to the client (unknown client, bad redirect URI): the page shows the error. */
  | { kind: 'fatal'; description: string }
  /** An error for the client, sent to its redirect URI (4.1.2.1). */
  | { kind: 'redirect'; redirectUri: string; error: string; description: string; state: string | null }
  | { kind: 'ok'; request: AuthorizationRequest };

const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Checks an authorization request's parameters, in RFC 6749 4.1.2.1's order: client and redirect URI first. */
export async function checkAuthorizationRequest(ctx: AppContext, p: (name: string) => string | null): Promise<AuthorizationCheck> {
  const clientId = p('client_id');
  if (!clientId) return { kind: 'fatal', description: 'The request names no client (client_id is missing).' };
  const client = await findClient(ctx, clientId);
  if (!client) return { kind: 'fatal', description: 'The app asking for access is not registered here (unknown client_id).' };
  const given = p('redirect_uri');
  let redirectUri: string;
  if (given !== null) {
    if (!client.redirect_uris.includes(given)) return { kind: 'fatal', description: 'The redirect URI is not one the app registered.' };
    redirectUri = given;
  } else if (client.redirect_uris.length === 1) {
    redirectUri = client.redirect_uris[0]!;
  } else {
    return { kind: 'fatal', description: 'The request must name its redirect URI (the app registered several).' };
  }
  const state = p('state');
  const fail = (error: string, description: string): AuthorizationCheck => ({ kind: 'redirect', redirectUri, error, description, state });
  if (p('response_type') !== 'code') return fail('unsupported_response_type', 'Only response_type=code is supported');
  const challenge = p('code_challenge');
  const method = p('code_challenge_method');
  if (!challenge) return fail('invalid_request', 'PKCE is required: code_challenge is missing');
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256 (plain is not supported)');
  if (!S256_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge must be 43 base64url characters');
  const scopeText = p('scope');
  const scopes = scopeText === null ? parseScope(client.scope) : parseScope(scopeText);
  const allowed = client.scope.split(' ');
  if (!scopes || scopes.length === 0 || scopes.some((s) => !allowed.includes(s))) {
    return fail('invalid_scope', `scope must be space-separated names among: ${allowed.join(' ')}`);
  }
  return { kind: 'ok', request: { client, redirectUri, redirectUriGiven: given !== null, scopes, state, codeChallenge: challenge } };
}

/** The person approved: a grant for their team and a single-use code (10 minutes) bound to the request. */
export async function approveAuthorization(ctx: AppContext, request: AuthorizationRequest, user: OAuthUser): Promise<string> {
  const code = `oac_${randomBase62(40)}`;
  const now = ctx.clock.now();
  await ctx.db.transaction(async (trx) => {
    const grantId = `oag_${randomBase62(24)}`;
    await trx('oauth_grants').insert({
      id: grantId,
      client_id: request.client.client_id,
      user_id: user.id,
      team_id: user.team_id,
      scope: request.scopes.join(' '),
      created_at: now.toISOString(),
      revoked_at: null,
    });
    await trx('oauth_codes').insert({
      code_hash: hashSecret(code),
      grant_id: grantId,
      redirect_uri: request.redirectUri,
      redirect_uri_given: request.redirectUriGiven ? 1 : 0,
      code_challenge: request.codeChallenge,
      expires_at: new Date(now.getTime() + CODE_TTL_MS).toISOString(),
      used_at: null,
    });
  });
  return code;
}

// ——— the token endpoint ———

export interface ClientCredentials {
  clientId: string | null;
  secret: string | null;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** RFC 6749 2.3 / 3.2.1: a public client names itself; a confidential one proves its secret. */
async function authenticateClient(ctx: AppContext, creds: ClientCredentials): Promise<ClientRow> {
  if (!creds.clientId) throw invalidClient('client_id is required');
  const row = await ctx.db<ClientRow>('oauth_clients').where({ id: creds.clientId }).first();
  if (!row) throw invalidClient('Unknown client');
  if (row.secret_hash) {
    if (!creds.secret || !safeEqual(hashSecret(creds.secret), row.secret_hash)) throw invalidClient();
  } else if (creds.secret) {
    throw invalidClient('This client is public: it authenticates with PKCE, not a secret');
  }
  return row;
}

type Trx = Parameters<Parameters<AppContext['db']['transaction']>[0]>[0];

async function revokeGrant(q: Trx | AppContext['db'], grantId: string, at: string): Promise<void> {
  await q('oauth_grants').where({ id: grantId }).whereNull('revoked_at').update({ revoked_at: at });
  await q('oauth_tokens').where({ grant_id: grantId }).whereNull('revoked_at').update({ revoked_at: at });
}

async function issueTokens(trx: Trx, grantId: string, scope: string, now: Date): Promise<TokenResponse> {
  const access = `pat_${randomBase62(40)}`;
  const refresh = `prt_${randomBase62(40)}`;
  const created = now.toISOString();
  await trx('oauth_tokens').insert([
    { token_hash: hashSecret(access), grant_id: grantId, kind: 'access', scope, expires_at: new Date(now.getTime() + ACCESS_TOKEN_TTL_MS).toISOString(), used_at: null, revoked_at: null, created_at: created },
    { token_hash: hashSecret(refresh), grant_id: grantId, kind: 'refresh', scope, expires_at: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS).toISOString(), used_at: null, revoked_at: null, created_at: created },
  ]);
  return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_MS / 1000, refresh_token: refresh, scope };
}

/** RFC 7636 4.6: BASE64URL(SHA256(ASCII(code_verifier))) == code_challenge; the verifier is 43–128 unreserved characters. */
function verifierMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return safeEqual(createHash('sha256').update(verifier, 'ascii').digest('base64url'), challenge);
}

/** grant_type=authorization_code (RFC 6749 4.1.3, RFC 7636 4.5). */
export async function exchangeCode(
  ctx: AppContext,
  creds: ClientCredentials,
  input: { code: string | null; redirectUri: string | null; codeVerifier: string | null },
): Promise<TokenResponse> {
  const client = await authenticateClient(ctx, creds);
  if (!input.code) throw invalidRequest('code is required');
  if (!input.codeVerifier) throw invalidRequest('code_verifier is required (PKCE)');
  const now = ctx.clock.now();
  // A refusal that revokes (a code used twice) must commit its revocation: it is decided inside, thrown after.
  const outcome = await ctx.db.transaction(async (trx): Promise<TokenResponse | OAuthError> => {
    const row = await trx('oauth_codes as c')
      .join('oauth_grants as g', 'g.id', 'c.grant_id')
      .select('c.*', 'g.client_id', 'g.scope', 'g.revoked_at')
      .where('c.code_hash', hashSecret(input.code!))
      .first<{ code_hash: string; grant_id: string; redirect_uri: string; redirect_uri_given: number; code_challenge: string; expires_at: string; used_at: string | null; client_id: string; scope: string; revoked_at: string | null }>();
    if (!row || row.client_id !== client.id) return invalidGrant('The authorization code is invalid');
    if (row.used_at) {
      // RFC 6749 4.1.2: a code used twice — the tokens already issued from it are revoked.
      await revokeGrant(trx, row.grant_id, now.toISOString());
      return invalidGrant('The authorization code was already used; the tokens issued from it are revoked');
    }
    await trx('oauth_codes').where({ code_hash: row.code_hash }).update({ used_at: now.toISOString() });
    if (row.revoked_at) return invalidGrant('The authorization code is invalid');
    if (Date.parse(row.expires_at) <= now.getTime()) return invalidGrant('The authorization code has expired');
    if (row.redirect_uri_given ? input.redirectUri !== row.redirect_uri : input.redirectUri !== null && input.redirectUri !== row.redirect_uri) {
      return invalidGrant('redirect_uri does not match the authorization request');
    }
    if (!verifierMatches(input.codeVerifier!, row.code_challenge)) return invalidGrant('code_verifier does not match the code_challenge');
    return issueTokens(trx, row.grant_id, row.scope, now);
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/** grant_type=refresh_token (RFC 6749 6): rotation; a spent refresh token presented again revokes the grant. */
export async function refreshTokens(ctx: AppContext, creds: ClientCredentials, input: { refreshToken: string | null; scope: string | null }): Promise<TokenResponse> {
  const client = await authenticateClient(ctx, creds);
  if (!input.refreshToken) throw invalidRequest('refresh_token is required');
  const now = ctx.clock.now();
  const outcome = await ctx.db.transaction(async (trx): Promise<TokenResponse | OAuthError> => {
    const row = await trx('oauth_tokens as t')
      .join('oauth_grants as g', 'g.id', 't.grant_id')
      .select('t.*', 'g.client_id', 'g.revoked_at as grant_revoked_at')
      .where({ 't.token_hash': hashSecret(input.refreshToken!), 't.kind': 'refresh' })
      .first<{ token_hash: string; grant_id: string; scope: string; expires_at: string; used_at: string | null; revoked_at: string | null; client_id: string; grant_revoked_at: string | null }>();
    if (!row || row.client_id !== client.id) return invalidGrant('The refresh token is invalid');
    if (row.revoked_at || row.grant_revoked_at) return invalidGrant('The refresh token has been revoked');
    if (row.used_at) {
      await revokeGrant(trx, row.grant_id, now.toISOString());
      return invalidGrant('The refresh token was already used; every token of its grant is revoked');
    }
    if (Date.parse(row.expires_at) <= now.getTime()) return invalidGrant('The refresh token has expired');
    let scope = row.scope;
    if (input.scope !== null) {
      const asked = parseScope(input.scope);
      const held = row.scope.split(' ');
      if (!asked || asked.length === 0 || asked.some((s) => !held.includes(s))) {
        return new OAuthError(400, 'invalid_scope', 'A refresh may only narrow the scope the grant holds');
      }
      scope = asked.join(' ');
    }
    await trx('oauth_tokens').where({ token_hash: row.token_hash }).update({ used_at: now.toISOString() });
    return issueTokens(trx, row.grant_id, scope, now);
  });
  if (outcome instanceof OAuthError) throw outcome;
  return outcome;
}

/**
 * RFC 7009: revokes a token of the calling client. A refresh token takes its whole grant with it (2.1: SHOULD
 * revoke the access tokens of the same grant); an access token only itself. An unknown token is not an error (2.2).
 */
export async function revokeToken(ctx: AppContext, creds: ClientCredentials, token: string | null): Promise<void> {
  const client = await authenticateClient(ctx, creds);
  if (!token) throw invalidRequest('token is required');
  const row = await ctx.db('oauth_tokens as t')
    .join('oauth_grants as g', 'g.id', 't.grant_id')
    .select('t.token_hash', 't.kind', 't.grant_id', 'g.client_id')
    .where('t.token_hash', hashSecret(token))
    .first<{ token_hash: string; kind: 'access' | 'refresh'; grant_id: string; client_id: string } | undefined>();
  if (!row) return;
  if (row.client_id !== client.id) throw new OAuthError(400, 'unauthorized_client', 'The token was not issued to this client');
  const at = ctx.clock.now().toISOString();
  if (row.kind === 'refresh') await revokeGrant(ctx.db, row.grant_id, at);
  else await ctx.db('oauth_tokens').where({ token_hash: row.token_hash }).whereNull('revoked_at').update({ revoked_at: at });
}

// ——— the resource side: a `pat_` bearer as a Principal ———

/**
 * Resolves an OAuth access token to the principal it acts as: the team of the person who approved, with the
 * grant's scopes. `keyId` is the grant's id (the rate-limit counter follows the grant, so a refresh does not
 * open a fresh window); `permission` is full_access, narrowed by the scopes on every route. Not remembered
 * between requests: a revocation holds at once. Null when unknown, expired or revoked.
 */
export async function authenticateAccessToken(ctx: AppContext, token: string): Promise<Principal | null> {
  if (!ACCESS_TOKEN_PATTERN.test(token)) return null;
  const [row] = await queryRows<{ grant_id: string; scope: string; expires_at: string; team_id: string; plan: Plan }>(
    readsOf(ctx.db),
    `SELECT t.grant_id, t.scope, t.expires_at, g.team_id, tm.plan FROM oauth_tokens AS t
       JOIN oauth_grants AS g ON g.id = t.grant_id JOIN teams AS tm ON tm.id = g.team_id
      WHERE t.token_hash = ? AND t.kind = 'access' AND t.revoked_at IS NULL AND g.revoked_at IS NULL LIMIT 1`,
    [hashSecret(token)],
  );
  if (!row || Date.parse(row.expires_at) <= ctx.clock.now().getTime()) return null;
  return { teamId: row.team_id, plan: row.plan, keyId: row.grant_id, permission: 'full_access', mode: 'live', scopes: parseScope(row.scope) ?? [] };
}

/**
 * Expired authorization codes and tokens are kept this long past their expiry, then pruned by the retention
 * job: a code or refresh token presented again within it is still recognised as a reuse (and revokes its
 * grant); after it, it is simply unknown (invalid_grant either way).
 */
export const OAUTH_EXPIRED_KEEP_MS = DAY;

/** Deletes at most `limit` codes and `limit` tokens that expired before `before`, oldest first; returns how many. */
export async function pruneExpiredOAuth(ctx: AppContext, before: Date, limit: number): Promise<number> {
  const cutoff = before.toISOString();
  return ctx.db.transaction(async (trx) => {
    const codes = await trx('oauth_codes').whereIn('code_hash', trx('oauth_codes').where('expires_at', '<', cutoff).orderBy('expires_at').limit(limit).select('code_hash')).delete();
    const tokens = await trx('oauth_tokens').whereIn('token_hash', trx('oauth_tokens').where('expires_at', '<', cutoff).orderBy('expires_at').limit(limit).select('token_hash')).delete();
    return codes + tokens;
  });
}
