// A workflow's graph: one trigger and its steps, checked as a whole before it is stored (PUT /workflows/{id}/graph).
// A bad graph is a 400 that names the step: its shape (per step type), references to steps that do not exist,
// steps the trigger never reaches, a loop with no wait step in it (it would spin without end), and a step from
// which no path reaches an exit step (every branch ends).
import { Cron } from 'croner';
import { z } from 'zod';
import { badRequest } from '../../core/errors.js';
import { normaliseAddress } from '../../core/address.js';

export const TRIGGER_TYPES = ['contact.created', 'segment.added', 'topic.subscribed', 'event', 'email.opened', 'email.clicked', 'email.bounced', 'schedule', 'manual'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];
export const STEP_TYPES = ['send_email', 'wait', 'condition', 'update_contact', 'add_to_segment', 'remove_from_segment', 'webhook', 'exit'] as const;
export type StepType = (typeof STEP_TYPES)[number];
export const CONDITION_OPERATORS = ['equals', 'not_equals', 'contains', 'not_contains', 'exists', 'not_exists', 'gt', 'gte', 'lt', 'lte'] as const;

/** Bounds of one graph. */
export const MAX_STEPS = 100;
export const MAX_WAIT_DAYS = 365;

const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
const stepRef = z.string({ error: 'must be a step id' }).regex(STEP_ID, 'must be a step id (letters, digits, _ and -, at most 64)');
const text = (max: number) => z.string({ error: 'must be a string' }).max(max, `must be at most ${max.toLocaleString('en-US')} characters`);
const address = z.string({ error: 'must be a valid email address' }).refine((v) => normaliseAddress(v.replace(/^.*<([^>]+)>\s*$/, '$1').trim()) !== null, 'must be a valid email address');

const Trigger = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('contact.created'), next: stepRef }).strict(),
    z.object({ type: z.literal('segment.added'), segment_id: text(100), next: stepRef }).strict(),
    z.object({ type: z.literal('topic.subscribed'), topic_id: text(100), next: stepRef }).strict(),
    z.object({ type: z.literal('event'), name: text(200).min(1, 'must not be empty'), next: stepRef }).strict(),
    z.object({ type: z.literal('email.opened'), next: stepRef }).strict(),
    z.object({ type: z.literal('email.clicked'), next: stepRef }).strict(),
    z.object({ type: z.literal('email.bounced'), next: stepRef }).strict(),
    z.object({ type: z.literal('schedule'), cron: text(200), segment_id: text(100).optional(), next: stepRef }).strict(),
    z.object({ type: z.literal('manual'), next: stepRef }).strict(),
  ],
  { error: `must be one of: ${TRIGGER_TYPES.join(', ')}` },
);

const Duration = z
  .object({
    days: z.number().int().min(0).max(MAX_WAIT_DAYS).optional(),
    hours: z.number().int().min(0).max(24 * MAX_WAIT_DAYS).optional(),
    minutes: z.number().int().min(0).max(60 * 24 * MAX_WAIT_DAYS).optional(),
    seconds: z.number().int().min(0).max(3600 * 24 * MAX_WAIT_DAYS).optional(),
  })
  .strict();

const FieldCondition = z
  .object({
    field: z
      .string({ error: 'must be a string' })
      .regex(/^(email|first_name|last_name|unsubscribed|created_at|(properties|data)\.[^\s]{1,100})$/, 'must be email, first_name, last_name, unsubscribed, created_at, properties.<name> or data.<name>'),
    operator: z.enum(CONDITION_OPERATORS, { error: `must be one of: ${CONDITION_OPERATORS.join(', ')}` }),
    value: z.union([z.string().max(1000), z.number(), z.boolean()]).optional(),
  })
  .strict();
const EmailCondition = z
  .object({ email: z.enum(['opened', 'clicked'], { error: 'must be opened or clicked' }), step: stepRef.optional() })
  .strict();
const Condition = z.union([FieldCondition, EmailCondition], { error: 'must be { field, operator, value } or { email: opened | clicked, step }' });

const base = { id: stepRef };
const Step = z.discriminatedUnion(
  'type',
  [
    z
      .object({
        ...base,
        type: z.literal('send_email'),
        from: address,
        reply_to: address.optional(),
        template_id: text(100).optional(),
        subject: text(998).optional(),
        html: text(1_000_000).optional(),
        text: text(1_000_000).optional(),
        topic_id: text(100).optional(),
        tags: z.array(text(100)).max(10).optional(),
        next: stepRef,
      })
      .strict(),
    z
      .object({
        ...base,
        type: z.literal('wait'),
        duration: Duration.optional(),
        until: z.string({ error: 'must be a time of day HH:MM' }).regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day HH:MM (24-hour)').optional(),
        next: stepRef,
      })
      .strict(),
    z.object({ ...base, type: z.literal('condition'), if: Condition, yes: stepRef, no: stepRef }).strict(),
    z
      .object({
        ...base,
        type: z.literal('update_contact'),
        first_name: text(200).nullable().optional(),
        last_name: text(200).nullable().optional(),
        unsubscribed: z.boolean().optional(),
        properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
        next: stepRef,
      })
      .strict(),
    z.object({ ...base, type: z.literal('add_to_segment'), segment_id: text(100), next: stepRef }).strict(),
    z.object({ ...base, type: z.literal('remove_from_segment'), segment_id: text(100), next: stepRef }).strict(),
    z.object({ ...base, type: z.literal('webhook'), url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048), next: stepRef }).strict(),
    z.object({ ...base, type: z.literal('exit') }).strict(),
  ],
  { error: `must be one of: ${STEP_TYPES.join(', ')}` },
);

export type Trigger = z.output<typeof Trigger>;
export type Step = z.output<typeof Step>;
export type Condition = z.output<typeof Condition>;
export interface Graph {
  trigger: Trigger;
  steps: Step[];
}

/** The ids a step goes on to (its branches). */
export function nextOf(step: Step): string[] {
  switch (step.type) {
    case 'exit':
      return [];
    case 'condition':
      return [step.yes, step.no];
    default:
      return [step.next];
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur = root;
  for (const k of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<PropertyKey, unknown>)[k] : undefined;
  return cur;
}

/** `field: message` for the first issue of a step or the trigger (`raw`: what was sent). */
function issueText(issue: z.core.$ZodIssue, raw: unknown): { text: string; missing: boolean } {
  const path = issue.path;
  const where = path.map(String).join('.');
  const missing = path.length > 0 && valueAt(raw, path) === undefined && issue.code !== 'custom';
  let message = issue.message;
  if (missing) message = 'is required';
  else if (issue.code === 'invalid_type' && message.startsWith('Invalid input')) message = `must be ${issue.expected === 'object' ? 'an object' : `a ${issue.expected}`}`;
  if (issue.code === 'unrecognized_keys') message = `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
  return { text: where ? `${where}: ${message}` : message, missing };
}

/** A cron expression as node-cron takes it (5 fields, or 6 with seconds first), checked; null when fine. */
export function cronProblem(expression: string, timezone: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return 'must have 5 fields (minute hour day month weekday), or 6 with seconds first';
  try {
    const c = new Cron(expression, { timezone, paused: true });
    c.stop();
    return null;
  } catch (err) {
    return (err as Error).message.replace(/^CronPattern: /, '');
  }
}

/** The next time a cron expression fires after `after`, in `timezone` (null: never). */
export function nextCronRun(expression: string, timezone: string, after: Date): Date | null {
  const c = new Cron(expression, { timezone, paused: true });
  try {
    return c.nextRun(after);
  } finally {
    c.stop();
  }
}

/** The next `HH:MM` in `timezone` strictly after `after`. */
export function nextTimeOfDay(hhmm: string, timezone: string, after: Date): Date {
  const [h, m] = hhmm.split(':').map(Number) as [number, number];
  return nextCronRun(`${m} ${h} * * *`, timezone, after)!;
}

export function durationMs(d: NonNullable<Extract<Step, { type: 'wait' }>['duration']>): number {
  return (((d.days ?? 0) * 24 + (d.hours ?? 0)) * 60 + (d.minutes ?? 0)) * 60_000 + (d.seconds ?? 0) * 1000;
}

/** An IANA time zone name Node knows (`Europe/Paris`, `UTC`). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a graph (anything the caller sent) and answers it typed. Every message names where: `trigger…`,
 * `step 'id'…`, or `steps.N` for a step without a usable id.
 */
export function parseGraph(input: unknown, timezone: string): Graph {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw badRequest('Request body must be a JSON object with trigger and steps');
  const raw = input as { trigger?: unknown; steps?: unknown };
  const missing = ['trigger', 'steps'].filter((k) => (raw as Record<string, unknown>)[k] === undefined);
  if (missing.length) throw badRequest(`Request body is missing required fields: ${missing.join(', ')}`);
  if (!Array.isArray(raw.steps)) throw badRequest('steps: must be an array');
  if (raw.steps.length === 0) throw badRequest('steps: must contain at least 1 step');
  if (raw.steps.length > MAX_STEPS) throw badRequest(`steps: must contain at most ${MAX_STEPS} steps`);

  const trigger = Trigger.safeParse(raw.trigger);
  if (!trigger.success) {
    const issue = trigger.error.issues[0]!;
    throw badRequest(`trigger${issue.path.length ? '.' : ': '}${issueText(issue, raw.trigger).text}`);
  }
  if (trigger.data.type === 'schedule') {
    const problem = cronProblem(trigger.data.cron, timezone);
    if (problem) throw badRequest(`trigger.cron: ${problem}`);
  }

  const steps: Step[] = [];
  const byId = new Map<string, Step>();
  raw.steps.forEach((s, i) => {
    const id = s && typeof s === 'object' && typeof (s as { id?: unknown }).id === 'string' && STEP_ID.test((s as { id: string }).id) ? (s as { id: string }).id : null;
    const name = id ? `step '${id}'` : `steps.${i}`;
    const parsed = Step.safeParse(s);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const { text, missing } = issueText(issue, s);
      throw badRequest(`${name}: ${text}${issue.path[0] === 'next' && missing ? ' (every branch ends at an exit step)' : ''}`);
    }
    const step = parsed.data;
    if (byId.has(step.id)) throw badRequest(`step '${step.id}': the id is used by another step`);
    if (step.type === 'send_email' && step.template_id === undefined) {
      if (step.subject === undefined) throw badRequest(`step '${step.id}': subject is required without a template_id`);
      if (step.html === undefined && step.text === undefined) throw badRequest(`step '${step.id}': html or text is required without a template_id`);
    }
    if (step.type === 'wait') {
      if ((step.duration === undefined) === (step.until === undefined)) throw badRequest(`step '${step.id}': give either duration or until`);
      if (step.duration) {
        const ms = durationMs(step.duration);
        if (ms <= 0) throw badRequest(`step '${step.id}': duration must be more than zero`);
        if (ms > MAX_WAIT_DAYS * 86_400_000) throw badRequest(`step '${step.id}': duration must be at most ${MAX_WAIT_DAYS} days`);
      }
    }
    if (step.type === 'update_contact' && step.first_name === undefined && step.last_name === undefined && step.unsubscribed === undefined && step.properties === undefined) {
      throw badRequest(`step '${step.id}': give at least one of first_name, last_name, unsubscribed, properties`);
    }
    byId.set(step.id, step);
    steps.push(step);
  });

  // References.
  if (!byId.has(trigger.data.next)) throw badRequest(`trigger: next '${trigger.data.next}' is not a step of this graph`);
  for (const step of steps) {
    for (const n of nextOf(step)) if (!byId.has(n)) throw badRequest(`step '${step.id}': '${n}' is not a step of this graph`);
    if (step.type === 'condition' && 'email' in step.if && step.if.step !== undefined) {
      const target = byId.get(step.if.step);
      if (!target || target.type !== 'send_email') throw badRequest(`step '${step.id}': if.step '${step.if.step}' is not a send_email step of this graph`);
    }
  }

  // Every step reachable from the trigger.
  const reached = new Set<string>();
  const stack = [trigger.data.next];
  while (stack.length) {
    const id = stack.pop()!;
    if (reached.has(id)) continue;
    reached.add(id);
    stack.push(...nextOf(byId.get(id)!));
  }
  const stray = steps.find((s) => !reached.has(s.id));
  if (stray) throw badRequest(`step '${stray.id}': cannot be reached from the trigger`);

  // No loop without a wait: a cycle among the edges that do not leave a wait step.
  const state = new Map<string, 'open' | 'done'>();
  const visit = (id: string): string | null => {
    state.set(id, 'open');
    const step = byId.get(id)!;
    if (step.type !== 'wait') {
      for (const n of nextOf(step)) {
        if (state.get(n) === 'open') return n;
        if (!state.has(n)) {
          const found = visit(n);
          if (found) return found;
        }
      }
    }
    state.set(id, 'done');
    return null;
  };
  for (const s of steps) {
    if (state.has(s.id)) continue;
    const loop = visit(s.id);
    if (loop) throw badRequest(`step '${loop}': is in a loop with no wait step in it`);
  }

  // Every branch ends: from every step some path reaches an exit step.
  const ends = new Set(steps.filter((s) => s.type === 'exit').map((s) => s.id));
  for (let changed = true; changed; ) {
    changed = false;
    for (const s of steps) {
      if (!ends.has(s.id) && nextOf(s).some((n) => ends.has(n))) {
        ends.add(s.id);
        changed = true;
      }
    }
  }
  const endless = steps.find((s) => !ends.has(s.id));
  if (endless) throw badRequest(`step '${endless.id}': no path from it reaches an exit step (every branch ends at an exit step)`);

  return { trigger: trigger.data, steps };
}
