// What came back from broadcasts: per broadcast, its emails' outcomes and the opens and clicks that open and
// click tracking record as `opened` / `clicked` rows of each email's timeline (email_events). A unique open is
// an email with at least one human open (tracking marks the hits of image proxies that fetch every image —
// Apple Mail Privacy Protection and the like — `machine`, and those are not counted); a unique click likewise.
// Rates are over the emails delivered (0 when none was).
import type { AppContext } from '../../context.js';
import { queryRows, readsOf } from '../../db/index.js';
import { unprocessable } from '../../core/errors.js';
import { findBroadcast } from './broadcasts.js';
import { HUMAN_SQL, variantStats, type BroadcastRow } from './fanout.js';

export const PERFORMANCE_METRICS = ['open_rate', 'click_rate', 'bounce_rate', 'unsubscribe_rate', 'recipients'] as const;
export type PerformanceMetric = (typeof PERFORMANCE_METRICS)[number];
export const PERFORMANCE_DEFAULT_DAYS = 90;

export interface BroadcastPerformance {
  id: string;
  name: string;
  status: string;
  started_at: string | null;
  sent_at: string | null;
  /** Contacts in the frozen audience. */
  recipients: number;
  /** Emails accepted by the send path (recipients less those it refused). */
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  unsubscribed: number;
  unique_opens: number;
  unique_clicks: number;
  open_rate: number;
  click_rate: number;
  bounce_rate: number;
  complaint_rate: number;
  unsubscribe_rate: number;
}

const rate = (n: number, of: number) => (of === 0 ? 0 : Math.round((n / of) * 10_000) / 10_000);

export async function performanceOf(ctx: AppContext, row: BroadcastRow): Promise<BroadcastPerformance> {
  const reads = readsOf(ctx.db);
  const [[s], [u]] = await Promise.all([
    queryRows<{ sent: number; delivered: number | null; bounced: number | null; complained: number | null; opens: number | null; clicks: number | null }>(
      reads,
      `SELECT count(*) AS sent,
         sum(e.status IN ('delivered', 'complained')) AS delivered,
         sum(e.status = 'bounced') AS bounced,
         sum(e.status = 'complained') AS complained,
         sum(EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = e.id AND ev.type = 'opened' AND ${HUMAN_SQL})) AS opens,
         sum(EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = e.id AND ev.type = 'clicked' AND ${HUMAN_SQL})) AS clicks
       FROM emails AS e WHERE e.broadcast_id = ?`,
      [row.id],
    ),
    queryRows<{ n: number }>(
      reads,
      `SELECT count(DISTINCT json_extract(data, '$.email_id')) AS n FROM events
       WHERE team_id = ? AND type = 'email.unsubscribed' AND json_extract(data, '$.email_id') IN (SELECT public_id FROM emails WHERE broadcast_id = ?)`,
      [row.team_id, row.id],
    ),
  ]);
  const n = (v: number | null | undefined) => Number(v ?? 0);
  const delivered = n(s?.delivered);
  const sent = n(s?.sent);
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    started_at: row.started_at,
    sent_at: row.sent_at,
    recipients: row.recipient_count,
    sent,
    delivered,
    bounced: n(s?.bounced),
    complained: n(s?.complained),
    unsubscribed: n(u?.n),
    unique_opens: n(s?.opens),
    unique_clicks: n(s?.clicks),
    open_rate: rate(n(s?.opens), delivered),
    click_rate: rate(n(s?.clicks), delivered),
    bounce_rate: rate(n(s?.bounced), sent),
    complaint_rate: rate(n(s?.complained), delivered),
    unsubscribe_rate: rate(n(u?.n), delivered),
  };
}

/**
 * GET /broadcasts/performance: the broadcasts that started sending since `since` (default: the last 90 days),
 * best first by `metric` (default open_rate; ties: newest first), at most `limit`.
 */
export async function broadcastPerformance(
  ctx: AppContext,
  teamId: string,
  q: { limit: number; metric?: PerformanceMetric | undefined; since?: string | undefined },
): Promise<{ metric: PerformanceMetric; since: string; broadcasts: BroadcastPerformance[] }> {
  const metric = q.metric ?? 'open_rate';
  const since = q.since !== undefined ? new Date(q.since) : new Date(ctx.clock.now().getTime() - PERFORMANCE_DEFAULT_DAYS * 86_400_000);
  const rows = await queryRows<BroadcastRow>(
    readsOf(ctx.db),
    "SELECT * FROM broadcasts WHERE team_id = ? AND started_at IS NOT NULL AND started_at >= ? AND status NOT IN ('draft', 'scheduled') ORDER BY pk DESC",
    [teamId, since.toISOString()],
  );
  const all: Array<BroadcastPerformance & { pk: number }> = [];
  for (const r of rows) all.push({ ...(await performanceOf(ctx, r)), pk: r.pk });
  all.sort((a, b) => b[metric] - a[metric] || b.pk - a.pk);
  return { metric, since: since.toISOString(), broadcasts: all.slice(0, q.limit).map(({ pk: _pk, ...p }) => p) };
}

export interface AudienceContact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
}

/**
 * GET /broadcasts/{id}/non-openers and /non-clickers: the recipients whose email was delivered and who have not
 * opened it (clicked in it) — human hits only — in contact order, at most `limit`, with their total `count`.
 */
export async function inactiveRecipients(ctx: AppContext, teamId: string, id: string, kind: 'opened' | 'clicked', limit: number): Promise<{ broadcast: string; count: number; contacts: AudienceContact[] }> {
  const reads = readsOf(ctx.db);
  const row = await findBroadcast(reads, teamId, id);
  const from = `FROM broadcast_recipients AS br JOIN emails AS e ON e.id = br.email_id JOIN contacts AS c ON c.pk = br.contact_pk
    WHERE br.broadcast_pk = ? AND br.status = 'queued' AND e.status = 'delivered'
      AND NOT EXISTS (SELECT 1 FROM email_events AS ev WHERE ev.email_id = br.email_id AND ev.type = ? AND ${HUMAN_SQL})`;
  const [[count], contacts] = await Promise.all([
    queryRows<{ n: number }>(reads, `SELECT count(*) AS n ${from}`, [row.pk, kind]),
    queryRows<AudienceContact>(reads, `SELECT c.id, c.email, c.first_name, c.last_name ${from} ORDER BY br.contact_pk LIMIT ?`, [row.pk, kind, limit]),
  ]);
  return { broadcast: row.id, count: count?.n ?? 0, contacts };
}

export interface VariantView {
  name: string;
  subject: string;
  weight: number;
  /** Contacts of the test group given this variant. */
  recipients: number;
  sent: number;
  delivered: number;
  opens: number;
  clicks: number;
  open_rate: number;
  click_rate: number;
  winner: boolean;
}

/** GET /broadcasts/{id}/variants: each variant's test-group figures (rates over the emails sent) and the winner. */
export async function broadcastVariants(ctx: AppContext, teamId: string, id: string): Promise<{ variants: VariantView[]; winner: string | null; winner_reason: string | null; test_ends_at: string | null; test_percentage: number }> {
  const row = await findBroadcast(readsOf(ctx.db), teamId, id);
  if (row.ab_test === null) throw unprocessable('Broadcast has no A/B test');
  const ab = JSON.parse(row.ab_test) as { variants: Array<{ name: string; subject: string; weight: number }>; test_duration_minutes: number; test_percentage: number };
  const stats = await variantStats(ctx, row, { ...ab, variants: ab.variants.map((v) => ({ ...v })) });
  return {
    variants: ab.variants.map((v, i) => {
      const s = stats[i]!;
      return {
        name: v.name,
        subject: v.subject,
        weight: v.weight,
        recipients: s.recipients,
        sent: s.sent,
        delivered: s.delivered,
        opens: s.opens,
        clicks: s.clicks,
        open_rate: Math.round(s.open_rate * 10_000) / 10_000,
        click_rate: Math.round(s.click_rate * 10_000) / 10_000,
        winner: row.winner === v.name,
      };
    }),
    winner: row.winner,
    winner_reason: row.winner_reason,
    test_ends_at: row.test_ends_at,
    test_percentage: ab.test_percentage,
  };
}
