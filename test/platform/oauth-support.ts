// Helpers of the OAuth tests: a box with OAuth on, a login, a client, PKCE pairs and the raw protocol steps
// over real HTTP (fetch), so that each rule can be driven one step at a time.
import { createHash, randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createOAuthUser, registerClient } from '../../src/services/platform/index.js';

export const REDIRECT = 'http://127.0.0.1:8765/callback';

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface OAuthEnv {
  app: TestApp;
  login: { email: string; password: string };
  clientId: string;
  /** A new login for a team. */
  addLogin(teamId: string, email: string): Promise<{ email: string; password: string }>;
  /** Runs the consent form as the browser would (GET the page, POST approve) and answers the redirect's Location. */
  authorize(params: Record<string, string>, login?: { email: string; password: string }, decision?: string): Promise<{ status: number; location: URL | null; text: string }>;
  /** Authorize + approve, answers the code. */
  code(opts?: { scope?: string; clientId?: string; login?: { email: string; password: string } }): Promise<{ code: string; verifier: string }>;
  token(form: Record<string, string>, headers?: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }>;
  /** A full grant: code exchanged for tokens. */
  grant(opts?: { scope?: string; clientId?: string; login?: { email: string; password: string } }): Promise<{ access: string; refresh: string; body: Record<string, unknown> }>;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
}

export async function startOAuthEnv(t: Test, config: Record<string, unknown> = {}): Promise<OAuthEnv> {
  const app = await startTestApp(t, { config: { oauthEnabled: true, ...config } });
  const ctx = app.appliance.ctx;
  const addLogin = async (teamId: string, email: string) => ({ email, password: (await createOAuthUser(ctx, teamId, email)).password });
  const login = await addLogin(app.teamId, 'owner@team.test');
  const { client } = await registerClient(ctx, { name: 'Test App', redirectUris: [REDIRECT], registeredBy: 'operator' });
  const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(app.url + path, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form).toString() });
  const env: OAuthEnv = {
    app,
    login,
    clientId: client.client_id,
    addLogin,
    async authorize(params, who = login, decision = 'approve') {
      const page = await fetch(`${app.url}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
      if (page.status !== 200) {
        const loc = page.headers.get('location');
        return { status: page.status, location: loc ? new URL(loc) : null, text: await page.text() };
      }
      await page.text();
      const res = await post('/oauth/authorize', { ...params, email: who.email, password: who.password, decision });
      const loc = res.headers.get('location');
      return { status: res.status, location: loc ? new URL(loc) : null, text: await res.text() };
    },
    async code(opts = {}) {
      const { verifier, challenge } = pkce();
      const params: Record<string, string> = {
        response_type: 'code',
        client_id: opts.clientId ?? client.client_id,
        redirect_uri: REDIRECT,
        scope: opts.scope ?? 'email:send email:read',
        state: 'st-1',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      const res = await env.authorize(params, opts.login);
      if (res.status !== 303 || !res.location?.searchParams.get('code')) throw new Error(`no code: ${res.status} ${res.location} ${res.text}`);
      return { code: res.location.searchParams.get('code')!, verifier };
    },
    async token(form, headers = {}) {
      const res = await post('/oauth/token', form, headers);
      return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
    },
    async grant(opts = {}) {
      const { code, verifier } = await env.code(opts);
      const res = await env.token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: opts.clientId ?? client.client_id });
      if (res.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(res.body)}`);
      return { access: res.body.access_token as string, refresh: res.body.refresh_token as string, body: res.body };
    },
    post,
  };
  return env;
}
