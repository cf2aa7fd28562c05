// Contacts that arrive through a signup form (services/automation/signup-forms.ts): found or created, and, with
// double opt-in, held `pending` until they confirm. The audience owns the contact's rows; the form's own rules
// (which fields, which segment and topics, the confirmation email) are the automation area's.
//
// Events: a contact created by a double opt-in signup records nothing until it confirms (then `contact.created`,
// so a workflow or a webhook consumer never sees an address nobody confirmed); a contact that existed records
// `contact.updated` when a signup changes it. Without double opt-in, the signup is the change.
import type { Queryable } from '../../db/index.js';
import { addressKey } from '../../core/address.js';
import { newPublicId } from '../../core/ids.js';
import { recordEvent } from '../../events/recorder.js';
import { contactEventData, searchText, toContact, type Contact, type ContactRow } from './contacts.js';
import { mergeProperties, propertyTypes, type Properties } from './properties.js';
import { recordChoice, type TopicRow } from './topics.js';


/** What a signup carries to the contact: names and custom properties (already limited to the form's fields). */
export interface SignupValues {
  first_name?: string | undefined;
  last_name?: string | undefined;
  properties: Record<string, unknown>;
}

/** The change a signup makes to a contact's columns (names, properties merged), checked against the team's types. */
async function changeOf(q: Queryable, row: Pick<ContactRow, 'email' | 'first_name' | 'last_name' | 'properties' | 'team_id'>, values: SignupValues) {
  const properties = mergeProperties(await propertyTypes(q, row.team_id), JSON.parse(row.properties) as Properties, values.properties);
  const first = values.first_name ?? row.first_name;
  const last = values.last_name ?? row.last_name;
  return { first_name: first, last_name: last, properties: JSON.stringify(properties), search: searchText(row.email, first, last) };
}

/** Checks a signup's values against the team's property types without writing (a 400 names the property). */
export async function checkSignupValues(q: Queryable, teamId: string, values: SignupValues): Promise<void> {
  mergeProperties(await propertyTypes(q, teamId), {}, values.properties);
}

export interface SignupContact {
  row: ContactRow;
  /** The signup made the contact. */
  created: boolean;
}

/**
 * The contact of a signup, in the caller's transaction. An existing contact is returned as it is (its values
 * wait for the confirmation when `pending`; else they are merged now and `contact.updated` recorded). A new one is
 * created `pending` with the values (no event yet) or, without double opt-in, `none` with `contact.created`.
 */
export async function contactForSignup(trx: Queryable, at: Date, teamId: string, email: string, values: SignupValues, pending: boolean): Promise<SignupContact> {
  const existing = await trx<ContactRow>('contacts').where({ team_id: teamId, email_key: addressKey(email) }).first();
  const now = at.toISOString();
  if (existing) {
    if (pending) return { row: existing, created: false };
    const change = { ...(await changeOf(trx, existing, values)), updated_at: now };
    await trx('contacts').where('pk', existing.pk).update(change);
    const row = { ...existing, ...change };
    await recordEvent(trx, at, teamId, 'contact.updated', contactEventData(toContact(row)));
    return { row, created: false };
  }
  const base = { team_id: teamId, email, first_name: null, last_name: null, properties: '{}' };
  const row: Omit<ContactRow, 'pk'> = {
    id: newPublicId('ct', at.getTime()),
    ...base,
    email_key: addressKey(email),
    unsubscribed: 0,
    ...(await changeOf(trx, base, values)),
    last_sent_at: null,
    last_opened_at: null,
    last_clicked_at: null,
    opt_in_status: pending ? 'pending' : 'none',
    confirmed_at: null,
    created_at: now,
    updated_at: now,
  };
  const [pk] = (await trx('contacts').insert(row)) as number[];
  const full = { pk: pk!, ...row };
  if (!pending) await recordEvent(trx, at, teamId, 'contact.created', contactEventData(toContact(full)));
  return { row: full, created: true };
}

/**
 * A double opt-in confirmed, in the caller's transaction: the contact becomes `confirmed` (a contact that was
 * `none` too: it has now confirmed), the signup's values are merged, and `contact.created` (the signup made it)
 * or `contact.updated` is recorded. Answers the contact as it is now.
 */
export async function confirmSignupContact(trx: Queryable, at: Date, contactPk: number, values: SignupValues, created: boolean): Promise<ContactRow> {
  const existing = await trx<ContactRow>('contacts').where('pk', contactPk).first();
  if (!existing) throw new Error(`contact ${contactPk} vanished in its transaction`);
  const change = { ...(await changeOf(trx, existing, values)), opt_in_status: 'confirmed' as const, confirmed_at: at.toISOString(), updated_at: at.toISOString() };
  await trx('contacts').where('pk', contactPk).update(change);
  const row = { ...existing, ...change };
  const contact: Contact = toContact(row);
  await recordEvent(trx, at, row.team_id, created ? 'contact.created' : 'contact.updated', contactEventData(contact));
  return row;
}

/**
 * A signup joins its form's manual segment and topics (in the caller's transaction): the segment's member row
 * (kept if there), and the contact's choice `subscribed` for each topic. A segment or topic deleted since the
 * form was made, or a segment made dynamic, is let be (the form's reads say so).
 */
export async function joinAudience(trx: Queryable, at: Date, contact: ContactRow, segmentId: string | null, topicIds: string[]): Promise<void> {
  if (segmentId !== null) {
    const segment = (await trx('segments').where({ team_id: contact.team_id, id: segmentId }).first('pk', 'rules')) as { pk: number; rules: string | null } | undefined;
    if (segment && segment.rules === null) {
      await trx.raw('INSERT INTO segment_contacts (segment_pk, contact_pk, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [segment.pk, contact.pk, at.toISOString()]);
    }
  }
  if (topicIds.length > 0) {
    const topics = await trx<TopicRow>('topics').where('team_id', contact.team_id).whereIn('id', topicIds);
    for (const topic of topics) await recordChoice(trx, at, contact, topic, true, { emailId: null });
  }
}

/** Which of these segment and topic ids the team has (a form names them; a 422 names the missing). */
export async function audienceTargets(q: Queryable, teamId: string, segmentId: string | null, topicIds: string[]): Promise<{ segment: 'manual' | 'dynamic' | 'missing' | null; missingTopics: string[] }> {
  let segment: 'manual' | 'dynamic' | 'missing' | null = null;
  if (segmentId !== null) {
    const row = (await q('segments').where({ team_id: teamId, id: segmentId }).first('rules')) as { rules: string | null } | undefined;
    segment = !row ? 'missing' : row.rules === null ? 'manual' : 'dynamic';
  }
  const found = topicIds.length > 0 ? ((await q('topics').where('team_id', teamId).whereIn('id', topicIds).select('id')) as Array<{ id: string }>) : [];
  const have = new Set(found.map((r) => r.id));
  return { segment, missingTopics: topicIds.filter((id) => !have.has(id)) };
}

/**
 * Deletes those of `pks` that are still `pending` (a double opt-in never confirmed) and have no audience data of
 * their own: in no segment, no topic subscription, never changed since created. Nothing is recorded: such a
 * contact was never announced (no contact.created). Returns how many were deleted; their signups go with them.
 */
export async function deleteUnconfirmedContacts(trx: Queryable, pks: number[]): Promise<number> {
  if (pks.length === 0) return 0;
  return trx('contacts')
    .whereIn('pk', pks)
    .where('opt_in_status', 'pending')
    .whereRaw('updated_at = created_at')
    .whereNotExists((q) => q.select(trx.raw('1')).from('segment_contacts').whereRaw('segment_contacts.contact_pk = contacts.pk'))
    .whereNotExists((q) => q.select(trx.raw('1')).from('topic_subscriptions').whereRaw('topic_subscriptions.contact_pk = contacts.pk'))
    .delete();
}
