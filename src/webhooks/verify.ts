// For receivers of our webhooks: checks the `X-Service-Signature` header of a delivery (spec: Events,
// Signature). Self-contained (node:crypto only) so it can be copied into a receiver as is.
//
//   verifyWebhookSignature(rawBody, req.headers['x-service-signature'], process.env.WEBHOOK_SECRET)
//
// - `rawBody` must be the exact bytes received (not re-serialised JSON);
// - the header is a comma-separated list of `scheme=value` elements; any `sha256` element that matches is
//   enough (during a secret rotation there are two: the new secret's first); unknown schemes are ignored;
// - each comparison is constant-time, after a length check.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';

/** Lowercase hex HMAC-SHA256 of the body, keyed by the secret string (UTF-8). */
export function computeSignature(rawBody: string | Uint8Array, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

export function verifyWebhookSignature(rawBody: string | Uint8Array, header: string | string[] | undefined | null, secret: string): boolean {
  if (!header || !secret) return false;
  const value = Array.isArray(header) ? header.join(',') : header;
  const expected = Buffer.from(computeSignature(rawBody, secret), 'utf8');
  let ok = false;
  for (const element of value.split(',')) {
    const eq = element.indexOf('=');
    if (eq < 0) continue;
    if (element.slice(0, eq).trim().toLowerCase() !== 'sha256') continue; // unknown scheme: ignored
    const given = Buffer.from(element.slice(eq + 1).trim().toLowerCase(), 'utf8');
    // Keep looking after a match so the time taken does not depend on which element matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
