// Segments (spec: Segments): manual ones hold the contacts added to them; dynamic ones carry `rules`
// (rules.ts) and hold whoever matches when they are read. Members are listed oldest first.
import type { AppContext } from '../../context.js';
import { execute, queryRows, readsOf, type Queryable } from '../../db/index.js';
import { unprocessable } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import type { Page, PageRequest } from '../../core/paging.js';
import { listContacts, toContact, type Contact, type ContactRow } from './contacts.js';
import { findSegment, membershipOf, ruleContext, type SegmentRow } from './membership.js';
import { compileRules, type RuleGroup } from './rules.js';

export interface Segment {
  id: string;
  name: string;
  /** manual: members are added and removed; dynamic: members are the contacts its rules match. */
  type: 'manual' | 'dynamic';
  rules: RuleGroup | null;
  created_at: string;
  updated_at: string;
}

/** Segments per team, contacts added per call, contacts a preview shows. */
export const MAX_SEGMENTS = 1_000;
export const MAX_MEMBERS_PER_CALL = 1_000;
export const PREVIEW_CONTACTS = 10;

const toSegment = (r: SegmentRow): Segment => ({
  id: r.id,
  name: r.name,
  type: r.rules === null ? 'manual' : 'dynamic',
  rules: r.rules === null ? null : (JSON.parse(r.rules) as RuleGroup),
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export async function listSegments(ctx: AppContext, teamId: string): Promise<Segment[]> {
  const rows = await readsOf(ctx.db)<SegmentRow>('segments').where('team_id', teamId).orderBy('pk', 'asc');
  return rows.map(toSegment);
}

/** A segment with how many contacts are in it now. */
export async function getSegment(ctx: AppContext, teamId: string, id: string): Promise<Segment & { contact_count: number }> {
  const reads = readsOf(ctx.db);
  const row = await findSegment(reads, teamId, id);
  return { ...toSegment(row), contact_count: await countMembers(ctx, row) };
}

async function countMembers(ctx: AppContext, row: SegmentRow): Promise<number> {
  const reads = readsOf(ctx.db);
  const member = await membershipOf(reads, row, ctx.clock.now());
  const [r] = await queryRows<{ n: number }>(reads, `SELECT count(*) AS n FROM contacts AS c WHERE c.team_id = ? AND ${member.sql}`, [row.team_id, ...member.bindings]);
  return r?.n ?? 0;
}

export async function createSegment(ctx: AppContext, teamId: string, input: { name: string; rules?: RuleGroup | undefined }): Promise<Segment> {
  return ctx.db.transaction(async (trx) => {
    const now = ctx.clock.now();
    if (input.rules) compileRules(input.rules, await ruleContext(trx, teamId, now));
    const [{ n }] = (await trx('segments').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
    if (Number(n) >= MAX_SEGMENTS) throw unprocessable(`Segment limit reached: ${MAX_SEGMENTS} per team`);
    const row: Omit<SegmentRow, 'pk'> = {
      id: newPublicId('seg', now.getTime()),
      team_id: teamId,
      name: input.name,
      rules: input.rules ? JSON.stringify(input.rules) : null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    await trx('segments').insert(row);
    return toSegment({ pk: 0, ...row });
  });
}

/** Renames a segment, or gives a dynamic one new rules (a manual segment stays manual, and the other way round). */
export async function updateSegment(ctx: AppContext, teamId: string, id: string, input: { name?: string | undefined; rules?: RuleGroup | undefined }): Promise<Segment> {
  return ctx.db.transaction(async (trx) => {
    const row = await findSegment(trx, teamId, id);
    const now = ctx.clock.now();
    if (input.rules !== undefined) {
      if (row.rules === null) throw unprocessable('Segment is manual: add and remove its contacts instead of giving it rules');
      compileRules(input.rules, await ruleContext(trx, teamId, now));
    }
    const next = { name: input.name ?? row.name, rules: input.rules !== undefined ? JSON.stringify(input.rules) : row.rules, updated_at: now.toISOString() };
    await trx('segments').where('pk', row.pk).update(next);
    return toSegment({ ...row, ...next });
  });
}

export async function deleteSegment(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findSegment(trx, teamId, id);
    await trx('segments').where('pk', row.pk).delete();
  });
}

/** The contact keys for `ids` of the team; 422 naming those it does not have, before any change. */
async function contactKeys(trx: Queryable, teamId: string, ids: string[]): Promise<number[]> {
  const unique = [...new Set(ids)];
  const rows = await trx<ContactRow>('contacts').where('team_id', teamId).whereIn('id', unique).select('pk', 'id');
  const found = new Map(rows.map((r) => [r.id, r.pk]));
  const unknown = unique.filter((id) => !found.has(id));
  if (unknown.length > 0) throw unprocessable(`Contacts not found: ${unknown.slice(0, 20).join(', ')}${unknown.length > 20 ? `, and ${unknown.length - 20} more` : ''}`);
  return unique.map((id) => found.get(id)!);
}

function manualOnly(row: SegmentRow): void {
  if (row.rules !== null) throw unprocessable('Segment is dynamic: its members are the contacts its rules match');
}

/** Adds contacts to a manual segment (those already in it stay); answers how many were new. */
export async function addMembers(ctx: AppContext, teamId: string, id: string, contactIds: string[]): Promise<{ added: number }> {
  return ctx.db.transaction(async (trx) => {
    const row = await findSegment(trx, teamId, id);
    manualOnly(row);
    const pks = await contactKeys(trx, teamId, contactIds);
    const now = ctx.clock.now().toISOString();
    let added = 0;
    for (let i = 0; i < pks.length; i += 300) {
      const chunk = pks.slice(i, i + 300);
      const sql = `INSERT INTO segment_contacts (segment_pk, contact_pk, created_at) VALUES ${chunk.map(() => '(?, ?, ?)').join(', ')} ON CONFLICT DO NOTHING`;
      added += await execute(trx, sql, chunk.flatMap((pk) => [row.pk, pk, now]));
    }
    return { added };
  });
}

/** Removes contacts from a manual segment (a contact not in it is let be); answers how many left it. */
export async function removeMembers(ctx: AppContext, teamId: string, id: string, contactIds: string[]): Promise<{ removed: number }> {
  return ctx.db.transaction(async (trx) => {
    const row = await findSegment(trx, teamId, id);
    manualOnly(row);
    const pks = await contactKeys(trx, teamId, contactIds);
    const removed = await trx('segment_contacts').where('segment_pk', row.pk).whereIn('contact_pk', pks).delete();
    return { removed };
  });
}

/** A segment's members, oldest first (404 for an unknown segment). */
export async function listMembers(ctx: AppContext, teamId: string, id: string, paging: PageRequest): Promise<Page<Contact>> {
  return listContacts(ctx, teamId, { segmentId: id }, paging);
}

/** What rules would match, saving nothing: the count and the first (oldest) contacts. */
export async function previewSegment(ctx: AppContext, teamId: string, rules: RuleGroup): Promise<{ count: number; contacts: Contact[] }> {
  const reads = readsOf(ctx.db);
  const compiled = compileRules(rules, await ruleContext(reads, teamId, ctx.clock.now()));
  const predicate = `c.team_id = ? AND ${compiled.sql}`;
  const bindings = [teamId, ...compiled.bindings];
  const [[count], rows] = await Promise.all([
    queryRows<{ n: number }>(reads, `SELECT count(*) AS n FROM contacts AS c WHERE ${predicate}`, bindings),
    queryRows<ContactRow>(reads, `SELECT c.* FROM contacts AS c WHERE ${predicate} ORDER BY c.pk ASC LIMIT ${PREVIEW_CONTACTS}`, bindings),
  ]);
  return { count: count?.n ?? 0, contacts: rows.map(toContact) };
}
