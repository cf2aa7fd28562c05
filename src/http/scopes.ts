// Scopes → endpoints: the one table (spec: Authentication 6 names the scopes, 10 leaves the mapping open).
// A route needs, from an OAuth access token, the scope its row names for its method: `read` for GET, `write`
// for every other method. A list means any one of them; null means no scope grants it (an API key only: account
// administration the spec's scopes do not cover). A route may state its own `scope` (route.ts), which wins.
// API keys are not scoped: their permission (`access`) decides, as before.
import type { Scope } from '../services/platform/index.js';

export type ScopeNeed = Scope | readonly Scope[] | null;

/** First path segment → the scope a GET needs, and the scope any other method needs. */
export const SCOPE_TABLE: Record<string, { read: ScopeNeed; write: ScopeNeed }> = {
  '/emails': { read: 'email:read', write: 'email:send' },
  '/events': { read: 'email:read', write: null },
  '/usage': { read: 'email:read', write: null },
  '/suppressions': { read: 'email:read', write: null },
  '/inbound': { read: 'email:read', write: 'email:send' },
  '/domains': { read: 'domains:read', write: 'domains:manage' },
  '/mailboxes': { read: 'mailboxes:manage', write: 'mailboxes:manage' },
  '/api-keys': { read: 'api-keys:manage', write: 'api-keys:manage' },
  // The MCP endpoint: any MCP scope opens it; each tool then asks for its own (mcp:read, mcp:send, mcp:admin).
  '/mcp': { read: ['mcp:read', 'mcp:send', 'mcp:admin'], write: ['mcp:read', 'mcp:send', 'mcp:admin'] },
  '/webhooks': { read: null, write: null },
  '/contacts': { read: null, write: null },
  '/contact-properties': { read: null, write: null },
  '/segments': { read: null, write: null },
  '/subscription-topics': { read: null, write: null },
  '/templates': { read: null, write: null },
  '/email-validations': { read: null, write: null },
};

/** The scope a route needs from an OAuth token; a path whose segment has no row needs an API key. */
export function scopeOf(route: { method: string; path: string; scope?: ScopeNeed }): ScopeNeed {
  if (route.scope !== undefined) return route.scope;
  const segment = `/${route.path.split('/')[1] ?? ''}`;
  const row = SCOPE_TABLE[segment];
  if (!row) return null;
  return route.method === 'GET' ? row.read : row.write;
}

export const scopeList = (need: ScopeNeed): readonly Scope[] => (need === null ? [] : typeof need === 'string' ? [need] : need);
