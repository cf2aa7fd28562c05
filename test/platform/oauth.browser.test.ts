// The whole OAuth flow in a real browser (Debian's Chromium driven by playwright-core, JavaScript off): an app
// (a loopback HTTP server standing in for the app's backend) sends the person to /oauth/authorize, the person
// logs in and approves on the consent page, the browser follows the redirect to the app with the code, and the
// app exchanges it with its PKCE verifier, calls the API with the token, refreshes and revokes.
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { chromium, type BrowserContext } from 'playwright-core';
import { pkce, startOAuthEnv } from './oauth-support.js';
import { registerClient } from '../../src/services/platform/index.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The app: its callback page records what the authorization server sent back. */
async function startApp(t: Test): Promise<{ callback: string; received: URLSearchParams[] }> {
  const received: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    received.push(url.searchParams);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!DOCTYPE html><title>Back in the app</title><h1>${url.searchParams.has('code') ? 'Connected' : 'Not connected'}</h1>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return { callback: `http://127.0.0.1:${port}/callback`, received };
}

t.test('authorize, log in, consent, redirect with code, token with the verifier, API call, refresh, revocation', async (t) => {
  const env = await startOAuthEnv(t);
  const appSide = await startApp(t);
  const { client } = await registerClient(env.app.appliance.ctx, { name: 'Acme CRM', redirectUris: [appSide.callback], registeredBy: 'operator' });

  const profile = mkdtempSync(path.join(os.tmpdir(), 'chromium-profile-'));
  let context: BrowserContext | undefined;
  t.teardown(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    javaScriptEnabled: false,
  });
  const page = context.pages()[0] ?? (await context.newPage());

  const { verifier, challenge } = pkce();
  const authorizeUrl = `${env.app.url}/oauth/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: appSide.callback,
    scope: 'email:read domains:read',
    state: 'state-123',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;
  const shown = await page.goto(authorizeUrl);
  t.equal(shown?.status(), 200);
  t.equal(await page.title(), 'Authorize Acme CRM');
  t.equal(await page.locator('#app-name').textContent(), 'Acme CRM', 'the app’s name');
  const scopes = await page.locator('#scopes li').allTextContents();
  t.same(
    scopes.map((s) => s.trim()),
    ['Read your email history, analytics and suppressions email:read', 'See your domains and their verification status domains:read'],
    'the scopes in plain words',
  );

  // A wrong password first: the page again, saying so, nothing sent to the app.
  await page.getByLabel('Your login (e-mail)').fill(env.login.email);
  await page.getByLabel('Password').fill('wrong-password');
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForLoadState();
  t.equal(await page.locator('#problem').textContent(), 'Wrong login or password.');
  t.equal(appSide.received.length, 0);

  await page.getByLabel('Password').fill(env.login.password);
  await Promise.all([page.waitForURL(`${appSide.callback}?**`), page.getByRole('button', { name: 'Approve' }).click()]);
  t.equal(await page.locator('h1').textContent(), 'Connected', 'the browser is back in the app');
  const back = appSide.received.at(-1)!;
  t.equal(back.get('state'), 'state-123');
  t.equal(back.get('iss'), env.app.url);
  const code = back.get('code')!;
  t.match(code, /^oac_/);

  // The app's backend: code + verifier → tokens.
  const tokens = await env.token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: appSide.callback, client_id: client.client_id });
  t.equal(tokens.status, 200);
  t.equal(tokens.body.scope, 'email:read domains:read');
  const access = tokens.body.access_token as string;
  t.match(access, /^pat_/);
  const emails = await env.app.request('GET', '/emails', { key: access });
  t.equal(emails.status, 200, 'an API call with the token');
  t.equal((await env.app.request('GET', '/domains', { key: access })).status, 200);
  t.equal((await env.app.request('POST', '/domains', { key: access, body: { name: 'x.test' } })).status, 403, 'outside its scopes');

  const refreshed = await env.token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, client_id: client.client_id });
  t.equal(refreshed.status, 200, 'refresh');
  const access2 = refreshed.body.access_token as string;
  t.equal((await env.app.request('GET', '/emails', { key: access2 })).status, 200);

  const revoked = await env.post('/oauth/revoke', { token: refreshed.body.refresh_token as string, token_type_hint: 'refresh_token', client_id: client.client_id });
  t.equal(revoked.status, 200, 'revocation');
  t.equal((await env.app.request('GET', '/emails', { key: access2 })).status, 401, 'the grant’s tokens stop working');
  t.equal((await env.app.request('GET', '/emails', { key: access })).status, 401);

  // Deny: the app hears access_denied, with its state.
  await page.goto(authorizeUrl);
  await Promise.all([page.waitForURL(`${appSide.callback}?**`), page.getByRole('button', { name: 'Deny' }).click()]);
  t.equal(await page.locator('h1').textContent(), 'Not connected');
  t.equal(appSide.received.at(-1)!.get('error'), 'access_denied');
  t.equal(appSide.received.at(-1)!.get('state'), 'state-123');

  // A request naming a redirect URI the app did not register: a page, no redirect.
  const bad = await page.goto(authorizeUrl.replace(encodeURIComponent(appSide.callback), encodeURIComponent('https://evil.example/cb')));
  t.equal(bad?.status(), 400);
  t.match(await page.locator('#problem').textContent(), /not one the app registered/);
});
