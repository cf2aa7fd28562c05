// The authorization server through an independent client library (oauth4webapi, a certified OAuth 2 / OpenID
// client): resource discovery (RFC 9728, starting from /mcp as an MCP client does), server discovery (RFC 8414),
// dynamic registration (RFC 7591), authorization code with PKCE and the iss check (RFC 9207), an API call,
// refresh, reuse detection and revocation (RFC 7009). The person's part (log in, approve) is the consent form.
import t from 'tap';
import * as oauth from 'oauth4webapi';
import { startOAuthEnv } from './oauth-support.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const; // the test box speaks plain HTTP on loopback

/** The `error` of a token endpoint refusal as the library parsed it. */
async function grantError(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (err) {
    return err instanceof oauth.ResponseBodyError ? err.error : `unexpected ${String(err)}`;
  }
}

t.test('discovery, DCR, code + PKCE, refresh, reuse detection and revocation with oauth4webapi', async (t) => {
  const env = await startOAuthEnv(t);
  const base = new URL(env.app.url);
  /** A 401 answer to a token, as the library reports it: a WWW-Authenticate challenge error. */
  const challengeOf = async (token: string): Promise<string | null> => {
    try {
      await oauth.protectedResourceRequest(token, 'GET', new URL(`${env.app.url}/emails`), undefined, undefined, insecure);
      return null;
    } catch (err) {
      return err instanceof oauth.WWWAuthenticateChallengeError && err.response.status === 401 ? 'invalid_token' : `unexpected ${String(err)}`;
    }
  };

  const resourceId = new URL(`${env.app.url}/mcp`);
  const rs = await oauth.processResourceDiscoveryResponse(resourceId, await oauth.resourceDiscoveryRequest(resourceId, insecure));
  t.same(rs.authorization_servers, [env.app.url], '/mcp names the authorization server');
  t.same(rs.scopes_supported, ['mcp:read', 'mcp:send', 'mcp:admin']);

  const issuer = new URL(rs.authorization_servers![0]!);
  t.equal(issuer.href.replace(/\/$/, ''), base.href.replace(/\/$/, ''));
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
  t.equal(as.issuer, env.app.url);
  t.same(as.code_challenge_methods_supported, ['S256']);

  const redirectUri = 'http://localhost:53682/callback';
  const registered = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(as, { client_name: 'Library agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', scope: 'mcp:read email:read' }, insecure),
  );
  t.match(registered.client_id, /^oc_/);
  const client: oauth.Client = { client_id: registered.client_id };
  const auth = oauth.None();

  const verifier = oauth.generateRandomCodeVerifier();
  const challenge = await oauth.calculatePKCECodeChallenge(verifier);
  const state = oauth.generateRandomState();
  const authorizationUrl = new URL(as.authorization_endpoint!);
  for (const [k, v] of Object.entries({ client_id: client.client_id, redirect_uri: redirectUri, response_type: 'code', scope: 'mcp:read email:read', code_challenge: challenge, code_challenge_method: 'S256', state })) {
    authorizationUrl.searchParams.set(k, v);
  }
  // The person: the consent page, then approve with their login.
  const consent = await env.authorize(Object.fromEntries(authorizationUrl.searchParams));
  t.equal(consent.status, 303);
  const callback = oauth.validateAuthResponse(as, client, consent.location!, state);

  const tokens = await oauth.processAuthorizationCodeResponse(as, client, await oauth.authorizationCodeGrantRequest(as, client, auth, callback, redirectUri, verifier, insecure));
  t.equal(tokens.token_type, 'bearer');
  t.equal(tokens.expires_in, 3600);
  t.equal(tokens.scope, 'mcp:read email:read');
  t.match(tokens.access_token, /^pat_/);

  const api = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${env.app.url}/emails`), undefined, undefined, insecure);
  t.equal(api.status, 200, 'an API call with the token');

  const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure));
  t.not(refreshed.refresh_token, tokens.refresh_token, 'rotated');
  t.equal((await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(`${env.app.url}/emails`), undefined, undefined, insecure)).status, 200);

  // The first refresh token again: the library sees invalid_grant, and the grant is gone.
  const reuse = oauth.refreshTokenGrantRequest(as, client, auth, tokens.refresh_token!, insecure).then((res) => oauth.processRefreshTokenResponse(as, client, res));
  t.equal(await grantError(reuse), 'invalid_grant', 'reuse is refused in the standard error shape');
  t.equal(await challengeOf(refreshed.access_token), 'invalid_token', 'the family is revoked: the library sees the 401 challenge');

  // A fresh grant, revoked through the library.
  const consent2 = await env.authorize(Object.fromEntries(authorizationUrl.searchParams));
  const tokens2 = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, oauth.validateAuthResponse(as, client, consent2.location!, state), redirectUri, verifier, insecure),
  );
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, tokens2.refresh_token!, insecure));
  t.equal(await challengeOf(tokens2.access_token), 'invalid_token', 'revoked');
  const after = oauth.refreshTokenGrantRequest(as, client, auth, tokens2.refresh_token!, insecure).then((res) => oauth.processRefreshTokenResponse(as, client, res));
  t.equal(await grantError(after), 'invalid_grant');
});
