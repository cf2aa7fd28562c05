// The token an open pixel's or a tracked link's URL carries: which email, which of its recipients and which of
// its links, signed so that it can be neither forged nor altered to name another email or another link.
//
// 30 bytes, lower-case base32 (48 characters, no padding; any case reads the same):
//   version (1) · kind (1: 1 open, 2 click) · email key (6) · recipient key (6, 0: not told apart) · link (2) · MAC (14)
// MAC: HMAC-SHA256 under a key derived from the box's master key (SecretBox.deriveKey('tracking-links')),
// truncated to 112 bits, over the first 16 bytes. The keys are row keys (emails.id, email_recipients.id), both
// AUTOINCREMENT, so never reused: a token names one email for ever, and once that email is gone (retention,
// its team deleted) it names nothing. A token carries no URL: a click answers a redirect to the link the
// stored email has at that index (tracking.ts), so no token can send anyone anywhere else.
//
// The recipient: delivery composes and signs one message per email (delivery.ts), so the URLs are the same
// for every recipient of an email. An email with one recipient (a broadcast's, every transactional send to one
// person) names it; an email with several names none (0), and its hits are the email's, not a person's.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { base32Decode, base32Encode } from '../../core/base32.js';

export type HitKind = 'open' | 'click';

export interface TrackingClaims {
  kind: HitKind;
  /** emails.id */
  emailKey: number;
  /** email_recipients.id, or 0 when the email has several recipients (not told apart). */
  recipientKey: number;
  /** The link's index among the html's tracked links (tracking-html.ts); 0 for an open. */
  link: number;
}

const VERSION = 1;
const SIGNED_BYTES = 16;
const MAC_BYTES = 14;
const TOKEN_BYTES = SIGNED_BYTES + MAC_BYTES;
/** 30 bytes in base32: 48 characters. */
export const TRACKING_TOKEN_LENGTH = (TOKEN_BYTES * 8) / 5;
/** The largest link index a token can carry; links past it are left as they are. */
export const MAX_TRACKED_LINK = 0xffff;
const KINDS: Record<HitKind, number> = { open: 1, click: 2 };

const keys = new WeakMap<AppContext, Buffer>();
function keyOf(ctx: AppContext): Buffer {
  let key = keys.get(ctx);
  if (!key) keys.set(ctx, (key = ctx.secrets.deriveKey('tracking-links')));
  return key;
}

const mac = (ctx: AppContext, signed: Uint8Array) => createHmac('sha256', keyOf(ctx)).update(signed).digest().subarray(0, MAC_BYTES);

export function signTrackingToken(ctx: AppContext, claims: TrackingClaims): string {
  const b = Buffer.alloc(TOKEN_BYTES);
  b.writeUInt8(VERSION, 0);
  b.writeUInt8(KINDS[claims.kind], 1);
  b.writeUIntBE(claims.emailKey, 2, 6);
  b.writeUIntBE(claims.recipientKey, 8, 6);
  b.writeUInt16BE(claims.link, 14);
  mac(ctx, b.subarray(0, SIGNED_BYTES)).copy(b, SIGNED_BYTES);
  return base32Encode(b);
}

/**
 * What a token names, or null: not a token of this box, altered, or of another kind than `kind` (an open's
 * token is no click's). Pure and never throws: nothing is read for a token that fails.
 */
export function readTrackingToken(ctx: AppContext, kind: HitKind, token: string): TrackingClaims | null {
  if (typeof token !== 'string' || token.length !== TRACKING_TOKEN_LENGTH) return null;
  const b = base32Decode(token);
  if (!b || b.length !== TOKEN_BYTES || b.readUInt8(0) !== VERSION || b.readUInt8(1) !== KINDS[kind]) return null;
  if (!timingSafeEqual(mac(ctx, b.subarray(0, SIGNED_BYTES)), b.subarray(SIGNED_BYTES))) return null;
  const emailKey = b.readUIntBE(2, 6);
  if (emailKey === 0) return null;
  return { kind, emailKey, recipientKey: b.readUIntBE(8, 6), link: b.readUInt16BE(14) };
}
