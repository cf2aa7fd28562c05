// Contacts (spec: Contact, Contacts): one person per address per team, with a name, a global unsubscribe
// and typed custom properties. Every change records its contact.* event in the same transaction.
import type { AppContext } from '../../context.js';
import { queryRows, readsOf, type Queryable } from '../../db/index.js';
import { addressKey, normaliseAddress } from '../../core/address.js';
import { badRequest, conflict, notFound } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { recordEvent } from '../../events/recorder.js';
import { mergeProperties, propertyTypes, type Properties } from './properties.js';
import { engagementPredicate, type EngagementSegment } from './rules.js';
import { segmentMembership } from './membership.js';

export interface Contact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  properties: Properties;
  /**
   * Double opt-in (signup forms): `none` (added by the API, an import or a form without double opt-in),
   * `pending` (signed up through a double opt-in form and not confirmed: receives no marketing mail) or
   * `confirmed`.
   */
  opt_in_status: OptInStatus;
  /** When the contact confirmed its address (double opt-in), else null. */
  confirmed_at: string | null;
  created_at: string;
}

export const OPT_IN_STATUSES = ['none', 'pending', 'confirmed'] as const;
export type OptInStatus = (typeof OPT_IN_STATUSES)[number];

export interface ContactRow {
  pk: number;
  id: string;
  team_id: string;
  email: string;
  email_key: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: number;
  properties: string;
  search: string;
  last_sent_at: string | null;
  last_opened_at: string | null;
  last_clicked_at: string | null;
  opt_in_status: OptInStatus;
  confirmed_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface CreateContactInput {
  email: string;
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  unsubscribed?: boolean | undefined;
  properties?: Record<string, unknown> | undefined;
}

export interface UpdateContactInput {
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  unsubscribed?: boolean | undefined;
  /** Merged into the contact's: a key set to null is removed. */
  properties?: Record<string, unknown> | undefined;
}

export interface ContactFilters {
  search?: string | undefined;
  segmentId?: string | undefined;
  unsubscribed?: boolean | undefined;
  engagementSegment?: EngagementSegment | undefined;
}

/** Longest first or last name. */
export const MAX_NAME = 200;

export function toContact(r: ContactRow): Contact {
  return {
    id: r.id,
    email: r.email,
    first_name: r.first_name,
    last_name: r.last_name,
    unsubscribed: Boolean(r.unsubscribed),
    properties: JSON.parse(r.properties) as Properties,
    opt_in_status: r.opt_in_status ?? 'none',
    confirmed_at: r.confirmed_at ?? null,
    created_at: r.created_at,
  };
}

/** What `?search=` looks in: the address and the names, lower-cased. */
export const searchText = (email: string, first: string | null, last: string | null) => [email, first ?? '', last ?? ''].join(' ').toLowerCase();

/** An address as contacts keep it (the send path's normal form: the domain lower-cased and in ASCII), or 400. */
export function contactAddress(input: string, where = 'email'): string {
  const normal = normaliseAddress(input.trim());
  if (!normal) throw badRequest(`${where}: must be a valid email address`);
  return normal;
}

/** A contact by its id or its address (`GET /contacts/{id}` takes either, as Resend's does); 404 otherwise. */
export async function findContact(q: Queryable, teamId: string, idOrEmail: string): Promise<ContactRow> {
  let row: ContactRow | undefined;
  if (idOrEmail.includes('@')) {
    const normal = normaliseAddress(idOrEmail.trim());
    if (normal) row = await q<ContactRow>('contacts').where({ team_id: teamId, email_key: addressKey(normal) }).first();
  } else {
    row = await q<ContactRow>('contacts').where({ team_id: teamId, id: idOrEmail }).first();
  }
  if (!row) throw notFound('Contact not found');
  return row;
}

/** The `data` of a contact.* event: the contact as the API shows it, under `contact_id`. */
export function contactEventData(c: Contact): Record<string, unknown> {
  const { id, ...rest } = c;
  return { contact_id: id, ...rest };
}

export async function createContact(ctx: AppContext, teamId: string, input: CreateContactInput): Promise<Contact> {
  const email = contactAddress(input.email);
  return ctx.db.transaction(async (trx) => {
    const properties = mergeProperties(await propertyTypes(trx, teamId), {}, input.properties ?? {});
    const existing = await trx('contacts').where({ team_id: teamId, email_key: addressKey(email) }).first('pk');
    if (existing) throw conflict('Contact already exists');
    const now = ctx.clock.now();
    const first = input.first_name ?? null;
    const last = input.last_name ?? null;
    const row: Omit<ContactRow, 'pk'> = {
      id: newPublicId('ct', now.getTime()),
      team_id: teamId,
      email,
      email_key: addressKey(email),
      first_name: first,
      last_name: last,
      unsubscribed: input.unsubscribed ? 1 : 0,
      properties: JSON.stringify(properties),
      search: searchText(email, first, last),
      last_sent_at: null,
      last_opened_at: null,
      last_clicked_at: null,
      opt_in_status: 'none',
      confirmed_at: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    await trx('contacts').insert(row);
    const contact = toContact({ pk: 0, ...row });
    await recordEvent(trx, now, teamId, 'contact.created', contactEventData(contact));
    if (contact.unsubscribed) await recordEvent(trx, now, teamId, 'contact.unsubscribed', { contact_id: contact.id, email, topic_id: null, email_id: null });
    return contact;
  });
}

export async function getContact(ctx: AppContext, teamId: string, idOrEmail: string): Promise<Contact> {
  return toContact(await findContact(readsOf(ctx.db), teamId, idOrEmail));
}

export async function updateContact(ctx: AppContext, teamId: string, idOrEmail: string, input: UpdateContactInput): Promise<Contact> {
  return ctx.db.transaction(async (trx) => {
    const row = await findContact(trx, teamId, idOrEmail);
    const properties = input.properties ? mergeProperties(await propertyTypes(trx, teamId), JSON.parse(row.properties) as Properties, input.properties) : undefined;
    const first = input.first_name === undefined ? row.first_name : input.first_name;
    const last = input.last_name === undefined ? row.last_name : input.last_name;
    const now = ctx.clock.now();
    const next: Partial<ContactRow> = { first_name: first, last_name: last, search: searchText(row.email, first, last), updated_at: now.toISOString() };
    if (input.unsubscribed !== undefined) next.unsubscribed = input.unsubscribed ? 1 : 0;
    if (properties) next.properties = JSON.stringify(properties);
    await trx('contacts').where('pk', row.pk).update(next);
    const contact = toContact({ ...row, ...next });
    await recordEvent(trx, now, teamId, 'contact.updated', contactEventData(contact));
    if (!row.unsubscribed && contact.unsubscribed) await recordEvent(trx, now, teamId, 'contact.unsubscribed', { contact_id: contact.id, email: contact.email, topic_id: null, email_id: null });
    return contact;
  });
}

export async function deleteContact(ctx: AppContext, teamId: string, idOrEmail: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findContact(trx, teamId, idOrEmail);
    await trx('contacts').where('pk', row.pk).delete();
    await recordEvent(trx, ctx.clock.now(), teamId, 'contact.deleted', { contact_id: row.id, email: row.email });
  });
}

/**
 * The team's contacts, newest first; with `segmentId`, that segment's members oldest first (spec). Every
 * filter is a predicate of one statement (count) and its page (rows).
 */
export async function listContacts(ctx: AppContext, teamId: string, filters: ContactFilters, paging: PageRequest): Promise<Page<Contact>> {
  const reads = readsOf(ctx.db);
  const where = ['c.team_id = ?'];
  const bindings: unknown[] = [teamId];
  if (filters.segmentId !== undefined) {
    const member = await segmentMembership(reads, teamId, filters.segmentId, ctx.clock.now());
    where.push(member.sql);
    bindings.push(...member.bindings);
  }
  if (filters.search !== undefined && filters.search !== '') {
    const needle = filters.search.toLowerCase();
    // Three characters or more: the trigram index finds the rows (a phrase of the needle is a substring match).
    if ([...needle].length >= 3) {
      where.push('c.pk IN (SELECT rowid FROM contacts_search WHERE contacts_search MATCH ?)');
      bindings.push(`"${needle.replaceAll('"', '""')}"`);
    } else {
      where.push('instr(c.search, ?) > 0');
      bindings.push(needle);
    }
  }
  if (filters.unsubscribed !== undefined) {
    where.push('c.unsubscribed = ?');
    bindings.push(filters.unsubscribed ? 1 : 0);
  }
  if (filters.engagementSegment !== undefined) where.push(engagementPredicate(filters.engagementSegment, ctx.clock.now(), bindings));
  const predicate = where.join(' AND ');
  const order = filters.segmentId !== undefined ? 'ASC' : 'DESC';
  const [[countRow], rows] = await Promise.all([
    queryRows<{ n: number }>(reads, `SELECT count(*) AS n FROM contacts AS c WHERE ${predicate}`, bindings),
    queryRows<ContactRow>(reads, `SELECT c.* FROM contacts AS c WHERE ${predicate} ORDER BY c.pk ${order} LIMIT ? OFFSET ?`, [...bindings, paging.perPage, paging.offset]),
  ]);
  return toPage(rows.map(toContact), countRow?.n ?? 0, paging);
}
