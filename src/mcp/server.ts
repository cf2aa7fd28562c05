// The MCP server of one request: the tools of tools/index.ts and the domains' DNS setup as resources, acting
// for one credential. Built on the SDK's low-level Server so that the house keeps three things in its hands:
// the scope and permission check, validation with the API's own messages (core/validation.ts), and errors as
// tool errors carrying the API's { error, code } (an unexpected error is logged and answered internal_error:
// never a stack trace, never an internal message).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema, type CallToolResult, ErrorCode, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema, McpError, ReadResourceRequestSchema, type Tool as ToolListing
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { AppError, forbidden } from '../core/errors.js';
import { parseBody } from '../core/validation.js';
import type { Principal } from '../services/platform/index.js';
import { DNS_RESOURCE_TEMPLATE, dnsResources, readDnsResource } from './resources.js';
import { type McpScope, mcpScopesOf, SCOPE_WORDS } from './scopes.js';
import type { Tool } from './tool.js';
import { allTools } from './tools/index.js';

export const MCP_SERVER_NAME = 'mailbox-appliance';

const INSTRUCTIONS = [
  'Tools of a self-hosted mail server, acting for the team of the credential you connected with.',
  'Send with send_email from an address on a verified domain (list_domains; a new domain needs the records of get_domain_dns_records published, then verify_domain).',
  'Follow an email with get_email (status and timeline). Read received mail with list_inbound and get_inbound, answer with reply_to_inbound.',
  'A tool that fails answers isError with JSON { "error": message, "code": stable code } — the same codes as the HTTP API (invalid_request, forbidden, not_found, conflict, unprocessable_entity, rate_limit_exceeded, …).',
].join(' ');

type Json = Record<string, unknown>;

/** The refusal of a tool the credential may not call: its scope first, then the key's permission. */
export function refusalOf(tool: Pick<Tool, 'scope' | 'permission'>, principal: Principal, scopes: ReadonlySet<McpScope>): AppError | null {
  if (!scopes.has(tool.scope)) return forbidden(`Insufficient scope: this tool needs ${tool.scope} (${SCOPE_WORDS[tool.scope]})`);
  if ((tool.permission ?? 'full_access') === 'full_access' && principal.permission !== 'full_access') return forbidden();
  return null;
}

/**
 * A tool's arguments as JSON Schema (2020-12, MCP's dialect), with the descriptions the schemas carry. A schema
 * with an id of its own (`SendEmail`) comes out as a `$ref` into `$defs`; MCP wants the object at the top.
 */
function inputSchemaOf(tool: Tool): ToolListing['inputSchema'] {
  const { $schema: _dialect, $ref, $defs, ...rest } = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Json;
  const defs = { ...($defs as Record<string, Json> | undefined) };
  let top: Json = rest;
  if (typeof $ref === 'string' && $ref.startsWith('#/$defs/')) {
    const name = $ref.slice('#/$defs/'.length);
    top = { ...defs[name], ...rest };
    if (!JSON.stringify({ top, defs: { ...defs, [name]: undefined } }).includes(`"${$ref}"`)) delete defs[name];
  }
  return { ...top, ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}) } as ToolListing['inputSchema'];
}

/** Tools as clients see them (derived from the declarations alone, so made once). */
const TOOL_LISTING: readonly ToolListing[] = allTools.map((tool) => ({
  name: tool.name,
  title: tool.title,
  description: `${tool.description} Needs ${tool.scope} (${(tool.permission ?? 'full_access') === 'full_access' ? 'a full_access key' : 'any key'}).`,
  inputSchema: inputSchemaOf(tool),
  annotations: {
    title: tool.title,
    readOnlyHint: tool.scope === 'mcp:read',
    destructiveHint: false,
    openWorldHint: tool.scope === 'mcp:send',
  },
}));

const TOOLS = new Map(allTools.map((t) => [t.name, t]));

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function toolResult(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value ?? null) }], ...(isObject(value) ? { structuredContent: value } : {}) };
}

/** An error as the API answers it: `{ error, code }` (and `retry_after` seconds on a rate limit). */
export function errorBody(app: AppContext, err: unknown, what: Json): Json {
  if (err instanceof AppError) {
    const retry = err.headers['Retry-After'];
    return { error: err.message, code: err.code, ...(retry ? { retry_after: Number(retry) } : {}) };
  }
  app.log.error({ err, ...what }, 'MCP request failed');
  return { error: 'Internal server error', code: 'internal_error' };
}

function toolError(body: Json): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
}

/** A fresh server for one request (the endpoint is stateless: every POST carries its credential). */
export function createMcpServer(app: AppContext, principal: Principal): Server {
  const scopes = mcpScopesOf(principal);
  const server = new Server(
    { name: MCP_SERVER_NAME, title: 'Mail appliance', version: app.version },
    { capabilities: { tools: { listChanged: false }, resources: { listChanged: false } }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...TOOL_LISTING] }));

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = TOOLS.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    try {
      const refusal = refusalOf(tool, principal, scopes);
      if (refusal) throw refusal;
      const input = parseBody(tool.input, request.params.arguments ?? {});
      return toolResult(await tool.handler(app, principal, input));
    } catch (err) {
      return toolError(errorBody(app, err, { tool: tool.name, teamId: principal.teamId }));
    }
  });

  // Resources: each domain's DNS setup (the records to publish), for a credential that may read domains.
  const dnsReader = { scope: 'mcp:read', permission: 'full_access' } as const;
  const resourceCall = async <T>(uri: string | null, read: () => Promise<T>): Promise<T> => {
    try {
      const refusal = refusalOf(dnsReader, principal, scopes);
      if (refusal) throw refusal;
      return await read();
    } catch (err) {
      const body = errorBody(app, err, { resource: uri, teamId: principal.teamId });
      throw new McpError(body.code === 'not_found' ? ErrorCode.InvalidParams : ErrorCode.InvalidRequest, String(body.error), body);
    }
  };
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [DNS_RESOURCE_TEMPLATE] }));
  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    if (refusalOf(dnsReader, principal, scopes)) return { resources: [] };
    return resourceCall(null, async () => ({ resources: await dnsResources(app, principal.teamId) }));
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request) =>
    resourceCall(request.params.uri, async () => ({ contents: [await readDnsResource(app, principal.teamId, request.params.uri)] })),
  );
  return server;
}
