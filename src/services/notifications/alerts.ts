// Alerts: things a team should be told about (a webhook endpoint disabled, …), stored so that notification
// channels and a dashboard can list them later.
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';

export const ALERT_KINDS = ['webhook_disabled'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Alert {
  id: number;
  kind: AlertKind;
  message: string;
  data: Record<string, unknown>;
  createdAt: string;
}

export async function recordAlert(q: Queryable, at: Date, teamId: string, kind: AlertKind, message: string, data: Record<string, unknown>): Promise<number> {
  const [id] = (await q('alerts').insert({ team_id: teamId, kind, message, data: JSON.stringify(data), created_at: at.toISOString() })) as [number];
  return id;
}

/** The team's alerts, newest first; `afterId` lists only newer ones (for a notifier that remembers where it was). */
export async function listAlerts(ctx: AppContext, teamId: string, opts: { afterId?: number; limit?: number } = {}): Promise<Alert[]> {
  const rows = (await ctx.db('alerts')
    .where('team_id', teamId)
    .andWhere('id', '>', opts.afterId ?? 0)
    .orderBy('id', 'desc')
    .limit(opts.limit ?? 100)) as Array<{ id: number; kind: AlertKind; message: string; data: string; created_at: string }>;
  return rows.map((r) => ({ id: r.id, kind: r.kind, message: r.message, data: JSON.parse(r.data) as Record<string, unknown>, createdAt: r.created_at }));
}
