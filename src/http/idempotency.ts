import type Koa from 'koa';
import { badRequest } from '../core/errors.js';
import { MAX_IDEMPOTENCY_KEY } from './schemas/sending/emails.js';

/**
 * A single send's idempotency key: the body's `idempotency_key`, else its `Idempotency-Key` header, held to
 * the body field's rule (1..256 characters; a header sent empty is refused, not ignored).
 */
export function idempotencyKeyOf(koa: Koa.Context, bodyKey: string | undefined): string | undefined {
  if (bodyKey !== undefined) return bodyKey;
  const value = koa.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest('Idempotency-Key: must not be empty');
  if (value.length > MAX_IDEMPOTENCY_KEY) throw badRequest(`Idempotency-Key: must be at most ${MAX_IDEMPOTENCY_KEY} characters`);
  return value;
}
