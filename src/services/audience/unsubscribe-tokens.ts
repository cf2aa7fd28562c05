// The token an email's unsubscribe links carry (RFC 2369 List-Unsubscribe, RFC 8058 one-click): who may be
// unsubscribed from what, signed so that it can be neither forged nor guessed, and short enough to be the local
// part of an address (`unsub-<token>@<MAIL_HOSTNAME>`, at most 64 octets: RFC 5321 §4.5.3.1.1).
//
// 35 bytes, lower-case base32 (56 characters, case-insensitive like a local part):
//   version (1) · contact key (5) · topic key (5, 0: none) · email key (6, 0: none) · day issued (2) · MAC (16)
// MAC: HMAC-SHA256 under a key derived from the box's master key (SecretBox.deriveKey), truncated to 128 bits,
// over the first 19 bytes and the contact's and topic's public ids. Those ids are not in the token but bind
// it: a contact or topic deleted and its row key reused later makes the old token fail, not name the new one.
// A token is good for TOKEN_LIFETIME_DAYS after the day its email was accepted.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { base32Decode, base32Encode } from '../../core/base32.js';
import { DAY } from '../../core/clock.js';
import { publicBaseUrl } from '../platform/index.js';
import type { ContactRow } from './contacts.js';
import type { TopicRow } from './topics.js';

export const TOKEN_LIFETIME_DAYS = 365;
/** Local part of the mailto address: `unsub-<token>`. */
export const UNSUBSCRIBE_LOCAL_PREFIX = 'unsub-';
/** The public page and one-click address: `<public URL>/unsubscribe/<token>`. */
export const UNSUBSCRIBE_PATH = '/unsubscribe';

const VERSION = 1;
const SIGNED_BYTES = 19;
const MAC_BYTES = 16;
const TOKEN_BYTES = SIGNED_BYTES + MAC_BYTES;

/** What a token names, as issued by the send path. */
export interface LinkClaims {
  contact: Pick<ContactRow, 'pk' | 'id'>;
  topic: Pick<TopicRow, 'pk' | 'id'> | null;
  /** The email's row key (emails.id), or null. */
  emailKey: number | null;
}

/** What a valid token names now. */
export interface LinkTarget {
  contact: ContactRow;
  topic: TopicRow | null;
  emailKey: number | null;
}

export type TokenCheck = { ok: true; target: LinkTarget } | { ok: false; reason: 'invalid' | 'expired' };

const keys = new WeakMap<AppContext, Buffer>();
function keyOf(ctx: AppContext): Buffer {
  let key = keys.get(ctx);
  if (!key) keys.set(ctx, (key = ctx.secrets.deriveKey('unsubscribe-links')));
  return key;
}

function mac(ctx: AppContext, signed: Uint8Array, contactId: string, topicId: string | null): Buffer {
  return createHmac('sha256', keyOf(ctx)).update(signed).update(`\0${contactId}\0${topicId ?? ''}`).digest().subarray(0, MAC_BYTES);
}

export function signUnsubscribeToken(ctx: AppContext, claims: LinkClaims, at: Date): string {
  const b = Buffer.alloc(TOKEN_BYTES);
  b.writeUInt8(VERSION, 0);
  b.writeUIntBE(claims.contact.pk, 1, 5);
  b.writeUIntBE(claims.topic?.pk ?? 0, 6, 5);
  b.writeUIntBE(claims.emailKey ?? 0, 11, 6);
  b.writeUInt16BE(Math.floor(at.getTime() / DAY), 17);
  mac(ctx, b.subarray(0, SIGNED_BYTES), claims.contact.id, claims.topic?.id ?? null).copy(b, SIGNED_BYTES);
  return base32Encode(b);
}

/**
 * Checks a token and loads what it names. `invalid`: not a token, altered, or naming a contact or topic that
 * no longer exists; `expired`: authentic but older than TOKEN_LIFETIME_DAYS. Never throws for bad input.
 */
export async function readUnsubscribeToken(ctx: AppContext, q: Queryable, token: string): Promise<TokenCheck> {
  const b = token.length === Math.ceil((TOKEN_BYTES * 8) / 5) ? base32Decode(token) : null;
  if (!b || b.length !== TOKEN_BYTES || b.readUInt8(0) !== VERSION) return { ok: false, reason: 'invalid' };
  const contactPk = b.readUIntBE(1, 5);
  const topicPk = b.readUIntBE(6, 5);
  const emailKey = b.readUIntBE(11, 6);
  const day = b.readUInt16BE(17);
  const [contact, topic] = await Promise.all([
    q<ContactRow>('contacts').where('pk', contactPk).first(),
    topicPk === 0 ? Promise.resolve(undefined) : q<TopicRow>('topics').where('pk', topicPk).first(),
  ]);
  if (!contact || (topicPk !== 0 && (!topic || topic.team_id !== contact.team_id))) return { ok: false, reason: 'invalid' };
  const expected = mac(ctx, b.subarray(0, SIGNED_BYTES), contact.id, topic?.id ?? null);
  if (!timingSafeEqual(expected, b.subarray(SIGNED_BYTES))) return { ok: false, reason: 'invalid' };
  if (Math.floor(ctx.clock.now().getTime() / DAY) - day > TOKEN_LIFETIME_DAYS) return { ok: false, reason: 'expired' };
  return { ok: true, target: { contact, topic: topic ?? null, emailKey: emailKey === 0 ? null : emailKey } };
}


/** The public page of a token (the preference page; a POST there is the one-click unsubscribe). */
export const unsubscribeUrl = (ctx: AppContext, token: string) => `${publicBaseUrl(ctx)}${UNSUBSCRIBE_PATH}/${token}`;

/**
 * The headers an email carries for the token: List-Unsubscribe with the https URL first (RFC 8058 §3.1: the
 * one-click POST goes there) and the mailto second (RFC 2369), and List-Unsubscribe-Post.
 */
export function unsubscribeHeaders(ctx: AppContext, token: string): Record<string, string> {
  const url = unsubscribeUrl(ctx, token);
  const mailto = `mailto:${UNSUBSCRIBE_LOCAL_PREFIX}${token}@${ctx.config.hostname}?subject=unsubscribe`;
  return { 'List-Unsubscribe': `<${url}>, <${mailto}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };
}

/** The token of an unsubscribe address (`unsub-<token>@<MAIL_HOSTNAME>`, any case), or null for any other address. */
export function tokenOfAddress(ctx: AppContext, address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at <= 0 || address.slice(at + 1).toLowerCase() !== ctx.config.hostname.toLowerCase()) return null;
  const local = address.slice(0, at).toLowerCase();
  return local.startsWith(UNSUBSCRIBE_LOCAL_PREFIX) ? local.slice(UNSUBSCRIBE_LOCAL_PREFIX.length) : null;
}
