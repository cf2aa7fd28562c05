// POST /mcp: the Model Context Protocol over Streamable HTTP (the SDK's transport, stateless, JSON answers).
// A thin adapter: the route authenticates the credential as every route does (API key, or an OAuth token when
// that is on), counts the request on the credential's one MCP counter (limits/table.ts: ANY /mcp, 120/min),
// then a fresh MCP server answers the request's JSON-RPC message(s) by calling the services. GET and DELETE
// /mcp (a standalone event stream, a session's end) are 405: the endpoint keeps no session, as the spec allows.
import type Koa from 'koa';
import type { AppContext } from '../context.js';
import { badRequest } from '../core/errors.js';
import { readJsonBody } from '../http/middleware/body.js';
import { defineRoute } from '../http/route.js';
import { publicBaseUrl } from '../services/platform/index.js';
import type { Principal } from '../services/platform/index.js';

/**
 * The MCP SDK and the tools' server, loaded at the first POST /mcp (~6 MiB of code and heap a box that is never
 * asked over MCP does not hold: docs/PERFORMANCE.md "Memory").
 */
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), typeof import('./server.js')]> | undefined;
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'), import('./server.js')]));

/** RFC 9728: where an MCP client finds the authorization server (served by the OAuth server when it is on): the document of /mcp, whose `resource` is the /mcp URL a client checks it against (RFC 9728 3.3). */
export const resourceMetadataUrl = (app: AppContext) => `${publicBaseUrl(app)}/.well-known/oauth-protected-resource/mcp`;

/** The request headers the transport reads. */
const PASSED_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id', 'user-agent'];

/** Answers one POST /mcp for an authenticated principal: the transport's answer, written by Koa in one response. */
export async function serveMcp(app: AppContext, principal: Principal, koa: Koa.Context): Promise<void> {
  const body = await readJsonBody(koa);
  // One message per request, so that the one counter counts every call (MCP 2025-06-18 has no batches).
  if (Array.isArray(body)) throw badRequest('JSON-RPC batches are not accepted on /mcp: send one message per request');
  const [{ WebStandardStreamableHTTPServerTransport }, { createMcpServer }] = await loadSdk();
  const server = createMcpServer(app, principal);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const name of PASSED_HEADERS) {
      const value = koa.get(name);
      if (value) headers.set(name, value);
    }
    const request = new Request(new URL(koa.originalUrl, publicBaseUrl(app)), { method: 'POST', headers });
    const response = await transport.handleRequest(request, { parsedBody: body });
    koa.status = response.status;
    response.headers.forEach((value, name) => koa.set(name, value));
    koa.body = await response.text();
  } finally {
    await server.close();
  }
}

export const mcpRoutes = [
  defineRoute({
    method: 'POST',
    path: '/mcp',
    summary:
      'The MCP endpoint (Model Context Protocol, Streamable HTTP, stateless): JSON-RPC requests in, JSON answers out; tools and resources act for the credential (docs/API.md, MCP)',
    tag: 'MCP',
    access: 'sending_access',
    // No `body`: the JSON-RPC message (or batch) is read here and checked by the transport, not as a JSON object.
    challenge: (app) => `Bearer resource_metadata="${resourceMetadataUrl(app)}"`,
    async handle({ app, principal, koa }) {
      await serveMcp(app, principal, koa);
      return undefined;
    },
  }),
];
