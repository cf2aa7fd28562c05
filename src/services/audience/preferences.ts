// What a person may do from an email's unsubscribe links (unsubscribe-tokens.ts), without an account: leave
// the topic the email was sent for (or everything, when it was sent for none), see the team's public topics
// and change where they stand, unsubscribe from everything, or subscribe again. Each change runs in the
// caller's transaction and records its contact.* events there; the send path adds email.unsubscribed.
import type { Queryable } from '../../db/index.js';
import { recordEvent } from '../../events/recorder.js';
import { contactEventData, toContact, type ContactRow } from './contacts.js';
import { recordChoice, subscriptionsOf, type ChangeSource, type TopicRow } from './topics.js';
import type { LinkTarget } from './unsubscribe-tokens.js';

export interface PreferenceView {
  email: string;
  /** Unsubscribed from everything. */
  unsubscribed: boolean;
  /** The topic the email was sent for, when it was (even a private one: the person got its mail). */
  topic: { id: string; name: string } | null;
  /** The team's public topics, newest first, with where the person stands. */
  topics: Array<{ id: string; name: string; description: string | null; subscribed: boolean }>;
}

export async function preferencesOf(q: Queryable, target: LinkTarget): Promise<PreferenceView> {
  const subs = await subscriptionsOf(q, target.contact, true);
  return {
    email: target.contact.email,
    unsubscribed: Boolean(target.contact.unsubscribed),
    topic: target.topic ? { id: target.topic.id, name: target.topic.name } : null,
    topics: subs.map((s) => ({ id: s.topic_id, name: s.topic_name, description: s.description, subscribed: s.subscribed })),
  };
}

/** Sets the contact's global flag; records contact.updated, and contact.unsubscribed when it leaves. Answers whether it changed. */
async function setUnsubscribed(trx: Queryable, at: Date, contact: ContactRow, unsubscribed: boolean, source: ChangeSource): Promise<boolean> {
  if (Boolean(contact.unsubscribed) === unsubscribed) return false;
  const next = { ...contact, unsubscribed: unsubscribed ? 1 : 0, updated_at: at.toISOString() };
  await trx('contacts').where('pk', contact.pk).update({ unsubscribed: next.unsubscribed, updated_at: next.updated_at });
  await recordEvent(trx, at, contact.team_id, 'contact.updated', contactEventData(toContact(next)));
  if (unsubscribed) await recordEvent(trx, at, contact.team_id, 'contact.unsubscribed', { contact_id: contact.id, email: contact.email, topic_id: null, email_id: source.emailId });
  return true;
}

/**
 * The one-click unsubscribe (RFC 8058) and the mailto: from the topic the email was sent for, else from
 * everything. Answers whether anything changed (a second click changes nothing).
 */
export async function unsubscribeByLink(trx: Queryable, at: Date, target: LinkTarget, source: ChangeSource): Promise<boolean> {
  if (target.topic) return recordChoice(trx, at, target.contact, target.topic, false, source);
  return setUnsubscribed(trx, at, target.contact, true, source);
}

export type PreferenceChange =
  /** The public topics ticked on the page (every public topic not named is left). */
  | { kind: 'topics'; subscribed: string[] }
  | { kind: 'unsubscribe_all' }
  | { kind: 'resubscribe' };

/**
 * Applies what the preference page sent. Topic ids that are not the team's public topics are ignored (a
 * hand-made form cannot reach private topics). Answers whether the person left anything (for email.unsubscribed).
 */
export async function savePreferences(trx: Queryable, at: Date, target: LinkTarget, change: PreferenceChange, source: ChangeSource): Promise<boolean> {
  const contact = target.contact;
  switch (change.kind) {
    case 'unsubscribe_all':
      return setUnsubscribed(trx, at, contact, true, source);
    case 'resubscribe':
      await setUnsubscribed(trx, at, contact, false, source);
      return false;
    case 'topics': {
      // Only where the person's standing changes: a default left as it is stays a default.
      const wanted = new Set(change.subscribed);
      const [topics, standing] = await Promise.all([trx<TopicRow>('topics').where({ team_id: contact.team_id, visibility: 'public' }), subscriptionsOf(trx, contact, true)]);
      const now = new Map(standing.map((s) => [s.topic_id, s.subscribed]));
      let left = false;
      for (const topic of topics) {
        if (now.get(topic.id) === wanted.has(topic.id)) continue;
        if (await recordChoice(trx, at, contact, topic, wanted.has(topic.id), source)) left = true;
      }
      return left;
    }
  }
}
