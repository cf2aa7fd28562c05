// Fan-out of alerts to notification channels: a durable cursor (the `alerts` row of webhook_dispatch) names
// the last alert handled; one transaction reads the alerts past it, creates a delivery row and a
// NOTIFY_DELIVER_JOB for every enabled channel of the alert's team subscribed to its kind, and advances the
// cursor. SQLite's one writer serialises the runs, so no alert is skipped or sent twice.
//
// Alerts are written by any area (platform's `raiseAlert`/`alertInsert`) in the transaction of what they
// report, and nothing more: the AlertWaker sees the insert on the database's query stream and queues one
// ALERT_DISPATCH_JOB, which runs after that transaction commits (as the webhook dispatcher is woken by
// events); a poll catches alerts written by another process (the admin CLI) or left by a crash.
import type { AppContext } from '../../context.js';
import type { JobSpec } from '../../jobs/queue.js';
import { JobWaker } from '../../jobs/waker.js';
import { toAlert, type Alert } from '../platform/index.js';
import { NOTIFY_DELIVER_JOB, notifyLane, type NotifyJobPayload } from './channel-delivery.js';

const BATCH = 200;

export const ALERT_DISPATCH_JOB = 'alerts.dispatch';
/** An insert into `alerts`, as knex spells it or as the send path's script does. */
const ALERTS_INSERT = /^insert (or ignore )?into [`"]?alerts[`"]? /i;

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

/** Fans out every alert past the cursor. */
export async function dispatchAlerts(ctx: AppContext): Promise<void> {
  while ((await dispatchBatch(ctx)) === BATCH);
}

/** Queues a dispatch when an alert is written (one waiting at a time), and polls for the ones it did not see. */
export class AlertWaker extends JobWaker {
  constructor(
    private readonly ctx: AppContext,
    onError: (err: unknown) => void,
  ) {
    super(ctx.db, ctx.jobs, ALERT_DISPATCH_JOB, onError);
  }

  protected observe(sql: string): void {
    if (ALERTS_INSERT.test(sql)) this.wake();
  }

  /** The ALERT_DISPATCH_JOB handler. */
  async run(): Promise<void> {
    this.claimed();
    await dispatchAlerts(this.ctx);
  }

  protected async poll(): Promise<void> {
    const [{ last }] = (await this.db('alerts').max({ last: 'id' })) as [{ last: number | null }];
    const cursor = (await this.db('webhook_dispatch').where({ name: 'alerts' }).first('position')) as { position: number } | undefined;
    if ((last ?? 0) > (cursor?.position ?? 0)) this.wake();
  }
}
