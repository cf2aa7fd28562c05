// Alerts: things a team should be told about, raised by any area of the box (a webhook endpoint disabled, a
// domain's DNS drifting, the monthly quota at 80 %, …). This is the seam between the areas that notice and
// the notifications area that tells: an area writes the alert row in the transaction of what it noticed
// (`raiseAlert`, or `alertInsert` for the send path's write script), and nothing else. The notifications area
// fans the alerts table out past a durable cursor into channel deliveries (notifications/alert-dispatch.ts:
// woken by the insert seen on the database's query stream, and by a poll), so no lower area imports it and
// an alert committed is an alert sent. `GET /alerts` lists them (the spec's "dashboard alert"), the admin
// CLI too.
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { notFound } from '../../core/errors.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';

export const ALERT_KINDS = [
  'webhook_disabled',
  'domain_verification_failed',
  'dns_drift',
  'dns_restored',
  'dkim_rotation_pending',
  'dkim_rotation_completed',
  'dmarc_failures',
  'quota_80',
  'quota_100',
  'sending_on_hold',
  'provider_blocking',
  'backup_failed',
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface Alert {
  id: number;
  kind: AlertKind;
  message: string;
  data: Record<string, unknown>;
  createdAt: string;
  acknowledgedAt: string | null;
}

interface AlertRow {
  id: number;
  team_id: string;
  kind: AlertKind;
  message: string;
  data: string;
  created_at: string;
  acknowledged_at: string | null;
  dedupe_key: string | null;
}

export const toAlert = (r: Pick<AlertRow, 'id' | 'kind' | 'message' | 'data' | 'created_at' | 'acknowledged_at'>): Alert => ({
  id: r.id,
  kind: r.kind,
  message: r.message,
  data: JSON.parse(r.data) as Record<string, unknown>,
  createdAt: r.created_at,
  acknowledgedAt: r.acknowledged_at ?? null,
});

export interface RaiseOptions {
  /** One alert per team and key, ever (e.g. `quota_80:2026-11`): a second raise with the key does nothing. */
  dedupeKey?: string;
}

/** The statement that writes an alert (the send path's write script runs it at COMMIT; a dedupe key makes a repeat a no-op). */
export function alertInsert(at: Date, teamId: string, kind: AlertKind, message: string, data: Record<string, unknown>, opts: RaiseOptions = {}): { sql: string; bindings: unknown[] } {
  return {
    sql: 'INSERT OR IGNORE INTO alerts (team_id, kind, message, data, created_at, dedupe_key) VALUES (?, ?, ?, ?, ?, ?)',
    bindings: [teamId, kind, message, JSON.stringify(data), at.toISOString(), opts.dedupeKey ?? null],
  };
}

/** Records an alert in the caller's (write) transaction. Returns its id, or null when `dedupeKey` named an alert already raised. */
export async function raiseAlert(
  q: Queryable,
  at: Date,
  teamId: string,
  kind: AlertKind,
  message: string,
  data: Record<string, unknown>,
  opts: RaiseOptions = {},
): Promise<number | null> {
  if (opts.dedupeKey !== undefined && (await q('alerts').where({ team_id: teamId, dedupe_key: opts.dedupeKey }).first('id'))) return null;
  const [id] = (await q('alerts').insert({
    team_id: teamId,
    kind,
    message,
    data: JSON.stringify(data),
    created_at: at.toISOString(),
    dedupe_key: opts.dedupeKey ?? null,
  })) as [number];
  return id;
}

export interface AlertQuery {
  /** true: only acknowledged ones; false: only open ones; both when omitted. */
  acknowledged?: boolean | undefined;
  kind?: AlertKind | undefined;
}

function filtered(ctx: AppContext, teamId: string, filter: AlertQuery) {
  const base = ctx.db('alerts').where('team_id', teamId);
  if (filter.acknowledged === true) base.whereNotNull('acknowledged_at');
  if (filter.acknowledged === false) base.whereNull('acknowledged_at');
  if (filter.kind !== undefined) base.andWhere('kind', filter.kind);
  return base;
}

/** The team's alerts, newest first (the most recent `limit`, 100 by default). */
export async function listAlerts(ctx: AppContext, teamId: string, opts: AlertQuery & { limit?: number } = {}): Promise<Alert[]> {
  const rows = (await filtered(ctx, teamId, opts).orderBy('id', 'desc').limit(opts.limit ?? 100)) as AlertRow[];
  return rows.map(toAlert);
}

/** The team's alerts, newest first, a page of them (Form A). */
export async function pageAlerts(ctx: AppContext, teamId: string, paging: PageRequest, filter: AlertQuery = {}): Promise<Page<Alert>> {
  const base = filtered(ctx, teamId, filter);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = (await base.clone().orderBy('id', 'desc').offset(paging.offset).limit(paging.perPage)) as AlertRow[];
  return toPage(rows.map(toAlert), Number(n), paging);
}

/** Every team's alerts, newest first (the admin CLI). */
export async function listAllAlerts(ctx: AppContext, opts: { limit?: number; open?: boolean; teamId?: string | undefined } = {}): Promise<Array<Alert & { teamId: string }>> {
  const q = ctx.db('alerts').orderBy('id', 'desc').limit(opts.limit ?? 50);
  if (opts.open) q.whereNull('acknowledged_at');
  if (opts.teamId !== undefined) q.andWhere('team_id', opts.teamId);
  const rows = (await q) as AlertRow[];
  return rows.map((r) => ({ ...toAlert(r), teamId: r.team_id }));
}

/** Marks an alert seen (idempotent: the first acknowledgement's time stays). */
export async function acknowledgeAlert(ctx: AppContext, teamId: string, id: string): Promise<Alert> {
  const n = /^\d{1,15}$/.test(id) ? Number(id) : NaN;
  return ctx.db.transaction(async (trx) => {
    const row = Number.isNaN(n) ? undefined : ((await trx('alerts').where({ team_id: teamId, id: n }).first()) as AlertRow | undefined);
    if (!row) throw notFound('Alert not found');
    if (row.acknowledged_at === null) {
      row.acknowledged_at = ctx.clock.now().toISOString();
      await trx('alerts').where({ id: row.id }).update({ acknowledged_at: row.acknowledged_at });
    }
    return toAlert(row);
  });
}
