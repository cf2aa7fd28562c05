// What a credential may do on /mcp (spec: Authentication 6): three scopes, one function that reads them.
// An API key's permission maps onto them: full_access → read + send + admin; sending_access → read + send, and
// the tools it may call are those whose REST route a sending_access key may call (its own emails: send, read,
// cancel, reschedule). A credential that carries scopes of its own (an OAuth `pat_` token) is held to them.
import type { Principal } from '../services/platform/index.js';

export const MCP_SCOPES = ['mcp:read', 'mcp:send', 'mcp:admin'] as const;
export type McpScope = (typeof MCP_SCOPES)[number];

/** A Principal as an OAuth token gives it: the scopes it was granted (an API key carries none). */
type MaybeScoped = Principal & { scopes?: readonly string[] | null };

const OF_PERMISSION: Record<Principal['permission'], readonly McpScope[]> = {
  full_access: MCP_SCOPES,
  sending_access: ['mcp:read', 'mcp:send'],
};

/** The MCP scopes of a credential: a token's own `mcp:*` scopes, else those of the key's permission. */
export function mcpScopesOf(principal: Principal): ReadonlySet<McpScope> {
  const granted = (principal as MaybeScoped).scopes;
  if (granted) return new Set(MCP_SCOPES.filter((s) => granted.includes(s)));
  return new Set(OF_PERMISSION[principal.permission]);
}

/** In plain words, for a tool's description and the refusal. */
export const SCOPE_WORDS: Record<McpScope, string> = {
  'mcp:read': 'read-only',
  'mcp:send': 'sends email',
  'mcp:admin': 'changes account state',
};
