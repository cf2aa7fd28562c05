// Who may receive marketing mail (broadcasts), and who a broadcast reaches. One rule, in one place: the
// campaigns area fans out only to contacts this predicate admits, whatever else selects them.
import type { Queryable } from '../../db/index.js';
import { unprocessable } from '../../core/errors.js';
import { findSegment, membershipOf } from './membership.js';
import { OPT_IN_SQL, SUBSCRIBED_SQL, type CompiledRule } from './rules.js';

/**
 * SQL over `contacts AS c`: the contact may be sent marketing mail — not unsubscribed from everything, and its
 * address not on the team's suppression list (bounces, complaints, manual entries), and not waiting to confirm
 * its address (double opt-in: `opt_in_status` 'pending', signup forms).
 */
export const marketableContactSql =
  `(c.unsubscribed = 0 AND ${OPT_IN_SQL} AND NOT EXISTS (SELECT 1 FROM suppressions AS sup WHERE sup.team_id = c.team_id AND sup.email = c.email_key))`;

export interface CampaignAudienceRequest {
  segmentIds: string[];
  topicId: string | null;
}

/**
 * The predicate over `contacts AS c` of a broadcast's audience (the team condition is the caller's):
 *   members of any of the segments (when segments are named), and, when a topic is named, only contacts who
 *   receive the topic (SUBSCRIBED_SQL: their choice, else the topic's default); a topic alone reaches all its
 *   subscribers. Always only marketable contacts (marketableContactSql).
 * 422 for a segment or topic the team does not have, or when neither is named.
 */
export async function campaignAudience(q: Queryable, teamId: string, req: CampaignAudienceRequest, now: Date): Promise<CompiledRule> {
  if (req.segmentIds.length === 0 && req.topicId === null) throw unprocessable('A broadcast needs an audience: segment_ids or topic_id');
  const parts: string[] = [];
  const bindings: unknown[] = [];
  if (req.segmentIds.length > 0) {
    const members: CompiledRule[] = [];
    for (const id of req.segmentIds) {
      const segment = await findSegment(q, teamId, id).catch(() => {
        throw unprocessable(`Segment '${id}' not found`);
      });
      members.push(await membershipOf(q, segment, now));
    }
    parts.push(`(${members.map((m) => `(${m.sql})`).join(' OR ')})`);
    bindings.push(...members.flatMap((m) => m.bindings));
  }
  if (req.topicId !== null) {
    const topic = (await q('topics').where({ team_id: teamId, id: req.topicId }).first('pk')) as { pk: number } | undefined;
    if (!topic) throw unprocessable(`Topic '${req.topicId}' not found`);
    parts.push(`EXISTS (SELECT 1 FROM topics AS t LEFT JOIN topic_subscriptions AS s ON s.topic_pk = t.pk AND s.contact_pk = c.pk WHERE t.pk = ? AND ${SUBSCRIBED_SQL})`);
    bindings.push(topic.pk);
  }
  parts.push(marketableContactSql);
  return { sql: parts.join(' AND '), bindings };
}
