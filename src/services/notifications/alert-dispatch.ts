// Fan-out of alerts to notification channels: a durable cursor (the `alerts` row of webhook_dispatch) names
// the last alert handled; one transaction reads the alerts past it, creates a delivery row and a
// NOTIFY_DELIVER_JOB for every enabled channel of the alert's team subscribed to its kind, and advances the
// cursor. Alerts are raised by any area through platform's `raiseAlert`, which queues ALERT_DISPATCH_JOB in
// the alert's own transaction; SQLite's one writer serialises the runs, so none is skipped or sent twice.
import type { AppContext } from '../../context.js';
import type { JobSpec } from '../../jobs/queue.js';
import { toAlert, type Alert } from '../platform/index.js';
import { NOTIFY_DELIVER_JOB, notifyLane, type NotifyJobPayload } from './channel-delivery.js';

const BATCH = 200;

interface AlertRow {
  id: number;
  team_id: string;
  kind: Alert['kind'];
  message: string;
  data: string;
  created_at: string;
  acknowledged_at: string | null;
}

async function dispatchBatch(ctx: AppContext): Promise<number> {
  return ctx.db.transaction(async (trx) => {
    const cursor = (await trx('webhook_dispatch').where({ name: 'alerts' }).first('position')) as { position: number } | undefined;
    const position = cursor?.position ?? 0;
    const alerts = (await trx('alerts').where('id', '>', position).orderBy('id').limit(BATCH)) as AlertRow[];
    if (alerts.length === 0) return 0;
    const teams = [...new Set(alerts.map((a) => a.team_id))];
    const channels = (await trx('notification_channels').whereIn('team_id', teams).andWhere('enabled', true).select('id', 'team_id', 'alert_kinds')) as Array<{ id: number; team_id: string; alert_kinds: string }>;
    const specs: JobSpec[] = [];
    for (const a of alerts) {
      const alert = toAlert(a);
      for (const c of channels) {
        if (c.team_id !== a.team_id || !(JSON.parse(c.alert_kinds) as string[]).includes(a.kind)) continue;
        const [id] = (await trx('notification_deliveries').insert({
          channel_id: c.id,
          alert_id: a.id,
          alert_kind: a.kind,
          payload: JSON.stringify(alert),
          status: 'pending',
          attempts: 0,
          created_at: a.created_at,
        })) as [number];
        const payload: NotifyJobPayload = { deliveryId: id };
        specs.push({ kind: NOTIFY_DELIVER_JOB, payload, lane: notifyLane(c.id) });
      }
    }
    await ctx.jobs.enqueueMany(trx, specs);
    if (cursor) await trx('webhook_dispatch').where({ name: 'alerts' }).update({ position: alerts[alerts.length - 1]!.id });
    else await trx('webhook_dispatch').insert({ name: 'alerts', position: alerts[alerts.length - 1]!.id });
    return alerts.length;
  });
}

/** The ALERT_DISPATCH_JOB handler: fans out every alert past the cursor. */
export async function dispatchAlerts(ctx: AppContext): Promise<void> {
  while ((await dispatchBatch(ctx)) === BATCH);
}
