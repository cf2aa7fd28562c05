// Signing of webhook requests (spec: Events, Signature): one `sha256=<hex>` element per secret in force,
// the newest first, over the exact body bytes sent.
import { computeSignature } from '../webhooks/verify.js';

export const SIGNATURE_HEADER = 'X-Service-Signature';
/** The delivery's id: the same on every attempt and replay of a delivery, so a receiver can de-duplicate. */
export const WEBHOOK_ID_HEADER = 'X-Service-Webhook-Id';
/** Unix time (seconds) of this attempt. */
export const TIMESTAMP_HEADER = 'X-Service-Timestamp';
export const EVENT_HEADER = 'X-Service-Event';

export function signatureHeader(body: string, secrets: string[]): string {
  return secrets.map((s) => `sha256=${computeSignature(body, s)}`).join(',');
}
