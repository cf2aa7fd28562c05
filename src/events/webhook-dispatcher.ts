// Fan-out: turns rows of the events table into webhook deliveries. A durable cursor (webhook_dispatch)
// names the last event handled; one transaction reads the events past it, creates a delivery row and a
// delivery job for each active endpoint of the event's team subscribed to its kind, and advances the
// cursor. SQLite has one writer and event ids commit in order, so no event is skipped or fanned out twice,
// and a crash at any point leaves either all of a batch or none of it.
//
// The dispatcher runs as a job (DISPATCH_JOB). It is woken when an event is inserted (a listener on the
// database's queries: recordEvent itself does no extra work), at start-up, and by a slow safety poll.
import type { Db, Queryable } from '../db/index.js';
import type { JobQueue, JobSpec } from '../jobs/queue.js';
import { JobWaker } from '../jobs/waker.js';
import type { EventType } from './types.js';

/** An insert into `events`, as knex spells it or as the direct path does (db/batcher.ts insertRows). */
export const EVENTS_INSERT = /^insert into [`"]?events[`"]? /i;

export const DISPATCH_JOB = 'webhook.dispatch';
export const WEBHOOK_DELIVER_JOB = 'webhook.deliver';
/** The job lane of an endpoint's deliveries (src/jobs/queue.ts): a slow endpoint's backlog leaves slots to the rest. */
export const webhookLane = (webhookId: number) => `webhook:${webhookId}`;

/** Events read per transaction. */
const BATCH = 500;

/** Deliveries of one endpoint handed to one job for their first attempt (fewer queue round trips). */
export const FIRST_ATTEMPT_GROUP = 25;

export type DeliverJobPayload =
  /** A retry (or a replay) of one delivery. */
  | { deliveryId: number; /** A replay: one attempt, no retry schedule, made even if the endpoint is disabled. */ replay?: boolean }
  /** First attempts of new deliveries of one endpoint; each failure gets its own retry job. */
  | { first: number[] };

interface EventRow {
  id: number;
  team_id: string;
  type: EventType;
  data: string;
  created_at: string;
}

interface HookRow {
  id: number;
  team_id: string;
  events: string;
  from_event_id: number;
}

/** The exact body sent for an event: `{ type, created_at, data }` (created_at with milliseconds). */
export function eventBody(type: string, createdAt: string, dataJson: string): string {
  return `{"type":${JSON.stringify(type)},"created_at":${JSON.stringify(createdAt)},"data":${dataJson}}`;
}

export async function dispatchPosition(q: Queryable): Promise<number> {
  const row = (await q('webhook_dispatch').where({ name: 'events' }).first('position')) as { position: number } | undefined;
  return row?.position ?? 0;
}

/** One batch; returns the number of events read (0: caught up). */
async function dispatchBatch(db: Db, jobs: JobQueue): Promise<number> {
  return db.transaction(async (trx) => {
    const position = await dispatchPosition(trx);
    const events = (await trx('events').where('id', '>', position).orderBy('id').limit(BATCH)) as EventRow[];
    if (events.length === 0) return 0;
    const teams = [...new Set(events.map((e) => e.team_id))];
    const hooks = (await trx('webhooks').whereIn('team_id', teams).andWhere('active', true).select('id', 'team_id', 'events', 'from_event_id')) as HookRow[];
    if (hooks.length > 0) {
      const byTeam = new Map<string, Array<HookRow & { kinds: Set<string> }>>();
      for (const h of hooks) byTeam.set(h.team_id, [...(byTeam.get(h.team_id) ?? []), { ...h, kinds: new Set(JSON.parse(h.events) as string[]) }]);
      const rows: Array<Record<string, unknown>> = [];
      for (const e of events) {
        for (const h of byTeam.get(e.team_id) ?? []) {
          if (e.id <= h.from_event_id || !h.kinds.has(e.type)) continue;
          rows.push({
            webhook_id: h.id,
            event_id: e.id,
            event_type: e.type,
            payload: eventBody(e.type, e.created_at, e.data),
            status: 'pending',
            attempts: 0,
            created_at: e.created_at,
          });
        }
      }
      const byHook = new Map<number, number[]>();
      for (let i = 0; i < rows.length; i += 100) {
        const chunk = rows.slice(i, i + 100);
        const ids = (await trx('webhook_deliveries').insert(chunk).returning('id')) as Array<{ id: number } | number>;
        ids.forEach((id, j) => {
          const hook = chunk[j]!.webhook_id as number;
          byHook.set(hook, [...(byHook.get(hook) ?? []), typeof id === 'number' ? id : id.id]);
        });
      }
      const specs: JobSpec[] = [];
      for (const [hook, ids] of byHook) {
        for (let i = 0; i < ids.length; i += FIRST_ATTEMPT_GROUP) {
          const payload: DeliverJobPayload = { first: ids.slice(i, i + FIRST_ATTEMPT_GROUP) };
          specs.push({ kind: WEBHOOK_DELIVER_JOB, payload, lane: webhookLane(hook) });
        }
      }
      await jobs.enqueueMany(trx, specs);
    }
    await trx('webhook_dispatch').where({ name: 'events' }).update({ position: events[events.length - 1]!.id });
    return events.length;
  });
}

/** Fans out every event past the cursor. */
export async function dispatchEvents(db: Db, jobs: JobQueue): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await dispatchBatch(db, jobs);
    total += n;
    if (n < BATCH) return total;
  }
}

/** Whether any endpoint on the box is active (when none is, events need no fan-out). */
export async function anyActiveWebhook(q: Queryable): Promise<boolean> {
  return Boolean(await q('webhooks').where('active', true).first('id'));
}

/**
 * With no active endpoint on the box, moves the cursor to the last event without reading any. Safe against
 * a concurrent creation: one writer, and a new endpoint only takes events past the last one at its creation.
 */
export async function skipWithoutWebhooks(db: Db): Promise<void> {
  await db.raw(
    `UPDATE webhook_dispatch SET position = (SELECT coalesce(max(id), 0) FROM events)
     WHERE name = 'events' AND NOT EXISTS (SELECT 1 FROM webhooks WHERE active)
       AND position < (SELECT coalesce(max(id), 0) FROM events)`,
  );
}

/**
 * Keeps the dispatcher awake: an insert into `events` (seen on the database's query stream, so inside the
 * writer's transaction) enqueues one dispatch job, which the queue runs after that transaction commits.
 * While a dispatch job is waiting no other is enqueued; once it has started, the next event enqueues a new
 * one, so an event committed during a run is picked up by the following run.
 *
 * While no endpoint on the box is active, events wake nothing (the send path pays only a string compare);
 * the poll moves the cursor past them. Any write to `webhooks` turns waking back on until a dispatch run
 * finds none active again.
 */
export class DispatchWaker extends JobWaker {
  /** Some endpoint may be active (conservative: true until a run has looked). */
  private active = true;
  /** Bumped by every write to `webhooks`, so a run does not clear `active` on stale knowledge. */
  private hookWrites = 0;

  constructor(db: Db, jobs: JobQueue, onError: (err: unknown) => void) {
    super(db, jobs, DISPATCH_JOB, onError);
  }

  protected observe(sql: string): void {
    if (EVENTS_INSERT.test(sql)) {
      if (this.active) this.wake();
    } else if (sql.startsWith('insert into `webhooks`') || sql.startsWith('update `webhooks`') || sql.startsWith('delete from `webhooks`')) {
      this.hookWrites++;
      this.active = true;
    }
  }

  /** The dispatch job handler: fans out what is there, and learns whether any endpoint is active. */
  async run(): Promise<void> {
    this.claimed();
    const writes = this.hookWrites;
    await dispatchEvents(this.db, this.jobs);
    const active = await anyActiveWebhook(this.db);
    if (writes === this.hookWrites) this.active = active;
  }

  /** Events past the cursor with no dispatch job waiting; with no endpoint active, the cursor moves past them. */
  protected async poll(): Promise<void> {
    const writes = this.hookWrites;
    const active = await anyActiveWebhook(this.db);
    if (writes === this.hookWrites) this.active = active;
    if (!active) return await skipWithoutWebhooks(this.db);
    const [{ last }] = (await this.db('events').max({ last: 'id' })) as [{ last: number | null }];
    if ((last ?? 0) > (await dispatchPosition(this.db))) this.wake();
  }
}
