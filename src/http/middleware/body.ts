// Reads a JSON body with a hard size cap. A declared length over the cap is refused before any byte
// is read; a chunked body is cut off as soon as it passes the cap.
import type Koa from 'koa';
import { badRequest, payloadTooLarge } from '../../core/errors.js';

/** Spec, Limits: request bodies over 36 MB get 413. */
export const MAX_BODY_BYTES = 36 * 1024 * 1024;

const tooLarge = () => payloadTooLarge(`Request body exceeds the ${MAX_BODY_BYTES / 1024 / 1024} MB limit`);

async function readRaw(ctx: Koa.Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > limit) {
    ctx.set('Connection', 'close');
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      ctx.set('Connection', 'close');
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * Reads the request body as JSON: undefined when empty. Called by a route after authentication,
 * so an unauthenticated caller never makes the box read a large body.
 * The Content-Type is not insisted on: `curl -d '{…}'` sends a form type with a JSON body.
 */
export async function readJsonBody(ctx: Koa.Context, limit = MAX_BODY_BYTES): Promise<unknown> {
  const text = (await readRaw(ctx, limit)).toString('utf8').trim();
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest('Malformed JSON in request body');
  }
}
