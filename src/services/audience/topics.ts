// Subscription topics (spec: /subscription-topics): the kinds of mail a team sends (a newsletter, product
// updates), each with a default — opt_in: a contact is subscribed until they opt out; opt_out: not subscribed
// until they opt in (as Resend's topics) — and a visibility: public topics are shown on the preference page
// people reach from an email, private ones only through the API.
//
// A contact's own choice is a `topic_subscriptions` row; without one the topic's default applies, "changed" at
// the contact's creation. A contact unsubscribed from everything (`contacts.unsubscribed`) is no topic's
// subscriber, whatever its choices say: the choices are kept, and apply again if they subscribe again.
import type { AppContext } from '../../context.js';
import { queryRows, readsOf, type Queryable } from '../../db/index.js';
import { badRequest, conflict, notFound, unprocessable } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { recordEvent } from '../../events/recorder.js';
import { findContact, type ContactRow } from './contacts.js';
import { SUBSCRIBED_SQL, type RuleGroup } from './rules.js';

export const DEFAULT_SUBSCRIPTIONS = ['opt_in', 'opt_out'] as const;
export type DefaultSubscription = (typeof DEFAULT_SUBSCRIPTIONS)[number];
export const TOPIC_VISIBILITIES = ['public', 'private'] as const;
export type TopicVisibility = (typeof TOPIC_VISIBILITIES)[number];

/** Topics per team. */
export const MAX_TOPICS = 1_000;
/** Choices one POST …/subscriptions may carry. */
export const MAX_CHOICES_PER_CALL = 100;

export interface TopicRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  description: string | null;
  default_subscription: DefaultSubscription;
  visibility: TopicVisibility;
  created_at: string;
  updated_at: string;
}

export interface Topic {
  id: string;
  name: string;
  description: string | null;
  default_subscription: DefaultSubscription;
  visibility: TopicVisibility;
  created_at: string;
  updated_at: string;
}

export interface TopicInput {
  name: string;
  description?: string | null | undefined;
  default_subscription: DefaultSubscription;
  visibility?: TopicVisibility | undefined;
}

/** One topic as a contact stands with it. */
export interface Subscription {
  topic_id: string;
  topic_name: string;
  /** The contact's choice, or the topic's default when they made none. */
  subscribed: boolean;
  /** true: no choice recorded, the default applies. */
  by_default: boolean;
  /** When the choice was made (the contact's creation for a default). */
  updated_at: string;
}

export interface Subscriber {
  contact_id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  subscribed: boolean;
  by_default: boolean;
  changed_at: string;
}

export const toTopic = (r: TopicRow): Topic => ({
  id: r.id,
  name: r.name,
  description: r.description,
  default_subscription: r.default_subscription,
  visibility: r.visibility,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export async function findTopic(q: Queryable, teamId: string, id: string): Promise<TopicRow> {
  const row = await q<TopicRow>('topics').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Topic not found');
  return row;
}


async function nameTaken(q: Queryable, teamId: string, name: string, except?: number): Promise<void> {
  const rows = await queryRows<{ pk: number }>(q, 'SELECT pk FROM topics WHERE team_id = ? AND lower(name) = lower(?)', [teamId, name]);
  if (rows.some((r) => r.pk !== except)) throw conflict('Topic already exists');
}

export async function listTopics(ctx: AppContext, teamId: string): Promise<Topic[]> {
  const rows = await readsOf(ctx.db)<TopicRow>('topics').where('team_id', teamId).orderBy('pk', 'desc');
  return rows.map(toTopic);
}

export async function getTopic(ctx: AppContext, teamId: string, id: string): Promise<Topic> {
  return toTopic(await findTopic(readsOf(ctx.db), teamId, id));
}

/** A new topic; its name is the team's only one of that spelling (any case): 409 otherwise. */
export async function createTopic(ctx: AppContext, teamId: string, input: TopicInput): Promise<Topic> {
  return ctx.db.transaction(async (trx) => {
    await nameTaken(trx, teamId, input.name);
    const [{ n }] = (await trx('topics').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
    if (Number(n) >= MAX_TOPICS) throw unprocessable(`Topic limit reached: ${MAX_TOPICS} per team`);
    const now = ctx.clock.now();
    const row: Omit<TopicRow, 'pk'> = {
      id: newPublicId('top', now.getTime()),
      team_id: teamId,
      name: input.name,
      description: input.description ?? null,
      default_subscription: input.default_subscription,
      visibility: input.visibility ?? 'public',
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    await trx('topics').insert(row);
    return toTopic({ pk: 0, ...row });
  });
}

/**
 * Changes a topic. A new `default_subscription` changes where every contact without a choice stands (their
 * choice was the default); recorded choices stay.
 */
export async function updateTopic(ctx: AppContext, teamId: string, id: string, input: Partial<TopicInput>): Promise<Topic> {
  return ctx.db.transaction(async (trx) => {
    const row = await findTopic(trx, teamId, id);
    if (input.name !== undefined) await nameTaken(trx, teamId, input.name, row.pk);
    const next: TopicRow = {
      ...row,
      name: input.name ?? row.name,
      description: input.description === undefined ? row.description : input.description,
      default_subscription: input.default_subscription ?? row.default_subscription,
      visibility: input.visibility ?? row.visibility,
      updated_at: ctx.clock.now().toISOString(),
    };
    await trx('topics').where('pk', row.pk).update({ name: next.name, description: next.description, default_subscription: next.default_subscription, visibility: next.visibility, updated_at: next.updated_at });
    return toTopic(next);
  });
}

/** Whether a rule tree names the topic (a `topic` condition with its id), at any depth. */
function rulesName(rules: RuleGroup, topicId: string): boolean {
  return rules.conditions.some((c) => ('conditions' in c ? rulesName(c, topicId) : c.field === 'topic' && c.value === topicId));
}

/**
 * Deletes a topic and every choice made for it. 409 while a dynamic segment's rules name it: the segment
 * could no longer be read (its rules would name a topic that is gone).
 */
export async function deleteTopic(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findTopic(trx, teamId, id);
    const segments = await queryRows<{ id: string; name: string; rules: string }>(trx, 'SELECT id, name, rules FROM segments WHERE team_id = ? AND rules IS NOT NULL AND instr(rules, ?) > 0', [teamId, row.id]);
    const using = segments.find((s) => rulesName(JSON.parse(s.rules) as RuleGroup, row.id));
    if (using) throw conflict(`Topic is used by the rules of segment '${using.name}' (${using.id}); change them first`);
    await trx('topics').where('pk', row.pk).delete();
  });
}

/**
 * A topic's subscribers (`subscribed` true) or the contacts who do not receive it (false: opted out, never
 * opted in, or unsubscribed from everything), most recently changed first — a contact without a choice
 * counts as changed when it was created.
 */
export async function listSubscribers(ctx: AppContext, teamId: string, topicId: string, subscribed: boolean, paging: PageRequest): Promise<Page<Subscriber>> {
  const reads = readsOf(ctx.db);
  const topic = await findTopic(reads, teamId, topicId);
  const from = 'FROM contacts AS c JOIN topics AS t ON t.pk = ? LEFT JOIN topic_subscriptions AS s ON s.topic_pk = t.pk AND s.contact_pk = c.pk';
  const where = `WHERE c.team_id = ? AND ${subscribed ? '' : 'NOT '}${SUBSCRIBED_SQL}`;
  const bindings = [topic.pk, teamId];
  const [[count], rows] = await Promise.all([
    queryRows<{ n: number }>(reads, `SELECT count(*) AS n ${from} ${where}`, bindings),
    queryRows<ContactRow & { choice: number | null; changed_at: string }>(
      reads,
      `SELECT c.*, s.subscribed AS choice, coalesce(s.updated_at, c.created_at) AS changed_at ${from} ${where} ORDER BY changed_at DESC, c.pk DESC LIMIT ? OFFSET ?`,
      [...bindings, paging.perPage, paging.offset],
    ),
  ]);
  return toPage(
    rows.map((r) => ({ contact_id: r.id, email: r.email, first_name: r.first_name, last_name: r.last_name, subscribed, by_default: r.choice === null, changed_at: r.changed_at })),
    count?.n ?? 0,
    paging,
  );
}

/** Where one contact stands with each of the team's topics (newest topic first); `publicOnly` for the preference page. */
export async function subscriptionsOf(q: Queryable, contact: ContactRow, publicOnly = false): Promise<Array<Subscription & { description: string | null }>> {
  const rows = await queryRows<TopicRow & { choice: number | null; choice_at: string | null }>(
    q,
    `SELECT t.*, s.subscribed AS choice, s.updated_at AS choice_at FROM topics AS t LEFT JOIN topic_subscriptions AS s ON s.topic_pk = t.pk AND s.contact_pk = ?
     WHERE t.team_id = ?${publicOnly ? " AND t.visibility = 'public'" : ''} ORDER BY t.pk DESC`,
    [contact.pk, contact.team_id],
  );
  return rows.map((t) => ({
    topic_id: t.id,
    topic_name: t.name,
    description: t.description,
    subscribed: t.choice === null ? t.default_subscription === 'opt_in' : t.choice === 1,
    by_default: t.choice === null,
    updated_at: t.choice_at ?? contact.created_at,
  }));
}

export interface ContactSubscriptions {
  contact_id: string;
  /** Unsubscribed from everything: no topic's mail reaches the contact, whatever `subscriptions` say. */
  unsubscribed: boolean;
  subscriptions: Subscription[];
}

export async function getContactSubscriptions(ctx: AppContext, teamId: string, contactIdOrEmail: string): Promise<ContactSubscriptions> {
  const reads = readsOf(ctx.db);
  const contact = await findContact(reads, teamId, contactIdOrEmail);
  const subscriptions = (await subscriptionsOf(reads, contact)).map(({ description: _d, ...s }) => s);
  return { contact_id: contact.id, unsubscribed: Boolean(contact.unsubscribed), subscriptions };
}

/** Where the email a change came from is known, its id (`em_…`) for the contact.unsubscribed event. */
export interface ChangeSource {
  emailId: string | null;
}

/**
 * Records a contact's choice for a topic (in the caller's transaction). A change that takes the contact off
 * the topic (subscribed → not) records `contact.unsubscribed` with the topic. Answers whether they were
 * subscribed before and are not now.
 */
export async function recordChoice(trx: Queryable, at: Date, contact: ContactRow, topic: TopicRow, subscribed: boolean | null, source: ChangeSource): Promise<boolean> {
  const [before] = await queryRows<{ subscribed: number }>(trx, 'SELECT subscribed FROM topic_subscriptions WHERE topic_pk = ? AND contact_pk = ?', [topic.pk, contact.pk]);
  const byDefault = topic.default_subscription === 'opt_in';
  const was = before ? before.subscribed === 1 : byDefault;
  if (subscribed === null) {
    await trx('topic_subscriptions').where({ topic_pk: topic.pk, contact_pk: contact.pk }).delete();
  } else if (!before || (before.subscribed === 1) !== subscribed) {
    await trx.raw(
      'INSERT INTO topic_subscriptions (topic_pk, contact_pk, subscribed, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (topic_pk, contact_pk) DO UPDATE SET subscribed = excluded.subscribed, updated_at = excluded.updated_at',
      [topic.pk, contact.pk, subscribed ? 1 : 0, at.toISOString()],
    );
  }
  const now = subscribed ?? byDefault;
  const left = was && !now;
  if (left) await recordEvent(trx, at, contact.team_id, 'contact.unsubscribed', { contact_id: contact.id, email: contact.email, topic_id: topic.id, email_id: source.emailId });
  return left;
}

/**
 * POST …/contacts/{contactId}/subscriptions: several choices at once, all or nothing — unknown topics 422
 * naming them, a topic named twice 400.
 */
export async function setContactSubscriptions(ctx: AppContext, teamId: string, contactIdOrEmail: string, choices: Array<{ topic_id: string; subscribed: boolean }>): Promise<ContactSubscriptions> {
  const seen = new Set<string>();
  for (const [i, c] of choices.entries()) {
    if (seen.has(c.topic_id)) throw badRequest(`subscriptions.${i}.topic_id: names topic '${c.topic_id}' a second time`);
    seen.add(c.topic_id);
  }
  await ctx.db.transaction(async (trx) => {
    const contact = await findContact(trx, teamId, contactIdOrEmail);
    const topics = await trx<TopicRow>('topics').where('team_id', teamId).whereIn('id', [...seen]);
    const byId = new Map(topics.map((t) => [t.id, t]));
    const unknown = [...seen].filter((id) => !byId.has(id));
    if (unknown.length > 0) throw unprocessable(`Topics not found: ${unknown.join(', ')}`);
    const at = ctx.clock.now();
    for (const c of choices) await recordChoice(trx, at, contact, byId.get(c.topic_id)!, c.subscribed, { emailId: null });
  });
  return getContactSubscriptions(ctx, teamId, contactIdOrEmail);
}

/** DELETE …/subscriptions/{topicId}: forgets the contact's choice, so that the topic's default applies again. */
export async function clearContactSubscription(ctx: AppContext, teamId: string, contactIdOrEmail: string, topicId: string): Promise<ContactSubscriptions> {
  await ctx.db.transaction(async (trx) => {
    const contact = await findContact(trx, teamId, contactIdOrEmail);
    const topic = await findTopic(trx, teamId, topicId);
    await recordChoice(trx, ctx.clock.now(), contact, topic, null, { emailId: null });
  });
  return getContactSubscriptions(ctx, teamId, contactIdOrEmail);
}
