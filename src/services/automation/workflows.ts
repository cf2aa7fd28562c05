// Workflows (spec: /workflows, wf_ ids): a draft is created, its graph set (checked as a whole, see
// workflow-graph.ts), then activated and paused. Runs (one per contact in the graph, workflow-runs.ts) are
// started by the intake (workflow-intake.ts: the team event log, the inbox of custom events and signals), the
// schedule job, or POST /workflows/{id}/trigger.
//
// One run of a workflow per contact at a time, unless the workflow is created with allow_concurrent_runs:
// while a contact's run is in flight, what would start another is ignored (manual trigger: 409).
// A paused workflow starts no run (its triggers are not kept for later); its runs in flight stop at their next
// step (a wait still runs out) and go on from there when it is activated again.
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { conflict, notFound, unprocessable, badRequest } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { parsePaging, toPage, type Page } from '../../core/paging.js';
import { Batcher, insertRows } from '../../db/batcher.js';
import { readsOf, type Queryable } from '../../db/index.js';
import { getTemplate } from '../templates/index.js';
import { isTimeZone, nextCronRun, parseGraph, type Graph } from './workflow-graph.js';
import { enterRuns, SCHEDULE_JOB, STEP_JOB, type Entry } from './workflow-runs.js';


export const WORKFLOW_STATUSES = ['draft', 'active', 'paused'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];
export const RUN_STATES = ['ready', 'waiting', 'paused', 'completed', 'exited', 'failed'] as const;
/** Workflows per team. */
export const MAX_WORKFLOWS = 200;

export interface WorkflowRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  status: WorkflowStatus;
  graph: string | null;
  graph_version: number;
  trigger_type: string | null;
  trigger_key: string | null;
  trigger_pk: number | null;
  timezone: string;
  allow_concurrent_runs: number;
  mode: 'live' | 'test';
  secret_sealed: string;
  from_event_id: number;
  created_at: string;
  updated_at: string;
  activated_at: string | null;
}

export interface Workflow {
  id: string;
  name: string;
  status: WorkflowStatus;
  timezone: string;
  allow_concurrent_runs: boolean;
  graph: Graph | null;
  graph_version: number;
  created_at: string;
  updated_at: string;
  activated_at: string | null;
}

export function toWorkflow(r: WorkflowRow): Workflow {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    timezone: r.timezone,
    allow_concurrent_runs: Boolean(r.allow_concurrent_runs),
    graph: r.graph ? (JSON.parse(r.graph) as Graph) : null,
    graph_version: r.graph_version,
    created_at: r.created_at,
    updated_at: r.updated_at,
    activated_at: r.activated_at,
  };
}

async function findWorkflow(q: Queryable, teamId: string, id: string): Promise<WorkflowRow> {
  const row = (await q('workflows').where({ team_id: teamId, id }).first()) as WorkflowRow | undefined;
  if (!row) throw notFound('Workflow not found');
  return row;
}

export interface CreateWorkflowInput {
  name: string;
  timezone?: string | undefined;
  allow_concurrent_runs?: boolean | undefined;
  graph?: unknown;
}

/** A draft; answers the workflow and the secret that signs its webhook steps' requests (shown once). */
export async function createWorkflow(ctx: AppContext, teamId: string, mode: 'live' | 'test', input: CreateWorkflowInput): Promise<Workflow & { signing_secret: string }> {
  const timezone = input.timezone ?? 'UTC';
  if (!isTimeZone(timezone)) throw badRequest(`timezone: '${timezone}' is not an IANA time zone (e.g. Europe/Paris, UTC)`);
  const graph = input.graph === undefined ? null : parseGraph(input.graph, timezone);
  const trigger = graph ? await triggerColumns(ctx, teamId, graph) : null;
  const secret = `whsec_${randomBytes(24).toString('base64url')}`;
  const now = ctx.clock.now();
  const row: Omit<WorkflowRow, 'pk'> = {
    id: newPublicId('wf', now.getTime()),
    team_id: teamId,
    name: input.name,
    status: 'draft',
    graph: graph ? JSON.stringify(graph) : null,
    graph_version: graph ? 1 : 0,
    trigger_type: trigger?.type ?? null,
    trigger_key: trigger?.key ?? null,
    trigger_pk: trigger?.pk ?? null,
    timezone,
    allow_concurrent_runs: input.allow_concurrent_runs ? 1 : 0,
    mode,
    secret_sealed: ctx.secrets.seal(secret),
    from_event_id: 0,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    activated_at: null,
  };
  await ctx.db.transaction(async (trx) => {
    const [{ n }] = (await trx('workflows').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
    if (Number(n) >= MAX_WORKFLOWS) throw unprocessable(`A team has at most ${MAX_WORKFLOWS} workflows`);
    await trx('workflows').insert(row);
  });
  return { ...toWorkflow({ pk: 0, ...row }), signing_secret: secret };
}

/** Oldest first (spec: `{ data }`, no meta). */
export async function listWorkflows(ctx: AppContext, teamId: string): Promise<Workflow[]> {
  const rows = (await readsOf(ctx.db)('workflows').where('team_id', teamId).orderBy('pk')) as WorkflowRow[];
  return rows.map(toWorkflow);
}

export interface RunCounts {
  active: number;
  completed: number;
  exited: number;
  failed: number;
}

export async function getWorkflow(ctx: AppContext, teamId: string, id: string): Promise<Workflow & { runs: RunCounts }> {
  const reads = readsOf(ctx.db);
  const row = await findWorkflow(reads, teamId, id);
  const counts = (await reads('workflow_runs').where('workflow_pk', row.pk).select('active', 'state').count({ n: '*' }).groupBy('active', 'state')) as Array<{ active: number; state: string; n: number }>;
  const runs: RunCounts = { active: 0, completed: 0, exited: 0, failed: 0 };
  for (const c of counts) {
    if (c.active) runs.active += Number(c.n);
    else if (c.state === 'completed' || c.state === 'exited' || c.state === 'failed') runs[c.state] += Number(c.n);
  }
  return { ...toWorkflow(row), runs };
}

/** What the intake matches on: the trigger's type, its key (an event name) and the segment's or topic's pk. */
async function triggerColumns(ctx: AppContext, teamId: string, graph: Graph): Promise<{ type: string; key: string | null; pk: number | null }> {
  const reads = readsOf(ctx.db);
  const t = graph.trigger;
  // References to the team's segments, topics and templates, checked now (a 400 naming the step).
  for (const s of graph.steps) {
    if ((s.type === 'add_to_segment' || s.type === 'remove_from_segment') && !(await segmentRow(reads, teamId, s.segment_id))?.manual) {
      throw badRequest(`step '${s.id}': segment '${s.segment_id}' is not a manual segment of this team`);
    }
    if (s.type === 'send_email' && s.topic_id !== undefined && !(await topicPk(reads, teamId, s.topic_id))) throw badRequest(`step '${s.id}': topic '${s.topic_id}' not found`);
    if (s.type === 'send_email' && s.template_id !== undefined) {
      try {
        await getTemplate(ctx, teamId, s.template_id);
      } catch {
        throw badRequest(`step '${s.id}': template '${s.template_id}' not found`);
      }
    }
  }
  switch (t.type) {
    case 'segment.added': {
      const seg = await segmentRow(reads, teamId, t.segment_id);
      if (!seg) throw badRequest(`trigger: segment '${t.segment_id}' not found`);
      if (!seg.manual) throw badRequest(`trigger: segment '${t.segment_id}' is dynamic; segment.added watches a manual segment (contacts added to it)`);
      return { type: t.type, key: t.segment_id, pk: seg.pk };
    }
    case 'topic.subscribed': {
      const pk = await topicPk(reads, teamId, t.topic_id);
      if (!pk) throw badRequest(`trigger: topic '${t.topic_id}' not found`);
      return { type: t.type, key: t.topic_id, pk };
    }
    case 'schedule':
      if (t.segment_id !== undefined && !(await segmentRow(reads, teamId, t.segment_id))) throw badRequest(`trigger: segment '${t.segment_id}' not found`);
      return { type: t.type, key: t.segment_id ?? null, pk: null };
    case 'event':
      return { type: t.type, key: t.name, pk: null };
    default:
      return { type: t.type, key: null, pk: null };
  }
}

async function segmentRow(q: Queryable, teamId: string, id: string): Promise<{ pk: number; manual: boolean } | null> {
  const r = (await q('segments').where({ team_id: teamId, id }).first('pk', 'rules')) as { pk: number; rules: string | null } | undefined;
  return r ? { pk: r.pk, manual: r.rules === null } : null;
}

async function topicPk(q: Queryable, teamId: string, id: string): Promise<number | null> {
  const r = (await q('topics').where({ team_id: teamId, id }).first('pk')) as { pk: number } | undefined;
  return r?.pk ?? null;
}

/** Replaces the graph (not while active: pause first). Runs in flight go on from the step they are at, by id. */
export async function setGraph(ctx: AppContext, teamId: string, id: string, input: unknown): Promise<Workflow> {
  const current = await findWorkflow(readsOf(ctx.db), teamId, id);
  const graph = parseGraph(input, current.timezone);
  const trigger = await triggerColumns(ctx, teamId, graph);
  return ctx.db.transaction(async (trx) => {
    const row = await findWorkflow(trx, teamId, id);
    if (row.status === 'active') throw conflict('Workflow is active: pause it before changing its graph');
    const next = {
      graph: JSON.stringify(graph),
      graph_version: row.graph_version + 1,
      trigger_type: trigger.type,
      trigger_key: trigger.key,
      trigger_pk: trigger.pk,
      updated_at: ctx.clock.now().toISOString(),
    };
    await trx('workflows').where('pk', row.pk).update(next);
    return toWorkflow({ ...row, ...next });
  });
}

/**
 * Starts (or resumes) a workflow: from now on its trigger starts runs (events recorded before this moment do
 * not), its paused runs go on, and a schedule's next time is queued.
 */
export async function activateWorkflow(ctx: AppContext, teamId: string, id: string): Promise<Workflow> {
  return ctx.db.transaction(async (trx) => {
    const row = await findWorkflow(trx, teamId, id);
    if (!row.graph) throw unprocessable('Workflow has no graph: set it with PUT /workflows/{id}/graph first');
    if (row.status === 'active') return toWorkflow(row);
    const now = ctx.clock.now();
    const [{ last }] = (await trx('events').max({ last: 'id' })) as [{ last: number | null }];
    const next = { status: 'active' as const, activated_at: now.toISOString(), updated_at: now.toISOString(), from_event_id: last ?? 0 };
    await trx('workflows').where('pk', row.pk).update(next);
    // Runs stopped by the pause go on, each by a job of its own.
    const paused = (await trx('workflow_runs').where({ workflow_pk: row.pk, active: 1, state: 'paused' }).select('pk')) as Array<{ pk: number }>;
    if (paused.length) {
      await trx('workflow_runs').whereIn('pk', paused.map((p) => p.pk)).update({ state: 'ready', updated_at: now.toISOString() });
      await ctx.jobs.enqueueMany(trx, paused.map((p) => ({ kind: STEP_JOB, payload: { run: p.pk } })));
    }
    const graph = JSON.parse(row.graph) as Graph;
    if (graph.trigger.type === 'schedule') {
      const at = nextCronRun(graph.trigger.cron, row.timezone, now);
      if (at) await ctx.jobs.enqueue(trx, SCHEDULE_JOB, { workflow: row.pk, version: row.graph_version }, { runAt: at, dedupeKey: `workflow.schedule:${row.pk}:${row.graph_version}` });
    }
    return toWorkflow({ ...row, ...next });
  });
}

export async function pauseWorkflow(ctx: AppContext, teamId: string, id: string): Promise<Workflow> {
  return ctx.db.transaction(async (trx) => {
    const row = await findWorkflow(trx, teamId, id);
    if (row.status === 'draft') throw unprocessable('Workflow is a draft: only an active workflow can be paused');
    if (row.status === 'paused') return toWorkflow(row);
    const next = { status: 'paused' as const, updated_at: ctx.clock.now().toISOString() };
    await trx('workflows').where('pk', row.pk).update(next);
    return toWorkflow({ ...row, ...next });
  });
}

/** Deletes the workflow and its runs; their jobs find nothing and end. */
export async function deleteWorkflow(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findWorkflow(trx, teamId, id);
    await trx('workflows').where('pk', row.pk).delete();
  });
}

interface ContactRef {
  pk: number;
  id: string;
  email: string;
}

async function findContactRef(q: Queryable, teamId: string, ref: { contact_id?: string | undefined; email?: string | undefined }): Promise<ContactRef> {
  const base = q('contacts').where('team_id', teamId);
  const row = (ref.contact_id !== undefined ? await base.andWhere('id', ref.contact_id).first('pk', 'id', 'email') : await base.andWhere('email_key', ref.email!.toLowerCase()).first('pk', 'id', 'email')) as
    | ContactRef
    | undefined;
  if (!row) throw notFound('Contact not found');
  return row;
}

export interface TriggerInput {
  contact_id?: string | undefined;
  email?: string | undefined;
  data?: Record<string, unknown> | undefined;
}

/** POST /workflows/{id}/trigger: starts a run for one contact now (the workflow must be active). */
export async function triggerWorkflow(ctx: AppContext, teamId: string, id: string, input: TriggerInput): Promise<{ run_id: string }> {
  return ctx.db.transaction(async (trx) => {
    const row = await findWorkflow(trx, teamId, id);
    if (row.status !== 'active') throw unprocessable(`Workflow is ${row.status}: only an active workflow can be triggered`);
    const contact = await findContactRef(trx, teamId, input);
    const graph = JSON.parse(row.graph!) as Graph;
    const entry: Entry = { workflow: row, graph, contact, trigger: { type: 'manual', data: input.data ?? {} } };
    const [started] = await enterRuns(ctx, trx, [entry]);
    if (!started) throw conflict('Contact is already in a run of this workflow');
    return { run_id: started };
  });
}

/**
 * POST /workflows/events: a custom event for one contact, kept in the inbox (one group-committed insert);
 * the intake starts the runs of the active workflows whose trigger names it. 404 for an unknown contact.
 */
export async function acceptWorkflowEvent(ctx: AppContext, teamId: string, input: TriggerInput & { name: string }): Promise<void> {
  const contact = await findContactRef(readsOf(ctx.db), teamId, input);
  await inboxWriter(ctx).submit({ team_id: teamId, kind: 'event', key: input.name, contact_pk: contact.pk, data: JSON.stringify(input.data ?? {}), created_at: ctx.clock.now().toISOString() });
}


interface InboxRow {
  team_id: string;
  kind: string;
  key: string;
  contact_pk: number;
  data: string;
  created_at: string;
}

const inboxWriters = new WeakMap<AppContext, Batcher<InboxRow, void>>();
function inboxWriter(ctx: AppContext): Batcher<InboxRow, void> {
  let w = inboxWriters.get(ctx);
  if (!w) {
    w = new Batcher<InboxRow, void>(async (rows) => {
      await ctx.db.transaction((trx) => insertRows(trx, 'workflow_inbox', rows));
      return rows.map(() => undefined);
    }, 500);
    inboxWriters.set(ctx, w);
  }
  return w;
}

export interface RunStepView {
  seq: number;
  step_id: string;
  type: string;
  outcome: string;
  reason: string | null;
  email_id: string | null;
  data: Record<string, unknown>;
  at: string;
}

export interface RunView {
  id: string;
  contact_id: string;
  email: string;
  state: string;
  step: string | null;
  reason: string | null;
  wake_at: string | null;
  trigger: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  steps: RunStepView[];
}

interface RunRow {
  pk: number;
  id: string;
  contact_id: string;
  email: string;
  state: string;
  step: string | null;
  reason: string | null;
  wake_at: string | null;
  trigger: string;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/** A workflow's runs, newest first (Form A), each with its steps in order: what happened to a contact, and why. */
export async function listRuns(ctx: AppContext, teamId: string, id: string, query: Record<string, string | string[] | undefined>, filter: { contact_id?: string | undefined; state?: string | undefined }): Promise<Page<RunView>> {
  const paging = parsePaging(query);
  const reads = readsOf(ctx.db);
  const wf = await findWorkflow(reads, teamId, id);
  const base = reads('workflow_runs').where('workflow_pk', wf.pk);
  if (filter.contact_id !== undefined) base.andWhere('contact_id', filter.contact_id);
  if (filter.state !== undefined) base.andWhere('state', filter.state);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = (await base.clone().orderBy('pk', 'desc').offset(paging.offset).limit(paging.perPage)) as RunRow[];
  const steps = rows.length
    ? ((await reads('workflow_run_steps').whereIn('run_pk', rows.map((r) => r.pk)).orderBy(['run_pk', 'seq'])) as Array<{ run_pk: number; seq: number; step_id: string; type: string; outcome: string; reason: string | null; email_id: string | null; data: string; created_at: string }>)
    : [];
  const byRun = new Map<number, RunStepView[]>();
  for (const s of steps) {
    const list = byRun.get(s.run_pk) ?? [];
    list.push({ seq: s.seq, step_id: s.step_id, type: s.type, outcome: s.outcome, reason: s.reason, email_id: s.email_id, data: JSON.parse(s.data) as Record<string, unknown>, at: s.created_at });
    byRun.set(s.run_pk, list);
  }
  const data = rows.map((r) => ({
    id: r.id,
    contact_id: r.contact_id,
    email: r.email,
    state: r.state,
    step: r.step,
    reason: r.reason,
    wake_at: r.wake_at,
    trigger: JSON.parse(r.trigger) as Record<string, unknown>,
    created_at: r.created_at,
    updated_at: r.updated_at,
    finished_at: r.finished_at,
    steps: byRun.get(r.pk) ?? [],
  }));
  return toPage(data, Number(n), paging);
}
