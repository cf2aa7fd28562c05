// The team's suppression list: addresses the box will not send to. Entries come from hard bounces and
// complaints (the send path's delivery outcomes, the MX's bounce and complaint notices: reason, the email that
// caused them, the time) and from the team (POST /suppressions, the CSV import: reason manual, bounce or
// complaint). The send path checks it in its accept transaction (`suppressedAmong`); an address is kept as
// its lower-cased key (core/address.ts addressKey), so one entry covers every spelling of it.
import type { AppContext } from '../../context.js';
import { placeholders, queryRows, readsOf, type Queryable } from '../../db/index.js';
import { queryJson } from '../../db/json-reads.js';
import { addressKey } from '../../core/address.js';
import { conflict, notFound } from '../../core/errors.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { contactAddress } from './contacts.js';

/** What the API accepts; `unsubscribe` is an old reason some rows may still carry (before topics existed). */
export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number] | 'unsubscribe';

export interface SuppressionRow {
  id: number;
  team_id: string;
  email: string;
  reason: SuppressionReason;
  details: string | null;
  email_id: string | null;
  created_at: string;
}

export interface Suppression {
  email: string;
  reason: SuppressionReason;
  /** The remote server's reply or the report's summary for an automatic entry; null for one the team added. */
  details: string | null;
  /** The email whose bounce or complaint put the address here (`em_…`), if any. */
  email_id: string | null;
  created_at: string;
}

export const toSuppression = (r: SuppressionRow): Suppression => ({ email: r.email, reason: r.reason, details: r.details, email_id: r.email_id, created_at: r.created_at });

/** The subset of `addresses` on the team's list, as lower-cased keys. */
export async function suppressedAmong(q: Queryable, teamId: string, addresses: string[]): Promise<Set<string>> {
  if (addresses.length === 0) return new Set();
  const keys = [...new Set(addresses.map(addressKey))];
  const emails = await queryJson<string[]>(q, `SELECT json_group_array(email) FROM suppressions WHERE team_id = ? AND email IN (${placeholders(keys.length)})`, [teamId, ...keys]);
  return new Set(emails ?? []);
}

/**
 * Adds an address (idempotent: an existing entry keeps its first reason). `emailId`: the email (`em_…`) whose
 * bounce or complaint caused it.
 */
export async function addSuppression(q: Queryable, at: Date, teamId: string, address: string, reason: SuppressionReason, details?: string, emailId?: string): Promise<void> {
  await q('suppressions')
    .insert({ team_id: teamId, email: addressKey(address), reason, details: details ?? null, email_id: emailId ?? null, created_at: at.toISOString() })
    .onConflict(['team_id', 'email'])
    .ignore();
}

/** The team's list, newest first (the spec defines no order; the export is the complete list). */
export async function listSuppressions(ctx: AppContext, teamId: string, paging: PageRequest): Promise<Page<Suppression>> {
  const reads = readsOf(ctx.db);
  const [[count], rows] = await Promise.all([
    queryRows<{ n: number }>(reads, 'SELECT count(*) AS n FROM suppressions WHERE team_id = ?', [teamId]),
    queryRows<SuppressionRow>(reads, 'SELECT * FROM suppressions WHERE team_id = ? ORDER BY id DESC LIMIT ? OFFSET ?', [teamId, paging.perPage, paging.offset]),
  ]);
  return toPage(rows.map(toSuppression), count?.n ?? 0, paging);
}

/** POST /suppressions: 409 when the address is on the list already (whatever its reason). */
export async function createSuppression(ctx: AppContext, teamId: string, input: { email: string; reason: (typeof SUPPRESSION_REASONS)[number] }): Promise<Suppression> {
  const key = addressKey(contactAddress(input.email));
  return ctx.db.transaction(async (trx) => {
    if (await trx('suppressions').where({ team_id: teamId, email: key }).first('id')) throw conflict('Suppression already exists');
    const row: Omit<SuppressionRow, 'id'> = { team_id: teamId, email: key, reason: input.reason, details: null, email_id: null, created_at: ctx.clock.now().toISOString() };
    await trx('suppressions').insert(row);
    return toSuppression({ id: 0, ...row });
  });
}

/** DELETE /suppressions/{email}: the box may send to the address again. 404 when it is not on the list. */
export async function deleteSuppression(ctx: AppContext, teamId: string, address: string): Promise<void> {
  const key = addressKey(contactAddress(address));
  const removed = await ctx.db('suppressions').where({ team_id: teamId, email: key }).delete();
  if (removed === 0) throw notFound('Suppression not found');
}
