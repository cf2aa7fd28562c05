// The runs of workflows: each contact's position in a graph is a row (workflow_runs), and each step it went
// through a row of its own (workflow_run_steps: outcome, reason, data). A run moves by jobs on the one queue:
// a STEP_JOB runs the run's steps one after the other until a wait (which enqueues the next STEP_JOB, due when
// the wait ends, in the transaction that records the wait) or the end. So a restart resumes every run where
// it was: a run that was ready has its job, a waiting run its due job.
//
// Each step is committed on its own, conditional on the run's seq (the step count), so a step job run twice
// (at-least-once) advances a run once. A send carries the idempotency key `wf:<run id>:<seq>`: a send made
// before a crash and not yet recorded is replayed by the send path, not sent again. A webhook step may be
// called again after a crash; its X-Service-Webhook-Id (`<run id>:<seq>`) is the same on every call.
import type { AppContext } from '../../context.js';
import { AppError } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { Batcher, insertRows } from '../../db/batcher.js';
import { execute, queryRows, readsOf, type Queryable } from '../../db/index.js';
import { postWebhook } from '../../events/webhook-http.js';
import { EVENT_HEADER, SIGNATURE_HEADER, signatureHeader, TIMESTAMP_HEADER, WEBHOOK_ID_HEADER } from '../../events/webhook-signature.js';
import type { Job, JobOutcome, JobSpec } from '../../jobs/queue.js';
import {
  addMembers, getContactSubscriptions, removeMembers, segmentMembership, signUnsubscribeToken, suppressedAmong, unsubscribeUrl, updateContact
} from '../audience/index.js';
import { sendEmails, type SendEmailInput } from '../sending/index.js';
import { parsePart, renderPart } from '../templates/index.js';
import { durationMs, nextCronRun, nextTimeOfDay, type Condition, type Graph, type Step } from './workflow-graph.js';
import type { WorkflowRow } from './workflows.js';

export const STEP_JOB = 'workflow.step';
export const SCHEDULE_JOB = 'workflow.schedule';
/** Steps one job runs before it hands the run to a new job (a long chain of instant steps). */
const STEPS_PER_JOB = 50;

export interface Entry {
  workflow: Pick<WorkflowRow, 'pk' | 'team_id' | 'allow_concurrent_runs'> & { timezone?: string };
  graph: Graph;
  contact: { pk: number; id: string; email: string };
  /** What started the run: the trigger's type and its data (merge tags read it as `data`). */
  trigger: { type: string; data: Record<string, unknown>; [k: string]: unknown };
}

const RUN_COLUMNS = ['id', 'workflow_pk', 'team_id', 'contact_pk', 'contact_id', 'email', 'trigger', 'step', 'seq', 'state', 'wake_at', 'active', 'exclusive', 'created_at', 'updated_at'];

/**
 * Starts runs in the caller's transaction: a contact already in an active run of an exclusive workflow is
 * left out (the partial unique index), as is a second entry of the same contact in one call. Answers each
 * entry's run id, or null when it was left out.
 */
export async function enterRuns(ctx: AppContext, trx: Queryable, entries: Entry[]): Promise<Array<string | null>> {
  const at = ctx.clock.now();
  const now = at.toISOString();
  const ids = entries.map(() => newPublicId('wfr'));
  // A graph that begins with a wait: the run starts already waiting (the wait's step row written with it), so
  // entering costs no job until the wait ends.
  const firstWait = entries.map((e) => {
    const first = e.graph.steps.find((s) => s.id === e.graph.trigger.next);
    return first?.type === 'wait' ? { step: first, until: waitEnd(first, at, e.workflow.timezone ?? 'UTC') } : null;
  });
  const started = new Map<string, number>();
  for (let i = 0; i < entries.length; i += 200) {
    const chunk = entries.slice(i, i + 200);
    const values = chunk.flatMap((e, j) => {
      const w = firstWait[i + j];
      return [ids[i + j], e.workflow.pk, e.workflow.team_id, e.contact.pk, e.contact.id, e.contact.email, JSON.stringify(e.trigger), w ? w.step.next : e.graph.trigger.next, w ? 1 : 0, w ? 'waiting' : 'ready', w ? w.until.toISOString() : null, 1, e.workflow.allow_concurrent_runs ? 0 : 1, now, now];
    });
    const tuple = `(${RUN_COLUMNS.map(() => '?').join(', ')})`;
    const rows = await queryRows<{ pk: number; id: string }>(trx, `INSERT OR IGNORE INTO workflow_runs (${RUN_COLUMNS.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')} RETURNING pk, id`, values);
    for (const r of rows) started.set(r.id, r.pk);
  }
  const jobs: JobSpec[] = [];
  const stepRows: Array<Record<string, unknown>> = [];
  entries.forEach((_, i) => {
    const pk = started.get(ids[i]!);
    if (pk === undefined) return;
    const w = firstWait[i];
    if (!w) return void jobs.push({ kind: STEP_JOB, payload: { run: pk } });
    const until = w.until.toISOString();
    stepRows.push({ run_pk: pk, seq: 0, step_id: w.step.id, type: 'wait', outcome: 'waiting', reason: `until ${until}`, data: JSON.stringify({ until }), email_id: null, created_at: now });
    jobs.push({ kind: STEP_JOB, payload: { run: pk }, runAt: w.until });
  });
  if (stepRows.length) await insertRows(trx, 'workflow_run_steps', stepRows);
  if (jobs.length) await ctx.jobs.enqueueMany(trx, jobs);
  return ids.map((id) => (started.has(id) ? id : null));
}

/** When a wait step that starts at `at` ends. */
function waitEnd(step: Extract<Step, { type: 'wait' }>, at: Date, timezone: string): Date {
  return step.duration ? new Date(at.getTime() + durationMs(step.duration)) : nextTimeOfDay(step.until!, timezone, at);
}

interface LoadedRun {
  pk: number;
  id: string;
  team_id: string;
  contact_id: string;
  email: string;
  trigger: string;
  step: string | null;
  seq: number;
  state: string;
  active: number;
  wake_at: string | null;
  wf_pk: number;
  wf_id: string;
  wf_status: string;
  graph: string | null;
  graph_version: number;
  timezone: string;
  mode: 'live' | 'test';
  secret_sealed: string;
  c_pk: number | null;
  c_email: string | null;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: number | null;
  /** `pending` until a double opt-in signup is confirmed (signup forms, migration 021). */
  opt_in_status: string | null;
  properties: string | null;
  c_created_at: string | null;
}

async function loadRun(ctx: AppContext, pk: number): Promise<LoadedRun | undefined> {
  const [row] = await queryRows<LoadedRun>(
    readsOf(ctx.db),
    `SELECT r.pk, r.id, r.team_id, r.contact_id, r.email, r.trigger, r.step, r.seq, r.state, r.active, r.wake_at,
            w.pk AS wf_pk, w.id AS wf_id, w.status AS wf_status, w.graph, w.graph_version, w.timezone, w.mode, w.secret_sealed,
            c.pk AS c_pk, c.email AS c_email, c.first_name, c.last_name, c.unsubscribed, c.opt_in_status, c.properties, c.created_at AS c_created_at
       FROM workflow_runs r JOIN workflows w ON w.pk = r.workflow_pk LEFT JOIN contacts c ON c.pk = r.contact_pk
      WHERE r.pk = ?`,
    [pk],
  );
  return row;
}

/** Parsed graphs by workflow and graph version (a version never changes). */
const graphs = new Map<string, Graph>();
function graphOf(run: LoadedRun): Graph {
  const key = `${run.wf_id}:${run.graph_version}`;
  let g = graphs.get(key);
  if (!g) {
    if (graphs.size > 1000) graphs.clear();
    g = JSON.parse(run.graph!) as Graph;
    graphs.set(key, g);
  }
  return g;
}

interface StepResult {
  outcome: string;
  reason?: string | null;
  data?: Record<string, unknown>;
  emailId?: string | null;
  /** The step to go on to; null ends the run (with `end`). */
  next: string | null;
  end?: 'completed' | 'exited' | 'failed';
  /** A wait: the run sleeps until then. */
  wakeAt?: Date;
}

interface ContactView {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  created_at: string;
  properties: Record<string, unknown>;
}

function contactOf(run: LoadedRun): ContactView {
  return {
    id: run.contact_id,
    email: run.c_email!,
    first_name: run.first_name,
    last_name: run.last_name,
    unsubscribed: Boolean(run.unsubscribed),
    created_at: run.c_created_at!,
    properties: JSON.parse(run.properties ?? '{}') as Record<string, unknown>,
  };
}

/** Merge tags: `contact` (its fields and properties, the properties also under contact.properties) and `data` (the trigger's). */
function scopeOf(contact: ContactView, trigger: Entry['trigger']): Record<string, unknown> {
  return { contact: { ...contact.properties, ...contact, properties: contact.properties }, data: trigger.data ?? {}, trigger: { type: trigger.type } };
}

const parsedInline = new Map<string, ReturnType<typeof parsePart>>();
function renderInline(part: 'subject' | 'html' | 'text', source: string, scope: Record<string, unknown>): string {
  const key = `${part}\u0000${source}`;
  let p = parsedInline.get(key);
  if (!p) {
    if (parsedInline.size > 500) parsedInline.clear();
    p = parsePart(part, source);
    parsedInline.set(key, p);
  }
  return renderPart(p, scope);
}

function valueAt(root: unknown, path: string[]): unknown {
  let cur = root;
  for (const seg of path) cur = cur !== null && typeof cur === 'object' && Object.hasOwn(cur, seg) ? (cur as Record<string, unknown>)[seg] : undefined;
  return cur;
}

function compare(actual: unknown, operator: string, expected: unknown): boolean {
  const present = actual !== undefined && actual !== null && actual !== '';
  if (operator === 'exists') return present;
  if (operator === 'not_exists') return !present;
  const numeric = typeof expected === 'number' || (typeof actual === 'number' && expected !== undefined && !Number.isNaN(Number(expected)));
  switch (operator) {
    case 'equals':
      return numeric ? Number(actual) === Number(expected) : String(actual) === String(expected);
    case 'not_equals':
      return numeric ? Number(actual) !== Number(expected) : String(actual) !== String(expected);
    case 'contains':
      return present && String(actual).toLowerCase().includes(String(expected ?? '').toLowerCase());
    case 'not_contains':
      return !present || !String(actual).toLowerCase().includes(String(expected ?? '').toLowerCase());
    default: {
      if (!present) return false;
      const [a, b] = numeric ? [Number(actual), Number(expected)] : [String(actual), String(expected)];
      return operator === 'gt' ? a > b : operator === 'gte' ? a >= b : operator === 'lt' ? a < b : a <= b;
    }
  }
}

async function evaluate(ctx: AppContext, run: LoadedRun, contact: ContactView, trigger: Entry['trigger'], cond: Condition): Promise<{ yes: boolean; reason: string }> {
  if ('email' in cond) {
    const type = cond.email;
    const rows = await queryRows<{ email_id: string }>(
      readsOf(ctx.db),
      `SELECT s.email_id FROM workflow_run_steps s JOIN emails e ON e.public_id = s.email_id
        WHERE s.run_pk = ? AND s.email_id IS NOT NULL ${cond.step !== undefined ? 'AND s.step_id = ?' : ''}
          AND EXISTS (SELECT 1 FROM email_events ev WHERE ev.email_id = e.id AND ev.type = ?) LIMIT 1`,
      cond.step !== undefined ? [run.pk, cond.step, type] : [run.pk, type],
    );
    const which = cond.step !== undefined ? `the email of step '${cond.step}'` : 'an email of this run';
    return rows.length ? { yes: true, reason: `${which} was ${type} (${rows[0]!.email_id})` } : { yes: false, reason: `${which} was not ${type}` };
  }
  const [head, ...rest] = cond.field.split('.');
  const actual = head === 'properties' ? valueAt(contact.properties, rest) : head === 'data' ? valueAt(trigger.data, rest) : (contact as unknown as Record<string, unknown>)[head!];
  const yes = compare(actual, cond.operator, cond.value);
  return { yes, reason: `${cond.field} ${cond.operator}${cond.value !== undefined ? ` ${JSON.stringify(cond.value)}` : ''}: ${yes ? 'true' : 'false'} (value ${JSON.stringify(actual ?? null)})` };
}

const errorText = (err: unknown) => (err instanceof AppError ? err.message : err instanceof Error ? err.message : String(err));

async function executeStep(ctx: AppContext, run: LoadedRun, step: Step): Promise<StepResult> {
  const trigger = JSON.parse(run.trigger) as Entry['trigger'];
  const contact = contactOf(run);
  const now = ctx.clock.now();
  switch (step.type) {
    case 'exit':
      return { outcome: 'completed', reason: 'reached an exit step', next: null, end: 'completed' };
    case 'wait': {
      const wakeAt = waitEnd(step, now, run.timezone);
      return { outcome: 'waiting', reason: `until ${wakeAt.toISOString()}`, data: { until: wakeAt.toISOString() }, next: step.next, wakeAt };
    }
    case 'condition': {
      const r = await evaluate(ctx, run, contact, trigger, step.if);
      return { outcome: r.yes ? 'yes' : 'no', reason: r.reason, data: { branch: r.yes ? step.yes : step.no }, next: r.yes ? step.yes : step.no };
    }
    case 'send_email': {
      // Who is not to be mailed is skipped here, at each send, with the reason; the run goes on.
      if (contact.unsubscribed) return { outcome: 'skipped', reason: 'unsubscribed: the contact is unsubscribed from everything', next: step.next };
      if (run.opt_in_status === 'pending') return { outcome: 'skipped', reason: 'unconfirmed: the contact has not confirmed its signup (double opt-in)', next: step.next };
      if ((await suppressedAmong(readsOf(ctx.db), run.team_id, [contact.email])).size > 0) return { outcome: 'skipped', reason: `suppressed: ${contact.email} is on the suppression list`, next: step.next };
      if (step.topic_id !== undefined) {
        const subs = await getContactSubscriptions(ctx, run.team_id, contact.id);
        const sub = subs.subscriptions.find((s) => s.topic_id === step.topic_id);
        if (!sub?.subscribed) return { outcome: 'skipped', reason: `unsubscribed: the contact is not subscribed to topic '${step.topic_id}'`, next: step.next };
      }
      // `{{ unsubscribe_url }}`: the contact's own preference page (its signed token names the contact).
      const unsubscribeLink = run.c_pk === null ? '' : unsubscribeUrl(ctx, signUnsubscribeToken(ctx, { contact: { pk: run.c_pk, id: contact.id }, topic: null, emailKey: null }, now));
      const scope = { ...scopeOf(contact, trigger), unsubscribe_url: unsubscribeLink };
      const input: SendEmailInput = {
        from: step.from,
        to: [contact.email],
        idempotency_key: `wf:${run.id}:${run.seq}`,
        ...(step.reply_to ? { reply_to: [step.reply_to] } : {}),
        ...(step.tags ? { tags: step.tags } : {}),
        ...(step.topic_id !== undefined ? { topic_id: step.topic_id } : { unsubscribe: true }),
      };
      try {
        if (step.template_id !== undefined) {
          input.template_id = step.template_id;
          input.variables = scope as Record<string, string>;
        }
        if (step.subject !== undefined) input.subject = renderInline('subject', step.subject, scope).trim();
        if (step.html !== undefined) input.html = renderInline('html', step.html, scope);
        if (step.text !== undefined) input.text = renderInline('text', step.text, scope);
      } catch (err) {
        return { outcome: 'failed', reason: errorText(err), next: null, end: 'failed' };
      }
      const [result] = await sendEmails(ctx, { teamId: run.team_id, apiKeyId: null, mode: run.mode }, [input]);
      if (result instanceof AppError) {
        if (result.status === 409 && /Idempotency key/.test(result.message)) return { outcome: 'sent', reason: 'sent before a restart (the send path replayed it)', next: step.next };
        return { outcome: 'failed', reason: result.message, data: { code: result.code }, next: null, end: 'failed' };
      }
      return { outcome: 'sent', reason: result!.replayed ? 'sent before a restart (the send path replayed it)' : null, emailId: result!.id, next: step.next };
    }
    case 'update_contact': {
      try {
        const change = {
          ...(step.first_name !== undefined ? { first_name: step.first_name } : {}),
          ...(step.last_name !== undefined ? { last_name: step.last_name } : {}),
          ...(step.unsubscribed !== undefined ? { unsubscribed: step.unsubscribed } : {}),
          ...(step.properties !== undefined ? { properties: step.properties } : {}),
        };
        await updateContact(ctx, run.team_id, contact.id, change);
        return { outcome: 'updated', data: { change }, next: step.next };
      } catch (err) {
        return { outcome: 'failed', reason: errorText(err), next: null, end: 'failed' };
      }
    }
    case 'add_to_segment':
    case 'remove_from_segment': {
      try {
        if (step.type === 'add_to_segment') {
          const r = await addMembers(ctx, run.team_id, step.segment_id, [contact.id]);
          return { outcome: 'added', reason: r.added ? null : 'already a member', data: { segment_id: step.segment_id }, next: step.next };
        }
        const r = await removeMembers(ctx, run.team_id, step.segment_id, [contact.id]);
        return { outcome: 'removed', reason: r.removed ? null : 'not a member', data: { segment_id: step.segment_id }, next: step.next };
      } catch (err) {
        return { outcome: 'failed', reason: errorText(err), next: null, end: 'failed' };
      }
    }
    case 'webhook': {
      const body = JSON.stringify({
        type: 'workflow.webhook',
        created_at: now.toISOString(),
        data: { workflow_id: run.wf_id, run_id: run.id, step_id: step.id, contact, trigger },
      });
      const res = await postWebhook({
        url: step.url,
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': `mail-appliance-workflows/${ctx.version}`,
          [SIGNATURE_HEADER]: signatureHeader(body, [ctx.secrets.open(run.secret_sealed)]),
          [WEBHOOK_ID_HEADER]: `${run.id}:${run.seq}`,
          [TIMESTAMP_HEADER]: String(Math.floor(now.getTime() / 1000)),
          [EVENT_HEADER]: 'workflow.webhook',
        },
        timeoutMs: ctx.config.webhookTimeoutMs,
        allowPrivate: ctx.config.webhookAllowPrivate,
        dns: ctx.dns,
      });
      const ok = res.statusCode !== null && res.statusCode >= 200 && res.statusCode < 300;
      // A failed call is recorded and the run goes on (the next steps do not depend on the receiver).
      return { outcome: ok ? 'called' : 'failed', reason: ok ? null : res.statusCode === null ? res.body : `HTTP ${res.statusCode}`, data: { status: res.statusCode }, next: step.next };
    }
  }
}

interface Commit {
  run: LoadedRun;
  step: { id: string; type: string };
  result: StepResult;
}

/** One commit's statements in a transaction; false when the run had moved already (a stale job). */
async function applyCommit(trx: Queryable, { run, step, result: r }: Commit, now: string, waits: JobSpec[]): Promise<boolean> {
  const ended = r.next === null;
  const changed = await execute(
    trx,
    'UPDATE workflow_runs SET seq = ?, step = ?, state = ?, active = ?, wake_at = ?, reason = ?, updated_at = ?, finished_at = ? WHERE pk = ? AND seq = ? AND active = 1',
    [run.seq + 1, ended ? null : r.next, ended ? (r.end ?? 'completed') : r.wakeAt ? 'waiting' : 'ready', ended ? 0 : 1, r.wakeAt ? r.wakeAt.toISOString() : null, ended ? (r.reason ?? null) : null, now, ended ? now : null, run.pk, run.seq],
  );
  if (changed === 0) return false;
  await execute(trx, 'INSERT INTO workflow_run_steps (run_pk, seq, step_id, type, outcome, reason, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [
    run.pk,
    run.seq,
    step.id,
    step.type,
    r.outcome,
    r.reason ?? null,
    JSON.stringify(r.data ?? {}),
    r.emailId ?? null,
    now,
  ]);
  if (r.wakeAt) waits.push({ kind: STEP_JOB, payload: { run: run.pk }, runAt: r.wakeAt });
  return true;
}

/**
 * Group commit of steps: the steps of all runs that finish while one write transaction runs share the next
 * one (each still conditional on its own run's seq), and their waits' jobs are written with one statement.
 */
const stepWriters = new WeakMap<AppContext, Batcher<Commit, boolean>>();
function stepWriter(ctx: AppContext): Batcher<Commit, boolean> {
  let w = stepWriters.get(ctx);
  if (!w) {
    w = new Batcher<Commit, boolean>(
      (items) =>
        ctx.db.transaction(async (trx) => {
          const now = ctx.clock.now().toISOString();
          const waits: JobSpec[] = [];
          const out: boolean[] = [];
          for (const item of items) out.push(await applyCommit(trx, item, now, waits));
          if (waits.length) await ctx.jobs.enqueueMany(trx, waits);
          return out;
        }),
      500,
    );
    stepWriters.set(ctx, w);
  }
  return w;
}

/** Records a step's result and moves the run; false when the run had moved already (a stale job). */
function commitStep(ctx: AppContext, run: LoadedRun, step: { id: string; type: string }, result: StepResult): Promise<boolean> {
  return stepWriter(ctx).submit({ run, step, result });
}

async function endRun(ctx: AppContext, run: LoadedRun, state: 'exited' | 'failed', outcome: string, reason: string): Promise<void> {
  await commitStep(ctx, run, { id: run.step ?? '-', type: 'exit' }, { outcome, reason, next: null, end: state });
}

/** The STEP_JOB handler: runs a run's steps from where it is until a wait, a pause or its end. */
export async function runSteps(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const pk = (job.payload as { run: number }).run;
  // The run is read once per job and then carried forward: its own steps are the only writers of its row (each
  // commit conditional on the seq read here); after an update_contact the contact is read again if the next
  // step reads it.
  let run = await loadRun(ctx, pk);
  for (let i = 0; i < STEPS_PER_JOB; i++) {
    if (!run || !run.active || run.state === 'paused') return;
    // A wait's job that comes early (or a stale one): the run's own job is still due.
    if (run.state === 'waiting' && run.wake_at && new Date(run.wake_at).getTime() > ctx.clock.now().getTime()) return;
    if (run.wf_status !== 'active' || (i > 0 && i % 10 === 0 && !(await stillActive(ctx, run.wf_pk)))) {
      await ctx.db('workflow_runs').where({ pk: run.pk, seq: run.seq, active: 1 }).update({ state: 'paused', updated_at: ctx.clock.now().toISOString() });
      return;
    }
    if (run.c_pk === null) return endRun(ctx, run, 'exited', 'exited', 'the contact was deleted');
    const current = run;
    const step = graphOf(current).steps.find((s) => s.id === current.step);
    if (!step) return endRun(ctx, current, 'failed', 'failed', `step '${current.step}' is no longer in the workflow's graph`);
    const result = await executeStep(ctx, current, step);
    const moved = await commitStep(ctx, current, step, result);
    if (!moved || result.next === null || result.wakeAt) return;
    run = { ...current, seq: current.seq + 1, step: result.next, state: 'ready', wake_at: null };
    if (step.type === 'update_contact') {
      // A step that reads the contact reads it as the audience stored it (its value checks may normalise).
      const reads = graphOf(run).steps.find((s) => s.id === result.next);
      if (reads && (reads.type === 'condition' || reads.type === 'send_email' || reads.type === 'webhook')) run = await loadRun(ctx, pk);
      else applyContactChange(run, step);
    }
  }
  // A long chain of instant steps: the rest in a new job (others get a turn).
  await ctx.jobs.enqueue(ctx.db, STEP_JOB, { run: pk });
}

async function stillActive(ctx: AppContext, wfPk: number): Promise<boolean> {
  const r = (await readsOf(ctx.db)('workflows').where('pk', wfPk).first('status')) as { status: string } | undefined;
  return r?.status === 'active';
}

/** What update_contact changed, on the carried copy (as audience's updateContact merges: null removes a property). */
function applyContactChange(run: LoadedRun, step: Extract<Step, { type: 'update_contact' }>): void {
  if (step.first_name !== undefined) run.first_name = step.first_name;
  if (step.last_name !== undefined) run.last_name = step.last_name;
  if (step.unsubscribed !== undefined) run.unsubscribed = step.unsubscribed ? 1 : 0;
  if (step.properties !== undefined) {
    const props = JSON.parse(run.properties ?? '{}') as Record<string, unknown>;
    for (const [k, v] of Object.entries(step.properties)) {
      if (v === null) delete props[k];
      else props[k] = v;
    }
    run.properties = JSON.stringify(props);
  }
}

/**
 * The SCHEDULE_JOB handler: at each time of the cron expression (in the workflow's time zone) the contacts of
 * the trigger's segment (every contact of the team without one) enter; then the job waits for the next time.
 * A job of another graph version, or of a workflow no longer active, ends (activate queues a new one).
 */
export async function runSchedule(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { workflow, version } = job.payload as { workflow: number; version: number };
  const wf = (await ctx.db('workflows').where('pk', workflow).first()) as WorkflowRow | undefined;
  if (!wf || wf.status !== 'active' || wf.graph_version !== version || !wf.graph) return;
  const graph = JSON.parse(wf.graph) as Graph;
  if (graph.trigger.type !== 'schedule') return;
  const now = ctx.clock.now();
  const reads = readsOf(ctx.db);
  let filter = { sql: '1', bindings: [] as unknown[] };
  if (graph.trigger.segment_id !== undefined) {
    try {
      filter = await segmentMembership(reads, wf.team_id, graph.trigger.segment_id, now);
    } catch {
      filter = { sql: '0', bindings: [] };
    }
  }
  let after = 0;
  for (;;) {
    const contacts = await queryRows<{ pk: number; id: string; email: string }>(reads, `SELECT c.pk, c.id, c.email FROM contacts AS c WHERE c.team_id = ? AND c.pk > ? AND (${filter.sql}) ORDER BY c.pk LIMIT 500`, [wf.team_id, after, ...filter.bindings]);
    if (!contacts.length) break;
    after = contacts[contacts.length - 1]!.pk;
    const data = { scheduled_at: job.runAt.toISOString() };
    await ctx.db.transaction((trx) => enterRuns(ctx, trx, contacts.map((contact) => ({ workflow: wf, graph, contact, trigger: { type: 'schedule', data } }))));
    if (contacts.length < 500) break;
  }
  const next = nextCronRun(graph.trigger.cron, wf.timezone, now);
  return next ? { retryAt: next } : undefined;
}

/**
 * Deletes at most `limit` runs of teams on `plan` that ended (completed, exited, failed) before `before`, with
 * their steps; returns how many. Run counts and GET /workflows/{id}/runs then cover the runs kept.
 */
export async function pruneFinishedRuns(ctx: AppContext, plan: string, before: Date, limit: number): Promise<number> {
  return ctx.db.transaction(async (trx) => {
    const rows = await queryRows<{ pk: number }>(
      trx,
      // Team by team (CROSS JOIN: teams outside), each a seek in workflow_runs_finished: never a walk past another
      // plan's runs that are not due.
      'SELECT r.pk FROM teams AS t CROSS JOIN workflow_runs AS r WHERE t.plan = ? AND r.team_id = t.id AND r.active = 0 AND r.finished_at < ? LIMIT ?',
      [plan, before.toISOString(), limit],
    );
    if (rows.length === 0) return 0;
    const pks = rows.map((r) => r.pk);
    await trx('workflow_run_steps').whereIn('run_pk', pks).delete();
    await trx('workflow_runs').whereIn('pk', pks).delete();
    return pks.length;
  });
}
