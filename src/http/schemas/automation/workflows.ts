// Workflows (spec: /workflows; the bodies and the record's shape are ours, see docs/API.md). A graph is checked
// by the service as a whole (services/automation/workflow-graph.ts), so its 400s name the step.
import { z } from 'zod';
import { emailAddress } from '../../../core/validation.js';
import { RUN_STATES, STEP_TYPES, TRIGGER_TYPES, WORKFLOW_STATUSES } from '../../../services/automation/index.js';
import { boolean, name } from '../common.js';

const GraphInput = z
  .record(z.string(), z.unknown(), { error: 'must be an object' })
  .describe(
    `{ trigger, steps }. trigger: { type (${TRIGGER_TYPES.join(', ')}), next (the first step's id), and per type: segment_id (segment.added: a manual segment), ` +
      'topic_id (topic.subscribed), name (event), cron and optional segment_id (schedule) }. ' +
      `steps: up to 100, each { id, type (${STEP_TYPES.join(', ')}), next } or, for a condition, { if, yes, no }; an exit step has no next.`,
  )
  .meta({ id: 'WorkflowGraph' });

export const CreateWorkflow = z
  .object({
    name: name(200),
    timezone: z.string({ error: 'must be a string' }).max(100).optional().describe('IANA time zone of schedule triggers and wait-until steps (default UTC)'),
    allow_concurrent_runs: boolean().optional().describe('a contact may be in several runs of this workflow at once (default false: one at a time)'),
    graph: GraphInput.optional(),
  })
  .meta({ id: 'CreateWorkflow' });

export const SetGraph = GraphInput;

export const TriggerWorkflow = z
  .object({
    contact_id: z.string({ error: 'must be a string' }).max(100).optional(),
    email: emailAddress().optional(),
    data: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional().describe('merge tags read it as {{ data.<name> }}; conditions as data.<name>'),
  })
  .refine((b) => b.contact_id !== undefined || b.email !== undefined, { message: 'Request body is missing required fields: contact_id or email', path: [] })
  .meta({ id: 'TriggerWorkflow' });

export const WorkflowEvent = z
  .object({
    name: name(200).describe('the event name a workflow trigger of type event waits for'),
    contact_id: z.string({ error: 'must be a string' }).max(100).optional(),
    email: emailAddress().optional(),
    data: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
  })
  .refine((b) => b.contact_id !== undefined || b.email !== undefined, { message: 'Request body is missing required fields: contact_id or email', path: [] })
  .meta({ id: 'WorkflowEvent' });

export const Workflow = z
  .object({
    id: z.string().describe('wf_…'),
    name: z.string(),
    status: z.enum(WORKFLOW_STATUSES),
    timezone: z.string(),
    allow_concurrent_runs: z.boolean(),
    graph: z.unknown().nullable().describe('the graph as set, or null for a draft without one'),
    graph_version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
    activated_at: z.string().nullable(),
  })
  .meta({ id: 'Workflow' });

export const WorkflowDetail = Workflow.extend({
  runs: z.object({ active: z.number().int(), completed: z.number().int(), exited: z.number().int(), failed: z.number().int() }),
}).meta({ id: 'WorkflowDetail' });

export const RunsQuery = z.object({
  contact_id: z.string().max(100).optional(),
  state: z.enum(RUN_STATES, { error: `must be one of: ${RUN_STATES.join(', ')}` }).optional(),
});

export const WorkflowRun = z
  .object({
    id: z.string().describe('wfr_…'),
    contact_id: z.string(),
    email: z.string(),
    state: z.enum(RUN_STATES),
    step: z.string().nullable().describe('the step it is at (null once ended)'),
    reason: z.string().nullable().describe('why it ended, when it did not complete'),
    wake_at: z.string().nullable().describe('a waiting run: when its wait ends'),
    trigger: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
    finished_at: z.string().nullable(),
    steps: z.array(
      z.object({
        seq: z.number().int(),
        step_id: z.string(),
        type: z.string(),
        outcome: z.string().describe('sent, skipped, failed, waiting, yes, no, updated, added, removed, called, completed, exited'),
        reason: z.string().nullable(),
        email_id: z.string().nullable(),
        data: z.record(z.string(), z.unknown()),
        at: z.string(),
      }),
    ),
  })
  .meta({ id: 'WorkflowRun' });
