// Mail store errors → tagged NO with a response code (RFC 5530), in one place. Anything unexpected is
// rethrown; the connection logs it and answers a generic NO without echoing internals.
import { MailStoreError } from '../../mailstore/types.js';
import { no, type Result } from './types.js';

const CODES: Record<MailStoreError['code'], string> = {
  not_found: 'NONEXISTENT',
  exists: 'ALREADYEXISTS',
  quota_exceeded: 'OVERQUOTA',
  invalid: 'CANNOT',
  forbidden: 'NOPERM',
};

export function storeFailure(err: unknown): Result {
  if (err instanceof MailStoreError) return no(err.message, CODES[err.code]);
  throw err;
}

/** Runs a store call; a MailStoreError becomes a NO result. */
export async function attempt<T>(fn: () => Promise<T>): Promise<T | Result> {
  try {
    return await fn();
  } catch (err) {
    return storeFailure(err);
  }
}

export function isResult(v: unknown): v is Result {
  return typeof v === 'object' && v !== null && 'status' in v && 'text' in v && ((v as Result).status === 'NO' || (v as Result).status === 'BAD' || (v as Result).status === 'OK');
}
