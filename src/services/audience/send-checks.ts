// What the send path needs to know about an email that carries unsubscribe links (POST /emails with
// `unsubscribe` or `topic_id`): its recipient's contact, and the topic with where the contact stands. Read in
// the send path's accept transaction as one JSON read (db/json-reads.ts), which joins the round of that
// transaction's other reads: no statement of its own, and none at all when no email of the round asks.
import type { Queryable } from '../../db/index.js';
import { queryJson } from '../../db/json-reads.js';
import { addressKey } from '../../core/address.js';

export interface SendAudienceRequest {
  teamId: string;
  /** The email's one recipient. */
  address: string;
  topicId: string | null;
}

export interface SendAudience {
  /** The recipient's contact in the team, or null when the address is none of its contacts. */
  contact: { pk: number; id: string; unsubscribed: boolean } | null;
  /** The topic named, or null (none named, or the team has no such topic). */
  topic: { pk: number; id: string; name: string } | null;
  /** Where the contact stands with the topic: its choice, else the topic's default (false without both). */
  subscribed: boolean;
}

interface Answer {
  n: number;
  contact_pk: number | null;
  contact_id: string | null;
  unsubscribed: number | null;
  topic_pk: number | null;
  topic_id: string | null;
  topic_name: string | null;
  subscribed: number | null;
}

/** One answer per request, in order. */
export async function audienceOfSends(q: Queryable, requests: SendAudienceRequest[]): Promise<SendAudience[]> {
  if (requests.length === 0) return [];
  const asked = requests.map((r, n) => ({ n, team: r.teamId, key: addressKey(r.address), topic: r.topicId }));
  const answers = await queryJson<Answer[]>(
    q,
    `SELECT json_group_array(json_object('n', r.n, 'contact_pk', c.pk, 'contact_id', c.id, 'unsubscribed', c.unsubscribed,
       'topic_pk', t.pk, 'topic_id', t.id, 'topic_name', t.name,
       'subscribed', coalesce(s.subscribed, t.default_subscription = 'opt_in')))
     FROM (SELECT value ->> '$.n' AS n, value ->> '$.team' AS team, value ->> '$.key' AS key, value ->> '$.topic' AS topic FROM json_each(?)) AS r
     LEFT JOIN contacts AS c ON c.team_id = r.team AND c.email_key = r.key
     LEFT JOIN topics AS t ON r.topic IS NOT NULL AND t.id = r.topic AND t.team_id = r.team
     LEFT JOIN topic_subscriptions AS s ON s.topic_pk = t.pk AND s.contact_pk = c.pk`,
    [JSON.stringify(asked)],
  );
  const byN = new Map((answers ?? []).map((a) => [a.n, a]));
  return requests.map((_, n) => {
    const a = byN.get(n);
    return {
      contact: a?.contact_pk != null ? { pk: a.contact_pk, id: a.contact_id!, unsubscribed: a.unsubscribed === 1 } : null,
      topic: a?.topic_pk != null ? { pk: a.topic_pk, id: a.topic_id!, name: a.topic_name! } : null,
      subscribed: a?.subscribed === 1,
    };
  });
}
