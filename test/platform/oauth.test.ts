// The OAuth 2.0 authorization server rule by rule, over real HTTP against the appliance on port 0: the switch,
// discovery (RFC 8414, RFC 9728), the authorization endpoint (RFC 6749 4.1, PKCE S256 only), the token endpoint
// (code exchange, refresh rotation and reuse detection), revocation (RFC 7009), dynamic registration (RFC 7591),
// scopes on the API, expiry on the FakeClock, tenant isolation and the rate-limit window of a grant.
import t from 'tap';
import { startTestApp, createOtherTeam } from '../helpers/app.js';
import { pkce, REDIRECT, startOAuthEnv } from './oauth-support.js';
import { registerClient } from '../../src/services/platform/index.js';
import { hashSecret } from '../../src/core/secrets.js';
import { MINUTE } from '../../src/core/clock.js';
import { loadConfig } from '../../src/config.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

const OAUTH_PATHS: Array<[string, string]> = [
  ['GET', '/.well-known/oauth-authorization-server'],
  ['GET', '/.well-known/oauth-protected-resource'],
  ['GET', '/.well-known/oauth-protected-resource/mcp'],
  ['GET', '/oauth/authorize?response_type=code&client_id=x'],
  ['POST', '/oauth/authorize'],
  ['POST', '/oauth/token'],
  ['POST', '/oauth/revoke'],
  ['POST', '/oauth/register'],
];

t.test('MAIL_OAUTH_ENABLED: off by default; true/false (on/off) read from the environment', async (t) => {
  t.equal(loadConfig({}).oauthEnabled, false);
  t.equal(loadConfig({ MAIL_OAUTH_ENABLED: 'true' }).oauthEnabled, true);
  t.equal(loadConfig({ MAIL_OAUTH_ENABLED: 'on' }).oauthEnabled, true);
  t.equal(loadConfig({ MAIL_OAUTH_ENABLED: 'false' }).oauthEnabled, false);
  t.throws(() => loadConfig({ MAIL_OAUTH_ENABLED: 'maybe' }), /MAIL_OAUTH_ENABLED must be true or false/);
});

t.test('switched off (the default): every OAuth path is 404 and a pat_ token an unknown credential', async (t) => {
  const env = await startOAuthEnv(t);
  const { access } = await env.grant();
  t.equal((await env.app.request('GET', '/emails', { key: access })).status, 200, 'the token works while OAuth is on');
  const dataDir = env.app.dataDir;
  await env.app.stop();
  const off = await startTestApp(t, { dataDir });
  t.equal(off.appliance.ctx.config.oauthEnabled, false, 'off by default');
  for (const [method, path] of OAUTH_PATHS) {
    const res = await off.request(method, path, { key: null });
    t.equal(res.status, 404, `${method} ${path}`);
    t.same(res.body, { error: `Route not found: ${method} ${path.split('?')[0]}`, code: 'not_found' }, 'the same answer as an unknown path');
  }
  const refused = await off.request('GET', '/emails', { key: access });
  t.equal(refused.status, 401);
  t.same(refused.body, { error: 'Invalid API key', code: 'unauthorized' });
  t.equal(refused.headers.get('www-authenticate'), 'Bearer realm="api"', 'no resource metadata advertised');
});

t.test('discovery: RFC 8414 server metadata and RFC 9728 resource metadata (the API and /mcp)', async (t) => {
  const env = await startOAuthEnv(t);
  const base = env.app.url;
  const meta = await env.app.request('GET', '/.well-known/oauth-authorization-server', { key: null });
  t.equal(meta.status, 200);
  t.match(meta.body, {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    revocation_endpoint: `${base}/oauth/revoke`,
    registration_endpoint: `${base}/oauth/register`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
  });
  t.same(meta.body.scopes_supported, ['email:send', 'email:read', 'domains:manage', 'domains:read', 'mailboxes:manage', 'api-keys:manage', 'mcp:read', 'mcp:send', 'mcp:admin']);
  const api = await env.app.request('GET', '/.well-known/oauth-protected-resource', { key: null });
  t.match(api.body, { resource: base, authorization_servers: [base], bearer_methods_supported: ['header'] });
  const mcp = await env.app.request('GET', '/.well-known/oauth-protected-resource/mcp', { key: null });
  t.same(mcp.body.resource, `${base}/mcp`);
  t.same(mcp.body.authorization_servers, [base]);
  t.same(mcp.body.scopes_supported, ['mcp:read', 'mcp:send', 'mcp:admin']);
  const noKey = await env.app.request('GET', '/emails', { key: null });
  t.equal(noKey.status, 401);
  t.equal(noKey.headers.get('www-authenticate'), `Bearer realm="api", resource_metadata="${base}/.well-known/oauth-protected-resource"`);

  const api2 = await env.app.request<Record<string, unknown>>('GET', '/openapi.json', { key: null });
  const doc = api2.body as { components: { securitySchemes: Record<string, { flows?: { authorizationCode: { scopes: Record<string, string> } } }> }; paths: Record<string, Record<string, { security: unknown; 'x-oauth-scope'?: unknown }>> };
  t.ok(doc.components.securitySchemes.oauth2?.flows?.authorizationCode.scopes['email:send'], 'oauth2 security scheme with the scopes');
  t.same(doc.paths['/emails']!.post!.security, [{ bearer: [] }, { oauth2: ['email:send'] }]);
  t.same(doc.paths['/domains']!.get!['x-oauth-scope'], 'domains:read');
  t.same(doc.paths['/webhooks']!.get!.security, [{ bearer: [] }], 'API key only');
});

t.test('authorization endpoint: what it refuses, and where it says so', async (t) => {
  const env = await startOAuthEnv(t);
  const { challenge } = pkce();
  const good = { response_type: 'code', client_id: env.clientId, redirect_uri: REDIRECT, scope: 'email:read', state: 'xyz', code_challenge: challenge, code_challenge_method: 'S256' };
  const get = (q: Record<string, string>) => fetch(`${env.app.url}/oauth/authorize?${new URLSearchParams(q)}`, { redirect: 'manual' });

  const page = await get(good);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  const html = await page.text();
  t.match(html, 'Test App');
  t.match(html, 'Read your email history, analytics and suppressions');

  // Nothing goes back to an app that is not who it says, or to an address it did not register (4.1.2.1).
  for (const [what, q] of [
    ['unknown client', { ...good, client_id: 'oc_nobody' }],
    ['unregistered redirect URI', { ...good, redirect_uri: 'https://evil.example/cb' }],
    ['no client', { ...good, client_id: '' }],
  ] as const) {
    const res = await get(q);
    t.equal(res.status, 400, what);
    t.equal(res.headers.get('location'), null, `${what}: no redirect`);
    t.match(await res.text(), 'cannot be completed');
  }
  // Everything else goes back as an error with the state.
  for (const [what, q, error] of [
    ['no PKCE', { ...good, code_challenge: '', code_challenge_method: '' }, 'invalid_request'],
    ['plain PKCE', { ...good, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }, 'invalid_request'],
    ['method omitted (would mean plain)', { ...good, code_challenge_method: '' }, 'invalid_request'],
    ['implicit flow', { ...good, response_type: 'token' }, 'unsupported_response_type'],
    ['unknown scope', { ...good, scope: 'email:read everything' }, 'invalid_scope'],
  ] as const) {
    const res = await get(q);
    t.equal(res.status, 303, what);
    const loc = new URL(res.headers.get('location')!);
    t.equal(`${loc.origin}${loc.pathname}`, REDIRECT);
    t.equal(loc.searchParams.get('error'), error, what);
    t.equal(loc.searchParams.get('state'), 'xyz');
    t.equal(loc.searchParams.get('iss'), env.app.url);
  }
  const plain = await get({ ...good, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' });
  t.match(new URL(plain.headers.get('location')!).searchParams.get('error_description'), /S256/);

  const denied = await env.authorize(good, env.login, 'deny');
  t.equal(denied.status, 303);
  t.equal(denied.location!.searchParams.get('error'), 'access_denied');
  t.equal(denied.location!.searchParams.get('state'), 'xyz');
  t.equal(denied.location!.searchParams.get('code'), null);

  const wrong = await env.authorize(good, { email: env.login.email, password: 'not-it' });
  t.equal(wrong.status, 401, 'a wrong password shows the page again');
  t.match(wrong.text, 'Wrong login or password');
  t.equal(wrong.location, null);
  const nobody = await env.authorize(good, { email: 'nobody@team.test', password: env.login.password });
  t.equal(nobody.status, 401);

  const ok = await env.authorize(good);
  t.equal(ok.status, 303);
  t.match(ok.location!.searchParams.get('code'), /^oac_/);
  t.equal(ok.location!.searchParams.get('state'), 'xyz');
  t.equal(ok.location!.searchParams.get('iss'), env.app.url);
  const stored = await env.app.appliance.ctx.db('oauth_codes').first();
  t.equal(stored.code_hash, hashSecret(ok.location!.searchParams.get('code')!), 'only the hash of the code is stored');
});

t.test('token endpoint: code exchange with PKCE, and every way it refuses', async (t) => {
  const env = await startOAuthEnv(t);
  const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
    env.token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: env.clientId, ...extra });

  const a = await env.code();
  const badVerifier = await exchange(a.code, pkce().verifier);
  t.equal(badVerifier.status, 400);
  t.same(badVerifier.body, { error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' });
  t.equal((await exchange(a.code, a.verifier)).body.error, 'invalid_grant', 'a code is spent by a failed attempt too');

  const b = await env.code();
  const ok = await exchange(b.code, b.verifier);
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('cache-control'), 'no-store');
  t.match(ok.body, { token_type: 'Bearer', expires_in: 3600, scope: 'email:send email:read' });
  t.match(ok.body.access_token, /^pat_[A-Za-z0-9]{40}$/);
  t.match(ok.body.refresh_token, /^prt_/);
  const rows = await env.app.appliance.ctx.db('oauth_tokens').select('token_hash');
  t.ok(rows.some((r: { token_hash: string }) => r.token_hash === hashSecret(ok.body.access_token as string)), 'stored hashed');
  t.notOk(JSON.stringify(rows).includes(ok.body.access_token as string), 'never in plain text');
  const access = ok.body.access_token as string;
  t.equal((await env.app.request('GET', '/emails', { key: access })).status, 200);

  // A code used twice revokes what it issued (RFC 6749 4.1.2).
  const again = await exchange(b.code, b.verifier);
  t.equal(again.status, 400);
  t.equal(again.body.error, 'invalid_grant');
  t.equal((await env.app.request('GET', '/emails', { key: access })).status, 401, 'the tokens of a replayed code are revoked');
  t.equal((await env.token({ grant_type: 'refresh_token', refresh_token: ok.body.refresh_token as string, client_id: env.clientId })).body.error, 'invalid_grant');

  const c = await env.code();
  const otherRedirect = await exchange(c.code, c.verifier, { redirect_uri: 'http://127.0.0.1:8765/other' });
  t.same(otherRedirect.body.error, 'invalid_grant', 'redirect_uri must repeat the request’s');

  const { client: other } = await registerClient(env.app.appliance.ctx, { name: 'Other', redirectUris: [REDIRECT], registeredBy: 'operator' });
  const d = await env.code();
  t.equal((await exchange(d.code, d.verifier, { client_id: other.client_id })).body.error, 'invalid_grant', 'a code is bound to its client');

  const e = await env.code();
  env.app.clock.advance(10 * MINUTE + 1);
  const late = await exchange(e.code, e.verifier);
  t.same(late.body, { error: 'invalid_grant', error_description: 'The authorization code has expired' });

  const f = await env.code();
  t.equal((await exchange(f.code, '')).body.error, 'invalid_request', 'no verifier');
  const unknown = await exchange(f.code, f.verifier, { client_id: 'oc_nobody' });
  t.equal(unknown.status, 401);
  t.equal(unknown.body.error, 'invalid_client');
  t.match(unknown.headers.get('www-authenticate'), /^Basic/);
  t.equal((await env.token({ grant_type: 'password', username: 'a', password: 'b', client_id: env.clientId })).body.error, 'unsupported_grant_type');
  t.equal((await env.token({ client_id: env.clientId })).body.error, 'invalid_request');
  const dup = await (fetch(`${env.app.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=authorization_code&code=${f.code}&code=${f.code}&client_id=${env.clientId}` }));
  t.equal(dup.status, 400);
  t.equal(((await dup.json()) as { error: string }).error, 'invalid_request', 'a repeated parameter is refused');
});

t.test('refresh: rotation, single use, reuse revokes the family, scope only narrows', async (t) => {
  const env = await startOAuthEnv(t);
  const first = await env.grant({ scope: 'email:read email:send domains:read' });
  const refresh = (token: string, extra: Record<string, string> = {}) => env.token({ grant_type: 'refresh_token', refresh_token: token, client_id: env.clientId, ...extra });

  const second = await refresh(first.refresh);
  t.equal(second.status, 200);
  t.not(second.body.refresh_token, first.refresh, 'a new refresh token');
  t.not(second.body.access_token, first.access, 'a new access token');
  t.equal(second.body.scope, 'email:read email:send domains:read');
  const third = await refresh(second.body.refresh_token as string, { scope: 'email:read' });
  t.equal(third.body.scope, 'email:read', 'narrowed');
  t.equal((await env.app.request('GET', '/domains', { key: third.body.access_token as string })).status, 403, 'the narrowed token lost domains:read');
  t.equal((await refresh(third.body.refresh_token as string, { scope: 'email:read domains:manage' })).body.error, 'invalid_scope', 'never widened');

  // The spent first refresh token, presented again: every token of the grant is revoked.
  const live = third.body.access_token as string;
  t.equal((await env.app.request('GET', '/emails', { key: live })).status, 200);
  const reuse = await refresh(first.refresh);
  t.equal(reuse.status, 400);
  t.equal(reuse.body.error, 'invalid_grant');
  t.match(reuse.body.error_description, /already used/);
  t.equal((await env.app.request('GET', '/emails', { key: live })).status, 401, 'the newest access token of the family is revoked');
  t.equal((await env.app.request('GET', '/emails', { key: first.access })).status, 401);
  t.equal((await refresh(third.body.refresh_token as string)).body.error, 'invalid_grant', 'and the newest refresh token');

  // Another grant of the same person is untouched.
  const other = await env.grant();
  t.equal((await env.app.request('GET', '/emails', { key: other.access })).status, 200);
  const { client: stranger } = await registerClient(env.app.appliance.ctx, { name: 'Stranger', redirectUris: [REDIRECT], registeredBy: 'operator' });
  t.equal((await refresh(other.refresh, { client_id: stranger.client_id })).body.error, 'invalid_grant', 'a refresh token is bound to its client');
  t.equal((await refresh(other.refresh)).status, 200, 'and was not spent by the stranger');
});

t.test('expiry on the clock: access tokens last an hour, refresh tokens 30 days', async (t) => {
  const env = await startOAuthEnv(t);
  const g = await env.grant();
  env.app.clock.advance(59 * MINUTE);
  t.equal((await env.app.request('GET', '/emails', { key: g.access })).status, 200, 'at 59 minutes');
  env.app.clock.advance(MINUTE);
  const expired = await env.app.request('GET', '/emails', { key: g.access });
  t.equal(expired.status, 401, 'at 60 minutes');
  const next = await env.token({ grant_type: 'refresh_token', refresh_token: g.refresh, client_id: env.clientId });
  t.equal(next.status, 200, 'the refresh token still works');
  t.equal((await env.app.request('GET', '/emails', { key: next.body.access_token as string })).status, 200);
  env.app.clock.advance(30 * 24 * 60 * MINUTE);
  t.equal((await env.token({ grant_type: 'refresh_token', refresh_token: next.body.refresh_token as string, client_id: env.clientId })).body.error_description, 'The refresh token has expired');
});

t.test('revocation (RFC 7009)', async (t) => {
  const env = await startOAuthEnv(t);
  const revoke = (form: Record<string, string>) => env.post('/oauth/revoke', form);
  const g = await env.grant();
  const res = await revoke({ token: g.access, token_type_hint: 'access_token', client_id: env.clientId });
  t.equal(res.status, 200);
  t.equal(await res.text(), '');
  t.equal((await env.app.request('GET', '/emails', { key: g.access })).status, 401, 'a revoked access token');
  const next = await env.token({ grant_type: 'refresh_token', refresh_token: g.refresh, client_id: env.clientId });
  t.equal(next.status, 200, 'revoking an access token leaves its refresh token');

  t.equal((await revoke({ token: next.body.refresh_token as string, client_id: env.clientId })).status, 200);
  t.equal((await env.app.request('GET', '/emails', { key: next.body.access_token as string })).status, 401, 'a refresh token takes its access tokens with it');
  t.equal((await env.token({ grant_type: 'refresh_token', refresh_token: next.body.refresh_token as string, client_id: env.clientId })).body.error, 'invalid_grant');

  t.equal((await revoke({ token: 'pat_unknown', client_id: env.clientId })).status, 200, 'an unknown token is not an error');
  t.equal((await revoke({ token: 'x', client_id: 'oc_nobody' })).status, 401, 'the client must be known');
  t.equal((await revoke({ client_id: env.clientId })).status, 400, 'token is required');
  const { client: stranger } = await registerClient(env.app.appliance.ctx, { name: 'Stranger', redirectUris: [REDIRECT], registeredBy: 'operator' });
  const h = await env.grant();
  const foreign = await revoke({ token: h.access, client_id: stranger.client_id });
  t.equal(foreign.status, 400, 'another client’s token is refused');
  t.equal((await env.app.request('GET', '/emails', { key: h.access })).status, 200, 'and stays valid');
});

t.test('dynamic client registration (RFC 7591) and confidential clients', async (t) => {
  const env = await startOAuthEnv(t);
  const register = async (body: unknown) => {
    const res = await fetch(`${env.app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const ok = await register({ client_name: 'Agent', redirect_uris: ['http://localhost:33418/cb', 'https://agent.example/cb'], scope: 'mcp:read mcp:send' });
  t.equal(ok.status, 201);
  t.match(ok.body, { client_name: 'Agent', token_endpoint_auth_method: 'none', scope: 'mcp:read mcp:send', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
  t.match(ok.body.client_id, /^oc_/);
  t.type(ok.body.client_id_issued_at, 'number');
  t.notOk('client_secret' in ok.body, 'a public client');

  for (const [what, body, error] of [
    ['http off loopback', { redirect_uris: ['http://agent.example/cb'] }, 'invalid_redirect_uri'],
    ['custom scheme', { redirect_uris: ['myapp://cb'] }, 'invalid_redirect_uri'],
    ['fragment', { redirect_uris: ['https://agent.example/cb#x'] }, 'invalid_redirect_uri'],
    ['no redirect URIs', { client_name: 'x' }, 'invalid_redirect_uri'],
    ['confidential', { redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
    ['implicit grant', { redirect_uris: ['https://agent.example/cb'], grant_types: ['implicit'] }, 'invalid_client_metadata'],
    ['unknown scope', { redirect_uris: ['https://agent.example/cb'], scope: 'root' }, 'invalid_client_metadata'],
    ['not an object', ['https://agent.example/cb'], 'invalid_client_metadata'],
  ] as const) {
    const res = await register(body);
    t.equal(res.status, 400, what);
    t.equal(res.body.error, error, what);
  }
  // The registered client asks for a scope outside its registration: refused.
  const { challenge } = pkce();
  const outside = await fetch(`${env.app.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: ok.body.client_id as string, redirect_uri: 'https://agent.example/cb', scope: 'email:send', code_challenge: challenge, code_challenge_method: 'S256' })}`, { redirect: 'manual' });
  t.equal(new URL(outside.headers.get('location')!).searchParams.get('error'), 'invalid_scope');

  // A confidential client registered by the operator proves its secret.
  const { client, clientSecret } = await registerClient(env.app.appliance.ctx, { name: 'Server app', redirectUris: [REDIRECT], confidential: true, registeredBy: 'operator' });
  t.match(clientSecret, /^ocs_/);
  const code = await env.code({ clientId: client.client_id });
  const form = { grant_type: 'authorization_code', code: code.code, code_verifier: code.verifier, redirect_uri: REDIRECT };
  const noSecret = await env.token({ ...form, client_id: client.client_id });
  t.equal(noSecret.status, 401);
  t.equal(noSecret.body.error, 'invalid_client');
  const wrongSecret = await env.token(form, { authorization: `Basic ${Buffer.from(`${client.client_id}:nope`).toString('base64')}` });
  t.equal(wrongSecret.status, 401);
  const code2 = await env.code({ clientId: client.client_id });
  const basic = await env.token({ ...form, code: code2.code, code_verifier: code2.verifier }, { authorization: `Basic ${Buffer.from(`${client.client_id}:${clientSecret}`).toString('base64')}` });
  t.equal(basic.status, 200, 'client_secret_basic');
  const code3 = await env.code({ clientId: client.client_id });
  t.equal((await env.token({ ...form, code: code3.code, code_verifier: code3.verifier, client_id: client.client_id, client_secret: clientSecret! })).status, 200, 'client_secret_post');
  const pub = await env.code();
  t.equal((await env.token({ grant_type: 'authorization_code', code: pub.code, code_verifier: pub.verifier, redirect_uri: REDIRECT, client_id: env.clientId, client_secret: 'x' })).status, 401, 'a public client has no secret');
});

t.test('scopes on the API: 403 naming the scope; a token acts for its login’s team only', async (t) => {
  const env = await startOAuthEnv(t);
  const reader = await env.grant({ scope: 'email:read domains:read' });
  t.equal((await env.app.request('GET', '/emails', { key: reader.access })).status, 200);
  const send = await env.app.request('POST', '/emails', { key: reader.access, body: { from: 'a@b.test', to: 'c@d.test', subject: 'x', text: 'y' } });
  t.equal(send.status, 403);
  t.same(send.body, { error: 'Insufficient scope: this endpoint needs the email:send scope', code: 'forbidden' });
  t.equal(send.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="email:send"');
  const create = await env.app.request('POST', '/domains', { key: reader.access, body: { name: 'x.test' } });
  t.equal(create.body.error, 'Insufficient scope: this endpoint needs the domains:manage scope');
  const keys = await env.app.request('GET', '/api-keys', { key: reader.access });
  t.equal(keys.body.error, 'Insufficient scope: this endpoint needs the api-keys:manage scope');
  const hooks = await env.app.request('GET', '/webhooks', { key: reader.access });
  t.equal(hooks.status, 403);
  t.equal(hooks.body.error, 'Insufficient scope: no OAuth scope grants this endpoint; use an API key');

  const manager = await env.grant({ scope: 'domains:manage domains:read api-keys:manage' });
  const made = await env.app.request('POST', '/domains', { key: manager.access, body: { name: 'mine.test' } });
  t.equal(made.status, 201, 'domains:manage creates a domain');
  t.equal((await env.app.request('GET', '/api-keys', { key: manager.access })).status, 200);

  // Team B's member approves for team B: the token sees team B only.
  const other = await createOtherTeam(env.app);
  const bLogin = await env.addLogin(other.teamId, 'member@other.test');
  const b = await env.grant({ scope: 'domains:read domains:manage', login: bLogin });
  const seen = await env.app.request<{ domains: Array<{ name: string }> }>('GET', '/domains', { key: b.access });
  t.same(seen.body.domains.map((d) => d.name), [], 'team A’s domain is not listed');
  t.equal((await env.app.request('GET', `/domains/${made.body.id as string}`, { key: b.access })).status, 404, 'nor readable');
  t.equal((await env.app.request('DELETE', `/domains/${made.body.id as string}`, { key: b.access })).status, 404, 'nor deletable');
  const bDomain = await env.app.request('POST', '/domains', { key: b.access, body: { name: 'theirs.test' } });
  const listB = await env.app.request<{ domains: Array<{ name: string }> }>('GET', '/domains', { key: other.apiKey });
  t.same(listB.body.domains.map((d) => d.name), ['theirs.test'], 'the token created it in team B');
  const listA = await env.app.request<{ domains: Array<{ name: string }> }>('GET', '/domains', { key: manager.access });
  t.same(listA.body.domains.map((d) => d.name), ['mine.test']);
  t.equal(bDomain.status, 201);
});

t.test('rate limits count per grant, as per key; a refresh does not open a fresh window', async (t) => {
  const env = await startOAuthEnv(t, { rateLimits: true });
  const g = await env.grant({ scope: 'domains:manage' });
  const remaining = async (key: string) => Number((await env.app.request('POST', '/domains', { key, body: {} })).headers.get('x-ratelimit-remaining'));
  const r1 = await remaining(g.access);
  const r2 = await remaining(g.access);
  t.equal(r2, r1 - 1, 'counted per token');
  const next = await env.token({ grant_type: 'refresh_token', refresh_token: g.refresh, client_id: env.clientId });
  t.equal(await remaining(next.body.access_token as string), r1 - 2, 'the refreshed token shares the grant’s window');
  const other = await env.grant({ scope: 'domains:manage' });
  t.equal(await remaining(other.access), r1, 'another grant has its own window');
  t.equal(await remaining(env.app.apiKey), r1, 'and the team’s API key its own');
});

t.test('a token with email:send sends through the one send path; the email records no API key', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const env = await startOAuthEnv(t, { dnsServers: [dns.server] });
  await addVerifiedDomain(env.app, dns, 'send.example');
  const g = await env.grant({ scope: 'email:send email:read' });
  const sent = await env.app.request('POST', '/emails', { key: g.access, body: { from: 'app@send.example', to: 'ann@dest.example', subject: 'Hi', text: 'Hello' } });
  t.equal(sent.status, 202, JSON.stringify(sent.body));
  const row = await env.app.appliance.ctx.db('emails').where({ public_id: sent.body.id }).first();
  t.equal(row.api_key_id, null, 'no API key recorded (the token is not one)');
  const read = await env.app.request('GET', `/emails/${sent.body.id as string}`, { key: g.access });
  t.equal(read.status, 200, 'read back with email:read');
  t.equal(read.body.subject, 'Hi');
});
