// One way to declare an MCP tool, beside the REST route that calls the same service:
//   defineTool({ name, description, scope, input, handler(ctx, principal, input) })
// The registry (tools/index.ts) lists every area's tools; server.ts lists them to clients, checks the scope and
// the key's permission, validates the arguments with the API's own messages and turns errors into tool errors.
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { MAX_PAGE, parsePaging, type PageRequest } from '../core/paging.js';
import type { Principal } from '../services/platform/index.js';
import type { McpScope } from './scopes.js';

export interface ToolDef<S extends z.ZodType> {
  /** snake_case, verb first: `send_email`, `list_domains`. */
  name: string;
  /** A short human title (clients show it). */
  title: string;
  /** What the tool does and when to call it, in words an agent can act on. */
  description: string;
  /** mcp:read for reads, mcp:send for what sends (and acts on an email sent), mcp:admin for other changes. */
  scope: McpScope;
  /**
   * The key permission the matching REST route declares: `sending_access` lets every key call it (acting on its
   * own emails where the service says so); `full_access` (the default) refuses sending_access keys with 403.
   */
  permission?: 'sending_access' | 'full_access';
  /** A zod object: validated with the API's messages, listed to clients as JSON Schema. */
  input: S;
  /** Returns the tool's result (a JSON object, as the REST route answers). */
  handler(ctx: AppContext, principal: Principal, input: z.output<S>): Promise<unknown>;
}

/** Erased form kept in the registry. */
export interface Tool {
  name: string;
  title: string;
  description: string;
  scope: McpScope;
  permission?: 'sending_access' | 'full_access';
  input: z.ZodType;
  handler(ctx: AppContext, principal: Principal, input: unknown): Promise<unknown>;
}

export function defineTool<S extends z.ZodType>(def: ToolDef<S>): Tool {
  return def as unknown as Tool;
}

// ---- Shared inputs ----

const int = (what: string, min: number, max: number) =>
  z
    .number({ error: `must be an integer between ${min} and ${max}` })
    .int(`must be an integer between ${min} and ${max}`)
    .min(min, `must be an integer between ${min} and ${max}`)
    .max(max, `must be an integer between ${min} and ${max}`)
    .describe(what);

/** Form A paging as tool arguments (page from 1, per_page 1..100, default 20). */
export const PAGING = {
  page: int('page number, from 1 (default 1)', 1, MAX_PAGE).optional(),
  per_page: int('items per page, 1..100 (default 20)', 1, 100).optional(),
};

/** The paging of a tool's arguments, through the API's own rules. */
export function pageOf(input: { page?: number | undefined; per_page?: number | undefined }, defaultPerPage?: number): PageRequest {
  const raw: Record<string, string> = {};
  if (input.page !== undefined) raw.page = String(input.page);
  if (input.per_page !== undefined) raw.per_page = String(input.per_page);
  return parsePaging(raw, defaultPerPage);
}

/** An id argument: a non-empty string. */
export const idArg = (what: string) => z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200, 'must be at most 200 characters').describe(what);
