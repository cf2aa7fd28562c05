// OAuth access tokens on /mcp (issue 33 §1 beside §2): an MCP client that starts from /mcp's 401 finds the
// protected-resource document, then the authorization server; the token it gets is held to its mcp:* scopes
// by the tools, and a token with no MCP scope is refused at the route (403 naming the scopes).
import t from 'tap';
import { connectMcp } from '../mcp/support.js';
import { startOAuthEnv } from './oauth-support.js';

t.test('a token from the OAuth server works on /mcp within its scopes', async (t) => {
  const env = await startOAuthEnv(t);
  const noKey = await fetch(`${env.app.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
  t.equal(noKey.status, 401);
  const challenge = noKey.headers.get('www-authenticate') ?? '';
  const docUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
  t.match(docUrl, /\/\.well-known\/oauth-protected-resource\/mcp$/, '401 on /mcp names its own RFC 9728 document');
  const doc = (await (await fetch(`${env.app.url}${new URL(docUrl!).pathname}`)).json()) as { resource: string; authorization_servers: string[] };
  t.equal(new URL(doc.resource).pathname, '/mcp');
  const meta = (await (await fetch(`${doc.authorization_servers[0]}/.well-known/oauth-authorization-server`)).json()) as { token_endpoint: string };
  t.equal(meta.token_endpoint, `${env.app.url}/oauth/token`);

  const reader = await env.grant({ scope: 'mcp:read' });
  const session = await connectMcp(t, env.app, reader.access);
  const { tools } = await session.client.listTools();
  t.ok(tools.some((tool) => tool.name === 'list_domains'), 'tools listed with an mcp:read token');
  const listed = await session.call('list_domains');
  t.equal(listed.isError, false, 'a read tool answers');
  const created = await session.call('create_domain', { name: 'agent.test' });
  t.equal(created.isError, true, 'a state-changing tool is refused');
  t.match(JSON.stringify(created.json), /Insufficient scope: this tool needs mcp:admin/);

  const admin = await env.grant({ scope: 'mcp:read mcp:admin' });
  const adminSession = await connectMcp(t, env.app, admin.access);
  t.equal((await adminSession.call('create_domain', { name: 'agent.test' })).isError, false, 'mcp:admin creates a domain');

  const restOnly = await env.grant({ scope: 'email:read' });
  const refused = await fetch(`${env.app.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${restOnly.access}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(refused.status, 403);
  t.same(await refused.json(), { error: 'Insufficient scope: this endpoint needs one of the scopes mcp:read, mcp:send, mcp:admin', code: 'forbidden' });
});
