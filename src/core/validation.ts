// Input validation with zod, with error messages in the spec's words:
//   "Request body is missing required fields: name, permission"
//   "to.0: must be a valid email address"
import { z } from 'zod';
import { badRequest } from './errors.js';
import { normaliseAddress } from './address.js';

type Input = unknown;

function valueAt(input: Input, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

const pathName = (path: readonly PropertyKey[]) => path.map(String).join('.');

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  date: 'a date',
};
const mustBe = (expected: string) => `must be ${TYPE_WORDS[expected] ?? `of type ${expected}`}`;

/** Turns zod issues into one message in the spec's patterns. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], input: Input, what: 'body' | 'query'): string {
  const missing = issues
    .filter((i) => i.code !== 'custom' && i.path.length > 0 && valueAt(input, i.path) === undefined)
    .map((i) => pathName(i.path));
  if (missing.length > 0) {
    const unique = [...new Set(missing)];
    return what === 'body'
      ? `Request body is missing required fields: ${unique.join(', ')}`
      : `Missing required query parameters: ${unique.join(', ')}`;
  }
  const first = issues[0];
  if (!first) return 'Invalid request';
  // A record's key that failed its own schema: that schema's message, not zod's "Invalid key in record".
  let message = (first.code === 'invalid_key' && first.issues[0]?.message) || first.message;
  // A wrong type where the schema gave no message of its own: ours, not zod's "Invalid input: expected …".
  if (first.code === 'invalid_type' && message.startsWith('Invalid input')) {
    message = what === 'query' && Array.isArray(valueAt(input, first.path)) ? 'must be given once' : mustBe(first.expected);
  }
  if (first.path.length === 0) return message;
  return what === 'body' ? `${pathName(first.path)}: ${message}` : `Invalid query parameter '${pathName(first.path)}': ${message}`;
}

/**
 * Validates a JSON body; anything but an object is refused before the schema runs. An empty body (undefined)
 * is `{}`; a JSON `null` is not an object.
 */
export function parseBody<S extends z.ZodType>(schema: S, input: Input): z.output<S> {
  if (input === undefined) input = {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw badRequest('Request body must be a JSON object');
  const result = schema.safeParse(input);
  if (!result.success) throw badRequest(describeIssues(result.error.issues, input, 'body'));
  return result.data;
}

export function parseQuery<S extends z.ZodType>(schema: S, input: Record<string, unknown>): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw badRequest(describeIssues(result.error.issues, input, 'query'));
  return result.data;
}

// Shared field rules.
/**
 * An address as the send path and the aliases take it: an internationalised domain (`bücher.example`) is
 * accepted and written in its ASCII form (`xn--bcher-kva.example`), as domain names are everywhere on the box.
 */
export const emailAddress = () =>
  z
    .string({ error: 'must be a valid email address' })
    .trim()
    .transform((v, zctx) => {
      const normal = normaliseAddress(v);
      if (normal) return normal;
      zctx.addIssue({ code: 'custom', message: 'must be a valid email address' });
      return z.NEVER;
    });
