// The OAuth commands of the operator CLI, on the data directory (in-process; test/cli/admin.test.ts covers the CLI as a process): a
// login for a team member (generated password, stored as scrypt) and a confidential client; then the box, on
// the same data, runs a grant with both.
import t from 'tap';
import { rmSync } from 'node:fs';
import { makeDataDir, startTestApp } from '../helpers/app.js';
import { pkce } from './oauth-support.js';
import { adminJson, adminInProcess } from '../helpers/admin-cli.js';

t.setTimeout(300_000);

t.test('oauth logins and clients from the CLI, used by the box', async (t) => {
  const dir = makeDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const team = adminJson<{ team_id: string }>(t, await adminInProcess(dir, 'teams', 'create', '--name', 'Acme', '--plan', 'pro', '--owner', 'boss@acme.test'), 'teams create');
  const login = adminJson<{ email: string; password: string; team_id: string }>(t, await adminInProcess(dir, 'oauth', 'logins', 'create', '--team', team.team_id, '--email', 'Ann@Acme.test'), 'logins create');
  t.equal(login.email, 'ann@acme.test');
  t.match(login.password, /^[A-Za-z0-9]{24}$/);
  const dupe = await adminInProcess(dir, 'oauth', 'logins', 'create', '--team', team.team_id, '--email', 'ann@acme.test');
  t.equal(dupe.code, 1);
  t.match(dupe.stderr, /already exists/);
  const listed = adminJson<Array<{ email: string }>>(t, await adminInProcess(dir, 'oauth', 'logins', 'list', '--team', team.team_id), 'logins list');
  t.same(listed.map((l) => l.email), ['ann@acme.test']);
  t.notOk(JSON.stringify(listed).includes(login.password), 'no password listed');

  const badUri = await adminInProcess(dir, 'oauth', 'clients', 'create', '--name', 'X', '--redirect-uri', 'http://evil.example/cb');
  t.equal(badUri.code, 1);
  t.match(badUri.stderr, /https, or http on localhost/);
  const redirect = 'https://crm.example/oauth/callback';
  const client = adminJson<{ client_id: string; client_secret: string; token_endpoint_auth_method: string }>(
    t,
    await adminInProcess(dir, 'oauth', 'clients', 'create', '--name', 'CRM', '--redirect-uri', redirect, '--scope', 'email:read', '--confidential', 'yes'),
    'clients create',
  );
  t.equal(client.token_endpoint_auth_method, 'client_secret_basic');
  t.match(client.client_secret, /^ocs_/);
  const clients = adminJson<Array<{ client_id: string }>>(t, await adminInProcess(dir, 'oauth', 'clients', 'list'), 'clients list');
  t.same(clients.map((c) => c.client_id), [client.client_id]);

  const app = await startTestApp(t, { dataDir: dir, config: { oauthEnabled: true } });
  const stored = await app.appliance.ctx.db('oauth_users').first();
  t.match(stored.password_hash, /^scrypt\$16384\$8\$1\$/, 'the password is stored as scrypt');
  const { verifier, challenge } = pkce();
  const params = { response_type: 'code', client_id: client.client_id, redirect_uri: redirect, scope: 'email:read', state: 's', code_challenge: challenge, code_challenge_method: 'S256' };
  const res = await fetch(`${app.url}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...params, email: login.email, password: login.password, decision: 'approve' }).toString(),
  });
  t.equal(res.status, 303);
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const token = await fetch(`${app.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirect }).toString(),
  });
  t.equal(token.status, 200);
  const access = ((await token.json()) as { access_token: string }).access_token;
  t.equal((await app.request('GET', '/emails', { key: access })).status, 200, 'the token acts for the team of the CLI login');

  // Deleting the login revokes what it approved.
  await app.stop();
  adminJson(t, await adminInProcess(dir, 'oauth', 'logins', 'delete', '--email', 'ann@acme.test'), 'logins delete');
  const again = await startTestApp(t, { dataDir: dir, config: { oauthEnabled: true } });
  t.equal((await again.request('GET', '/emails', { key: access })).status, 401);
  adminJson(t, await adminInProcess(dir, 'oauth', 'clients', 'delete', '--client', client.client_id), 'clients delete');
});
