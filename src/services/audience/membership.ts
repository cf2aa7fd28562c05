// Who is in a segment, as one SQL predicate over `contacts AS c`: a manual segment's member rows, or a dynamic
// segment's rules compiled against the team's property definitions and topics (rules.ts). Contacts lists,
// segment members and previews use it; so will broadcasts.
import type { Queryable } from '../../db/index.js';
import { notFound } from '../../core/errors.js';
import { propertyTypes } from './properties.js';
import { compileRules, OPT_IN_SQL, type CompiledRule, type RuleContext, type RuleGroup } from './rules.js';

export interface SegmentRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  rules: string | null;
  created_at: string;
  updated_at: string;
}

export async function findSegment(q: Queryable, teamId: string, id: string): Promise<SegmentRow> {
  const row = await q<SegmentRow>('segments').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Segment not found');
  return row;
}

/** What rules of this team are compiled against: its property definitions and topics, at `now`. */
export async function ruleContext(q: Queryable, teamId: string, now: Date): Promise<RuleContext> {
  const [properties, topics] = await Promise.all([
    propertyTypes(q, teamId),
    q<{ pk: number; id: string }>('topics').where('team_id', teamId).select('pk', 'id'),
  ]);
  return { properties, topics: new Map(topics.map((t) => [t.id, { pk: t.pk }])), now };
}

/** The predicate of a stored segment (404 when the team has no such segment). */
export async function segmentMembership(q: Queryable, teamId: string, segmentId: string, now: Date): Promise<CompiledRule> {
  return membershipOf(q, await findSegment(q, teamId, segmentId), now);
}

export async function membershipOf(q: Queryable, segment: SegmentRow, now: Date): Promise<CompiledRule> {
  if (segment.rules === null) return { sql: 'EXISTS (SELECT 1 FROM segment_contacts AS sc WHERE sc.segment_pk = ? AND sc.contact_pk = c.pk)', bindings: [segment.pk] };
  // A dynamic segment matches only contacts that are not waiting to confirm a double opt-in: its rules speak of
  // the people on the list, and a pending signup is not on it yet (a manual segment gets its row at confirmation).
  const rule = compileRules(JSON.parse(segment.rules) as RuleGroup, await ruleContext(q, segment.team_id, now));
  return { sql: `(${rule.sql}) AND ${OPT_IN_SQL}`, bindings: rule.bindings };
}
