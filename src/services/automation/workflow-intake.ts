// The intake: starts the runs that triggers call for. It reads, in one transaction per batch,
//  - the team event log past a durable cursor (workflow_intake), as the webhook dispatcher does: contact.created,
//    email.opened, email.clicked and email.bounced; an event older than a workflow's activation starts nothing;
//  - the inbox: custom events of POST /workflows/events, and the signals the database's own triggers write when
//    a contact joins a manual segment or subscribes to a topic that an active workflow watches (migration 022);
// and writes the runs (and their first jobs) in the same transaction as the cursor's move and the inbox's
// deletion, so a crash loses no trigger and starts no run twice.
//
// Like the dispatcher it runs as a job (INTAKE_JOB), woken by inserts seen on the database's query stream, at
// start-up and by a slow poll; while no workflow is active nothing wakes it (the poll moves the cursor on).
import type { AppContext } from '../../context.js';
import { placeholders, queryRows, type Db, type Queryable } from '../../db/index.js';
import { EVENTS_INSERT } from '../../events/webhook-dispatcher.js';
import type { JobQueue } from '../../jobs/queue.js';
import { JobWaker } from '../../jobs/waker.js';
import type { Graph } from './workflow-graph.js';
import { enterRuns, runSchedule, runSteps, SCHEDULE_JOB, STEP_JOB, type Entry } from './workflow-runs.js';
import type { WorkflowRow } from './workflows.js';

export const INTAKE_JOB = 'workflow.intake';
const BATCH = 500;
/** The event kinds a trigger can name. */
const EVENT_TRIGGERS = ['contact.created', 'email.opened', 'email.clicked', 'email.bounced'];

interface InboxRow {
  pk: number;
  team_id: string;
  kind: 'event' | 'segment' | 'topic';
  key: string;
  contact_pk: number;
  data: string;
}

interface ContactRef {
  pk: number;
  id: string;
  email: string;
  team_id: string;
  email_key: string;
}

async function contactsWhere(q: Queryable, column: 'pk' | 'id', values: unknown[]): Promise<ContactRef[]> {
  const out: ContactRef[] = [];
  const unique = [...new Set(values)];
  for (let i = 0; i < unique.length; i += 500) {
    const chunk = unique.slice(i, i + 500);
    out.push(...(await queryRows<ContactRef>(q, `SELECT pk, id, email, team_id, email_key FROM contacts WHERE ${column} IN (${placeholders(chunk.length)})`, chunk)));
  }
  return out;
}

/** Whom an email event is about: its `recipient` (a bounce names one; opens and clicks may), else every `to`. */
function recipientsOf(body: Record<string, unknown>): string[] {
  if (typeof body.recipient === 'string') return [body.recipient];
  return Array.isArray(body.to) ? (body.to as unknown[]).map((a) => String(a).replace(/^.*<([^>]+)>\s*$/, '$1').trim()) : [];
}

/** One batch of events and inbox rows; answers how many were read (0: caught up). */
async function intakeBatch(ctx: AppContext): Promise<number> {
  return ctx.db.transaction(async (trx) => {
    const [{ position }] = await queryRows<{ position: number }>(trx, `SELECT position FROM workflow_intake WHERE name = 'events'`);
    const [{ last }] = await queryRows<{ last: number }>(trx, 'SELECT coalesce(max(id), 0) AS last FROM events');
    const events = await queryRows<{ id: number; team_id: string; type: string; data: string }>(
      trx,
      `SELECT id, team_id, type, data FROM events WHERE id > ? AND type IN (${placeholders(EVENT_TRIGGERS.length)}) ORDER BY id LIMIT ${BATCH}`,
      [position, ...EVENT_TRIGGERS],
    );
    const inbox = await queryRows<InboxRow>(trx, `SELECT pk, team_id, kind, key, contact_pk, data FROM workflow_inbox ORDER BY pk LIMIT ${BATCH}`);
    const newPosition = events.length === BATCH ? events[events.length - 1]!.id : last;
    if (events.length === 0 && inbox.length === 0) {
      if (newPosition !== position) await trx('workflow_intake').where({ name: 'events' }).update({ position: newPosition });
      return 0;
    }
    const teams = [...new Set([...events.map((e) => e.team_id), ...inbox.map((r) => r.team_id)])];
    const workflows = (await trx('workflows').where('status', 'active').whereIn('team_id', teams)) as WorkflowRow[];
    const entries: Entry[] = [];
    if (workflows.length) {
      const graphs = new Map(workflows.map((w) => [w.pk, JSON.parse(w.graph!) as Graph]));
      const byTeam = new Map<string, WorkflowRow[]>();
      for (const w of workflows) byTeam.set(w.team_id, [...(byTeam.get(w.team_id) ?? []), w]);
      // The contacts named, read at once: by pk (inbox), by id (contact.created), by address (email events).
      const parsed = events.map((e) => ({ ...e, body: JSON.parse(e.data) as Record<string, unknown> }));
      const byPk = new Map((await contactsWhere(trx, 'pk', inbox.map((r) => r.contact_pk))).map((c) => [c.pk, c]));
      const createdIds = parsed.filter((e) => e.type === 'contact.created').map((e) => e.body.contact_id);
      const byId = new Map((await contactsWhere(trx, 'id', createdIds)).map((c) => [c.id, c]));
      const addressKeys = parsed.filter((e) => e.type !== 'contact.created').flatMap((e) => recipientsOf(e.body).map((a) => a.toLowerCase()));
      const byAddress = new Map<string, ContactRef>();
      for (let i = 0; i < addressKeys.length; i += 500) {
        const chunk = [...new Set(addressKeys.slice(i, i + 500))];
        if (!chunk.length) continue;
        for (const c of await queryRows<ContactRef>(trx, `SELECT pk, id, email, team_id, email_key FROM contacts WHERE email_key IN (${placeholders(chunk.length)})`, chunk)) byAddress.set(`${c.team_id}\u0000${c.email_key}`, c);
      }
      for (const e of parsed) {
        for (const w of byTeam.get(e.team_id) ?? []) {
          if (w.trigger_type !== e.type || e.id <= w.from_event_id) continue;
          // Tracking records every open and click; only a recipient's first starts a run (`first: false` is a repeat).
          if (e.body.first === false) continue;
          const contacts =
            e.type === 'contact.created'
              ? [byId.get(String(e.body.contact_id))]
              : recipientsOf(e.body).map((a) => byAddress.get(`${e.team_id}\u0000${a.toLowerCase()}`));
          for (const c of contacts) {
            if (!c || c.team_id !== e.team_id) continue;
            const data = e.type === 'contact.created' ? {} : { email_id: e.body.email_id ?? null, ...(e.body.link !== undefined ? { link: e.body.link } : {}) };
            entries.push({ workflow: w, graph: graphs.get(w.pk)!, contact: c, trigger: { type: e.type, event_id: e.id, data } });
          }
        }
      }
      for (const r of inbox) {
        const c = byPk.get(r.contact_pk);
        if (!c || c.team_id !== r.team_id) continue;
        for (const w of byTeam.get(r.team_id) ?? []) {
          const match =
            r.kind === 'event' ? w.trigger_type === 'event' && w.trigger_key === r.key : r.kind === 'segment' ? w.trigger_type === 'segment.added' && String(w.trigger_pk) === r.key : w.trigger_type === 'topic.subscribed' && String(w.trigger_pk) === r.key;
          if (!match) continue;
          const trigger =
            r.kind === 'event'
              ? { type: 'event', name: r.key, data: JSON.parse(r.data) as Record<string, unknown> }
              : r.kind === 'segment'
                ? { type: 'segment.added', segment_id: w.trigger_key, data: {} }
                : { type: 'topic.subscribed', topic_id: w.trigger_key, data: {} };
          entries.push({ workflow: w, graph: graphs.get(w.pk)!, contact: c, trigger });
        }
      }
    }
    if (entries.length) await enterRuns(ctx, trx, entries);
    if (inbox.length) await trx('workflow_inbox').where('pk', '<=', inbox[inbox.length - 1]!.pk).delete();
    if (newPosition !== position) await trx('workflow_intake').where({ name: 'events' }).update({ position: newPosition });
    return Math.max(events.length, inbox.length);
  });
}

/** Everything past the cursor and in the inbox. */
export async function runIntake(ctx: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await intakeBatch(ctx);
    total += n;
    if (n < BATCH) return total;
  }
}

const INBOX_WRITE = /^insert into [`"]?(workflow_inbox|segment_contacts|topic_subscriptions)[`"]? /i;
const WORKFLOW_WRITE = /^(insert into|update|delete from) [`"]?workflows[`"]? /i;

/** Keeps the intake awake (see the dispatcher's DispatchWaker, which this follows). */
export class IntakeWaker extends JobWaker {
  /** Some workflow may be active (conservative until a run has looked). */
  private active = true;
  private writes = 0;

  constructor(
    private readonly ctx: AppContext,
    db: Db,
    jobs: JobQueue,
  ) {
    super(db, jobs, INTAKE_JOB, (err) => ctx.log.error({ err }, 'workflow intake: could not wake'));
  }

  protected observe(sql: string): void {
    if (EVENTS_INSERT.test(sql) || INBOX_WRITE.test(sql)) {
      if (this.active) this.wake();
    } else if (WORKFLOW_WRITE.test(sql)) {
      this.writes++;
      this.active = true;
    }
  }

  async run(): Promise<void> {
    this.claimed();
    const writes = this.writes;
    await runIntake(this.ctx);
    const active = Boolean(await this.db('workflows').where('status', 'active').first('pk'));
    if (writes === this.writes) this.active = active;
  }

  /** With an active workflow or a custom event waiting, a run; with none, the cursor moves past the events. */
  protected async poll(): Promise<void> {
    const writes = this.writes;
    const active = Boolean(await this.db('workflows').where('status', 'active').first('pk'));
    if (writes === this.writes) this.active = active;
    const [inbox] = await queryRows<{ n: number }>(this.db, 'SELECT count(*) AS n FROM (SELECT 1 FROM workflow_inbox LIMIT 1)');
    if (active || (inbox?.n ?? 0) > 0) this.wake();
    else await this.db.raw(`UPDATE workflow_intake SET position = (SELECT coalesce(max(id), 0) FROM events) WHERE name = 'events' AND NOT EXISTS (SELECT 1 FROM workflows WHERE status = 'active')`);
  }
}

/**
 * Registers the workflow jobs (intake, steps, schedules) on the context's queue; `start` (after the queue has
 * started) begins listening for triggers, `stop` ends that. Wired by appliance.ts.
 */
export function workflowMachinery(ctx: AppContext): { start(pollMs?: number): void; stop(): void } {
  const waker = new IntakeWaker(ctx, ctx.db, ctx.jobs);
  ctx.jobs.register(INTAKE_JOB, () => waker.run());
  ctx.jobs.register(STEP_JOB, (job) => runSteps(ctx, job));
  ctx.jobs.register(SCHEDULE_JOB, (job) => runSchedule(ctx, job));
  return { start: (pollMs = 5000) => waker.start(pollMs), stop: () => waker.stop() };
}
