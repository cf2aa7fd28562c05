// OAuth 2.0 scopes (spec: Authentication 6): the names, and each in plain words for the consent page.
export const SCOPES = [
  'email:send',
  'email:read',
  'domains:manage',
  'domains:read',
  'mailboxes:manage',
  'api-keys:manage',
  'mcp:read',
  'mcp:send',
  'mcp:admin',
] as const;
export type Scope = (typeof SCOPES)[number];

/** What the consent page tells the person each scope lets the app do. */
export const SCOPE_WORDS: Record<Scope, string> = {
  'email:send': 'Send email from your domains',
  'email:read': 'Read your email history, analytics and suppressions',
  'domains:manage': 'Add, verify and delete your sending domains',
  'domains:read': 'See your domains and their verification status',
  'mailboxes:manage': 'Create and manage mailboxes',
  'api-keys:manage': 'Create, rotate and revoke API keys',
  'mcp:read': 'Use read-only tools through MCP (AI agents)',
  'mcp:send': 'Send email through MCP tools (AI agents)',
  'mcp:admin': 'Change your account through MCP tools (AI agents)',
};

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/** A space-separated scope string (RFC 6749 3.3) → its scopes, or null when one is unknown. Duplicates dropped, order kept. */
export function parseScope(text: string): Scope[] | null {
  const out: Scope[] = [];
  for (const s of text.split(' ').filter(Boolean)) {
    if (!isScope(s)) return null;
    if (!out.includes(s)) out.push(s);
  }
  return out;
}
