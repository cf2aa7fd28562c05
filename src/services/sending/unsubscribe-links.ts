// The mail side of unsubscribing: what an email's List-Unsubscribe links do when a person (or their mail
// client) follows them. The send path put the links there (emails.ts, with a token from the audience area);
// here a token is checked, the audience area makes the change (preferences.ts: the topic the email was sent
// for, or everything; the preference page's choices), and the email gets its `email.unsubscribed` event — in
// one transaction. Used by the public pages (http/routes/audience/unsubscribe.ts) and the MX (the mailto).
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { recordEvents } from '../../events/recorder.js';
import {
  preferencesOf,
  readUnsubscribeToken,
  savePreferences,
  unsubscribeByLink,
  type LinkTarget,
  type PreferenceChange,
  type PreferenceView,
} from '../audience/index.js';
import { emailEventRow, type EmailRow } from './email-records.js';

export type LinkAnswer<T> = { ok: true; value: T } | { ok: false; reason: 'invalid' | 'expired' };

/** What the preference page shows for a token (nothing changes). */
export async function linkPreferences(ctx: AppContext, token: string): Promise<LinkAnswer<PreferenceView>> {
  return ctx.db.transaction(async (trx) => {
    const check = await readUnsubscribeToken(ctx, trx, token);
    if (!check.ok) return check;
    return { ok: true, value: await preferencesOf(trx, check.target) };
  });
}

/**
 * Applies a change made through a link, in `trx`: `left` is whether the person left anything, in which case
 * the email the link came from (when it is still kept) records email.unsubscribed.
 */
async function withEmailEvent(trx: Queryable, at: Date, target: LinkTarget, change: (emailId: string | null) => Promise<boolean>): Promise<boolean> {
  const email = target.emailKey === null ? undefined : await trx<EmailRow>('emails').where({ id: target.emailKey, team_id: target.contact.team_id }).first();
  const left = await change(email?.public_id ?? null);
  if (left && email) await recordEvents(trx, [emailEventRow(email, at, 'email.unsubscribed', { recipient: target.contact.email, contact_id: target.contact.id, topic_id: target.topic?.id ?? null })]);
  return left;
}

/** The one-click POST (RFC 8058) and the mailto: leaves the email's topic, or everything. */
export async function unsubscribeThroughLink(ctx: AppContext, token: string): Promise<LinkAnswer<PreferenceView & { changed: boolean }>> {
  return ctx.db.transaction(async (trx) => {
    const check = await readUnsubscribeToken(ctx, trx, token);
    if (!check.ok) return check;
    const at = ctx.clock.now();
    const changed = await withEmailEvent(trx, at, check.target, (emailId) => unsubscribeByLink(trx, at, check.target, { emailId }));
    const fresh = await readUnsubscribeToken(ctx, trx, token);
    return { ok: true, value: { ...(await preferencesOf(trx, fresh.ok ? fresh.target : check.target)), changed } };
  });
}

/** The preference page's form. */
export async function savePreferencesThroughLink(ctx: AppContext, token: string, change: PreferenceChange): Promise<LinkAnswer<PreferenceView>> {
  return ctx.db.transaction(async (trx) => {
    const check = await readUnsubscribeToken(ctx, trx, token);
    if (!check.ok) return check;
    const at = ctx.clock.now();
    await withEmailEvent(trx, at, check.target, (emailId) => savePreferences(trx, at, check.target, change, { emailId }));
    const fresh = await readUnsubscribeToken(ctx, trx, token);
    return { ok: true, value: await preferencesOf(trx, fresh.ok ? fresh.target : check.target) };
  });
}

/**
 * A message to an unsubscribe address arrived at the MX (services/inbound/receiver.ts), in the receiver's
 * transaction: the token was checked at RCPT, and is checked again here (the contact may have gone since).
 * Answers whether the person left anything.
 */
export async function unsubscribeByMessage(ctx: AppContext, trx: Queryable, at: Date, token: string): Promise<boolean> {
  const check = await readUnsubscribeToken(ctx, trx, token);
  if (!check.ok) return false;
  return withEmailEvent(trx, at, check.target, (emailId) => unsubscribeByLink(trx, at, check.target, { emailId }));
}
