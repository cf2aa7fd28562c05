// The endpoint around the tools: the 401 and its WWW-Authenticate challenge naming the protected-resource
// metadata, the methods a stateless endpoint answers, the one 120/min counter shared by every MCP call of a
// credential (per-credential limits on, the FakeClock moved), and the scopes a credential carries.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import t from 'tap';
import { SECOND } from '../../src/core/clock.js';
import { mcpScopesOf } from '../../src/mcp/scopes.js';
import { createMcpServer } from '../../src/mcp/server.js';
import type { Principal } from '../../src/services/platform/index.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { connectMcp } from './support.js';

const PUBLIC_URL = 'https://mail.example.com';
const CHALLENGE = `Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`;
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const listTools = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

t.test('the MCP endpoint over HTTP', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true, publicUrl: PUBLIC_URL } });
  const post = (key: string | null, body: string = listTools, headers: Record<string, string> = MCP_HEADERS) =>
    fetch(`${app.url}/mcp`, { method: 'POST', headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) }, body });
  // The edge buckets (30/s per client address) refill as the clock moves: a tenth of a second per request.
  const tick = () => app.clock.advance(100);

  t.test('no credential, or a wrong one: 401 naming the protected-resource metadata', async (t) => {
    for (const key of [null, 'sk_live_wrong', 'pat_unknown']) {
      const res = await post(key);
      t.equal(res.status, 401, String(key));
      t.equal(res.headers.get('www-authenticate'), CHALLENGE);
      t.same(await res.json(), { error: 'Invalid API key', code: 'unauthorized' });
    }
    const rest = await app.request('GET', '/domains', { key: null });
    t.equal(rest.headers.get('www-authenticate'), 'Bearer realm="api"', 'the REST routes keep their challenge');
    const client = new Client({ name: 'anonymous', version: '1' });
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    await t.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`))), 'the SDK client is refused');
  });

  t.test('a stateless endpoint: POST only; GET and DELETE are 405; the transport checks what it is given', async (t) => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${app.url}/mcp`, { method, headers: { authorization: `Bearer ${app.apiKey}` } });
      t.equal(res.status, 405, method);
      t.equal(res.headers.get('allow'), 'POST');
    }
    const listed = await post(app.apiKey);
    t.equal(listed.status, 200);
    t.match(listed.headers.get('content-type'), /^application\/json/);
    t.notOk(listed.headers.get('mcp-session-id'), 'no session');
    const body = (await listed.json()) as { result: { tools: Array<{ name: string }> } };
    t.ok(body.result.tools.some((tool) => tool.name === 'send_email'));

    const wrongAccept = await post(app.apiKey, listTools, { 'content-type': 'application/json', accept: 'application/json' });
    t.equal(wrongAccept.status, 406, 'the Accept header MCP requires');
    const malformed = await post(app.apiKey, '{"jsonrpc":');
    t.equal(malformed.status, 400);
    t.same(await malformed.json(), { error: 'Malformed JSON in request body', code: 'invalid_request' });
    const batch = await post(app.apiKey, `[${listTools},${listTools}]`);
    t.equal(batch.status, 400, 'a batch would count several calls as one request');
    t.same(await batch.json(), { error: 'JSON-RPC batches are not accepted on /mcp: send one message per request', code: 'invalid_request' });
    const notRpc = await post(app.apiKey, '{"hello":"world"}');
    t.equal(notRpc.status, 400);
    t.match(await notRpc.json(), { jsonrpc: '2.0', error: { code: -32700 } });
    tick();
  });

  t.test('one counter of 120 a minute for every MCP call of a credential', async (t) => {
    app.clock.advance(61 * SECOND); // the windows of the tests above have ended
    const team = await createOtherTeam(app, 'pro');
    const first = await connectMcp(t, app, team.apiKey); // initialize + notifications/initialized: 2
    tick();
    const second = await connectMcp(t, app, team.apiKey); // the same credential: 4
    tick();
    let calls = 4;
    while (calls < 120) {
      const session = calls % 2 === 0 ? first : second;
      const res = await session.call('get_usage');
      t.equal(res.isError, false);
      calls += 1;
      tick();
      if (t.passing() === false) break;
    }
    t.equal(calls, 120);

    await t.rejects(first.call('get_usage'), { code: 429 }, 'the 121st request of the minute is refused');
    tick();
    const refused = await post(team.apiKey);
    t.equal(refused.status, 429);
    t.same(await refused.json(), { error: 'Rate limit exceeded. Please try again later.', code: 'rate_limit_exceeded' });
    t.equal(refused.headers.get('x-ratelimit-limit'), '120');
    t.equal(refused.headers.get('x-ratelimit-remaining'), '0');
    t.ok(Number(refused.headers.get('retry-after')) > 0 && Number(refused.headers.get('retry-after')) <= 60, `Retry-After ${refused.headers.get('retry-after')}`);
    tick();

    const otherKey = await app.request<{ token: string }>('POST', '/api-keys', { key: team.apiKey, body: { name: 'second', permission: 'full_access' } });
    const own = await post(otherKey.body.token);
    t.equal(own.status, 200, 'another key of the team counts on its own');
    t.equal(own.headers.get('x-ratelimit-remaining'), '119');

    app.clock.advance(60 * SECOND);
    const again = await first.call('get_usage');
    t.equal(again.isError, false, 'a new window once the minute is over');
    tick();

    const free = await createOtherTeam(app, 'free');
    const halved = await post(free.apiKey);
    t.equal(halved.status, 200);
    t.equal(halved.headers.get('x-ratelimit-limit'), '60', 'Free gets half');
  });
});

t.test('the scopes of a credential', async (t) => {
  const key = (permission: Principal['permission']): Principal => ({ teamId: 'tm_1', plan: 'pro', keyId: 'k1', permission, mode: 'live' });
  const scoped = (scopes: string[], permission: Principal['permission'] = 'full_access') => ({ ...key(permission), scopes }) as Principal;
  const cases: Array<[string, Principal, string[]]> = [
    ['a full_access key', key('full_access'), ['mcp:read', 'mcp:send', 'mcp:admin']],
    ['a sending_access key', key('sending_access'), ['mcp:read', 'mcp:send']],
    ['a token with mcp:read only', scoped(['mcp:read', 'email:send']), ['mcp:read']],
    ['a token with every mcp scope', scoped(['mcp:admin', 'mcp:send', 'mcp:read']), ['mcp:read', 'mcp:send', 'mcp:admin']],
    ['a token without mcp scopes', scoped(['domains:read']), []],
  ];
  for (const [what, principal, want] of cases) t.same([...mcpScopesOf(principal)], want, what);

  // A token's scopes are honoured by the server itself (the SDK client over an in-memory link).
  const app = await startTestApp(t);
  const connect = async (principal: Principal) => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createMcpServer(app.appliance.ctx, principal);
    await server.connect(serverSide);
    const client = new Client({ name: 'scoped', version: '1' });
    await client.connect(clientSide);
    t.teardown(() => client.close());
    return async (name: string, args: Record<string, unknown> = {}) => {
      const res = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
      return { isError: res.isError === true, json: JSON.parse(res.content[0]!.text) as Record<string, unknown> };
    };
  };
  const principal: Principal = { teamId: app.teamId, plan: 'enterprise', keyId: 'token-1', permission: 'full_access', mode: 'live' };
  const reader = await connect({ ...principal, scopes: ['mcp:read'] } as Principal);
  t.equal((await reader('list_domains')).isError, false, 'mcp:read reads');
  t.same((await reader('send_email', { from: 'a@acme.example', to: ['b@dest.example'], text: 'x' })).json, {
    error: 'Insufficient scope: this tool needs mcp:send (sends email)',
    code: 'forbidden',
  });
  t.equal((await reader('create_domain', { name: 'x.example' })).json.code, 'forbidden');
  const sender = await connect({ ...principal, scopes: ['mcp:send'] } as Principal);
  t.same((await sender('list_domains')).json, { error: 'Insufficient scope: this tool needs mcp:read (read-only)', code: 'forbidden' });
  t.same((await sender('send_email', { from: 'a@acme.example', to: ['b@dest.example'], text: 'x' })).json.code, 'unprocessable_entity', 'past the scope check: the send path answers');
});
